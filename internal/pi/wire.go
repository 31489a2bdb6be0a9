package pi

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/e-agent/e/internal/model"
)

// The wire shapes of pi's messages and events (message-types.md, json.md)
// are generated from schemas/pi into wire_gen.go; here is the behaviour
// over them and the two unions the generator leaves to hand-written code
// (internal/gen/pi.go: piUnions): a content block and an
// assistantMessageEvent, each a tagged struct.

// marshal is json.Marshal without its HTML escaping: pi (JSON.stringify)
// writes <, > and & as they are, e's own encoder would write \u003c ….
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// Add returns u + v, without a reasoning count or a cost source: a sum of
// several calls' usage (get_session_stats, a compaction's) has neither.
func (u Usage) Add(v Usage) Usage {
	return Usage{Input: u.Input + v.Input, Output: u.Output + v.Output, CacheRead: u.CacheRead + v.CacheRead,
		CacheWrite: u.CacheWrite + v.CacheWrite, CacheWrite1h: u.CacheWrite1h + v.CacheWrite1h,
		TotalTokens: u.TotalTokens + v.TotalTokens, Cost: Cost{Input: u.Cost.Input + v.Cost.Input,
			Output: u.Cost.Output + v.Cost.Output, CacheRead: u.Cost.CacheRead + v.Cost.CacheRead,
			CacheWrite: u.Cost.CacheWrite + v.Cost.CacheWrite, Total: u.Cost.Total + v.Cost.Total}}
}

// combineUsage is the usage of two model calls as pi sums a compaction's
// two summaries: reasoning summed when either has a count, the cost
// reported by the provider only when both say so.
func combineUsage(u, v Usage) Usage {
	out := u.Add(v)
	if u.Reasoning != nil || v.Reasoning != nil {
		n := ptrOr(u.Reasoning) + ptrOr(v.Reasoning)
		out.Reasoning = &n
	}
	if u.Cost.TotalFromProvider != nil || v.Cost.TotalFromProvider != nil {
		both := ptrOr(u.Cost.TotalFromProvider) && ptrOr(v.Cost.TotalFromProvider)
		out.Cost.TotalFromProvider = &both
	}
	return out
}

// ptrOr is *p, or the zero value when p is nil.
func ptrOr[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// NewUsage converts e's usage, priced at p (nil: no cost).
func NewUsage(u model.Usage, p *model.Price) Usage {
	out := Usage{Input: u.Input, Output: u.Output, CacheRead: u.CacheRead, CacheWrite: u.CacheWrite5m + u.CacheWrite1h,
		CacheWrite1h: u.CacheWrite1h, TotalTokens: u.Prompt() + u.Output}
	if p != nil {
		out.Cost = Cost{Input: float64(u.Input) * p.Input / 1e6, Output: float64(u.Output) * p.Output / 1e6,
			CacheRead:  float64(u.CacheRead) * p.CacheRead / 1e6,
			CacheWrite: (float64(u.CacheWrite5m)*p.CacheWrite5m + float64(u.CacheWrite1h)*p.CacheWrite1h) / 1e6}
		out.Cost.Total = out.Cost.Input + out.Cost.Output + out.Cost.CacheRead + out.Cost.CacheWrite
	}
	return out
}

// withReasoning returns u with its reasoning count as pi's providers
// report it: its OpenAI ones always (0 when the API sent none), its
// Anthropic one when the API sent a count (e keeps only a non-zero one).
func withReasoning(u Usage, api string, n int64) Usage {
	if n > 0 || api == model.APIOpenAIChat || api == model.APIOpenAIResponses {
		u.Reasoning = &n
	}
	return u
}

// pricedUsage is the usage of a finished model call, which pi marks as
// priced by e (not reported by the provider).
func pricedUsage(u model.Usage, p *model.Price) Usage {
	out, fromProvider := NewUsage(u, p), false
	out.Cost.TotalFromProvider = &fromProvider
	return out
}

// Content is one content block: text, thinking, image or toolCall.
type Content struct {
	Type      string          // "text", "thinking", "image", "toolCall"
	Text      string          // text and thinking
	Signature string          // thinking
	Data      []byte          // image
	MimeType  string          // image
	ID, Name  string          // toolCall
	Arguments json.RawMessage // toolCall
}

// MarshalJSON writes c as the generated struct of its type, each required
// field present.
func (c Content) MarshalJSON() ([]byte, error) {
	switch c.Type {
	case "thinking":
		return marshal(ThinkingContent{Type: c.Type, Thinking: c.Text, ThinkingSignature: c.Signature})
	case "image":
		return marshal(ImageContent{Type: c.Type, Data: base64.StdEncoding.EncodeToString(c.Data), MimeType: c.MimeType})
	case "toolCall":
		return marshal(c.toolCall())
	}
	return marshal(TextContent{Type: "text", Text: c.Text})
}

// toolCall is a toolCall block; arguments that are not an object (a call
// cut off mid-stream) are {}.
func (c Content) toolCall() ToolCall {
	args := c.Arguments
	if len(args) == 0 || args[0] != '{' {
		args = json.RawMessage("{}")
	}
	return ToolCall{Type: "toolCall", ID: c.ID, Name: c.Name, Arguments: args}
}

// Event is one session event: a struct whose JSON has a "type" field.
type Event = any

// AssistantEvent is the assistantMessageEvent of a message_update: which
// fields are set depends on Type (text_*, thinking_*, toolcall_*).
type AssistantEvent struct {
	Type         string
	ContentIndex int
	Text         string  // *_delta: the delta; text_end, thinking_end: the block's text
	ID, ToolName string  // toolcall_start
	ToolCall     Content // toolcall_end
}

// MarshalJSON writes ev as the generated struct of its type (schemas/pi
// event.json: ame_*).
func (ev AssistantEvent) MarshalJSON() ([]byte, error) {
	i := int64(ev.ContentIndex)
	switch ev.Type {
	case "text_start":
		return marshal(AmeTextStart{Type: ev.Type, ContentIndex: i})
	case "thinking_start":
		return marshal(AmeThinkingStart{Type: ev.Type, ContentIndex: i})
	case "text_delta":
		return marshal(AmeTextDelta{Type: ev.Type, ContentIndex: i, Delta: ev.Text})
	case "thinking_delta":
		return marshal(AmeThinkingDelta{Type: ev.Type, ContentIndex: i, Delta: ev.Text})
	case "toolcall_delta":
		return marshal(AmeToolcallDelta{Type: ev.Type, ContentIndex: i, Delta: ev.Text})
	case "text_end":
		return marshal(AmeTextEnd{Type: ev.Type, ContentIndex: i, Content: ev.Text})
	case "thinking_end":
		return marshal(AmeThinkingEnd{Type: ev.Type, ContentIndex: i, Content: ev.Text})
	case "toolcall_start":
		return marshal(AmeToolcallStart{Type: ev.Type, ContentIndex: i, ID: ev.ID, ToolName: ev.ToolName})
	case "toolcall_end":
		return marshal(AmeToolcallEnd{Type: ev.Type, ContentIndex: i, ToolCall: ev.ToolCall.toolCall()})
	}
	return nil, fmt.Errorf("pi: assistantMessageEvent: unknown type %q", ev.Type)
}
