package main

import (
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
				body.p("\t%s %s `json:%q`", piName(f.json), piFieldType(f), tag)
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
// optional string or array leaves out its zero ("" or nil), as pi does.
func piFieldType(f *field) string {
	s := piGoType(f.t)
	if f.required || f.hasDefault || f.t.nullable {
		return s
	}
	switch f.t.kind {
	case kInt, kNumber, kBool:
		return "*" + s
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
