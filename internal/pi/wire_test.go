package pi

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/e-agent/e/internal/jsonl"
	"github.com/google/go-cmp/cmp"
)

// TestMarshalAsPi checks that lines are written as pi's JSON.stringify
// writes them (Q1): <, > and & as they are, in nested content blocks and
// events too, while U+2028 and U+2029 stay escaped (framing, rpc.md).
func TestMarshalAsPi(t *testing.T) {
	for _, c := range []struct {
		v    any
		want string
	}{
		{MessageEnd{Type: "message_end", Message: UserMessage{Role: "user", Content: []Content{{Type: "text", Text: "<a & b>\u2028"}}}},
			`{"type":"message_end","message":{"role":"user","content":[{"type":"text","text":"<a & b>\u2028"}],"timestamp":0}}`},
		{AssistantEvent{Type: "text_delta", Text: "<x>"}, `{"type":"text_delta","contentIndex":0,"delta":"<x>"}`},
	} {
		b, err := marshal(c.v)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != c.want {
			t.Errorf("marshal(%T) = %s, want %s", c.v, b, c.want)
		}
	}
}

// A response line's bytes (rpc-commands.md): the generated envelope
// (Response, pi/defs.json) writes the id first and only when the command
// had one, data only when the command has some (null for none), no HTML
// escaping.
func TestRespondBytes(t *testing.T) {
	tests := []struct {
		name string
		id   string // "" for a command without an id
		cmd  string
		data any
		err  error
		want string
	}{
		{name: "parse failure has no id", cmd: "parse", err: errors.New("Failed to parse command: x"),
			want: `{"type":"response","command":"parse","success":false,"error":"Failed to parse command: x"}`},
		{name: "failure with id", id: `"a"`, cmd: "set_model", data: map[string]string{"x": "y"}, err: errors.New("Model not found: a/b"),
			want: `{"id":"a","type":"response","command":"set_model","success":false,"error":"Model not found: a/b"}`},
		{name: "no data", id: `7`, cmd: "abort", data: noData{},
			want: `{"id":7,"type":"response","command":"abort","success":true}`},
		{name: "null data", id: `null`, cmd: "cycle_model",
			want: `{"id":null,"type":"response","command":"cycle_model","success":true,"data":null}`},
		{name: "data", id: `{"n":1}`, cmd: "get_last_assistant_text", data: map[string]string{"text": "<a> & b"},
			want: `{"id":{"n":1},"type":"response","command":"get_last_assistant_text","success":true,"data":{"text":"<a> & b"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			fr := &front{out: jsonl.NewWriter(&b)}
			var id json.RawMessage
			if tt.id != "" {
				id = json.RawMessage(tt.id)
			}
			fr.respond(id, tt.cmd, tt.data, tt.err)
			if err := fr.out.Close(); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want+"\n", b.String()); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
		})
	}
}
