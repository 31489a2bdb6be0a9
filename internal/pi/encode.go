package pi

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"math"
	"strconv"

	"github.com/e-agent/e/internal/agent"
	"github.com/e-agent/e/internal/jsonenc"
)

// A streamed answer's text and thinking deltas, each a message_update, are
// most of what e --mode rpc writes. Through Feed and marshal each cost the
// event's boxing, two encoding/json passes (the assistantMessageEvent is a
// Marshaler, whose output encoding/json then checks and compacts) and a
// copy into the writer's queue, several times the rest of its path; here
// a delta that extends the open block goes straight from the translator
// into the queue, encoded by hand, byte for byte as marshal encodes it
// (encode_test.go), as e rpc's events are (internal/agent's AppendEvent).

// writeDelta writes ev, a text or reasoning delta that extends the block
// of its kind the translator has open (every delta of a block but its
// first), and reports whether it did; Feed translates the others.
func (fr *front) writeDelta(ev agent.Event) bool {
	var kind, typ, text string
	switch ev := ev.(type) {
	case *agent.Text:
		kind, typ, text = "text", "text_delta", ev.Delta
	case *agent.Reasoning:
		kind, typ, text = "thinking", "thinking_delta", ev.Delta
	default:
		return false
	}
	fr.trMu.Lock()
	i, u, ok := fr.tr.extend(kind, text)
	fr.trMu.Unlock()
	switch {
	case !ok:
		return false
	case !u.Cost.finite(): // marshal refuses it, as the event would have been
		fr.write(MessageUpdate{Type: "message_update", Usage: u,
			AssistantMessageEvent: AssistantEvent{Type: typ, ContentIndex: i, Text: text}})
		return true
	}
	// Background: the writer drains even after a failure, so this cannot block forever.
	_ = fr.deltas.Append(context.Background(), func(b []byte) []byte { return appendDeltaUpdate(b, typ, i, text, &u) })
	return true
}

// extend is delta for a delta that extends the open block of its kind:
// it adds text to the block and returns the content index and usage of
// the message_update delta would make, without making it; false when
// delta must run (no block of kind is open).
func (t *Translator) extend(kind, text string) (int, Usage, bool) {
	n := len(t.blocks)
	if t.asst == nil || t.awaitBatch || n == 0 || t.blocks[n-1].kind != kind {
		return 0, Usage{}, false
	}
	b := t.blocks[n-1]
	b.text.WriteString(text)
	return b.index, t.asst.Usage, true
}

// appendDeltaUpdate appends the message_update of a delta (an
// assistantMessageEvent of type typ: text_delta, thinking_delta or
// toolcall_delta) as marshal writes it. The costs must be finite.
func appendDeltaUpdate(dst []byte, typ string, index int, delta string, u *Usage) []byte {
	dst = appendUsage(append(dst, `{"type":"message_update","usage":`...), u)
	dst = jsonenc.AppendStringNoHTML(append(dst, `,"assistantMessageEvent":{"type":`...), typ)
	dst = strconv.AppendInt(append(dst, `,"contentIndex":`...), int64(index), 10)
	return append(jsonenc.AppendStringNoHTML(append(dst, `,"delta":`...), delta), "}}"...)
}

// appendUsage appends u as encoding/json writes it: the fields in their
// order, the omitzero ones only when set.
func appendUsage(dst []byte, u *Usage) []byte {
	dst = strconv.AppendInt(append(dst, `{"input":`...), u.Input, 10)
	dst = strconv.AppendInt(append(dst, `,"output":`...), u.Output, 10)
	dst = strconv.AppendInt(append(dst, `,"cacheRead":`...), u.CacheRead, 10)
	dst = strconv.AppendInt(append(dst, `,"cacheWrite":`...), u.CacheWrite, 10)
	if u.CacheWrite1h != 0 {
		dst = strconv.AppendInt(append(dst, `,"cacheWrite1h":`...), u.CacheWrite1h, 10)
	}
	if u.Reasoning != nil {
		dst = strconv.AppendInt(append(dst, `,"reasoning":`...), *u.Reasoning, 10)
	}
	dst = strconv.AppendInt(append(dst, `,"totalTokens":`...), u.TotalTokens, 10)
	c := &u.Cost
	dst = appendFloat(append(dst, `,"cost":{"input":`...), c.Input)
	dst = appendFloat(append(dst, `,"output":`...), c.Output)
	dst = appendFloat(append(dst, `,"cacheRead":`...), c.CacheRead)
	dst = appendFloat(append(dst, `,"cacheWrite":`...), c.CacheWrite)
	dst = appendFloat(append(dst, `,"total":`...), c.Total)
	if c.TotalFromProvider != nil {
		dst = strconv.AppendBool(append(dst, `,"totalFromProvider":`...), *c.TotalFromProvider)
	}
	return append(dst, "}}"...)
}

// finite reports whether encoding/json can encode c: no cost is infinite
// or NaN.
func (c *Cost) finite() bool {
	for _, f := range [...]float64{c.Input, c.Output, c.CacheRead, c.CacheWrite, c.Total} {
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return false
		}
	}
	return true
}

// appendFloat appends a finite f as encoding/json writes a float64 (as
// JavaScript writes a number): fixed notation from 1e-6 to 1e21, else an
// exponent without leading zeros.
func appendFloat(dst []byte, f float64) []byte {
	if f == 0 && !math.Signbit(f) { // every cost while nothing is priced
		return append(dst, '0')
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if n := len(dst); format == 'e' && n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
		dst[n-2] = dst[n-1] // e-07 is e-7
		dst = dst[:n-1]
	}
	return dst
}

// appendEvent appends ev as marshal writes it, for the events that carry
// a whole answer (text_end, message_end, turn_end, agent_end): through
// marshal each block of text costs encoding/json's check and compaction
// of its Content's own encoding, at about 100 MB/s, several times per
// turn. It reports false for an event or a value it does not encode (a
// system message, bash details, a cost that is not finite, tool call
// arguments that are not JSON): marshal writes those, or fails on them.
func appendEvent(dst []byte, ev Event) ([]byte, bool) {
	var ok bool
	switch ev := ev.(type) {
	case MessageUpdate:
		if !ev.Usage.Cost.finite() {
			return dst, false
		}
		dst = appendUsage(appendType(dst, ev.Type, "usage"), &ev.Usage)
		dst, ok = appendAssistantEvent(append(dst, `,"assistantMessageEvent":`...), &ev.AssistantMessageEvent)
	case MessageStart:
		dst, ok = appendMessage(appendType(dst, ev.Type, "message"), ev.Message)
	case MessageEnd:
		dst, ok = appendMessage(appendType(dst, ev.Type, "message"), ev.Message)
	case TurnEnd:
		if dst, ok = appendMessage(appendType(dst, ev.Type, "message"), ev.Message); ok {
			dst, ok = appendSlice(append(dst, `,"toolResults":`...), ev.ToolResults, appendToolResult)
		}
	case AgentEnd:
		if dst, ok = appendSlice(appendType(dst, ev.Type, "messages"), ev.Messages, appendMessage); ok {
			dst = strconv.AppendBool(append(dst, `,"willRetry":`...), ev.WillRetry)
		}
	}
	return append(dst, '}'), ok
}

// appendType appends the start of an event of type typ, up to its next
// field, key.
func appendType(dst []byte, typ, key string) []byte {
	dst = jsonenc.AppendStringNoHTML(append(dst, `{"type":`...), typ)
	return append(append(append(dst, `,"`...), key...), `":`...)
}

// appendSlice appends s as encoding/json writes a slice (null when nil),
// each element with appendElem.
func appendSlice[T any](dst []byte, s []T, appendElem func([]byte, T) ([]byte, bool)) ([]byte, bool) {
	if s == nil {
		return append(dst, "null"...), true
	}
	dst = append(dst, '[')
	for i, v := range s {
		if i > 0 {
			dst = append(dst, ',')
		}
		var ok bool
		if dst, ok = appendElem(dst, v); !ok {
			return dst, false
		}
	}
	return append(dst, ']'), true
}

// appendAssistantEvent appends ev as its MarshalJSON writes it.
func appendAssistantEvent(dst []byte, ev *AssistantEvent) ([]byte, bool) {
	dst = jsonenc.AppendStringNoHTML(append(dst, `{"type":`...), ev.Type)
	dst = strconv.AppendInt(append(dst, `,"contentIndex":`...), int64(ev.ContentIndex), 10)
	var ok bool
	switch ev.Type {
	case "text_start", "thinking_start":
		ok = true
	case "text_delta", "thinking_delta", "toolcall_delta":
		dst, ok = jsonenc.AppendStringNoHTML(append(dst, `,"delta":`...), ev.Text), true
	case "text_end", "thinking_end":
		dst, ok = jsonenc.AppendStringNoHTML(append(dst, `,"content":`...), ev.Text), true
	case "toolcall_start":
		dst = jsonenc.AppendStringNoHTML(append(dst, `,"id":`...), ev.ID)
		dst, ok = jsonenc.AppendStringNoHTML(append(dst, `,"toolName":`...), ev.ToolName), true
	case "toolcall_end":
		dst, ok = appendToolCall(append(dst, `,"toolCall":`...), ev.ToolCall)
	}
	return append(dst, '}'), ok
}

// appendMessage appends a user or assistant message as marshal writes it;
// false for the others.
func appendMessage(dst []byte, m any) ([]byte, bool) {
	switch m := m.(type) {
	case UserMessage:
		dst = jsonenc.AppendStringNoHTML(append(dst, `{"role":`...), m.Role)
		dst, ok := appendSlice(append(dst, `,"content":`...), m.Content, appendContent)
		dst = strconv.AppendInt(append(dst, `,"timestamp":`...), m.Timestamp, 10)
		return append(dst, '}'), ok
	case AssistantMessage:
		if !m.Usage.Cost.finite() {
			return dst, false
		}
		dst = jsonenc.AppendStringNoHTML(append(dst, `{"role":`...), m.Role)
		dst, ok := appendSlice(append(dst, `,"content":`...), m.Content, appendContent)
		dst = jsonenc.AppendStringNoHTML(append(dst, `,"api":`...), m.API)
		dst = jsonenc.AppendStringNoHTML(append(dst, `,"provider":`...), m.Provider)
		dst = jsonenc.AppendStringNoHTML(append(dst, `,"model":`...), m.Model)
		if m.ThinkingLevel != "" {
			dst = jsonenc.AppendStringNoHTML(append(dst, `,"thinkingLevel":`...), m.ThinkingLevel)
		}
		dst = appendUsage(append(dst, `,"usage":`...), &m.Usage)
		dst = jsonenc.AppendStringNoHTML(append(dst, `,"stopReason":`...), m.StopReason)
		if m.ErrorMessage != "" {
			dst = jsonenc.AppendStringNoHTML(append(dst, `,"errorMessage":`...), m.ErrorMessage)
		}
		dst = strconv.AppendInt(append(dst, `,"timestamp":`...), m.Timestamp, 10)
		if m.DurationMS != nil {
			dst = strconv.AppendInt(append(dst, `,"durationMs":`...), *m.DurationMS, 10)
		}
		if m.ResponseID != "" {
			dst = jsonenc.AppendStringNoHTML(append(dst, `,"responseId":`...), m.ResponseID)
		}
		if m.ResponseModel != "" {
			dst = jsonenc.AppendStringNoHTML(append(dst, `,"responseModel":`...), m.ResponseModel)
		}
		if m.RawStopReason != "" {
			dst = jsonenc.AppendStringNoHTML(append(dst, `,"rawStopReason":`...), m.RawStopReason)
		}
		return append(dst, '}'), ok
	}
	return dst, false
}

// appendToolResult appends a tool result message without details (bash's
// of a cut output) as marshal writes it.
func appendToolResult(dst []byte, m ToolResultMessage) ([]byte, bool) {
	if m.Details != nil {
		return dst, false
	}
	dst = jsonenc.AppendStringNoHTML(append(dst, `{"role":`...), m.Role)
	dst = jsonenc.AppendStringNoHTML(append(dst, `,"toolCallId":`...), m.ToolCallID)
	dst = jsonenc.AppendStringNoHTML(append(dst, `,"toolName":`...), m.ToolName)
	dst, ok := appendSlice(append(dst, `,"content":`...), m.Content, appendContent)
	dst = strconv.AppendBool(append(dst, `,"isError":`...), m.IsError)
	dst = strconv.AppendInt(append(dst, `,"timestamp":`...), m.Timestamp, 10)
	if m.DurationMS != nil {
		dst = strconv.AppendInt(append(dst, `,"durationMs":`...), *m.DurationMS, 10)
	}
	return append(dst, '}'), ok
}

// appendContent appends c as its MarshalJSON writes it.
func appendContent(dst []byte, c Content) ([]byte, bool) {
	switch c.Type {
	case "thinking":
		dst = jsonenc.AppendStringNoHTML(append(dst, `{"type":`...), c.Type)
		dst = jsonenc.AppendStringNoHTML(append(dst, `,"thinking":`...), c.Text)
		if c.Signature != "" {
			dst = jsonenc.AppendStringNoHTML(append(dst, `,"thinkingSignature":`...), c.Signature)
		}
		return append(dst, '}'), true
	case "image":
		dst = jsonenc.AppendStringNoHTML(append(dst, `{"type":`...), c.Type)
		dst = base64.StdEncoding.AppendEncode(append(dst, `,"data":"`...), c.Data)
		dst = jsonenc.AppendStringNoHTML(append(dst, `","mimeType":`...), c.MimeType)
		return append(dst, '}'), true
	case "toolCall":
		return appendToolCall(dst, c)
	}
	return append(jsonenc.AppendStringNoHTML(append(dst, `{"type":"text","text":`...), c.Text), '}'), true
}

// appendToolCall appends c's toolCall block as marshal writes it: its
// arguments compacted, as encoding/json compacts a json.RawMessage; false
// when they are not JSON.
func appendToolCall(dst []byte, c Content) ([]byte, bool) {
	tc := c.toolCall()
	dst = jsonenc.AppendStringNoHTML(append(dst, `{"type":`...), tc.Type)
	dst = jsonenc.AppendStringNoHTML(append(dst, `,"id":`...), tc.ID)
	dst = jsonenc.AppendStringNoHTML(append(dst, `,"name":`...), tc.Name)
	args := bytes.NewBuffer(append(dst, `,"arguments":`...))
	if err := json.Compact(args, tc.Arguments); err != nil {
		return dst, false
	}
	return append(args.Bytes(), '}'), true
}
