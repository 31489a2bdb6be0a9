package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/e-agent/e/protocol"
	"github.com/e-agent/e/schemas"
)

// refs returns every $ref in a decoded schema.
func refs(v any) []string {
	var out []string
	switch n := v.(type) {
	case map[string]any:
		for k, c := range n {
			if s, ok := c.(string); ok && k == "$ref" {
				out = append(out, s)
			}
			out = append(out, refs(c)...)
		}
	case []any:
		for _, c := range n {
			out = append(out, refs(c)...)
		}
	}
	return out
}

// resolves reports whether the fragment ref (without its file) names a
// node of doc.
func resolves(doc any, frag string) bool {
	node := doc
	for _, tok := range strings.Split(strings.TrimPrefix(frag, "/"), "/") {
		if tok == "" {
			continue
		}
		m, ok := node.(map[string]any)
		if !ok {
			return false
		}
		if node, ok = m[tok]; !ok {
			return false
		}
	}
	return true
}

// e schema --out: unique flat names, every $ref resolves inside DIR, and
// the four files made for generators.
func TestSchemaOut(t *testing.T) {
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	if code := run([]string{"schema", "--out", dir}, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	names, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	docs := map[string]any{}
	for _, f := range names {
		b, _ := os.ReadFile(f)
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		docs[filepath.Base(f)] = v
	}
	for _, want := range []string{"event.json", "server_line.json", "client_line.json", "methods.json", "envelope.error.json", "events.error.json", "extension.error.json", "session.create.params.json", "tools.bash.json"} {
		if docs[want] == nil {
			t.Errorf("no %s in %v", want, stdout.String())
		}
	}
	for name, doc := range docs {
		if m := doc.(map[string]any); m["$id"] != nil {
			t.Errorf("%s: has $id %v: its refs would resolve against it, not beside it", name, m["$id"])
		}
		for _, r := range refs(doc) {
			file, frag, _ := strings.Cut(r, "#")
			target := doc
			if file != "" {
				if target = docs[file]; target == nil {
					t.Errorf("%s: $ref %s: no such file in DIR", name, r)
					continue
				}
			}
			if !resolves(target, frag) {
				t.Errorf("%s: $ref %s: no such node", name, r)
			}
		}
	}
	// The event union names every event type, and one branch for the types
	// a newer server adds (P8).
	oneOf := docs["event.json"].(map[string]any)["oneOf"].([]any)
	if got, want := len(oneOf), len(docs)-len(names)+countPrefix(docs, "events.")+1; got != want {
		t.Errorf("event.json: %d members, want %d", got, want)
	}
}

func countPrefix(docs map[string]any, prefix string) int {
	n := 0
	for name := range docs {
		if strings.HasPrefix(name, prefix) {
			n++
		}
	}
	return n
}

// e schema NAME is self-contained: every $ref is local to the document.
func TestSchemaStandalone(t *testing.T) {
	for _, name := range []string{"events/text", "session.prompt.result", "events/tool_batch", "lines/result", "store/entry"} {
		t.Run(name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run([]string{"schema", name}, nil, &stdout, &stderr); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			var doc any
			if err := json.Unmarshal(stdout.Bytes(), &doc); err != nil {
				t.Fatal(err)
			}
			if bytes.HasSuffix(stdout.Bytes(), []byte("\n\n")) {
				t.Error("output ends in a blank line")
			}
			for _, r := range refs(doc) {
				if !strings.HasPrefix(r, "#") || !resolves(doc, strings.TrimPrefix(r, "#")) {
					t.Errorf("$ref %s does not resolve inside the document", r)
				}
			}
		})
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"schema", "nope"}, nil, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), `unknown schema "nope"`) {
		t.Errorf("e schema nope: exit %d, stderr %q", code, stderr.String())
	}
}

// TestSchemaGenerators feeds e schema --out to the generators client
// authors use; .ci/run installs them (npm), so CI always runs this.
func TestSchemaGenerators(t *testing.T) {
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	if code := run([]string{"schema", "--out", dir}, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	for _, g := range []struct {
		name string
		args func(out string, in ...string) []string
	}{
		{"json2ts", func(out string, in ...string) []string {
			// --cwd: json2ts resolves $refs against it, not the file.
			if len(in) == 1 {
				return []string{"--cwd", dir, "-i", in[0], "-o", out + "/one.d.ts"}
			}
			return []string{"--cwd", dir, "-i", filepath.Join(dir, "*.json"), "-o", out + "/"}
		}},
		{"quicktype", func(out string, in ...string) []string {
			return append([]string{"-s", "schema", "-l", "ts", "-o", out + "/all.ts"}, in...)
		}},
	} {
		t.Run(g.name, func(t *testing.T) {
			path, err := exec.LookPath(g.name)
			if err != nil {
				t.Skipf("%s is not installed (bash .ci/run installs it from npm)", g.name)
			}
			out := t.TempDir()
			// All files in one run; one by one only to name a failing file.
			if b, err := exec.Command(path, g.args(out, files...)...).CombinedOutput(); err == nil {
				return
			} else {
				t.Logf("%s on all files: %v\n%s", g.name, err, b)
			}
			for _, f := range files {
				if b, err := exec.Command(path, g.args(t.TempDir(), f)...).CombinedOutput(); err != nil {
					t.Errorf("%s %s: %v\n%s", g.name, filepath.Base(f), err, b)
				}
			}
		})
	}
}

// TestQuicktypeUnknownEvent: quicktype's converter of server_line.json
// (Convert.toServerLine) takes an event of a type the schemas do not know,
// as the protocol asks of clients (P8), and still takes the known ones.
func TestQuicktypeUnknownEvent(t *testing.T) {
	for _, tool := range []string{"quicktype", "tsc", "node"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed (bash .ci/run installs it from npm)", tool)
		}
	}
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	if code := run([]string{"schema", "--out", filepath.Join(dir, "s")}, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	for _, c := range [][]string{
		{"quicktype", "-s", "schema", "-l", "ts", "--top-level", "ServerLine", "-o", filepath.Join(dir, "line.ts"), filepath.Join(dir, "s", "server_line.json")},
		{"tsc", "--target", "es2022", "--module", "es2022", "--outDir", filepath.Join(dir, "out"), filepath.Join(dir, "line.ts")},
	} {
		if b, err := exec.Command(c[0], c[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", c[0], err, b)
		}
	}
	os.Rename(filepath.Join(dir, "out", "line.js"), filepath.Join(dir, "out", "line.mjs"))
	script := `import { Convert } from "./out/line.mjs";
for (const l of process.argv.slice(2)) {
  try { console.log("ok", Convert.toServerLine(l).type); } catch (e) { console.log("throws", e.message.split("\n")[0]); }
}`
	os.WriteFile(filepath.Join(dir, "t.mjs"), []byte(script), 0o644)
	cmd := exec.Command("node", "t.mjs",
		`{"type":"text","delta":"hi","session":"s","request":1}`,
		`{"type":"brand_new_event","x":{"y":1},"session":"s","request":1}`,
		`{"id":1,"result":{}}`)
	cmd.Dir = dir
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, b)
	}
	if got, want := string(b), "ok text\nok brand_new_event\nok undefined\n"; got != want {
		t.Errorf("Convert.toServerLine:\n%s\nwant\n%s", got, want)
	}
}

// The generated Go types (package protocol) hold every line e rpc prints:
// each decodes with DisallowUnknownFields into its type, and re-encoded it
// still validates. A field e prints that the schemas (and so the types)
// lack fails here.
func TestProtocolTypesHoldRPCOutput(t *testing.T) {
	r := startRPC(t)
	r.send(`{"id":1,"method":"hello","params":{"ask":true}}`)
	r.until(`"id":1`)
	r.send(`{"id":2,"method":"session.create","params":{}}`)
	var created struct {
		Result protocol.SessionCreateResult `json:"result"`
	}
	if err := json.Unmarshal([]byte(r.until(`"id":2`)), &created); err != nil {
		t.Fatal(err)
	}
	sid := created.Result.Session
	r.send(`{"id":3,"method":"session.prompt","params":{"session":"` + sid + `","prompt":"/think hmm\n/tool ls {\"path\":\".\"}\n/then\n/text done"}}`)
	r.until(`"id":3,"result"`)
	r.send(`{"id":4,"method":"session.info","params":{"session":"` + sid + `"}}`)
	r.until(`"id":4`)
	r.send(`{"id":5,"method":"session.messages","params":{"session":"` + sid + `"}}`)
	r.until(`"id":5`)
	r.send(`{"id":6,"method":"models.list"}`)
	r.until(`"id":6`)
	r.send(`{"id":7,"method":"session.info","params":{"session":"nope"}}`)
	r.until(`"id":7`)
	results := map[string]func() any{
		"1": func() any { return new(protocol.HelloResult) }, "2": func() any { return new(protocol.SessionCreateResult) },
		"3": func() any { return new(protocol.SessionPromptResult) }, "4": func() any { return new(protocol.SessionInfoResult) },
		"5": func() any { return new(protocol.SessionMessagesResult) }, "6": func() any { return new(protocol.ModelsListResult) },
	}
	seen := map[string]bool{}
	for _, l := range r.seen {
		var head struct {
			Type   string          `json:"type"`
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal([]byte(l), &head); err != nil {
			t.Fatal(err)
		}
		var v any
		switch {
		case head.Type != "":
			ev, ok := protocol.NewEvent(head.Type)
			if !ok {
				t.Errorf("event type %q has no generated type", head.Type)
				continue
			}
			v = ev
			seen[head.Type] = true
		case head.Result != nil:
			v = new(protocol.Response)
		default:
			v = new(protocol.ErrorResponse)
			seen["error response"] = true
		}
		strict(t, []byte(l), v)
		b, _ := json.Marshal(v)
		if err := schemas.ValidateLine(b); err != nil {
			t.Errorf("%T re-encoded does not validate: %v\n%s", v, err, b)
		}
		if head.Result != nil {
			strict(t, head.Result, results[string(head.ID)]())
		}
	}
	for _, want := range []string{"turn_start", "reasoning", "tool_batch", "tool_start", "tool_end", "text", "usage", "turn_end", "error response"} {
		if !seen[want] {
			t.Errorf("no %s line seen: the test no longer covers it", want)
		}
	}
}

func strict(t *testing.T, b []byte, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Errorf("%T: %v\n%s", v, err, b)
	}
}
