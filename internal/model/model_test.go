package model

import (
	"encoding/json"
	"testing"
)

// Message.AppendJSON writes exactly what encoding/json writes.
func FuzzMessageAppendJSON(f *testing.F) {
	f.Add("assistant", "text", "hello <b>", "", "", false, []byte(nil), "")
	f.Add("tool", "tool_result", "out\n\x00\xff", "", "call_1", true, []byte(nil), "")
	f.Add("assistant", "tool_call", "", "ls", "c1", false, []byte(nil), `{"a": "<x>"}`)
	f.Add("user", "image", "", "", "", false, []byte{1, 2, 3}, "")
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
	})
}
