package pi

import (
	"testing"
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
