package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

func TestNamesAndBuiltins(t *testing.T) {
	want := []string{"bash", "edit", "find", "grep", "ls", "read", "sleep", "write"}
	if diff := cmp.Diff(want, Names()); diff != "" {
		t.Errorf("Names() (-want +got):\n%s", diff)
	}
	var got []string
	categories := map[string]string{}
	for _, s := range Builtins() {
		got = append(got, s.Name)
		categories[s.Name] = s.Category
		if s.Description == "" {
			t.Errorf("%s: no description", s.Name)
		}
		if l, ok := Lookup(s.Name); !ok || l.Name != s.Name {
			t.Errorf("Lookup(%q) = %v, %v", s.Name, l.Name, ok)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Builtins() names (-want +got):\n%s", diff)
	}
	wantCat := map[string]string{"bash": "execute", "edit": "write", "find": "search", "grep": "search",
		"ls": "read", "read": "read", "sleep": "wait", "write": "write"}
	if diff := cmp.Diff(wantCat, categories); diff != "" {
		t.Errorf("categories (-want +got):\n%s", diff)
	}
	if _, ok := Lookup("nope"); ok {
		t.Error(`Lookup("nope") found a tool`)
	}
}

// compile compiles a tool's parameter schema with a real JSON Schema
// (draft 2020-12) implementation.
func compile(t *testing.T, name string) *jsonschema.Schema {
	t.Helper()
	spec, _ := Lookup(name)
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(spec.Parameters))
	if err != nil {
		t.Fatalf("%s: schema is not JSON: %v", name, err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(name+".json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(name + ".json")
	if err != nil {
		t.Fatalf("%s: schema does not compile: %v", name, err)
	}
	return s
}

// TestValidation checks Run's argument errors and that a real JSON Schema
// validator agrees with them on every case.
func TestValidation(t *testing.T) {
	s := newSession(t)
	s.writeFile(t, "a.txt", "a\n")
	tests := []struct {
		name, tool, args string
		wantErr          string // "" when the arguments are valid
	}{
		{name: "valid", tool: "read", args: `{"path":"a.txt"}`},
		{name: "unknown fields are ignored", tool: "read", args: `{"path":"a.txt","x":[1]}`},
		{name: "null means the default", tool: "read", args: `{"path":"a.txt","offset":null,"limit":null}`},
		{name: "integral float", tool: "read", args: `{"path":"a.txt","offset":1.0,"limit":1e3}`},
		{name: "missing required", tool: "read", args: `{}`, wantErr: "read: path is required"},
		{name: "null required", tool: "read", args: `{"path":null}`, wantErr: "read: path is required"},
		{name: "no arguments", tool: "sleep", args: ``, wantErr: "sleep: ms is required"},
		{name: "not an object", tool: "read", args: `["a.txt"]`, wantErr: "read: the arguments must be a JSON object"},
		{name: "string for integer", tool: "read", args: `{"path":"a.txt","offset":"2"}`, wantErr: "read: offset: expected integer, got string"},
		{name: "fraction", tool: "read", args: `{"path":"a.txt","offset":1.5}`, wantErr: "read: offset: expected integer, got 1.5"},
		{name: "number for string", tool: "write", args: `{"path":3,"content":""}`, wantErr: "write: path: expected string, got number"},
		{name: "empty path", tool: "read", args: `{"path":""}`, wantErr: "read: path: must not be empty"},
		{name: "below minimum", tool: "sleep", args: `{"ms":0}`, wantErr: "sleep: ms: must be between 1 and 3600000, got 0"},
		{name: "above maximum", tool: "sleep", args: `{"ms":3600001}`, wantErr: "sleep: ms: must be between 1 and 3600000, got 3600001"},
		{name: "string for boolean", tool: "edit", args: `{"path":"a.txt","old":"a","new":"b","all":"yes"}`, wantErr: "edit: all: expected boolean, got string"},
		{name: "timeout too long", tool: "bash", args: `{"command":"true","timeout_ms":600001}`, wantErr: "bash: timeout_ms: must be between 1 and 600000, got 600001"},
		{name: "object for string", tool: "grep", args: `{"pattern":{}}`, wantErr: "grep: pattern: expected string, got object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := s.run(tt.tool, tt.args)
			if tt.wantErr != "" {
				checkResult(t, got, tt.wantErr, "invalid arguments", true)
			} else if got.Failed {
				t.Errorf("Run failed: %s", got.Content)
			}
			doc := any(map[string]any{})
			if tt.args != "" {
				var err error
				if doc, err = jsonschema.UnmarshalJSON(strings.NewReader(tt.args)); err != nil {
					t.Fatal(err)
				}
			}
			err := compile(t, tt.tool).Validate(doc)
			if (err == nil) != (tt.wantErr == "") {
				t.Errorf("JSON Schema validation error = %v; Run's = %q", err, tt.wantErr)
			}
		})
	}
	t.Run("unknown tool", func(t *testing.T) {
		checkResult(t, s.run("nope", `{}`), `unknown tool "nope"`, "unknown tool", true)
	})
	t.Run("relative cwd", func(t *testing.T) {
		got := Run(context.Background(), &Env{Cwd: "work"}, "ls", nil)
		checkResult(t, got, `ls: the session directory "work" is not an absolute path`, "", true)
	})
}

func TestDescribe(t *testing.T) {
	tests := []struct {
		tool, args             string
		wantCategory, wantTarg string
	}{
		{"read", `{"path":"a/b.txt"}`, "read", "a/b.txt"},
		{"write", `{"path":"/x/y","content":"z"}`, "write", "/x/y"},
		{"edit", `{"path":"e.go","old":"a","new":"b"}`, "write", "e.go"},
		{"ls", `{}`, "read", "."},
		{"find", `{"pattern":"*.go"}`, "search", "."},
		{"grep", `{"pattern":"x","path":"src"}`, "search", "src"},
		{"bash", `{"command":"go test ./..."}`, "execute", "go test ./..."},
		{"sleep", `{"ms":10}`, "wait", ""},
		{"read", `{"path":7}`, "read", ""},
		{"read", `not json`, "read", ""},
		{"read", ``, "read", ""},
		{"nope", `{"path":"x"}`, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.tool+" "+tt.args, func(t *testing.T) {
			c, target := Describe(tt.tool, json.RawMessage(tt.args))
			if c != tt.wantCategory || target != tt.wantTarg {
				t.Errorf("Describe = %q, %q; want %q, %q", c, target, tt.wantCategory, tt.wantTarg)
			}
		})
	}
}

// L3: calls naming one file, under any name, report the same path.
func TestPaths(t *testing.T) {
	s := newSession(t)
	s.writeFile(t, "dir/a.txt", "a\n")
	s.symlink(t, "dir", "link")
	real, err := realPath(s.cwd)
	if err != nil {
		t.Fatal(err)
	}
	a := filepath.Join(real, "dir", "a.txt")
	tests := []struct {
		tool, args string
		want       []string
	}{
		{"read", `{"path":"dir/a.txt"}`, []string{a}},
		{"edit", `{"path":"./link/a.txt","old":"a","new":"b"}`, []string{a}},
		{"write", `{"path":"` + a + `","content":""}`, []string{a}},
		{"write", `{"path":"dir/new/../b.txt","content":""}`, []string{filepath.Join(real, "dir", "b.txt")}},
		{"ls", `{}`, []string{real}},
		{"grep", `{"pattern":"x","path":"link"}`, []string{filepath.Join(real, "dir")}},
		{"bash", `{"command":"cat dir/a.txt"}`, nil},
		{"sleep", `{"ms":1}`, nil},
		{"read", `{"path":1}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.tool+" "+tt.args, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Paths(s.cwd, tt.tool, json.RawMessage(tt.args))); diff != "" {
				t.Errorf("Paths (-want +got):\n%s", diff)
			}
		})
	}
}

// A sleep stopped before its wait began says so in the words the spec
// fixes for every stopped sleep (engine.md §12).
func TestSleepStoppedBeforeStart(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	got := Run(ctx, &Env{Cwd: t.TempDir()}, "sleep", json.RawMessage(`{"ms":600000}`))
	if got.Content != "stopped after 0 ms" || !got.Stopped {
		t.Errorf("Run(sleep) after cancel = %+v; want Stopped with content %q", got, "stopped after 0 ms")
	}
}
