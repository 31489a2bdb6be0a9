package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// The engine (internal/agent) emits e's events and turn result as its own
// structs, which e -p prints as they are and every front end translates.
// They are generated here from the same schemas as package protocol, so
// there is no second, hand-kept set, but in the engine's Go: ids and
// counts are ints, enums plain strings (the schema checks the values), the
// usage embeds model.Usage, and each struct may carry fields that are not
// on e's wire (json:"-") for the dialects that show more.
//
// Those fields are listed in agentExtras below, not in the schemas: the
// schemas are the public contract for every client language, and what
// they would say (a Go type of another package) means nothing there.

// agentOut is the generated file, beside the hand-written engine.
const agentOut = "internal/agent/event_gen.go"

// agentShapes are the shapes besides the events and the result, by their
// schema's path and the Go name: those of defs.json the events and the
// result use, and the params of e's tool.approve ask (a call and its
// timeout), which the engine's approval asks a front end to send, and the
// answer the front end reads back.
var agentShapes = []struct{ path, name string }{
	{"defs.json#/$defs/call", "Call"},
	{"defs.json#/$defs/error_details", "ErrorDetails"},
	{"defs.json#/$defs/sandbox_policy", "SandboxPolicy"},
	{"defs.json#/$defs/tool_counts", "ToolCounts"},
	{"defs.json#/$defs/usage", "Usage"},
	{"lines/ask.json#/$defs/approve", "ApproveParams"},
	{"methods/ask.reply.params.json#/$defs/approve_result", "ApproveReply"},
}

// agentFieldNames are Go field names where the property's camel case
// reads worse than the engine's name.
var agentFieldNames = map[string]string{"retry_decision": "Decision"}

// agentInts are the integer properties the engine holds as int (call ids,
// attempts, small counts), by property name; every other integer is an
// int64 (tokens, milliseconds).
var agentInts = map[string]bool{"id": true, "attempt": true, "attempts": true, "summary_chars": true,
	"calls": true, "failures": true, "status": true}

// agentTypes are Go types for a property other than its schema's, by type
// and property: the result's sandbox is nil until the session layer sets it.
var agentTypes = map[string]string{"Result.sandbox": "*SandboxPolicy"}

// agentAlwaysSent are optional properties the engine always sends: they
// came after the shape, so an older server's lines lack them.
var agentAlwaysSent = map[string]bool{"Result.stop_reason": true, "Result.structured_output": true}

// agentPointers are the event types sent as pointers: the ones a turn
// streams by the thousand (a struct value in an interface costs an
// allocation per event; see Event).
var agentPointers = map[string]bool{"text": true, "reasoning": true}

// agentEmbed is a Go struct a type embeds in place of the properties it
// marshals to.
type agentEmbed struct {
	goType string
	props  []string // nil for all the properties of the agentShapes shape goType
}

// agentEmbeds: a usage is model.Usage plus the derived prompt_tokens, the
// usage event is a usage plus the answer's ids, an approval's params are
// the call plus a timeout.
var agentEmbeds = map[string]agentEmbed{
	"Usage":         {goType: "model.Usage", props: []string{"input_tokens", "output_tokens", "cache_read_tokens", "cache_write_5m_tokens", "cache_write_1h_tokens", "reasoning_tokens"}},
	"UsageEvent":    {goType: "Usage"},
	"ApproveParams": {goType: "Call"},
}

// agentExtra is a field not on e's wire.
type agentExtra struct{ name, goType, doc string }

// agentExtras are the fields of each type that e's wire does not carry:
// what the pi dialect shows beyond e's events, and a result's ready
// encoding.
var agentExtras = map[string][]agentExtra{
	"ToolOutput": {{"Snapshot", "*tool.OutputSnapshot", "Snapshot is bash's output so far as pi's bash tool reports it in an update (tool.Env.SpillUpdate), for the pi dialect."}},
	"ToolEnd": {
		{"Shell", "*tool.ShellResult", "Shell is how a bash call's command ended when it exited by itself (tool.Result.Shell), for front ends that show it as data (the pi dialect's structuredContent)."},
		{"Details", "json.RawMessage", "Details are pi's details of the result (tool.Result.Details), for the pi dialect."},
	},
	"UsageEvent": {
		{"ResponseModel", "string", "ResponseModel is the model the answer says answered when it is not the one asked for (model.Response), for front ends that show it (the pi dialect's responseModel)."},
		{"Signatures", "[]string", "Signatures are the signatures of the answer's reasoning parts that have text, in order, for front ends that show them with the streamed reasoning (the pi dialect's thinkingSignature); session.messages has them."},
	},
	"Retry": {{"Logged", "*store.Entry", "Logged is the failed attempt's entry in the history (nil when it could not be written), for front ends that announce it (the pi dialect's entry_appended); session.entries has it."}},
	"TurnEnd": {
		{"ResponseID", "string", "ResponseID is the provider's id of the answer an interruption cut short, when it gave one, for front ends that show it (the pi dialect's responseId)."},
		{"ResponseModel", "string", "ResponseModel is likewise the model that answer named (pi's responseModel), \"\" when it named none or the one asked for."},
	},
	"Result": {{"FinalOutputJSON", "[]byte", "FinalOutputJSON is FinalOutput encoded as a JSON string, as jsonenc.AppendString encodes it, when the turn has that at hand (a long answer's entry); nil otherwise. Read only: a view of the session's history."}},
}

// agentImports are the packages the Go types above may name.
var agentImports = map[string]string{
	"json":  "encoding/json",
	"model": "github.com/e-agent/e/internal/model",
	"store": "github.com/e-agent/e/internal/store",
	"tool":  "github.com/e-agent/e/internal/tool",
}

// agentStamps are the properties e rpc adds to every event line (S2), not
// the engine's.
var agentStamps = map[string]bool{"type": true, "session": true, "request": true}

// agentType is one generated struct.
type agentType struct {
	name  string
	d     *decl
	event string // the event type, for events
}

// agentTypeList returns the structs to generate, in output order: the
// shared shapes, the result, the events by type. An event named like a
// shared shape (usage, error_details) gets the suffix Event.
func agentTypeList(m *model) ([]agentType, error) {
	var out []agentType
	names := map[string]bool{}
	for _, sh := range agentShapes {
		file, frag, _ := strings.Cut(sh.path, "#")
		t, err := m.ref(base+file, "#"+frag)
		if err != nil {
			return nil, fmt.Errorf("agent: %s: %w", sh.path, err)
		}
		out = append(out, agentType{name: sh.name, d: t.decl})
		names[sh.name] = true
	}
	res := m.byKey[base+"result.json"]
	if res == nil {
		return nil, fmt.Errorf("agent: no result.json")
	}
	out = append(out, agentType{name: "Result", d: res})
	for _, e := range m.events {
		name := camel(e.event)
		if names[name] {
			name += "Event"
		}
		out = append(out, agentType{name: name, d: e, event: e.event})
	}
	return out, nil
}

// agentGoFile writes package agent's event and result structs. It may
// declare shapes in m that no schema refers to (agentShapes): m must be a
// model of its own, not the one of package protocol.
func agentGoFile(m *model) ([]byte, error) {
	types, err := agentTypeList(m)
	if err != nil {
		return nil, err
	}
	byDecl := map[*decl]string{}
	for _, t := range types {
		byDecl[t.d] = t.name
	}
	var body out
	used := map[string]bool{} // the packages the Go types name
	seen := map[string]bool{} // the properties generated, as Type.property
	use := func(goType string) string {
		if pkg, _, ok := strings.Cut(strings.TrimLeft(goType, "*[]"), "."); ok {
			used[pkg] = true
		}
		return goType
	}
	for _, t := range types {
		fields, err := agentFields(t, types, byDecl, use, seen)
		if err != nil {
			return nil, err
		}
		body.comment("", "// ", agentDoc(t))
		if fields == "" {
			body.p("type %s struct{}", t.name)
		} else {
			body.p("type %s struct {\n%s}", t.name, fields)
		}
		body.p("")
		if t.event != "" {
			recv := t.name
			if agentPointers[t.event] {
				recv = "*" + recv
			}
			body.p("// EventType returns %q.", t.event)
			body.p("func (%s) EventType() string { return %q }", recv, t.event)
			body.p("")
		}
	}
	for name := range agentExtras {
		if declOf(types, name) == nil {
			return nil, fmt.Errorf("agent: agentExtras names %s, which is no generated type", name)
		}
	}
	for _, key := range append(sortedKeys(agentTypes), sortedKeys(agentAlwaysSent)...) {
		if !seen[key] {
			return nil, fmt.Errorf("agent: agentTypes or agentAlwaysSent names %s, which is no generated field", key)
		}
	}
	var o out
	o.p("// %s", header)
	o.p("")
	o.p("package agent")
	o.p("")
	o.p("import (")
	var std, mod []string
	for _, pkg := range sortedKeys(used) {
		path, ok := agentImports[pkg]
		switch {
		case !ok:
			return nil, fmt.Errorf("agent: a Go type names package %s, which agentImports lacks", pkg)
		case strings.Contains(path, "."):
			mod = append(mod, path)
		default:
			std = append(std, path)
		}
	}
	for _, path := range std {
		o.p("\t%q", path)
	}
	if len(std) > 0 && len(mod) > 0 {
		o.p("")
	}
	for _, path := range mod {
		o.p("\t%q", path)
	}
	o.p(")")
	o.p("")
	o.WriteString(body.String())
	return []byte(o.String()), nil
}

// agentFields returns the field lines of t's struct: the embeds, the
// properties they do not cover, the fields not on the wire.
func agentFields(t agentType, types []agentType, byDecl map[*decl]string, use func(string) string, seen map[string]bool) (string, error) {
	var body out
	covered := map[string]bool{}
	if e, ok := agentEmbeds[t.name]; ok {
		props := e.props
		if props == nil {
			var err error
			if props, err = shapeProps(types, e.goType); err != nil {
				return "", fmt.Errorf("agent: %s: %w", t.name, err)
			}
		}
		for _, p := range props {
			if !slices.ContainsFunc(t.d.fields, func(f *field) bool { return f.json == p }) {
				return "", fmt.Errorf("agent: %s embeds %s for %s, which %s lacks", t.name, e.goType, p, t.d.source)
			}
			covered[p] = true
		}
		body.p("\t%s", use(e.goType))
	}
	for _, f := range t.d.fields {
		if covered[f.json] || t.event != "" && agentStamps[f.json] {
			continue
		}
		key := t.name + "." + f.json
		seen[key] = true
		goType := agentTypes[key]
		if goType == "" {
			var err error
			if goType, err = agentGoType(f.t, f.json, byDecl); err != nil {
				return "", fmt.Errorf("agent: %s: %w", key, err)
			}
		}
		body.comment("\t", "// ", agentFieldDoc(f))
		tag := f.json
		if !f.required && !agentAlwaysSent[key] {
			tag += ",omitempty"
		}
		name := agentFieldNames[f.json]
		if name == "" {
			name = camel(f.json)
		}
		body.p("\t%s %s `json:%q`", name, use(goType), tag)
	}
	for _, x := range agentExtras[t.name] {
		body.p("")
		body.comment("\t", "// ", x.doc+" Not on e's wire.")
		body.p("\t%s %s `json:\"-\"`", x.name, use(x.goType))
	}
	return body.String(), nil
}

// declOf returns the decl of the generated type name, nil when none.
func declOf(types []agentType, name string) *decl {
	for _, t := range types {
		if t.name == name {
			return t.d
		}
	}
	return nil
}

// shapeProps returns the properties of the generated type name.
func shapeProps(types []agentType, name string) ([]string, error) {
	d := declOf(types, name)
	if d == nil {
		return nil, fmt.Errorf("%s is no generated type", name)
	}
	var props []string
	for _, f := range d.fields {
		props = append(props, f.json)
	}
	return props, nil
}

// agentGoType is the engine's Go type of a property's type expression.
func agentGoType(t texpr, prop string, byDecl map[*decl]string) (string, error) {
	var s string
	switch t.kind {
	case kAny:
		return "json.RawMessage", nil // null is a RawMessage too
	case kString:
		s = "string"
	case kInt:
		s = "int64"
		if agentInts[prop] {
			s = "int"
		}
	case kNumber:
		s = "float64"
	case kBool:
		s = "bool"
	case kArray:
		e, err := agentGoType(*t.elem, "", byDecl)
		if err != nil {
			return "", err
		}
		return "[]" + e, nil
	case kNamed:
		switch {
		case t.decl.isEnum:
			s = "string"
		case byDecl[t.decl] != "":
			s = byDecl[t.decl]
		default:
			return "", fmt.Errorf("%s has no Go type here: add it to agentShapes or agentTypes", t.decl.source)
		}
	default:
		return "", fmt.Errorf("a type of kind %d has no Go type here: add it to agentTypes", t.kind)
	}
	if t.nullable {
		return "*" + s, nil
	}
	return s, nil
}

// agentDoc is a generated type's doc comment.
func agentDoc(t agentType) string {
	d := t.d
	doc := t.name + " is " + sentence(d.desc)
	if d.desc == "" {
		doc = t.name + " is a wire shape."
	}
	if t.event != "" {
		doc = t.name + " is the " + d.title
		if d.desc != "" {
			doc += ": " + sentence(d.desc)
		}
	}
	if !strings.HasSuffix(doc, ".") {
		doc += "."
	}
	return doc + " Schema: " + d.source + "."
}

// sentence returns a description to go on a sentence: its first letter in
// lower case, unless it starts a name (M18, JSONL).
func sentence(s string) string {
	r := []rune(s)
	if len(r) < 2 || unicode.IsUpper(r[1]) || unicode.IsDigit(r[1]) {
		return s
	}
	r[0] = unicode.ToLower(r[0])
	return string(r)
}

// agentFieldDoc is a field's doc comment: its description, and the values
// of an enum, which the Go type (a string) does not tell.
func agentFieldDoc(f *field) string {
	doc := f.doc
	if f.t.kind == kNamed && f.t.decl.isEnum {
		var q []string
		for _, v := range f.t.decl.enum {
			q = append(q, strconv.Quote(v))
		}
		if doc != "" && !strings.HasSuffix(doc, ".") {
			doc += "."
		}
		doc = strings.TrimSpace(doc + " One of " + strings.Join(q, ", ") + ".")
	}
	return doc
}
