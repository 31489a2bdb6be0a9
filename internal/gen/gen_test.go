package main

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestFresh fails when a generated file differs from what the generator
// makes of the schemas and internal/tool now: run go generate ./... .
func TestFresh(t *testing.T) {
	files, err := generate("../..")
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range files {
		got, err := os.ReadFile(filepath.Join("../..", path))
		if err != nil {
			t.Errorf("%s: %v (run go generate ./...)", path, err)
			continue
		}
		if string(got) != string(want) {
			t.Errorf("%s is stale: run go generate ./...", path)
		}
	}
	tools, _ := filepath.Glob("../../schemas/tools/*.json")
	for _, f := range tools {
		if _, ok := files["schemas/tools/"+filepath.Base(f)]; !ok {
			t.Errorf("%s belongs to no built-in tool: run go generate ./...", f)
		}
	}
}

// TestHeader checks that every generated file says so on its first line.
func TestHeader(t *testing.T) {
	files, err := generate("../..")
	if err != nil {
		t.Fatal(err)
	}
	for path, b := range files {
		if strings.HasPrefix(path, "schemas/") {
			continue // JSON has no comments; the descriptions say it
		}
		first, _, _ := strings.Cut(string(b), "\n")
		if !strings.Contains(first, "Code generated") || !strings.HasSuffix(first, "DO NOT EDIT.") {
			t.Errorf("%s: first line %q lacks the generated-code header", path, first)
		}
	}
}

// TestPiName checks the Go names of pi's camelCase and snake_case
// properties, initialisms in capitals.
func TestPiName(t *testing.T) {
	for in, want := range map[string]string{
		"toolCallId": "ToolCallID", "durationMs": "DurationMS", "cacheWrite1h": "CacheWrite1h", "api": "API",
		"baseUrl": "BaseURL", "exit_code": "ExitCode", "full_output_path": "FullOutputPath", "type": "Type",
	} {
		if got := piName(in); got != want {
			t.Errorf("piName(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestPiFieldType checks which optional fields of pi's shapes are pointers:
// a number, flag or object whose zero is sent (no default), not a string,
// an array or a field with a default; in a command a string too (a field
// given as "" is told from one left out: set_model).
func TestPiFieldType(t *testing.T) {
	obj := &decl{name: "Usage", fields: []*field{}}
	for _, c := range []struct {
		f     field
		input bool // a command's field
		want  string
	}{
		{field{t: texpr{kind: kInt}}, false, "*int64"},
		{field{t: texpr{kind: kInt}, required: true}, false, "int64"},
		{field{t: texpr{kind: kInt}, hasDefault: true}, false, "int64"},
		{field{t: texpr{kind: kBool}}, false, "*bool"},
		{field{t: texpr{kind: kNumber}}, false, "*float64"},
		{field{t: texpr{kind: kString}}, false, "string"},
		{field{t: texpr{kind: kString}}, true, "*string"},
		{field{t: texpr{kind: kString}, required: true}, true, "string"},
		{field{t: texpr{kind: kArray, elem: &texpr{kind: kString}}}, false, "[]string"},
		{field{t: texpr{kind: kNamed, decl: obj}}, false, "*Usage"},
		{field{t: texpr{kind: kInt, nullable: true}}, false, "*int64"},
		{field{t: texpr{kind: kAny}}, false, "any"},
		{field{t: texpr{kind: kObject}}, false, "json.RawMessage"},
		{field{t: texpr{kind: kGo, goType: "[]Content"}}, false, "[]Content"},
	} {
		if got := piFieldType(&c.f, c.input); got != c.want {
			t.Errorf("piFieldType(%+v, input %v) = %q, want %q", c.f, c.input, got, c.want)
		}
	}
}

// TestACPChecks checks that the ACP generator refuses a selected property
// the schema lacks, types otherwise or refers to another definition, and
// finds one through allOf and a union's branches or on the root's branch.
func TestACPChecks(t *testing.T) {
	doc := acpDoc{
		Defs: map[string]map[string]any{
			"Base": {"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}},
			"Other": {"type": "object", "properties": map[string]any{"base": map[string]any{"type": "array",
				"items": map[string]any{"$ref": "#/$defs/Base"}}}},
			"Union": {"oneOf": []any{
				map[string]any{"type": "object", "properties": map[string]any{"kind": map[string]any{"const": "a"}},
					"allOf": []any{map[string]any{"$ref": "#/$defs/Base"}}},
				map[string]any{"type": "object", "properties": map[string]any{"size": map[string]any{"type": []any{"integer", "null"}}}},
			}},
		},
		AnyOf: []map[string]any{{"title": "Agent", "properties": map[string]any{"jsonrpc": map[string]any{"type": "string"}}}},
	}
	tests := []struct {
		name    string
		typ     acpType
		more    []acpType // further types typ's fields may name
		wantErr string    // "" for success
	}{
		{name: "union and allOf", typ: acpType{name: "U", def: "Union", fields: []acpField{
			{json: "kind", typ: "string"}, {json: "name", typ: "string"}, {json: "size", typ: "*int64", omit: true}}}},
		{name: "root branch", typ: acpType{name: "M", def: "#Agent", fields: []acpField{{json: "jsonrpc", typ: "string"}}}},
		{name: "property ACP lacks", typ: acpType{name: "U", def: "Union", fields: []acpField{{json: "sizes", typ: "int"}}},
			wantErr: "U.sizes: ACP's Union has no such property"},
		{name: "type that does not fit", typ: acpType{name: "U", def: "Union", fields: []acpField{{json: "size", typ: "string"}}},
			wantErr: "U.size: its Go type string does not fit"},
		{name: "definition ACP lacks", typ: acpType{name: "X", def: "Gone"}, wantErr: "X: no definition Gone"},
		{name: "items of the type's definition", typ: acpType{name: "O", def: "Other", fields: []acpField{{json: "base", typ: "[]B"}}},
			more: []acpType{{name: "B", def: "Base"}}},
		{name: "items of another definition", typ: acpType{name: "O", def: "Other", fields: []acpField{{json: "base", typ: "[]U"}}},
			more: []acpType{{name: "U", def: "Union"}}, wantErr: "O.base: U stands for [Union]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src, err := acpEmit(doc, append([]acpType{tt.typ}, tt.more...), nil)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("acpEmit: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("acpEmit error = %v, want one containing %q", err, tt.wantErr)
			case tt.wantErr == "" && !strings.Contains(string(src), "type "+tt.typ.name+" struct"):
				t.Errorf("acpEmit output lacks type %s:\n%s", tt.typ.name, src)
			}
		})
	}
}

// TestACPConsts checks the names and values of constants from a union of
// constants: by title, by value, by e's name, the untitled non-constant left out.
func TestACPConsts(t *testing.T) {
	doc := acpDoc{Defs: map[string]map[string]any{
		"Reason": {"oneOf": []any{map[string]any{"const": "end_turn"}}},
		"Code": {"anyOf": []any{
			map[string]any{"title": "Parse error", "const": -32700.0},
			map[string]any{"title": "Resource not found", "const": -32002.0},
			map[string]any{"title": "Other", "type": "integer"},
		}},
	}}
	src, err := acpEmit(doc, nil, []acpConst{{def: "Reason", prefix: "Stop"},
		{def: "Code", prefix: "Code", names: map[string]string{"Resource not found": "CodeNotFound"}}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range strings.Split(string(src), "\n") {
		if strings.Contains(l, " = ") {
			got = append(got, strings.TrimSpace(l))
		}
	}
	want := []string{`StopEndTurn = "end_turn"`, "CodeParseError = -32700", "CodeNotFound = -32002"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("constants (-want +got):\n%s", diff)
	}
}

// TestAgentFields checks that package agent's generated structs follow
// the event schemas: a property an event gains becomes a field with its
// JSON name (TestFresh then fails until go generate ./... is run), a new
// event file becomes a type with its EventType, and a property the
// generator cannot type stops it instead of being left out.
func TestAgentFields(t *testing.T) {
	tests := []struct {
		name    string
		file    string               // the schema file under schemas/ to write
		edit    func(map[string]any) // what to change in it (a new file starts empty)
		typ     string               // the generated type to look at
		want    string               // one of its fields: name, type, tag
		wantErr string               // "" for success
	}{
		{name: "required property", file: "events/slept.json", typ: "Slept",
			edit: func(s map[string]any) { addProp(s, "wake_reason", map[string]any{"type": "string"}, true) },
			want: "WakeReason string `json:\"wake_reason\"`"},
		{name: "optional integer", file: "events/retry.json", typ: "Retry",
			edit: func(s map[string]any) { addProp(s, "jitter_ms", map[string]any{"type": "integer"}, false) },
			want: "JitterMS int64 `json:\"jitter_ms,omitempty\"`"},
		{name: "nullable shared shape", file: "events/error.json", typ: "Error",
			edit: func(s map[string]any) {
				addProp(s, "details", map[string]any{"anyOf": []any{map[string]any{"type": "null"}, map[string]any{"$ref": "../defs.json#/$defs/error_details"}}}, true)
			},
			want: "Details *ErrorDetails `json:\"details\"`"},
		{name: "new event", file: "events/nap.json", typ: "Nap",
			edit: func(s map[string]any) {
				s["title"], s["type"] = "nap event", "object"
				addProp(s, "type", map[string]any{"const": "nap"}, true)
				addProp(s, "id", map[string]any{"type": "integer"}, true)
			},
			want: "ID int `json:\"id\"`"},
		{name: "property a usage embed lacks", file: "events/usage.json", typ: "UsageEvent",
			edit: func(s map[string]any) {
				delete(s["properties"].(map[string]any), "prompt_tokens")
			},
			wantErr: "UsageEvent embeds Usage for prompt_tokens, which events/usage.json lacks"},
		{name: "shape with no Go type", file: "events/slept.json", typ: "Slept",
			edit: func(s map[string]any) {
				addProp(s, "server", map[string]any{"$ref": "../defs.json#/$defs/mcp_server"}, false)
			},
			wantErr: "Slept.server: defs.json#/$defs/mcp_server has no Go type here"},
		{name: "Go type of a property gone", file: "result.json", typ: "Result",
			edit:    func(s map[string]any) { delete(s["properties"].(map[string]any), "sandbox") },
			wantErr: "names Result.sandbox, which is no generated field"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fresh, err := toolSchemas()
			if err != nil {
				t.Fatal(err)
			}
			s := map[string]any{}
			if b, err := os.ReadFile(filepath.Join("../../schemas", tt.file)); err == nil {
				if err := json.Unmarshal(b, &s); err != nil {
					t.Fatal(err)
				}
			}
			tt.edit(s)
			if fresh["schemas/"+tt.file], err = json.Marshal(s); err != nil {
				t.Fatal(err)
			}
			m, err := load("../../schemas", fresh)
			if err != nil {
				t.Fatal(err)
			}
			src, err := agentGoFile(m)
			switch {
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("agentGoFile error = %v, want one containing %q", err, tt.wantErr)
			case tt.wantErr != "":
				return
			case err != nil:
				t.Fatalf("agentGoFile: %v", err)
			}
			fields, methods := goStruct(t, src, tt.typ)
			if !slices.Contains(fields, tt.want) {
				t.Errorf("type %s has fields %q, want one %q", tt.typ, fields, tt.want)
			}
			if !slices.Contains(methods, "EventType") {
				t.Errorf("type %s has methods %q, want EventType", tt.typ, methods)
			}
		})
	}
}

// addProp adds the property name to the object schema s.
func addProp(s map[string]any, name string, p map[string]any, required bool) {
	props, _ := s["properties"].(map[string]any)
	if props == nil {
		props = map[string]any{}
		s["properties"] = props
	}
	props[name] = p
	if required {
		s["required"] = append(list(s["required"]), name)
	}
}

// goStruct returns the fields ("Name Type `tag`") and methods of the
// struct type name in the Go source src.
func goStruct(t *testing.T, src []byte, name string) (fields, methods []string) {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "event_gen.go", src, 0)
	if err != nil {
		t.Fatalf("the generated source does not parse: %v", err)
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				ts, ok := spec.(*ast.TypeSpec)
				if !ok || ts.Name.Name != name {
					continue
				}
				for _, fl := range ts.Type.(*ast.StructType).Fields.List {
					for _, n := range fl.Names {
						fields = append(fields, n.Name+" "+types.ExprString(fl.Type)+" "+fl.Tag.Value)
					}
				}
			}
		case *ast.FuncDecl:
			if d.Recv != nil && strings.TrimPrefix(types.ExprString(d.Recv.List[0].Type), "*") == name {
				methods = append(methods, d.Name.Name)
			}
		}
	}
	if fields == nil {
		t.Fatalf("no struct type %s with fields in:\n%s", name, src)
	}
	return fields, methods
}

// TestHandlerName checks e rpc's handler names: a method's words after the
// first, split at dots and underscores, capitalised.
func TestHandlerName(t *testing.T) {
	for in, want := range map[string]string{
		"hello": "hello", "session.create": "sessionCreate", "ask.reply": "askReply", "session.follow_up": "sessionFollowUp",
	} {
		if got := handlerName(in); got != want {
			t.Errorf("handlerName(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestExtFieldType checks the Go of the extension shapes e decodes: a
// required scalar (an enum too) is a pointer, an optional one a value; a
// free-form value raw; an enum a plain string.
func TestExtFieldType(t *testing.T) {
	obj := &decl{name: "ToolSpec"}
	enum := &decl{name: "Level", isEnum: true}
	for _, c := range []struct {
		f    field
		want string
	}{
		{field{t: texpr{kind: kBool}, required: true}, "*bool"},
		{field{t: texpr{kind: kBool}}, "bool"},
		{field{t: texpr{kind: kString}, required: true}, "*string"},
		{field{t: texpr{kind: kString, nullable: true}}, "string"},
		{field{t: texpr{kind: kInt}, required: true}, "*int64"},
		{field{t: texpr{kind: kNumber}}, "float64"},
		{field{t: texpr{kind: kNamed, decl: enum}}, "string"},
		{field{t: texpr{kind: kNamed, decl: enum}, required: true}, "*string"},
		{field{t: texpr{kind: kArray, elem: &texpr{kind: kNamed, decl: obj}}, required: true}, "[]ToolSpec"},
		{field{t: texpr{kind: kArray, elem: &texpr{kind: kNamed, decl: enum}}}, "[]string"},
		{field{t: texpr{kind: kAny}, required: true}, "json.RawMessage"},
		{field{t: texpr{kind: kObject}}, "json.RawMessage"},
	} {
		got, err := extFieldType(&c.f)
		if err != nil || got != c.want {
			t.Errorf("extFieldType(%+v) = %q, %v; want %q", c.f, got, err, c.want)
		}
	}
}

// TestExtShapes checks that the generator refuses a shape that is not an
// object with properties, or not in the schemas, and leaves out a property
// e does not read.
func TestExtShapes(t *testing.T) {
	shapes := extShapes
	defer func() { extShapes = shapes }()
	for _, c := range []struct {
		path string
		want string // a part of the error; "" for none
	}{
		{"tool.gate.result.json#/properties/result", ""},
		{"tool.gate.result.json#/properties/id", "not an object with properties"},
		{"tool.gate.result.json#/properties/nothing", "no such node"},
	} {
		extShapes = []struct{ path, name string }{{c.path, "Shape"}}
		_, err := loadExt("../../schemas")
		if got := fmt.Sprint(err); c.want == "" && err != nil || c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("loadExt(%s) = %v, want an error with %q", c.path, err, c.want)
		}
	}
	extShapes = shapes
	m, err := loadExt("../../schemas")
	if err != nil {
		t.Fatal(err)
	}
	src, err := m.extGoFile()
	if err != nil {
		t.Fatal(err)
	}
	fields, _ := goStruct(t, src, "InitializeResult")
	want := []string{"Protocol *int64 `json:\"protocol\"`", "Tools []ToolSpec `json:\"tools\"`",
		"Gate bool `json:\"gate\"`", "Events []string `json:\"events\"`"} // no name: e does not read it
	if diff := cmp.Diff(want, fields); diff != "" {
		t.Errorf("InitializeResult's fields (-want +got):\n%s", diff)
	}
}
