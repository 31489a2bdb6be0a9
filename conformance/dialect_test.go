package conformance

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// The fake ACP agent and pi server: the test binary re-run as
// "conformance-fake MODE acp" (or "--mode rpc"), correct in mode "good",
// with one defect in each other mode.
const (
	fakeACPLateUpdate = "acp-late-update" // a session/update after the prompt's response (K5)
	fakeACPReadsFS    = "acp-reads-fs"    // asks the client fs/read_text_file (K9)
	fakeACPExtra      = "acp-extra"       // a field no schema declares in every line, types none knows (additive)
	fakeACPNoJSONRPC  = "acp-no-jsonrpc"  // responses without "jsonrpc" (K1, the schema)
	fakeACPBusy       = "acp-busy"        // correct: refuses a second prompt while the first runs, which goes on
	fakePiNoResponse  = "pi-no-response"  // abort is never answered
	fakePiExtra       = "pi-extra"        // a field no schema declares in every line, a type none knows (additive)
)

func fakeACP(mode string) int {
	out := json.NewEncoder(os.Stdout)
	write := func(m map[string]any) {
		if mode != fakeACPNoJSONRPC || m["method"] != nil {
			m["jsonrpc"] = "2.0"
		}
		if mode == fakeACPExtra {
			m["x_future"] = true
		}
		out.Encode(m)
	}
	update := func(text string) {
		write(map[string]any{"method": "session/update", "params": map[string]any{"sessionId": "S1",
			"update": map[string]any{"sessionUpdate": "agent_message_chunk", "content": map[string]any{"type": "text", "text": text}}}})
	}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		var req struct {
			ID     any    `json:"id"`
			Method string `json:"method"`
		}
		if json.Unmarshal(in.Bytes(), &req) != nil || req.Method == "" {
			continue // the client's answers
		}
		switch req.Method {
		case "initialize":
			write(map[string]any{"id": req.ID, "result": map[string]any{"protocolVersion": 1}})
		case "session/new":
			write(map[string]any{"id": req.ID, "result": map[string]any{"sessionId": "S1"}})
		case "session/prompt":
			if mode == fakeACPExtra {
				// Types no schema knows: a newer agent's (additive).
				write(map[string]any{"method": "session/update", "params": map[string]any{"sessionId": "S1",
					"update": map[string]any{"sessionUpdate": "x_future_update", "detail": 1}}})
				write(map[string]any{"method": "_x/future", "params": map[string]any{"sessionId": "S1"}})
			}
			if mode == fakeACPReadsFS {
				write(map[string]any{"id": 0, "method": "fs/read_text_file", "params": map[string]any{"sessionId": "S1", "path": "/etc/hostname"}})
			}
			update("hel")
			if mode == fakeACPBusy && in.Scan() {
				// The client's next prompt, while this one runs: refused,
				// which ends nothing (K5 is about this prompt's response).
				json.Unmarshal(in.Bytes(), &req)
				write(map[string]any{"id": req.ID, "error": map[string]any{"code": -32000, "message": "a prompt is running"}})
				req.ID = json.Number("3")
			}
			update("lo")
			write(map[string]any{"id": req.ID, "result": map[string]any{"stopReason": "end_turn"}})
			if mode == fakeACPLateUpdate {
				update("!")
			}
		}
	}
	return 0
}

func fakePi(mode string) int {
	out := json.NewEncoder(os.Stdout)
	write := func(m map[string]any) {
		if mode == fakePiExtra {
			m["x_future"] = true
		}
		out.Encode(m)
	}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		var cmd struct {
			ID   string `json:"id"`
			Type string `json:"type"`
		}
		if json.Unmarshal(in.Bytes(), &cmd) != nil {
			continue
		}
		switch cmd.Type {
		case "abort":
			if mode == fakePiExtra {
				write(map[string]any{"type": "x_future_event"}) // additive
			}
			if mode != fakePiNoResponse {
				write(map[string]any{"id": cmd.ID, "type": "response", "command": "abort", "success": true})
			}
			write(map[string]any{"type": "agent_start"})
			write(map[string]any{"type": "agent_end", "messages": []any{}, "willRetry": false})
		}
	}
	return 0
}

// The dialects' framing: the good fakes pass their cases, strict or not;
// each defect fails with a message naming it; fields no schema declares
// are notes, failures only under Strict.
func TestDialects(t *testing.T) {
	tests := []struct {
		mode, file string
		strict     bool
		want       []string // substrings of the report; none: PASS
		notes      bool     // the result carries notes
	}{
		{mode: "good", file: "testdata/dialects/fake-acp.txtar", strict: true},
		{mode: fakeACPExtra, file: "testdata/dialects/fake-acp.txtar", notes: true},
		{mode: fakeACPExtra, file: "testdata/dialects/fake-acp.txtar", strict: true, want: []string{"/x_future", "--strict"}},
		{mode: fakeACPLateUpdate, file: "testdata/dialects/fake-acp.txtar", want: []string{"after the response to its session/prompt", "K5"}},
		{mode: fakeACPBusy, file: "testdata/dialects/fake-acp-busy.txtar", strict: true},
		{mode: fakeACPReadsFS, file: "testdata/dialects/fake-acp.txtar", want: []string{"session {{sid}}", `got:      "fs/read_text_file"`}},
		{mode: fakeACPNoJSONRPC, file: "testdata/dialects/fake-acp.txtar", want: []string{"ACP schema"}},
		{mode: "good", file: "testdata/dialects/fake-pi.txtar", strict: true},
		{mode: fakePiExtra, file: "testdata/dialects/fake-pi.txtar", notes: true},
		{mode: fakePiExtra, file: "testdata/dialects/fake-pi.txtar", strict: true, want: []string{"x_future_event", "--strict"}},
		{mode: fakePiNoResponse, file: "testdata/dialects/fake-pi.txtar", want: []string{"waiting for the remaining expected lines", `"abort"`}},
	}
	for _, tt := range tests {
		t.Run(tt.mode+"/"+tt.file, func(t *testing.T) {
			t.Parallel()
			c := loadTestCase(t, tt.file)
			o := Options{Server: []string{os.Args[0], "conformance-fake", tt.mode, "rpc"}, TimeoutScale: timeoutScale(),
				NoTrust: true, Validator: SchemaValidator{Strict: tt.strict}}
			r := Run(context.Background(), c, o)
			var b strings.Builder
			r.Report(&b)
			if len(tt.want) == 0 && r.Verdict != Pass {
				t.Fatalf("verdict %s, want PASS:\n%s", r.Verdict, b.String())
			}
			if len(tt.want) > 0 && r.Verdict != Fail {
				t.Fatalf("verdict %s, want FAIL:\n%s", r.Verdict, b.String())
			}
			for _, w := range tt.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("report lacks %q:\n%s", w, b.String())
				}
			}
			if tt.notes != (len(r.Notes) > 0) {
				t.Errorf("notes %q, want some: %v", r.Notes, tt.notes)
			}
		})
	}
}

// A session/update is validated by its kind first, and by the whole ACP
// union when that fails, so the verdict is the union's either way (the
// union admits some updates their kind does not: a notification of any
// method may be an extension's).
func TestACPUpdateByKind(t *testing.T) {
	c, err := acpCompiled()
	if err != nil {
		t.Fatal(err)
	}
	chunk := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"S","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}}`
	if v, _ := lineObject([]byte(chunk)); c.updates["agent_message_chunk"] == nil || c.updates["agent_message_chunk"].Validate(v) != nil {
		t.Errorf("the agent_message_chunk variant does not take %s", chunk)
	}
	for _, line := range []string{
		chunk,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"S","update":{"sessionUpdate":"tool_call_update","toolCallId":"c","status":"completed"}}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"S","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text"}}}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"S","update":{"sessionUpdate":"usage_update","size":"big","used":1}}}`,
		`{"jsonrpc":"1.0","method":"session/update","params":{"sessionId":"S","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}}`,
	} {
		v, err := lineObject([]byte(line))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := c.validate(v) == nil, c.s.Validate(v) == nil; got != want {
			t.Errorf("%s: valid %v, the union says %v", line, got, want)
		}
	}
}
