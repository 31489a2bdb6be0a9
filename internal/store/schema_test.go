package store_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/e-agent/e/internal/store"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// compile loads schemas/store/<name> from the repository.
func compile(t *testing.T, name string) *jsonschema.Schema {
	t.Helper()
	path := filepath.Join("..", "..", "schemas", "store", name)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	c := jsonschema.NewCompiler()
	url := "https://github.com/e-agent/e/schemas/store/" + name
	if err := c.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(url)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return s
}

func validate(t *testing.T, s *jsonschema.Schema, line []byte) error {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(line))
	if err != nil {
		t.Fatalf("%q: %v", line, err)
	}
	return s.Validate(v)
}

// What the package writes matches the published schemas.
func TestFilesMatchSchemas(t *testing.T) {
	header, entry := compile(t, "header.json"), compile(t, "entry.json")
	home, l := newLog(t, "/work/main")
	mustAppend(t, l,
		msg(json.RawMessage(`{"role":"user","content":[{"type":"text","text":"hi"},{"type":"image","media_type":"image/png","data":"iVBORw0KGgo="}]}`)),
		msg(json.RawMessage(`{"role":"assistant","content":[{"type":"reasoning","text":"hm"},{"type":"tool_call","id":"c1","name":"read","arguments":{"path":"a"}}]}`)),
		msg(json.RawMessage(`{"role":"tool","content":[{"type":"tool_result","call_id":"c1","text":"x","is_error":true}]}`)),
		store.Entry{Type: store.TypeSettings, Model: "a/b", Effort: "low"},
		store.Entry{Type: store.TypeCompaction, Summary: "s", Kept: "x", Tokens: 10},
		store.Entry{Type: store.TypeName, Name: "n"},
		store.Entry{Type: store.TypeName},
		store.Entry{Type: store.TypeTitle, Name: "t"},
		store.Entry{Type: store.TypeInterrupted},
		store.Entry{Type: store.TypeError, Error: "model: boom"},
	)
	cost := 0.5
	withCall := msg(json.RawMessage(`{"role":"assistant","content":[{"type":"text","text":"hi"}]}`))
	withCall.Call = &store.ModelCall{Model: "a/b", Attempts: 2, DurationMS: 10, FirstByteMS: 3, Usage: store.Usage{Input: 1}, CostUSD: &cost}
	withRuns := msg(json.RawMessage(`{"role":"tool","content":[{"type":"tool_result","call_id":"c1","text":"x"}]}`))
	withRuns.Runs = []store.ToolRun{{CallID: "c1", Outcome: "denied", DurationMS: 0}}
	attempt := store.Entry{Type: store.TypeAttempt, Error: "model: HTTP 503: busy", Message: json.RawMessage(`{"role":"assistant","content":[{"type":"text","text":"par"}]}`),
		Call: &store.ModelCall{Model: "a/b", Attempts: 1, DurationMS: 4, ResponseID: "r1"}}
	cut := store.Entry{Type: store.TypeInterrupted, Call: &store.ModelCall{Model: "a/b", Attempts: 2, DurationMS: 9}}
	failed := store.Entry{Type: store.TypeError, Error: "model: boom", Call: &store.ModelCall{Model: "a/b", Attempts: 3, DurationMS: 12}}
	mustAppend(t, l, withCall, withRuns, attempt, store.Entry{Type: store.TypeAttempt, Error: "e", Call: &store.ModelCall{Model: "a/b", Attempts: 2}}, cut, failed)
	b, _ := os.ReadFile(l.Path())
	// The export tests' sample is a valid log too.
	sample, _ := os.ReadFile(filepath.Join("testdata", "export.jsonl"))
	b = append(b, sample[bytes.IndexByte(sample, '\n')+1:]...)
	lines := bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
	if err := validate(t, header, lines[0]); err != nil {
		t.Errorf("header %s: %v", lines[0], err)
	}
	for _, line := range lines[1:] {
		if err := validate(t, entry, line); err != nil {
			t.Errorf("entry %s: %v", line, err)
		}
	}
	for _, bad := range []string{
		`{"type":"bogus","id":"a","parent":"","time":"2025-01-01T00:00:00Z"}`,
		`{"type":"message","id":"a","parent":"","time":"2025-01-01T00:00:00Z"}`,
		`{"type":"error","id":"a","parent":"","time":"2025-01-01T00:00:00Z"}`,
		`{"type":"attempt","id":"a","parent":"","time":"2025-01-01T00:00:00Z","error":"e"}`,
		`{"type":"attempt","id":"a","parent":"","time":"2025-01-01T00:00:00Z","call":{"model":"a/b","attempts":1,"duration_ms":0,"usage":{"input_tokens":0,"output_tokens":0,"cache_read_tokens":0,"cache_write_5m_tokens":0,"cache_write_1h_tokens":0}}}`,
		`{"type":"message","id":"a","parent":"","time":"2025-01-01T00:00:00Z","message":{"role":"tool","content":[]},"tools":[{"call_id":"c","outcome":"odd","duration_ms":1}]}`,
		`{"type":"message","id":"a","parent":"","time":"2025-01-01T00:00:00Z","message":{"role":"user","content":[{"type":"image","media_type":"text/html","data":""}]}}`,
	} {
		if validate(t, entry, []byte(bad)) == nil {
			t.Errorf("entry schema accepts %s", bad)
		}
	}

	store.AppendError(l.Path(), map[string]any{"stage": "model"})
	e, _ := os.ReadFile(l.Path() + ".errors.jsonl")
	if err := validate(t, compile(t, "errors.json"), bytes.TrimSpace(e)); err != nil {
		t.Errorf("errors sidecar %s: %v", e, err)
	}

	store.Trust(home, t.TempDir())
	tr, _ := os.ReadFile(filepath.Join(home, "trust.json"))
	if err := validate(t, compile(t, "trust.json"), tr); err != nil {
		t.Errorf("trust.json %s: %v", tr, err)
	}

	settings := compile(t, "settings.json")
	for _, tt := range []struct {
		doc string
		ok  bool
	}{
		{doc: `{"tool_concurrency":8,"default_model":"a/b","providers":{},"compact_threshold":0.8,"system_prompt":"s","append_system_prompt":null}`, ok: true},
		{doc: `{"default_modle":"a/b"}`},
		{doc: `{"tool_concurrency":0}`},
		{doc: `{"tool_concurrency":65}`},
		{doc: `{"compact_threshold":0}`},
	} {
		err := validate(t, settings, []byte(tt.doc))
		if (err == nil) != tt.ok {
			t.Errorf("settings %s: %v, want ok=%v", tt.doc, err, tt.ok)
		}
		// The schema and LoadSettings agree.
		home := t.TempDir()
		os.WriteFile(filepath.Join(home, "settings.json"), []byte(tt.doc), 0o600)
		if _, err := store.LoadSettings(home); (err == nil) != tt.ok {
			t.Errorf("LoadSettings %s: %v, want ok=%v", tt.doc, err, tt.ok)
		}
	}
}
