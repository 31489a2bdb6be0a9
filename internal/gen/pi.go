package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"unicode"
)

// The pi dialect (e --mode rpc, e --mode json) has schemas of its own under
// schemas/pi; the Go structs of its messages and events are generated from
// them into package pi. pi's shapes differ from e's in three ways the
// generator handles here: camelCase property names, unions of several
// shapes (content blocks, messages, assistantMessageEvent), and optional
// numbers and flags whose zero is sent (durationMs 0, totalFromProvider
// false), so that an absent one must be told from a zero one.

// piOut is the generated file, beside the hand-written behaviour over it.
const piOut = "internal/pi/wire_gen.go"

// piFiles are the schema files whose $defs become types, in output order,
// with the prefix of their type names.
var piFiles = []struct{ name, prefix string }{
	{"defs.json", ""}, {"event.json", ""},
	{"extension_ui_request.json", "UIRequest"}, // "select", "notify", … name methods, not shapes
	{"response.json", "Response"},
	{"command.json", "Command"},
}

// piNames are type names where the key-and-property rule reads badly.
var piNames = map[string]string{
	"pi/defs.json#/$defs/system_message/properties/toolsAdded/items": "ToolDecl",
	"pi/defs.json#/$defs/compaction_result/properties/details":       "CompactionDetails",
}

// piUnions name the hand-written Go type (internal/pi) that holds a union
// of several shapes: a tagged struct whose MarshalJSON writes the generated
// struct of its branch. A union not listed is any.
var piUnions = map[string]string{
	"pi/defs.json#/$defs/user_message/properties/content":              "[]Content",
	"pi/defs.json#/$defs/assistant_message/properties/content/items":   "Content",
	"pi/defs.json#/$defs/tool_result_message/properties/content/items": "Content",
	"pi/defs.json#/$defs/tool_result/properties/content/items":         "Content",
	// e writes its whole prompt as one text (spec/pi.md).
	"pi/defs.json#/$defs/system_message/properties/content":                "string",
	"pi/event.json#/$defs/message_update/properties/assistantMessageEvent": "AssistantEvent",
}

// loadPi reads the pi schemas under dir (schemas/) and declares every $defs
// entry of piFiles under its key's Go name.
func loadPi(dir string) (*model, error) {
	m := &model{byKey: map[string]*decl{}, docs: map[string]any{}, names: map[string]bool{}, order: map[uintptr][]string{}, pi: true}
	for _, f := range piFiles {
		b, err := os.ReadFile(filepath.Join(dir, "pi", f.name))
		if err != nil {
			return nil, err
		}
		v, err := m.decode(b)
		if err != nil {
			return nil, fmt.Errorf("pi/%s: %w", f.name, err)
		}
		m.docs[base+"pi/"+f.name] = v
	}
	for _, f := range piFiles {
		url := base + "pi/" + f.name
		defs, _ := m.docs[url].(map[string]any)["$defs"].(map[string]any)
		for _, k := range m.order[reflect.ValueOf(defs).Pointer()] {
			if _, err := m.declare(url+"#/$defs/"+k, f.prefix+camel(k), defs[k].(map[string]any), url); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

// piGoFile writes the pi wire types, package pi.
func (m *model) piGoFile() []byte {
	var body out
	for _, d := range m.decls {
		body.comment("", "// ", goDoc(d))
		switch {
		case d.isEnum:
			// A plain string: the schema checks the value, and pi's code
			// passes levels and reasons around as strings.
			body.p("type %s = string", d.name)
		case d.alias != nil:
			body.p("type %s = %s", d.name, piGoType(*d.alias))
		default:
			body.p("type %s struct {", d.name)
			for _, f := range d.fields {
				doc := f.doc
				if f.t.constant != "" {
					doc = strings.TrimSpace(doc + " Always " + strconv.Quote(f.t.constant) + ".")
				}
				body.comment("\t", "// ", doc)
				tag := f.json
				if !f.required {
					tag += ",omitzero"
				}
				body.p("\t%s %s `json:%q`", piName(f.json), piFieldType(f, strings.HasPrefix(d.source, "pi/command.json")), tag)
			}
			body.p("}")
		}
		body.p("")
	}
	var o out
	o.p("// %s", header)
	o.p("")
	o.p("package pi")
	o.p("")
	if strings.Contains(body.String(), "json.RawMessage") {
		o.p(`import "encoding/json"`)
		o.p("")
	}
	o.WriteString(body.String())
	return []byte(o.String())
}

// piFieldType is a field's Go type. An optional number, flag or object
// without a default is a pointer: nil leaves it out, a zero is sent. An
// optional string or array leaves out its zero ("" or nil), as pi does,
// except in a command (input): there a string is a pointer too, so that a
// handler tells a field given as "" from one left out.
func piFieldType(f *field, input bool) string {
	s := piGoType(f.t)
	if f.required || f.hasDefault || f.t.nullable {
		return s
	}
	switch f.t.kind {
	case kInt, kNumber, kBool:
		return "*" + s
	case kString:
		if input {
			return "*" + s
		}
	case kNamed:
		if f.t.decl.alias == nil && !f.t.decl.isEnum {
			return "*" + s
		}
	}
	return s
}

func piGoType(t texpr) string {
	var s string
	switch t.kind {
	case kAny:
		return "any"
	case kObject:
		return "json.RawMessage"
	case kGo:
		return t.goType
	case kString:
		s = "string"
	case kInt:
		s = "int64"
	case kNumber:
		s = "float64"
	case kBool:
		s = "bool"
	case kArray:
		s = "[]" + piGoType(*t.elem)
	case kNamed:
		s = t.decl.name
	}
	if t.nullable {
		return "*" + s
	}
	return s
}

// piName turns a camelCase (or snake_case) property name into a Go name:
// "toolCallId" → ToolCallID, "exit_code" → ExitCode.
func piName(k string) string {
	var words []string
	cur := ""
	for _, r := range k {
		switch {
		case r == '_' || r == '-' || r == '.':
			words, cur = append(words, cur), ""
			continue
		case unicode.IsUpper(r) && cur != "":
			words, cur = append(words, cur), ""
		}
		cur += string(r)
	}
	words = append(words, cur)
	var b strings.Builder
	for _, w := range words {
		if w == "" {
			continue
		}
		lw := strings.ToLower(w)
		if up, ok := initialisms[lw]; ok {
			b.WriteString(up)
		} else if lw == "api" {
			b.WriteString("API")
		} else {
			b.WriteString(strings.ToUpper(w[:1]) + w[1:])
		}
	}
	return b.String()
}

// piDispatchOut is pi's generated dispatch, beside its hand-written
// handlers (internal/pi/rpc.go).
const piDispatchOut = "internal/pi/dispatch_gen.go"

// piFacts is what a command's schema (a $defs entry of pi/command.json)
// says of its dispatch, in its "x-e" keyword, which every command must have
// (an empty one for none of these): a new command's author decides.
type piFacts struct {
	// Query is set for a command that only reads the process's state: it
	// passes a command stuck opening a file (H1).
	Query bool `json:"query"`
	// Stop is set for a command that stops work: in effect before the
	// next line is read (the client's answer to a dialog it ends comes
	// next), unless earlier commands still run.
	Stop bool `json:"stop"`
	// Responds is set for a command whose handler writes its response
	// itself (once a run settled, a compaction ended, a command exited);
	// any other's handler returns the response's data or error.
	Responds bool `json:"responds"`
}

// piCommand is one command of pi's dialect and its facts.
type piCommand struct {
	typ string
	piFacts
}

// loadPiCommands reads every command's facts from pi/command.json under
// dir (schemas/), in type order.
func loadPiCommands(dir string) ([]piCommand, error) {
	const file = "pi/command.json"
	b, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		return nil, err
	}
	return piCommands(file, b)
}

// piCommands reads the commands' facts from the schema b of file.
func piCommands(file string, b []byte) ([]piCommand, error) {
	var doc struct {
		Defs map[string]struct {
			XE *json.RawMessage `json:"x-e"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	var out []piCommand
	for _, typ := range sortedKeys(doc.Defs) {
		xe := doc.Defs[typ].XE
		if xe == nil {
			return nil, fmt.Errorf(`%s: $defs/%s: no "x-e" facts (query, stop, responds; {} for none): every command says how it is dispatched`, file, typ)
		}
		c := piCommand{typ: typ}
		d := json.NewDecoder(bytes.NewReader(*xe))
		d.DisallowUnknownFields()
		if err := d.Decode(&c.piFacts); err != nil {
			return nil, fmt.Errorf("%s: $defs/%s: x-e: %w", file, typ, err)
		}
		if c.Query && (c.Stop || c.Responds) {
			return nil, fmt.Errorf("%s: $defs/%s: x-e: a query neither stops work nor responds itself", file, typ)
		}
		out = append(out, c)
	}
	return out, nil
}

// lowerCamel is the Go name of a pi command's or an ACP method's
// handler: get_state → getState, export_html → exportHtml (its struct is
// CommandExportHtml), session/set_config_option → sessionSetConfigOption.
func lowerCamel(name string) string {
	c := camel(name)
	return strings.ToLower(c[:1]) + c[1:]
}

// piDispatchFile is internal/pi/dispatch_gen.go: the command table and
// the query and stop sets.
func piDispatchFile(cs []piCommand) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "// %s\n\npackage pi\n\n", header)
	b.WriteString("// commands has one entry per command of schemas/pi/command.json: the line,\n")
	b.WriteString("// which the command's schema accepted, decoded into the command's generated\n")
	b.WriteString("// struct and handed to (*front).<type in camelCase> (get_state: getState),\n")
	b.WriteString("// so a command added to the schemas does not build until its handler\n")
	b.WriteString("// exists. A handler returns its response's data or error (answer), or,\n")
	b.WriteString("// for a command with x-e responds, writes its response itself (answerLater).\n")
	b.WriteString("var commands = map[string]func(*front, *command){\n")
	for _, c := range cs {
		adapt := "answer"
		if c.Responds {
			adapt = "answerLater"
		}
		fmt.Fprintf(&b, "\t%q: %s[Command%s]((*front).%s),\n", c.typ, adapt, camel(c.typ), lowerCamel(c.typ))
	}
	b.WriteString("}\n\n")
	var queries, stops []string
	for _, c := range cs {
		if c.Query {
			queries = append(queries, c.typ)
		}
		if c.Stop {
			stops = append(stops, c.typ)
		}
	}
	writeSet(&b, "queries only read the process's state (x-e query): they pass a command\n"+
		"stuck opening a file (H1).", "queries", queries)
	b.WriteString("\n")
	writeSet(&b, "stops are the commands that stop work (x-e stop): in effect before the\n"+
		"next line is read (the client's answer to a dialog the abort ends comes\n"+
		"next), unless earlier commands still run, after which they keep their place.", "stops", stops)
	return b.Bytes()
}
