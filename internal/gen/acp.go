package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// ACP (e acp) is specified by its published JSON Schema, vendored in
// conformance/acpschema. e speaks a part of it: acpTypes selects, for each
// Go type of package acp, the ACP definition it stands for and the
// properties e sends or reads, in the order e writes them. The generator
// checks every selected property against the schema (it must exist there,
// through allOf and the branches of a union; its JSON type must fit the Go
// type; a Go type of the table must be a definition the property refers to)
// and takes the docs from the schema, so a property ACP renames, retypes or
// moves fails go generate rather than the wire. acpConsts writes the
// schema's unions of constants (stop reasons, error codes) as Go constants.

// acpOut is the generated file, beside the hand-written behaviour over it.
const acpOut = "internal/acp/wire_gen.go"

// acpSchema is the vendored schema, from the repository root.
const acpSchema = "conformance/acpschema/schema.json"

type acpType struct {
	name, def, doc string // doc: e's note, after the schema's description
	// also are further definitions this Go type stands for, where e uses one
	// type for several of ACP's shapes.
	also   []string
	fields []acpField
}

// acpField is one selected property. Its Go name defaults to piName(json);
// its tag is json, with ",omitempty" when omit is set.
type acpField struct {
	json, typ string
	omit      bool
	goName    string
	note      string // e's note, after the schema's description
	// alt: this field is a second Go field for a property of a union
	// whose branches type it differently (a tool call's content list, a
	// chunk's one block); a generated MarshalJSON writes it under json
	// when it is not nil.
	alt bool
}

// A def starting with "#" names a branch of the schema's root, by its
// title: the JSON-RPC envelope of a message from the agent or the client.
var acpTypes = []acpType{
	{name: "message", def: "#Client", doc: "message is any JSON-RPC 2.0 message as read: a request (id and method), a notification " +
		"(method, no id) or a response (id, result or error).", fields: []acpField{
		{json: "jsonrpc", typ: "string", goName: "JSONRPC"}, {json: "id", typ: "json.RawMessage", omit: true},
		{json: "method", typ: "string", omit: true}, {json: "params", typ: "json.RawMessage", omit: true},
		{json: "result", typ: "json.RawMessage", omit: true}, {json: "error", typ: "*Error", omit: true}}},
	{name: "errorReply", def: "#Agent", doc: "errorReply is a response carrying an error.", fields: []acpField{
		{json: "jsonrpc", typ: "string", goName: "JSONRPC"}, {json: "id", typ: "json.RawMessage"}, {json: "error", typ: "*Error"}}},
	{name: "resultReply", def: "#Agent", doc: "resultReply is a response carrying a result.", fields: []acpField{
		{json: "jsonrpc", typ: "string", goName: "JSONRPC"}, {json: "id", typ: "json.RawMessage"}, {json: "result", typ: "any"}}},
	{name: "outNotification", def: "#Agent", doc: "outNotification is a notification e sends.", fields: []acpField{
		{json: "jsonrpc", typ: "string", goName: "JSONRPC"}, {json: "method", typ: "string"}, {json: "params", typ: "any"}}},
	{name: "outRequest", def: "#Agent", doc: "outRequest is a request e sends the client.", fields: []acpField{
		{json: "jsonrpc", typ: "string", goName: "JSONRPC"}, {json: "id", typ: "json.RawMessage"},
		{json: "method", typ: "string"}, {json: "params", typ: "any"}}},
	{name: "Error", def: "Error", fields: []acpField{{json: "code", typ: "int"}, {json: "message", typ: "string"}}},
	{name: "InitializeParams", def: "InitializeRequest", fields: []acpField{
		{json: "protocolVersion", typ: "int"}, {json: "clientCapabilities", typ: "ClientCapabilities"}}},
	{name: "ClientCapabilities", def: "ClientCapabilities", fields: []acpField{
		{json: "fs", typ: "FileSystemCapabilities", goName: "FS"}, {json: "terminal", typ: "bool"}}},
	{name: "FileSystemCapabilities", def: "FileSystemCapabilities", fields: []acpField{
		{json: "readTextFile", typ: "bool"}, {json: "writeTextFile", typ: "bool"}}},
	{name: "InitializeResult", def: "InitializeResponse", fields: []acpField{
		{json: "protocolVersion", typ: "int"}, {json: "agentCapabilities", typ: "AgentCapabilities"},
		{json: "authMethods", typ: "[]any"}, {json: "agentInfo", typ: "Implementation"}}},
	{name: "AgentCapabilities", def: "AgentCapabilities", fields: []acpField{
		{json: "loadSession", typ: "bool"}, {json: "promptCapabilities", typ: "PromptCapabilities"},
		{json: "mcpCapabilities", typ: "MCPCapabilities", goName: "MCPCapabilities"},
		{json: "sessionCapabilities", typ: "SessionCapabilities"}}},
	{name: "PromptCapabilities", def: "PromptCapabilities", fields: []acpField{
		{json: "image", typ: "bool"}, {json: "audio", typ: "bool"}, {json: "embeddedContext", typ: "bool"}}},
	{name: "MCPCapabilities", def: "McpCapabilities", fields: []acpField{{json: "http", typ: "bool"}, {json: "sse", typ: "bool"}}},
	{name: "Marker", def: "SessionListCapabilities", also: []string{"SessionResumeCapabilities", "SessionCloseCapabilities"}, doc: `Marker is an empty object: "supported" in ACP's capability objects.`},
	{name: "SessionCapabilities", def: "SessionCapabilities", fields: []acpField{
		{json: "list", typ: "*Marker", omit: true}, {json: "resume", typ: "*Marker", omit: true}, {json: "close", typ: "*Marker", omit: true}}},
	{name: "Implementation", def: "Implementation", fields: []acpField{
		{json: "name", typ: "string"}, {json: "title", typ: "string", omit: true}, {json: "version", typ: "string"}}},
	{name: "MCPServer", def: "McpServer", doc: "e speaks the stdio transport.", fields: []acpField{
		{json: "type", typ: "string", omit: true, note: `"" (stdio), "http" or "sse".`},
		{json: "name", typ: "string"}, {json: "command", typ: "string"}, {json: "args", typ: "[]string"},
		{json: "env", typ: "[]EnvEntry"}, {json: "url", typ: "string", omit: true}}},
	{name: "EnvEntry", def: "EnvVariable", fields: []acpField{{json: "name", typ: "string"}, {json: "value", typ: "string"}}},
	{name: "NewSessionParams", def: "NewSessionRequest", fields: []acpField{
		{json: "cwd", typ: "string"}, {json: "mcpServers", typ: "[]MCPServer", goName: "MCPServers"}}},
	{name: "NewSessionResult", def: "NewSessionResponse", fields: []acpField{
		{json: "sessionId", typ: "string"}, {json: "configOptions", typ: "[]ConfigOption"}}},
	{name: "LoadSessionParams", def: "LoadSessionRequest", also: []string{"ResumeSessionRequest"}, fields: []acpField{
		{json: "sessionId", typ: "string"}, {json: "cwd", typ: "string"}, {json: "mcpServers", typ: "[]MCPServer", goName: "MCPServers"}}},
	{name: "LoadSessionResult", def: "LoadSessionResponse", fields: []acpField{{json: "configOptions", typ: "[]ConfigOption"}}},
	{name: "ListSessionsParams", def: "ListSessionsRequest", fields: []acpField{{json: "cwd", typ: "*string"}, {json: "cursor", typ: "*string"}}},
	{name: "ListSessionsResult", def: "ListSessionsResponse", fields: []acpField{{json: "sessions", typ: "[]SessionInfo"}}},
	{name: "SessionInfo", def: "SessionInfo", fields: []acpField{
		{json: "sessionId", typ: "string"}, {json: "cwd", typ: "string"}, {json: "title", typ: "*string"},
		{json: "updatedAt", typ: "string", omit: true}}},
	{name: "SessionIDParams", def: "CloseSessionRequest", also: []string{"CancelNotification"}, doc: "It is the params of every request that names only a session.", fields: []acpField{
		{json: "sessionId", typ: "string"}}},
	{name: "PromptParams", def: "PromptRequest", fields: []acpField{
		{json: "sessionId", typ: "string"},
		{json: "prompt", typ: "[]json.RawMessage", note: "Each block is read by its type."},
		{json: "_meta", typ: "json.RawMessage", goName: "Meta", note: "e reads its traceparent (W3C Trace Context), as other ACP agents do."}}},
	{name: "PromptResult", def: "PromptResponse", fields: []acpField{{json: "stopReason", typ: "string", note: "A Stop constant."}}},
	{name: "SetConfigOptionParams", def: "SetSessionConfigOptionRequest", fields: []acpField{
		{json: "sessionId", typ: "string"}, {json: "configId", typ: "string"}, {json: "value", typ: "json.RawMessage"}}},
	{name: "SetConfigOptionResult", def: "SetSessionConfigOptionResponse", fields: []acpField{{json: "configOptions", typ: "[]ConfigOption"}}},
	{name: "ConfigOption", def: "SessionConfigOption", doc: "e's options are all of type select.", fields: []acpField{
		{json: "id", typ: "string"}, {json: "name", typ: "string"}, {json: "description", typ: "string", omit: true},
		{json: "category", typ: "string", omit: true}, {json: "type", typ: "string", note: `"select".`},
		{json: "currentValue", typ: "string"}, {json: "options", typ: "[]ConfigChoice"}}},
	{name: "ConfigChoice", def: "SessionConfigSelectOption", fields: []acpField{
		{json: "value", typ: "string"}, {json: "name", typ: "string"}, {json: "description", typ: "string", omit: true}}},
	{name: "Notification", def: "SessionNotification", doc: "It is session/update's params.", fields: []acpField{
		{json: "sessionId", typ: "string"}, {json: "update", typ: "Update"}}},
	{name: "Update", def: "SessionUpdate", also: []string{"ToolCallUpdate"}, doc: "SessionUpdate names the kind of update and the fields that kind uses are set; " +
		"it is empty in request_permission's toolCall.",
		fields: []acpField{
			{json: "sessionUpdate", typ: "string", omit: true},
			{json: "content", typ: "*ContentBlock", omit: true, note: "Of the message and thought chunks."},
			{json: "toolCallId", typ: "string", omit: true}, {json: "title", typ: "*string", omit: true},
			{json: "kind", typ: "string", omit: true}, {json: "status", typ: "string", omit: true},
			{json: "content", typ: "[]ToolCallContent", goName: "ToolOutput", alt: true, note: "Of tool_call and tool_call_update."},
			{json: "locations", typ: "[]Location", omit: true}, {json: "rawInput", typ: "json.RawMessage", omit: true},
			{json: "rawOutput", typ: "any", omit: true},
			{json: "used", typ: "*int64", omit: true}, {json: "size", typ: "*int64", omit: true}, {json: "cost", typ: "*Cost", omit: true},
			{json: "configOptions", typ: "[]ConfigOption", omit: true}}},
	{name: "PromptBlock", def: "ContentBlock", doc: "PromptBlock is a block of a prompt as read, of any type e takes " +
		"(text, image, resource_link, resource); the type says which fields are set.", fields: []acpField{
		{json: "type", typ: "string"}, {json: "text", typ: "*string"}, {json: "data", typ: "string"},
		{json: "mimeType", typ: "string"}, {json: "uri", typ: "string", goName: "URI"}, {json: "name", typ: "string"},
		{json: "resource", typ: "*PromptResource"}}},
	{name: "PromptResource", def: "EmbeddedResourceResource", fields: []acpField{
		{json: "uri", typ: "string", goName: "URI"}, {json: "text", typ: "*string"}, {json: "blob", typ: "*string"}, {json: "mimeType", typ: "string"}}},
	{name: "ContentBlock", def: "ContentBlock", doc: "e sends text blocks.", fields: []acpField{{json: "type", typ: "string"}, {json: "text", typ: "string"}}},
	{name: "ToolCallContent", def: "ToolCallContent", fields: []acpField{
		{json: "type", typ: "string", note: `"content".`}, {json: "content", typ: "ContentBlock"}}},
	{name: "Location", def: "ToolCallLocation", fields: []acpField{{json: "path", typ: "string"}}},
	{name: "Cost", def: "Cost", fields: []acpField{{json: "amount", typ: "float64"}, {json: "currency", typ: "string"}}},
	{name: "PermissionParams", def: "RequestPermissionRequest", doc: "It is session/request_permission's params.", fields: []acpField{
		{json: "sessionId", typ: "string"}, {json: "toolCall", typ: "Update"}, {json: "options", typ: "[]PermissionOption"}}},
	{name: "PermissionOption", def: "PermissionOption", fields: []acpField{
		{json: "optionId", typ: "string"}, {json: "name", typ: "string"}, {json: "kind", typ: "string"}}},
	{name: "PermissionResult", def: "RequestPermissionResponse", fields: []acpField{{json: "outcome", typ: "PermissionOutcome"}}},
	{name: "PermissionOutcome", def: "RequestPermissionOutcome", fields: []acpField{
		{json: "outcome", typ: "string", note: `"cancelled" or "selected".`}, {json: "optionId", typ: "string"}}},
}

// acpConsts are unions of constants in the schema written as Go constants,
// each named prefix + its title (or, untitled, its value) camel-cased; a
// branch without a constant (ErrorCode's "Other") is left out.
var acpConsts = []acpConst{
	{def: "StopReason", prefix: "Stop"},
	{def: "ErrorCode", prefix: "Code", names: map[string]string{
		// e's names, older than the generator.
		"Internal error": "CodeInternal", "Authentication required": "CodeAuthRequired", "Resource not found": "CodeNotFound"}},
}

type acpConst struct {
	def, prefix string
	names       map[string]string // Go names by title, where e's differ
}

// loadACP reads the vendored ACP schema under root.
func loadACP(root string) (acpDoc, error) {
	var doc acpDoc
	b, err := os.ReadFile(filepath.Join(root, acpSchema))
	if err != nil {
		return doc, err
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return doc, fmt.Errorf("acp: %s: %w", acpSchema, err)
	}
	return doc, nil
}

// acpDoc is the part of ACP's schema the generator reads.
type acpDoc struct {
	Defs  map[string]map[string]any `json:"$defs"`
	AnyOf []map[string]any          `json:"anyOf"`
}

// def is the definition named name, or the root's branch titled name
// after "#".
func (d acpDoc) def(name string) (map[string]any, bool) {
	if title, ok := strings.CutPrefix(name, "#"); ok {
		for _, b := range d.AnyOf {
			if b["title"] == title {
				return b, true
			}
		}
		return nil, false
	}
	s, ok := d.Defs[name]
	return s, ok
}

// acpEmit writes the Go source of consts and types from doc.
func acpEmit(doc acpDoc, types []acpType, consts []acpConst) ([]byte, error) {
	var o out
	o.p("// Code generated by go run ./internal/gen from %s. DO NOT EDIT.", acpSchema)
	o.p("")
	o.p("package acp")
	o.p("")
	o.p(`import "encoding/json"`)
	o.p("")
	for _, c := range consts {
		def, ok := doc.Defs[c.def]
		if !ok {
			return nil, fmt.Errorf("acp: %s: no such definition in %s", c.def, acpSchema)
		}
		o.comment("", "// ", fmt.Sprintf("The %s values. Schema: #/$defs/%s.", c.def, c.def))
		o.p("const (")
		for _, v := range branches(def) {
			var value, key string
			switch x := v["const"].(type) {
			case string:
				value, key = strconv.Quote(x), x
			case float64:
				value, key = strconv.FormatFloat(x, 'f', -1, 64), ""
			default:
				continue
			}
			if title, ok := v["title"].(string); ok {
				key = title
			}
			if key == "" {
				return nil, fmt.Errorf("acp: %s: a constant %s without a title", c.def, value)
			}
			name, ok := c.names[key]
			if !ok {
				name = c.prefix + camel(strings.ToLower(strings.ReplaceAll(key, " ", "_")))
			}
			o.comment("\t", "// ", strings.ReplaceAll(firstPara(v["description"]), "**", ""))
			o.p("\t%s = %s", name, value)
		}
		o.p(")")
		o.p("")
	}
	for _, t := range types {
		def, ok := doc.def(t.def)
		if !ok {
			return nil, fmt.Errorf("acp: %s: no definition %s in %s", t.name, t.def, acpSchema)
		}
		props := map[string][]map[string]any{}
		collectProps(doc.Defs, def, props, map[string]bool{})
		where := "ACP's " + t.def
		if title, ok := strings.CutPrefix(t.def, "#"); ok {
			where = "the " + title + " branch of ACP's root"
		}
		d := strings.TrimSpace(t.name + " is " + where + ". " + firstPara(def["description"]) + " " + t.doc)
		if strings.HasPrefix(t.doc, t.name+" ") {
			d = t.doc + " Schema: " + where + "."
		}
		o.comment("", "// ", d)
		o.p("type %s struct {", t.name)
		for _, f := range t.fields {
			ps, ok := props[f.json]
			if !ok {
				return nil, fmt.Errorf("acp: %s.%s: ACP's %s has no such property", t.name, f.json, t.def)
			}
			if err := acpFits(doc.Defs, ps, f.typ); err != nil {
				return nil, fmt.Errorf("acp: %s.%s: %w", t.name, f.json, err)
			}
			if err := acpRefers(doc.Defs, ps, f.typ, types); err != nil {
				return nil, fmt.Errorf("acp: %s.%s: %w", t.name, f.json, err)
			}
			var pd string
			for _, p := range ps {
				if pd = firstPara(p["description"]); pd != "" {
					break
				}
			}
			o.comment("\t", "// ", strings.TrimSpace(pd+" "+f.note))
			name := f.goName
			if name == "" {
				name = piName(f.json)
			}
			tag := f.json
			switch {
			case f.alt:
				tag = "-"
			case f.omit:
				tag += ",omitempty"
			}
			o.p("\t%s %s `json:%s`", name, f.typ, strconv.Quote(tag))
		}
		o.p("}")
		o.p("")
		for _, f := range t.fields {
			if f.alt {
				acpAltMarshal(&o, t.name, f)
			}
		}
	}
	return []byte(o.String()), nil
}

// branches are the alternatives of a union (oneOf or anyOf).
func branches(s map[string]any) []map[string]any {
	var r []map[string]any
	for _, k := range []string{"oneOf", "anyOf"} {
		l, _ := s[k].([]any)
		for _, v := range l {
			if m, ok := v.(map[string]any); ok {
				r = append(r, m)
			}
		}
	}
	return r
}

// collectProps gathers the properties of s by name, through $ref, allOf
// and the branches of a union: a union's properties are those of any branch.
func collectProps(defs map[string]map[string]any, s map[string]any, into map[string][]map[string]any, seen map[string]bool) {
	if ref, ok := s["$ref"].(string); ok {
		name := strings.TrimPrefix(ref, "#/$defs/")
		if seen[name] {
			return
		}
		seen[name] = true
		collectProps(defs, defs[name], into, seen)
	}
	if ps, ok := s["properties"].(map[string]any); ok {
		for k, v := range ps {
			if m, ok := v.(map[string]any); ok {
				into[k] = append(into[k], m)
			}
		}
	}
	all, _ := s["allOf"].([]any)
	for _, v := range all {
		if m, ok := v.(map[string]any); ok {
			collectProps(defs, m, into, seen)
		}
	}
	for _, b := range branches(s) {
		collectProps(defs, b, into, seen)
	}
}

// jsonTypes are the JSON types a schema admits, through $ref, allOf and
// unions; const strings count as string. Empty means any.
func jsonTypes(defs map[string]map[string]any, s map[string]any, into map[string]bool, seen map[string]bool) {
	switch t := s["type"].(type) {
	case string:
		into[t] = true
	case []any:
		for _, v := range t {
			if str, ok := v.(string); ok {
				into[str] = true
			}
		}
	}
	if _, ok := s["const"].(string); ok {
		into["string"] = true
	}
	if _, ok := s["properties"]; ok {
		into["object"] = true
	}
	if ref, ok := s["$ref"].(string); ok {
		name := strings.TrimPrefix(ref, "#/$defs/")
		if !seen[name] {
			seen[name] = true
			jsonTypes(defs, defs[name], into, seen)
		}
	}
	all, _ := s["allOf"].([]any)
	for _, v := range all {
		if m, ok := v.(map[string]any); ok {
			jsonTypes(defs, m, into, seen)
		}
	}
	for _, b := range branches(s) {
		jsonTypes(defs, b, into, seen)
	}
}

// acpFits reports a Go type that cannot hold the property's JSON: a
// property of several branches fits when one branch's type fits.
func acpFits(defs map[string]map[string]any, ps []map[string]any, goType string) error {
	want := strings.TrimPrefix(goType, "*")
	switch {
	case want == "any" || want == "json.RawMessage":
		return nil
	case strings.HasPrefix(want, "[]"):
		want = "array"
	case want == "string":
	case want == "int" || want == "int64":
		want = "integer"
	case want == "float64":
		want = "number"
	case want == "bool":
		want = "boolean"
	default:
		want = "object"
	}
	var seenTypes []string
	for _, p := range ps {
		types := map[string]bool{}
		jsonTypes(defs, p, types, map[string]bool{})
		if len(types) == 0 || types[want] || (want == "number" && types["integer"]) {
			return nil
		}
		for t := range types {
			seenTypes = append(seenTypes, t)
		}
	}
	return fmt.Errorf("its Go type %s does not fit the schema's %v", goType, seenTypes)
}

// acpRefers reports a property whose Go type is one of types but whose
// schema refers (through allOf, unions and items) to none of the
// definitions that type stands for: ACP moved the property to another shape.
func acpRefers(defs map[string]map[string]any, ps []map[string]any, goType string, types []acpType) error {
	name := strings.TrimLeft(goType, "*[]")
	i := slices.IndexFunc(types, func(t acpType) bool { return t.name == name })
	if i < 0 {
		return nil
	}
	stands := append([]string{types[i].def}, types[i].also...)
	refs := map[string]bool{}
	for _, p := range ps {
		refsOf(defs, p, refs)
	}
	for _, d := range stands {
		if refs[d] {
			return nil
		}
	}
	return fmt.Errorf("%s stands for %v, and the schema's property refers to none of them", name, stands)
}

// refsOf gathers the definitions s refers to through $ref, allOf, unions
// and array items, not through its properties.
func refsOf(defs map[string]map[string]any, s map[string]any, into map[string]bool) {
	if ref, ok := s["$ref"].(string); ok {
		name := strings.TrimPrefix(ref, "#/$defs/")
		if into[name] {
			return
		}
		into[name] = true
		refsOf(defs, defs[name], into)
	}
	if items, ok := s["items"].(map[string]any); ok {
		refsOf(defs, items, into)
	}
	all, _ := s["allOf"].([]any)
	for _, v := range all {
		if m, ok := v.(map[string]any); ok {
			refsOf(defs, m, into)
		}
	}
	for _, b := range branches(s) {
		refsOf(defs, b, into)
	}
}

// firstPara is a description's first paragraph on one line.
func firstPara(v any) string {
	s, _ := v.(string)
	s, _, _ = strings.Cut(s, "\n\n")
	return strings.Join(strings.Fields(s), " ")
}

// acpAltMarshal writes the MarshalJSON of a type with an alt field: the
// field, when set, goes out under its property's name in place of the
// other field of that name.
func acpAltMarshal(o *out, typ string, f acpField) {
	o.p("// MarshalJSON writes %s under %q when it is set.", f.goName, f.json)
	o.p("func (v %s) MarshalJSON() ([]byte, error) {", typ)
	o.p("\ttype plain %s", typ)
	o.p("\tif v.%s == nil {", f.goName)
	o.p("\t\treturn json.Marshal(plain(v))")
	o.p("\t}")
	o.p("\treturn json.Marshal(struct {")
	o.p("\t\tplain")
	o.p("\t\t%s %s `json:%q`", f.goName, f.typ, f.json)
	o.p("\t}{plain(v), v.%s})", f.goName)
	o.p("}")
	o.p("")
}

// acpDispatchOut is e acp's generated dispatch, beside its hand-written
// handlers (internal/acp/agent.go).
const acpDispatchOut = "internal/acp/dispatch_gen.go"

// acpMethod is one method of ACP's client (a request or a notification to
// the agent) that e acp serves, and the facts of its dispatch.
type acpMethod struct {
	// method is ACP's name: a definition of the schema has it as its
	// x-method, on the agent's side (x-side).
	method string
	// params is the Go type of acpTypes the params decode into: the
	// type stands for the method's definition. "" for a method whose
	// params e reads none of (authenticate).
	params string
	// session names the param naming the session the message belongs
	// to: its messages run in order, apart from other sessions' (H1).
	session string
	// notification is set for a notification: no answer; it is served
	// before the next line is read (session/cancel: the client's answer
	// to the permission request it cancels comes next, K5).
	notification bool
	// later is set for a request answered once what it started has
	// ended (a prompt's turn, a close's), from its own goroutine.
	later bool
}

// acpMethods are the methods e acp serves: a method added here does not
// build until its handler (*Agent).<method in camelCase> exists
// (session/set_config_option: sessionSetConfigOption).
var acpMethods = []acpMethod{
	{method: "initialize", params: "InitializeParams"},
	{method: "authenticate"}, // e needs none: every method answers {}
	{method: "session/new", params: "NewSessionParams"},
	{method: "session/load", params: "LoadSessionParams", session: "sessionId"},
	{method: "session/resume", params: "LoadSessionParams", session: "sessionId"},
	{method: "session/list", params: "ListSessionsParams"},
	{method: "session/close", params: "SessionIDParams", session: "sessionId", later: true},
	{method: "session/prompt", params: "PromptParams", session: "sessionId", later: true},
	{method: "session/set_config_option", params: "SetConfigOptionParams", session: "sessionId"},
	{method: "session/cancel", params: "SessionIDParams", session: "sessionId", notification: true},
}

// acpDispatch checks each method against doc (ACP's client sends it, as a
// request or a notification, the agent serves it, its params type stands
// for its definition, its session param is one of the definition's
// properties) and writes package acp's dispatch tables.
func acpDispatch(doc acpDoc, types []acpType, ms []acpMethod) ([]byte, error) {
	sent := map[bool]map[string]bool{} // by notification: the definitions the client sends
	for notification, def := range map[bool]string{false: "ClientRequest", true: "ClientNotification"} {
		props, _ := doc.Defs[def]["properties"].(map[string]any)
		params, _ := props["params"].(map[string]any)
		sent[notification] = map[string]bool{}
		if params != nil {
			refsOf(doc.Defs, params, sent[notification])
		}
	}
	kind := map[bool]string{false: "request", true: "notification"}
	var o out
	o.p("// Code generated by go run ./internal/gen from %s and internal/gen's acpMethods. DO NOT EDIT.", acpSchema)
	o.p("")
	o.p("package acp")
	o.p("")
	o.p(`import "encoding/json"`)
	o.p("")
	o.p("// methods has one handler per request e acp serves (internal/gen's acpMethods):")
	o.p("// its params decoded into the Go type of its ACP definition and handed to")
	o.p("// (*Agent).<method in camelCase> (session/new: sessionNew), which answers at once")
	o.p("// (answer) or once what it started has ended (answerLater).")
	o.p("var methods = map[string]handler{")
	var notes, sessions out
	for _, m := range ms {
		var def string
		for _, name := range sortedKeys(doc.Defs) {
			d := doc.Defs[name]
			if d["x-method"] == m.method && d["x-side"] == "agent" && sent[m.notification][name] {
				def = name
			}
		}
		if def == "" {
			return nil, fmt.Errorf("acp: method %s: ACP's client sends no %s of that x-method to the agent", m.method, kind[m.notification])
		}
		if m.session != "" {
			props := map[string][]map[string]any{}
			collectProps(doc.Defs, doc.Defs[def], props, map[string]bool{})
			if _, ok := props[m.session]; !ok {
				return nil, fmt.Errorf("acp: method %s: session param %s: ACP's %s has no such property", m.method, m.session, def)
			}
			sessions.p("\t%q: %q,", m.method, m.session)
		}
		if m.params != "" {
			i := slices.IndexFunc(types, func(t acpType) bool { return t.name == m.params })
			if i < 0 {
				return nil, fmt.Errorf("acp: method %s: params type %s is not in acpTypes", m.method, m.params)
			}
			if stands := append([]string{types[i].def}, types[i].also...); !slices.Contains(stands, def) {
				return nil, fmt.Errorf("acp: method %s: params type %s stands for %v, not ACP's %s", m.method, m.params, stands, def)
			}
		}
		h := "(*Agent)." + lowerCamel(m.method)
		switch {
		case m.notification && m.params == "":
			return nil, fmt.Errorf("acp: method %s: a notification needs its params type", m.method)
		case m.notification:
			notes.p("\t%q: notified[%s](%q, %s),", m.method, m.params, m.method, h)
		case m.params == "":
			o.p("\t%q: answerBare(%s),", m.method, h)
		case m.later:
			o.p("\t%q: answerLater[%s](%q, %s),", m.method, m.params, m.method, h)
		default:
			o.p("\t%q: answer[%s](%q, %s),", m.method, m.params, m.method, h)
		}
	}
	o.p("}")
	o.p("")
	o.p("// notifications has one handler per notification e acp serves, its params")
	o.p("// decoded as a request's; it is served before the next line is read")
	o.p("// (lineserver.Queues.Now): the client's answer to what it cancels comes next.")
	o.p("var notifications = map[string]func(*Agent, json.RawMessage){")
	o.WriteString(notes.String())
	o.p("}")
	o.p("")
	o.p("// sessionParam names, per method, the param naming the session whose earlier")
	o.p("// messages it waits for (H1); a method not here waits for none.")
	o.p("var sessionParam = map[string]string{")
	o.WriteString(sessions.String())
	o.p("}")
	return []byte(o.String()), nil
}
