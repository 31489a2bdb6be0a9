package agent

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/e-agent/e/internal/jsonenc"
)

// AppendEvent appends ev encoded as Marshal encodes it, always valid UTF-8.
// The events a turn streams by the thousand (text, reasoning, tool output
// and the turn and tool markers) are encoded by hand, without reflection;
// the rest go through Marshal.
func AppendEvent(dst []byte, ev Event) []byte {
	switch ev := ev.(type) {
	case *Text:
		return append(jsonenc.AppendString(append(dst, `{"type":"text","delta":`...), ev.Delta), '}')
	case *Reasoning:
		return append(jsonenc.AppendString(append(dst, `{"type":"reasoning","delta":`...), ev.Delta), '}')
	case ToolOutput:
		dst = strconv.AppendInt(append(dst, `{"type":"tool_output","id":`...), int64(ev.ID), 10)
		return append(jsonenc.AppendString(append(dst, `,"delta":`...), ev.Delta), '}')
	case ToolStart:
		return append(strconv.AppendInt(append(dst, `{"type":"tool_start","id":`...), int64(ev.ID), 10), '}')
	case TurnStart:
		return append(dst, `{"type":"turn_start"}`...)
	case TurnEnd:
		dst = append(append(dst, `{"type":"turn_end","aborted":`...), strconv.FormatBool(ev.Aborted)...)
		if ev.StopReason != "" {
			dst = jsonenc.AppendString(append(dst, `,"stop_reason":`...), ev.StopReason)
		}
		return append(dst, '}')
	}
	b, err := Marshal(ev)
	if err != nil {
		// Every event type is plain data: a failure is a programming error.
		panic("agent: marshal " + ev.EventType() + " event: " + err.Error())
	}
	if !utf8.Valid(b) { // raw JSON from a provider (tool call arguments)
		b = bytes.ToValidUTF8(b, []byte("\uFFFD"))
	}
	return append(dst, b...)
}

// Stamp appends events stamped with the session and request they belong
// to (S2). Its tail is encoded once, for every event of a turn.
type Stamp struct {
	tail []byte // `,"session":…,"request":…}`
}

// NewStamp returns the stamp of session and request, a JSON value.
func NewStamp(session string, request json.RawMessage) Stamp {
	tail := append(jsonenc.AppendString([]byte(`,"session":`), session), ',')
	tail = append(append(tail, `"request":`...), bytes.ToValidUTF8(request, []byte("\uFFFD"))...)
	return Stamp{tail: append(tail, '}')}
}

// Append appends ev with the stamp's fields after its own, always valid
// UTF-8.
func (s Stamp) Append(dst []byte, ev Event) []byte {
	dst = AppendEvent(dst, ev)
	return append(dst[:len(dst)-1], s.tail...)
}
