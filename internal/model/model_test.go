package model

import (
	"encoding/json"
	"testing"

	"github.com/e-agent/e/internal/jsonenc"
)

// Message.AppendJSON writes exactly what encoding/json writes.
func FuzzMessageAppendJSON(f *testing.F) {
	f.Add("assistant", "text", "hello <b>", "", "", false, []byte(nil), "")
	f.Add("tool", "tool_result", "out\n\x00\xff", "", "call_1", true, []byte(nil), "")
	f.Add("assistant", "tool_call", "", "ls", "c1", false, []byte(nil), `{"a": "<x>"}`)
	f.Add("user", "image", "", "", "", false, []byte{1, 2, 3}, "")
	f.Add("assistant", "text", "w1 \"w2\"\u2028\xff", "", "", false, []byte(nil), "")
	f.Fuzz(func(t *testing.T, role, typ, text, name, id string, isErr bool, data []byte, args string) {
		p := Part{Type: typ, Text: text, Signature: name + text, MediaType: name, Data: data, ID: id, Name: name, CallID: id, IsError: isErr}
		if args != "" {
			p.Arguments = json.RawMessage(args)
		}
		for _, m := range []Message{{Role: role}, {Role: role, Content: []Part{}}, {Role: role, Content: []Part{p, {Type: typ, Text: text}}}} {
			want, werr := json.Marshal(m)
			got, gerr := m.AppendJSON([]byte("x"))
			if (werr != nil) != (gerr != nil) {
				t.Fatalf("AppendJSON error %v, encoding/json %v", gerr, werr)
			}
			if werr == nil && string(got) != "x"+string(want) {
				t.Errorf("AppendJSON = %s, want x%s", got, want)
			}
		}
		// AppendJSONText's text: the one text part's encoding, nothing else.
		for _, m := range []Message{{Role: role, Content: []Part{p}}, {Role: role, Content: []Part{{Type: typ, Text: text}}},
			{Role: role, Content: []Part{{Type: PartText, Text: text}, {Type: PartText, Text: text}}}} {
			b, got, err := m.AppendJSONText([]byte("x"))
			if err != nil {
				continue
			}
			if plain, _ := m.AppendJSON([]byte("x")); string(plain) != string(b) {
				t.Errorf("AppendJSONText = %s, AppendJSON %s", b, plain)
			}
			var want []byte
			if c := m.Content; len(c) == 1 && c[0].Type == PartText && c[0].Text != "" && c[0].Signature == "" &&
				c[0].MediaType == "" && c[0].Data == nil && c[0].ID == "" && c[0].Name == "" && c[0].Arguments == nil && c[0].CallID == "" && !c[0].IsError {
				want = jsonenc.AppendString(nil, c[0].Text)
			}
			if string(got) != string(want) || (got == nil) != (want == nil) {
				t.Errorf("AppendJSONText(%+v) text = %q, want %q", m, got, want)
			}
		}
	})
}
