package server

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"
)

// nextOfType returns the next line of type ty, skipping others.
func (c *client) nextOfType(ty string) string {
	c.t.Helper()
	for {
		line := c.next()
		if gjson.Get(line, "type").String() == ty {
			return line
		}
	}
}

// G1, G2: e rpc's book of client tool calls: a call answered once, a
// second answer and one for a call never made refused with unknown_call;
// session.close ends a pending call with tool_call_cancelled, after which
// its answer is refused too.
func TestClientToolCalls(t *testing.T) {
	c := startServer(t, serverSetup{})
	c.call("h", "hello", map[string]any{"ask": true})
	c.response(`"h"`)
	sid := c.create(map[string]any{"client_tools": []map[string]any{{"name": "ticket"}}})

	c.call("p1", "session.prompt", map[string]any{"session": sid, "prompt": "/tool ticket {\"id\":1}\n/then\n/text ok"})
	call := c.nextOfType("tool_call")
	if diff := cmp.Diff(map[string]any{"type": "tool_call", "call": 1.0, "session": sid, "request": "p1", "id": 1.0, "name": "ticket",
		"arguments": map[string]any{"id": 1.0}}, gjson.Parse(call).Value()); diff != "" {
		t.Errorf("tool_call line (-want +got):\n%s", diff)
	}
	c.call("r1", "tool.result", map[string]any{"call": 1, "content": "open"})
	lines := c.until(`"p1"`)
	if got := gjson.Get(lines[len(lines)-1], "result.final_output").String(); got != "ok" {
		t.Errorf("final output %q; want ok:\n%v", got, lines)
	}
	for _, tc := range []struct {
		name, id string
		call     int
		want     string
	}{
		{name: "answered twice", id: "r2", call: 1, want: "tool.result: params.call: call 1 was already answered"},
		{name: "never made", id: "r3", call: 9, want: "tool.result: params.call: no tool call 9 was made"},
	} {
		c.call(tc.id, "tool.result", map[string]any{"call": tc.call, "content": "x"})
		resp := c.response(fmt.Sprintf("%q", tc.id))
		if got := gjson.Get(resp, "error").String(); got != tc.want || gjson.Get(resp, "code").String() != "unknown_call" {
			t.Errorf("%s: %s; want unknown_call %q", tc.name, resp, tc.want)
		}
	}

	c.call("p2", "session.prompt", map[string]any{"session": sid, "prompt": "/tool ticket {}"})
	n := gjson.Get(c.nextOfType("tool_call"), "call").Int()
	c.call("x", "session.close", map[string]any{"session": sid})
	cancelled := c.nextOfType("tool_call_cancelled")
	if diff := cmp.Diff(map[string]any{"type": "tool_call_cancelled", "call": float64(n), "session": sid, "reason": "interrupted"},
		gjson.Parse(cancelled).Value()); diff != "" {
		t.Errorf("tool_call_cancelled line (-want +got):\n%s", diff)
	}
	c.response(`"x"`)
	c.call("r4", "tool.result", map[string]any{"call": n, "content": "late"})
	if resp := c.response(`"r4"`); gjson.Get(resp, "code").String() != "unknown_call" {
		t.Errorf("late result: %s; want unknown_call", resp)
	}
	if code := c.closeInput(); code != 0 {
		t.Errorf("exit %d", code)
	}
}
