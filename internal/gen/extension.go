package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The extension protocol (schemas/extension, spec/extensions.md) has one
// schema per line. e validates nothing an extension writes: it decodes the
// shapes below and checks by hand what it needs, so their Go differs from
// protocol's in three ways. A required scalar is a pointer, so that one
// left out (refused: a gate without allow, a tool.call result without
// content) is told from its zero; an optional one is a value, its zero
// meaning what leaving it out means. An untyped value or a free-form
// object is kept raw (ids are echoed, params decoded by method). An enum
// is a plain string: e checks the values itself, ignoring unknown ones.
// The lines e writes are built as maps, their bytes unchanged.

// extOut is the generated file, beside the hand-written host.
const extOut = "internal/extension/wire_gen.go"

// extShapes are the shapes e decodes, by their schema's path under
// schemas/extension and their Go name, in output order.
var extShapes = []struct{ path, name string }{
	{"defs.json#/$defs/envelope", "Envelope"},
	{"defs.json#/$defs/tool", "ToolSpec"}, // Tool is the registered tool
	{"defs.json#/$defs/question", "QuestionParams"},
	{"initialize.result.json#/properties/result", "InitializeResult"},
	{"tool.call.result.json#/properties/result", "ToolCallResult"},
	{"tool.gate.result.json#/properties/result", "ToolGateResult"},
	{"tools.register.json#/properties/params", "ToolsRegisterParams"},
	{"ui.show.json#/properties/params", "UIShowParams"}, // ui.notify's too: the same less title
}

// extUnread are properties e does not read, by Go type and property: left
// out, so that a value of another type does not fail the line.
var extUnread = map[string]bool{"InitializeResult.name": true}

// loadExt reads schemas/extension under dir (schemas/) and declares
// extShapes.
func loadExt(dir string) (*model, error) {
	m := &model{byKey: map[string]*decl{}, docs: map[string]any{}, names: map[string]bool{}, order: map[uintptr][]string{}}
	files, err := filepath.Glob(filepath.Join(dir, "extension", "*.json"))
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		v, err := m.decode(b)
		if err != nil {
			return nil, fmt.Errorf("extension/%s: %w", filepath.Base(f), err)
		}
		m.docs[base+"extension/"+filepath.Base(f)] = v
	}
	for _, s := range extShapes {
		file, ptr, _ := strings.Cut(s.path, "#")
		url := base + "extension/" + file
		node, ok := m.docs[url]
		for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
			if !ok {
				break
			}
			parent, _ := node.(map[string]any) // nil: no property of a non-object
			node, ok = parent[tok]
		}
		if !ok {
			return nil, fmt.Errorf("extension/%s: no such node", s.path)
		}
		obj, _ := node.(map[string]any)
		if !isStruct(obj) {
			return nil, fmt.Errorf("extension/%s: not an object with properties", s.path)
		}
		if _, err := m.declare(url+"#"+ptr, s.name, obj, url); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// extGoFile writes the extension protocol's wire types, package extension.
func (m *model) extGoFile() ([]byte, error) {
	var body out
	for _, d := range m.decls {
		switch {
		case d.isEnum:
			continue // a plain string where used
		case d.alias != nil || len(d.embeds) > 0:
			return nil, fmt.Errorf("%s: only objects with properties are supported", d.source)
		}
		body.comment("", "// ", extDoc(m, d))
		body.p("type %s struct {", d.name)
		for _, f := range d.fields {
			if extUnread[d.name+"."+f.json] {
				continue
			}
			t, err := extFieldType(f)
			if err != nil {
				return nil, fmt.Errorf("%s: %s: %w", d.source, f.json, err)
			}
			body.comment("\t", "// ", f.doc)
			body.p("\t%s %s `json:%q`", camel(f.json), t, f.json)
		}
		body.p("}")
		body.p("")
	}
	var o out
	o.p("// %s", header)
	o.p("")
	o.p("package extension")
	o.p("")
	o.p(`import "encoding/json"`)
	o.p("")
	o.WriteString(body.String())
	return []byte(o.String()), nil
}

// extDoc is a type's comment: its own title and description, or else the
// property and title of the line it is part of.
func extDoc(m *model, d *decl) string {
	if d.title != "" || d.desc != "" {
		return goDoc(d)
	}
	file, ptr, _ := strings.Cut(d.source, "#")
	title, _ := m.docs[base+file].(map[string]any)["title"].(string)
	return fmt.Sprintf("%s is the %s of the %s. Schema: %s.", d.name, ptr[strings.LastIndexByte(ptr, '/')+1:], title, d.source)
}

// extFieldType is a field's Go type (see the top of this file).
func extFieldType(f *field) (string, error) {
	t := f.t
	switch {
	case t.kind == kArray:
		elem, err := extFieldType(&field{t: *t.elem})
		return "[]" + elem, err
	case t.kind == kNamed && !t.decl.isEnum:
		return t.decl.name, nil
	case t.kind == kAny || t.kind == kObject:
		return "json.RawMessage", nil
	}
	var s string
	switch t.kind {
	case kString, kNamed: // an enum
		s = "string"
	case kInt:
		s = "int64"
	case kNumber:
		s = "float64"
	case kBool:
		s = "bool"
	default:
		return "", fmt.Errorf("unsupported type")
	}
	if f.required {
		return "*" + s, nil
	}
	return s, nil
}
