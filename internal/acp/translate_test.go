package acp

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/e-agent/e/internal/agent"
)

func TestTranslatorEvent(t *testing.T) {
	used, size := int64(150), int64(1000)
	tests := []struct {
		name   string
		before []agent.Event // fed first, their updates ignored
		event  agent.Event
		want   []Update
	}{
		{name: "text", event: &agent.Text{Delta: "hi"},
			want: []Update{{SessionUpdate: kindMessage, Content: text("hi")}}},
		{name: "reasoning", event: &agent.Reasoning{Delta: "hm"},
			want: []Update{{SessionUpdate: kindThought, Content: text("hm")}}},
		{name: "tool batch: one tool_call per call, pending, with kind and location",
			event: agent.ToolBatch{Calls: []agent.Call{
				{ID: 1, Name: "write", Arguments: json.RawMessage(`{"path":"a.txt"}`), Category: "write", Target: "a.txt"},
				{ID: 2, Name: "bash", Arguments: json.RawMessage(`{"command":"ls"}`), Category: "execute", Target: "ls"},
				{ID: 3, Name: "deploy", Arguments: json.RawMessage(`{}`), Category: "extension"},
			}},
			want: []Update{
				{SessionUpdate: kindToolCall, ToolCallID: "call_1", Title: strp("write a.txt"), Kind: "edit", Status: "pending",
					RawInput: json.RawMessage(`{"path":"a.txt"}`), Locations: []Location{{Path: "/w/a.txt"}}},
				{SessionUpdate: kindToolCall, ToolCallID: "call_2", Title: strp("bash ls"), Kind: "execute", Status: "pending",
					RawInput: json.RawMessage(`{"command":"ls"}`)},
				{SessionUpdate: kindToolCall, ToolCallID: "call_3", Title: strp("deploy"), Kind: "other", Status: "pending",
					RawInput: json.RawMessage(`{}`)},
			}},
		{name: "tool start", event: agent.ToolStart{ID: 4},
			want: []Update{{SessionUpdate: kindToolUpd, ToolCallID: "call_4", Status: "in_progress"}}},
		{name: "tool output repeats the output so far", before: []agent.Event{agent.ToolOutput{ID: 2, Delta: "a\n"}},
			event: agent.ToolOutput{ID: 2, Delta: "b\n"},
			want:  []Update{{SessionUpdate: kindToolUpd, ToolCallID: "call_2", ToolOutput: textContent("a\nb\n")}}},
		{name: "denied ends failed, the outcome kept", event: agent.ToolEnd{ID: 2, Outcome: "denied", Summary: "denied", Content: "denied: no"},
			want: []Update{{SessionUpdate: kindToolUpd, ToolCallID: "call_2", Status: "failed", ToolOutput: textContent("denied: no"),
				RawOutput: map[string]string{"outcome": "denied", "summary": "denied"}}}},
		{name: "completed", event: agent.ToolEnd{ID: 1, Outcome: "completed", Summary: "1 line", Content: "ok"},
			want: []Update{{SessionUpdate: kindToolUpd, ToolCallID: "call_1", Status: "completed", ToolOutput: textContent("ok"),
				RawOutput: map[string]string{"outcome": "completed", "summary": "1 line"}}}},
		{name: "usage: prompt and output tokens of the window",
			event: agent.UsageEvent{Usage: usage(100, 30, 20)},
			want:  []Update{{SessionUpdate: kindUsage, Used: &used, Size: &size}}},
		{name: "session name", event: agent.SessionName{Name: "fix it"},
			want: []Update{{SessionUpdate: kindInfo, Title: strp("fix it")}}},
		{name: "events ACP has no kind for", event: agent.Retry{Attempt: 2}, want: nil},
		{name: "turn end", event: agent.TurnEnd{}, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := &Translator{Cwd: "/w", ContextWindow: 1000}
			for _, ev := range tt.before {
				tr.Event(ev)
			}
			if diff := cmp.Diff(tt.want, tr.Event(tt.event)); diff != "" {
				t.Errorf("updates (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTranslatorOutputBounded(t *testing.T) {
	tr := &Translator{}
	big := make([]byte, maxToolOutput)
	for i := range big {
		big[i] = 'x'
	}
	tr.Event(agent.ToolOutput{ID: 1, Delta: string(big)})
	u := tr.Event(agent.ToolOutput{ID: 1, Delta: "tail"})
	got := u[0].ToolOutput[0].Content.Text
	if len(got) != maxToolOutput || got[len(got)-4:] != "tail" {
		t.Errorf("output of %d bytes ending %q, want the last %d bytes", len(got), got[len(got)-4:], maxToolOutput)
	}
}

func TestUpdateJSON(t *testing.T) {
	tests := []struct {
		name string
		u    Update
		want string
	}{
		{"message chunk keeps one content block", Update{SessionUpdate: kindMessage, Content: text("hi")},
			`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}`},
		{"tool content is a list", Update{SessionUpdate: kindToolUpd, ToolCallID: "call_1", ToolOutput: []ToolCallContent{}},
			`{"sessionUpdate":"tool_call_update","toolCallId":"call_1","content":[]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.u)
			if err != nil || string(b) != tt.want {
				t.Errorf("got %s, %v; want %s", b, err, tt.want)
			}
		})
	}
}

// usage builds a usage event's counts without naming the model package.
func usage(input, cacheRead, output int64) agent.Usage {
	var u agent.Usage
	u.Input, u.CacheRead, u.Output = input, cacheRead, output
	u.PromptTokens = input + cacheRead
	return u
}
