package acp

import (
	"encoding/json"
	"path/filepath"
	"strconv"

	"github.com/e-agent/e/internal/agent"
	"github.com/e-agent/e/internal/session"
)

// Update kinds e sends.
const (
	kindMessage  = "agent_message_chunk"
	kindThought  = "agent_thought_chunk"
	kindUser     = "user_message_chunk"
	kindToolCall = "tool_call"
	kindToolUpd  = "tool_call_update"
	kindUsage    = "usage_update"
	kindInfo     = "session_info_update"
	kindConfig   = "config_option_update"
)

// maxToolOutput bounds the streamed output a tool_call_update repeats:
// ACP replaces a call's content with each update, so e sends the tail.
const maxToolOutput = 64 << 10

// Translator turns one session's e events into session/update payloads.
// It keeps what tool_call_update needs across events (each call's output
// so far); one Translator serves one session, its turns one after another.
type Translator struct {
	Cwd           string // resolves tool targets into locations
	ContextWindow int64  // usage_update's size; 0: no usage updates
	output        map[int]string
	lastUsed      int64
}

// ToolCallID is the ACP id of e's call n.
func ToolCallID(n int) string { return "call_" + strconv.Itoa(n) }

// toolKind maps e's tool category onto ACP's ToolKind.
func toolKind(category string) string {
	switch category {
	case "read":
		return "read"
	case "write":
		return "edit"
	case "execute":
		return "execute"
	case "search":
		return "search"
	}
	return "other" // wait, extension, mcp
}

func text(s string) *ContentBlock { return &ContentBlock{Type: "text", Text: s} }

func strp(s string) *string { return &s }

// callTitle is what an editor shows for a call: the tool and its target.
func callTitle(name, target string) string {
	if target == "" {
		return name
	}
	return name + " " + target
}

// Call returns the tool_call announcing c (pending: nothing ran yet).
func (t *Translator) Call(c agent.Call) Update {
	u := Update{SessionUpdate: kindToolCall, ToolCallID: ToolCallID(c.ID), Title: strp(callTitle(c.Name, c.Target)),
		Kind: toolKind(c.Category), Status: "pending", RawInput: c.Arguments}
	if c.Target != "" && (c.Category == "read" || c.Category == "write" || c.Category == "search") {
		p := c.Target
		if !filepath.IsAbs(p) {
			p = filepath.Join(t.Cwd, p)
		}
		u.Locations = []Location{{Path: p}}
	}
	return u
}

// Event returns the updates ev stands for; the events of e's that ACP has
// no kind for (turn_start, retry, compacting, …) give none, each for the
// reason eventFates gives.
func (t *Translator) Event(ev agent.Event) []Update {
	switch ev := ev.(type) {
	case *agent.Text:
		return []Update{{SessionUpdate: kindMessage, Content: text(ev.Delta)}}
	case *agent.Reasoning:
		return []Update{{SessionUpdate: kindThought, Content: text(ev.Delta)}}
	case agent.ToolBatch:
		var out []Update
		for _, c := range ev.Calls {
			out = append(out, t.Call(c))
		}
		return out
	case agent.ToolStart:
		return []Update{{SessionUpdate: kindToolUpd, ToolCallID: ToolCallID(ev.ID), Status: "in_progress"}}
	case agent.ToolOutput:
		if t.output == nil {
			t.output = map[int]string{}
		}
		out := t.output[ev.ID] + ev.Delta
		if len(out) > maxToolOutput {
			out = out[len(out)-maxToolOutput:]
		}
		t.output[ev.ID] = out
		return []Update{{SessionUpdate: kindToolUpd, ToolCallID: ToolCallID(ev.ID), ToolOutput: textContent(out)}}
	case agent.ToolEnd:
		delete(t.output, ev.ID)
		return []Update{t.End(ev.ID, ev.Outcome, ev.Summary, ev.Content)}
	case agent.UsageEvent:
		if t.ContextWindow <= 0 {
			return nil
		}
		t.lastUsed = ev.PromptTokens + ev.Output
		return []Update{{SessionUpdate: kindUsage, Used: &t.lastUsed, Size: &t.ContextWindow}}
	case agent.SessionName:
		return []Update{{SessionUpdate: kindInfo, Title: strp(ev.Name)}}
	}
	return nil
}

// End returns the tool_call_update that ends call id: completed, or failed
// for every other outcome of e's (failed, denied, interrupted), which
// rawOutput keeps.
func (t *Translator) End(id int, outcome, summary, content string) Update {
	status := "completed"
	if outcome != "completed" {
		status = "failed"
	}
	return Update{SessionUpdate: kindToolUpd, ToolCallID: ToolCallID(id), Status: status,
		ToolOutput: textContent(content), RawOutput: map[string]string{"outcome": outcome, "summary": summary}}
}

// Cost returns the usage_update that reports the session's cost so far
// after a turn, or false when the model has no prices or no usage came.
func (t *Translator) Cost(total *float64) (Update, bool) {
	if total == nil || t.ContextWindow <= 0 {
		return Update{}, false
	}
	used := t.lastUsed
	return Update{SessionUpdate: kindUsage, Used: &used, Size: &t.ContextWindow,
		Cost: &Cost{Amount: *total, Currency: "USD"}}, true
}

func textContent(s string) []ToolCallContent {
	if s == "" {
		return []ToolCallContent{}
	}
	return []ToolCallContent{{Type: "content", Content: ContentBlock{Type: "text", Text: s}}}
}

// Roles and part types of e's persisted messages (schemas/defs.json#/$defs/part).
const (
	roleUser       = "user"
	partText       = "text"
	partReasoning  = "reasoning"
	partToolCall   = "tool_call"
	partToolResult = "tool_result"
)

// History returns the updates that replay a session's branch for
// session/load: user text as user_message_chunk, the answers, reasoning,
// and every tool call with its result. Call ids are counted from 1 in
// order, as e numbers them.
func (t *Translator) History(entries []session.Entry) []Update {
	var out []Update
	ids := map[string]int{} // provider call id → e's number
	n := 0
	for _, m := range agent.History(entries) {
		for _, p := range m.Content {
			switch {
			case m.Role == roleUser && p.Type == partText:
				out = append(out, Update{SessionUpdate: kindUser, Content: text(p.Text)})
			case p.Type == partText:
				out = append(out, Update{SessionUpdate: kindMessage, Content: text(p.Text)})
			case p.Type == partReasoning && p.Text != "":
				out = append(out, Update{SessionUpdate: kindThought, Content: text(p.Text)})
			case p.Type == partToolCall:
				n++
				ids[p.ID] = n
				cat, target := agent.Describe(p.Name, p.Arguments)
				out = append(out, t.Call(agent.Call{ID: n, Name: p.Name, Arguments: args(p.Arguments), Category: cat, Target: target}))
			case p.Type == partToolResult:
				outcome := "completed"
				if p.IsError {
					outcome = "failed"
				}
				if id, ok := ids[p.CallID]; ok {
					out = append(out, t.End(id, outcome, "", p.Text))
				}
			}
		}
	}
	return out
}

func args(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage(`{}`)
	}
	return raw
}
