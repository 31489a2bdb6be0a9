package pi

import (
	"context"
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
	_ = fr.out.Append(context.Background(), func(b []byte) []byte { return appendDeltaUpdate(b, typ, i, text, &u) })
	return true
}

// extend is delta for a delta that extends the open block of its kind:
// it adds text to the block and returns the content index and usage of
// the message_update delta would make, without making it; false when
// delta must run (no block of kind is open).
func (t *Translator) extend(kind, text string) (int, Usage, bool) {
	if t.asst == nil || t.awaitBatch || t.blockType != kind {
		return 0, Usage{}, false
	}
	t.blockText.WriteString(text)
	return len(t.asst.Content) - 1, t.asst.Usage, true
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
