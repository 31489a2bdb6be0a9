package server

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/e-agent/e/internal/agent"
	"github.com/e-agent/e/internal/jsonenc"
	"github.com/e-agent/e/internal/model"
	"github.com/e-agent/e/internal/session"
	"github.com/e-agent/e/internal/store"
	"github.com/e-agent/e/protocol"
)

// TestConvertersKeepBytes: the session layer's values, converted into the
// generated wire types, encode to the bytes encoding/json writes for the
// values themselves (int vs int64, time.Time vs its RFC 3339 text, []byte
// vs base64, omitempty vs omitzero): switching server/ to the generated
// types changed no line.
func TestConvertersKeepBytes(t *testing.T) {
	when := time.Date(2026, 1, 2, 3, 4, 5, 600, time.FixedZone("x", 3600))
	yes, no := true, false
	infos := []model.Info{
		{ID: "e/offline", Provider: "e", Name: "offline", Efforts: []string{}, ImageInput: true, Tools: true, ContextWindow: 200000, Available: &yes},
		{ID: "openai/gpt-5.5", Provider: "openai", Name: "gpt-5.5", Efforts: []string{"low", "high"}, ContextWindow: 400000, Available: &no},
	}
	parts := []model.Part{
		{Type: model.PartText, Text: "hi <b>&"},
		{Type: model.PartReasoning, Text: "hm", Signature: "sig"},
		{Type: model.PartImage, MediaType: "image/png", Data: []byte{0x89, 'P', 'N', 'G', 0xff}},
		{Type: model.PartToolCall, ID: "call_1", Name: "read", Arguments: json.RawMessage(`{"path": "a"}`)},
		{Type: model.PartToolResult, CallID: "call_1", Text: "", IsError: true},
	}
	// message is session.Message as e rpc wrote it before the generated types.
	type message struct {
		ID      string         `json:"id"`
		Parent  string         `json:"parent"`
		Time    time.Time      `json:"time"`
		Role    string         `json:"role"`
		Content []session.Part `json:"content"`
	}
	msgs := []session.Message{{ID: "e1", Time: when, Role: model.RoleUser, Content: parts[:1]},
		{ID: "e2", Parent: "e1", Time: when.UTC(), Role: model.RoleAssistant, Content: parts[1:]}}
	var old []message
	for _, m := range msgs {
		old = append(old, message{ID: m.ID, Parent: m.Parent, Time: m.Time, Role: m.Role, Content: m.Content})
	}
	sums := []store.Summary{{Path: "/h/x.jsonl", Title: "t", Modified: when, Messages: 4, Turns: 2, Cwd: "/w"}}
	tests := []struct {
		name     string
		old, new any
	}{
		{"models", infos, modelInfos(infos)},
		{"summaries", sums, summaries(sums)},
		{"messages", old, logMessages(msgs)},
		{"turn result", agentResult(false), turnResult(agentResult(false))},
		{"failed turn result", agentResult(true), turnResult(agentResult(true))},
		{"usage", agent.NewUsage(model.Usage{Input: 1, Output: 2, CacheRead: 3, CacheWrite5m: 4, CacheWrite1h: 5}),
			usage(agent.NewUsage(model.Usage{Input: 1, Output: 2, CacheRead: 3, CacheWrite5m: 4, CacheWrite1h: 5}))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if o, n := mustJSON(t, tt.old), mustJSON(t, tt.new); string(o) != string(n) {
				t.Errorf("bytes changed:\n old %s\n new %s", o, n)
			}
		})
	}
}

// TestEventsHoldGeneratedTypes: every event, encoded as e rpc stamps it
// (the agent's hand-written encoders), decodes strictly into its generated
// type, and that type encodes it back to the same bytes.
func TestEventsHoldGeneratedTypes(t *testing.T) {
	stamp := agent.NewStamp("01J0", json.RawMessage(`{"n":1}`))
	for _, ev := range events() {
		t.Run(ev.EventType(), func(t *testing.T) {
			line := stamp.Append(nil, ev)
			v, ok := protocol.NewEvent(ev.EventType())
			if !ok {
				t.Fatalf("event type %q has no generated type", ev.EventType())
			}
			dec := json.NewDecoder(bytes.NewReader(line))
			dec.DisallowUnknownFields()
			if err := dec.Decode(v); err != nil {
				t.Fatalf("%s into %T: %v", line, v, err)
			}
			if back := mustJSON(t, v); string(back) != string(line) {
				t.Errorf("%T re-encoded differs:\n e rpc  %s\n %T %s", v, line, v, back)
			}
		})
	}
}

// appendResult writes exactly what encoding/json writes for a turn result.
func FuzzAppendResult(f *testing.F) {
	for _, s := range []string{"", "The repo is e.", "a\"b\\c <&>", "\x00\x1f\u2028é😀", "\xff\xfe"} {
		f.Add(s, s+" done", false)
		f.Add(s, s, false) // one answer: final_output is output
	}
	f.Fuzz(func(t *testing.T, out, final string, failed bool) {
		r := turnResult(agentResult(failed))
		r.Output, r.FinalOutput = out, final
		if failed {
			r.Warnings = []string{out}
		}
		want, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendResult([]byte("x"), r, nil); string(got) != "x"+string(want) {
			t.Errorf("appendResult = %s, want x%s", got, want)
		}
		// With final_output already encoded, as a long answer's entry has it.
		if got := appendResult([]byte("x"), r, jsonenc.AppendString(nil, final)); string(got) != "x"+string(want) {
			t.Errorf("appendResult with finalJSON = %s, want x%s", got, want)
		}
		// A long answer's response line, written from its parts.
		if out == "" {
			return
		}
		r.Output = strings.Repeat(out, sharedMin/len(out)+1)
		r.FinalOutput = r.Output
		if final != out {
			r.FinalOutput += final
		}
		want, err = json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		parts := resultParts([]byte("\"p\xff\""), r, jsonenc.AppendString(nil, r.FinalOutput))
		if r.FinalOutput != r.Output {
			if parts != nil {
				t.Errorf("resultParts = %d parts for output and final_output that differ, want nil", len(parts))
			}
			return
		}
		if got, want := string(bytes.Join(parts, nil)), `{"id":"p`+"\uFFFD"+`","result":`+string(want)+"}"; got != want {
			i := 0
			for i < min(len(got), len(want)) && got[i] == want[i] {
				i++
			}
			t.Errorf("resultParts joined differs at %d of %d/%d: %.300q, want %.300q", i, len(got), len(want), got[i:], want[i:])
		}
	})
}

// A long answer's response is written from its history entry, not copied
// (resultParts, jsonl's vectored AppendShared on an OS pipe): the line is
// what encoding/json writes for the result.
func TestLongResultShared(t *testing.T) {
	c := startServer(t, serverSetup{osPipe: true})
	sid := c.create(nil)
	c.call("p", "session.prompt", map[string]any{"session": sid, "prompt": "/long 20000"})
	resp := c.response(`"p"`)
	var got struct{ Result protocol.Result }
	if err := json.Unmarshal([]byte(resp), &got); err != nil {
		t.Fatal(err)
	}
	r := got.Result
	if len(r.Output) < sharedMin || r.Output != r.FinalOutput || !strings.HasPrefix(r.Output, "w1 w2 ") || !strings.HasSuffix(r.Output, " w20000") {
		t.Fatalf("result output %d bytes %.40q…, final_output %d bytes", len(r.Output), r.Output, len(r.FinalOutput))
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"id":"p","result":` + string(b) + "}"; resp != want {
		t.Errorf("response line of %d bytes differs from encoding/json's %d", len(resp), len(want))
	}
}

// H1: a session.entries response is written in pieces, encoded entry by
// entry, and its bytes are those json.Marshal of the whole result writes
// (HTML escaping, a message over a piece's size, invalid UTF-8, no leaf);
// so are its MarshalJSON's, which the schema tests validate.
func TestEntriesParts(t *testing.T) {
	big := `{"role":"user","content":"` + strings.Repeat("x", entriesChunk+100) + `"}`
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	leaf := "e3"
	tests := []struct {
		name string
		r    SessionEntriesResult
	}{
		{name: "none", r: SessionEntriesResult{Entries: []session.Entry{}}},
		{name: "some", r: SessionEntriesResult{Leaf: &leaf, Entries: []session.Entry{
			{Type: store.TypeMessage, ID: "e1", Time: at, Message: json.RawMessage(`{"role":"user","content":"<a> & \u2028"}`)},
			{Type: store.TypeMessage, ID: "e2", Parent: "e1", Time: at, Message: json.RawMessage(big)},
			{Type: store.TypeName, ID: "e3", Parent: "e2", Time: at, Name: "bad \xff utf-8"},
		}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// encoding/json's bytes of the shape, the reference of the
			// hand encoder (a map's keys are written sorted).
			b, err := json.Marshal(map[string]any{"entries": tt.r.Entries, "leaf": tt.r.Leaf})
			if err != nil {
				t.Fatal(err)
			}
			want := `{"id":7,"result":` + string(b) + `}`
			if got := string(bytes.Join(tt.r.parts([]byte("7")), nil)); got != want {
				t.Errorf("parts joined:\n%.300s\nwant\n%.300s", got, want)
			}
			whole, err := json.Marshal(tt.r)
			if err != nil {
				t.Fatal(err)
			}
			if string(whole) != string(b) {
				t.Errorf("json.Marshal:\n%.300s\nwant\n%.300s", whole, b)
			}
		})
	}
}
