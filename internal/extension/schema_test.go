package extension

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// schemas compiles every schemas/extension/*.json.
func schemas(t *testing.T) map[string]*jsonschema.Schema {
	t.Helper()
	files, err := filepath.Glob("../../schemas/extension/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no schemas: %v", err)
	}
	c := jsonschema.NewCompiler()
	out := map[string]*jsonschema.Schema{}
	for _, f := range files {
		abs, _ := filepath.Abs(f)
		s, err := c.Compile(abs)
		if err != nil {
			t.Fatalf("compile %s: %v", f, err)
		}
		out[strings.TrimSuffix(filepath.Base(f), ".json")] = s
	}
	return out
}

func validate(t *testing.T, all map[string]*jsonschema.Schema, kind string, line []byte) {
	t.Helper()
	s, ok := all[kind]
	if !ok {
		t.Fatalf("no schema %s.json for %s", kind, line)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(line))
	if err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	if err := s.Validate(v); err != nil {
		t.Errorf("%s does not match %s.json: %v", line, kind, err)
	}
}

// kindOf names the schema of a line e writes to an extension.
func kindOf(line []byte) string {
	var m struct {
		Method string          `json:"method"`
		Error  json.RawMessage `json:"error"`
	}
	json.Unmarshal(line, &m)
	switch {
	case m.Method != "":
		return m.Method
	case m.Error != nil:
		return "error"
	}
	return "response"
}

// Every line the host wrote in a session of requests matches its schema.
func TestHostLinesMatchSchemas(t *testing.T) {
	all := schemas(t)
	record := filepath.Join(t.TempDir(), "lines.jsonl")
	cfg := helperConfig(t, "p", "probe")
	cfg.Env["E_EXT_RECORD"] = record
	ui := newFakeUI(func(ctx context.Context, ext, method string, params json.RawMessage) (json.RawMessage, error) {
		if method == "ui.input" {
			<-ctx.Done()
			return cancelled, nil
		}
		return json.RawMessage(`{"confirmed":true}`), nil
	})
	h := start(t, ui, Options{}, cfg)
	probe(t, h, "ui.confirm", `{"title":"ok?"}`)
	probe(t, h, "ui.notify", `{"message":"hi"}`)
	probe(t, h, "ui.custom", `{}`)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-ui.notices // the notify above; then interrupt the next call
		cancel()
	}()
	h.CallTool(ctx, "s1", "probe", json.RawMessage(`{"method":"ui.input","params":{"title":"t"}}`)) // → cancel
	h.Notify("turn.start", map[string]string{"session": "s1"})
	h.Shutdown(10 * time.Second)

	data, err := os.ReadFile(record)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		kind := kindOf(line)
		seen[kind] = true
		validate(t, all, kind, line)
	}
	for _, kind := range []string{"initialize", "tool.call", "response", "error", "cancel", "event", "shutdown"} {
		if !seen[kind] {
			t.Errorf("no %s line was recorded", kind)
		}
	}
}

// The reference extensions' lines match their schemas, driven without a host.
func TestGuardLinesMatchSchemas(t *testing.T) {
	all := schemas(t)
	for _, cfg := range guards(t, nil) {
		t.Run(filepath.Base(cfg.Command), func(t *testing.T) {
			cmd := exec.Command(cfg.Command, cfg.Args...)
			stdin, _ := cmd.StdinPipe()
			stdout, _ := cmd.StdoutPipe()
			cmd.Stderr = testWriter{t}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			out := bufio.NewReader(stdout)
			exchange := func(send, kind string) []byte {
				t.Helper()
				if send != "" {
					stdin.Write([]byte(send + "\n"))
				}
				if kind == "" {
					return nil
				}
				line, err := out.ReadBytes('\n')
				if err != nil {
					t.Fatalf("after %s: %v", send, err)
				}
				validate(t, all, kind, line)
				return line
			}
			exchange(`{"id":0,"method":"initialize","params":{"protocol":1,"e_version":"test","extension":"guard"}}`, "initialize.result")
			exchange(`{"method":"event","params":{"event":"turn.start","session":"s1"}}`, "")
			ask := exchange(`{"id":1,"method":"tool.call","params":{"session":"s1","name":"deploy","arguments":{"target":"prod"}}}`, "ui.confirm")
			var a struct{ ID json.RawMessage }
			json.Unmarshal(ask, &a)
			exchange(`{"id":`+string(a.ID)+`,"result":{"confirmed":true}}`, "tool.call.result")
			exchange(`{"id":2,"method":"tool.gate","params":{"session":"s1","name":"bash","arguments":{"command":"rm -rf /"}}}`, "tool.gate.result")
			exchange(`{"id":3,"method":"tool.frobnicate","params":{}}`, "error")
			exchange(`{"method":"shutdown"}`, "")
			if err := cmd.Wait(); err != nil {
				t.Errorf("guard after shutdown: %v", err)
			}
		})
	}
}

// The schemas reject what the spec forbids.
func TestSchemasReject(t *testing.T) {
	all := schemas(t)
	tests := []struct{ kind, line string }{
		{"initialize.result", `{"id":0,"result":{"protocol":2}}`},
		{"initialize.result", `{"id":0,"result":{"protocol":1,"tools":[{"name":"has space"}]}}`},
		{"tool.call.result", `{"id":1,"result":{"failed":true}}`},
		{"tool.gate.result", `{"id":1,"result":{"allow":"yes"}}`},
		{"ui.confirm", `{"method":"ui.confirm","params":{"title":"t"}}`},
		{"ui.confirm", `{"id":null,"method":"ui.confirm","params":{"title":"t"}}`},
		{"ui.select", `{"id":1,"method":"ui.select","params":{"title":"t","options":[]}}`},
		{"ui.notify", `{"method":"ui.notify","params":{"message":"m","level":"loud"}}`},
		{"error", `{"id":1,"error":{"message":"x"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.kind, func(t *testing.T) {
			v, err := jsonschema.UnmarshalJSON(strings.NewReader(tt.line))
			if err != nil {
				t.Fatal(err)
			}
			if all[tt.kind].Validate(v) == nil {
				t.Errorf("%s.json accepts %s", tt.kind, tt.line)
			}
		})
	}
}
