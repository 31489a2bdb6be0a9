package agent

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// AppendEvent appends ev encoded as Marshal encodes it. The events a turn
// streams by the thousand (text, reasoning, tool output and the turn and
// tool markers) are encoded by hand, without reflection; the rest go
// through Marshal.
func AppendEvent(dst []byte, ev Event) []byte {
	switch ev := ev.(type) {
	case Text:
		return appendString(append(dst, `{"type":"text","delta":`...), ev.Delta, '}')
	case Reasoning:
		return appendString(append(dst, `{"type":"reasoning","delta":`...), ev.Delta, '}')
	case ToolOutput:
		dst = strconv.AppendInt(append(dst, `{"type":"tool_output","id":`...), int64(ev.ID), 10)
		return appendString(append(dst, `,"delta":`...), ev.Delta, '}')
	case ToolStart:
		return append(strconv.AppendInt(append(dst, `{"type":"tool_start","id":`...), int64(ev.ID), 10), '}')
	case TurnStart:
		return append(dst, `{"type":"turn_start"}`...)
	case TurnEnd:
		return append(append(dst, `{"type":"turn_end","aborted":`...), strconv.FormatBool(ev.Aborted)+"}"...)
	}
	b, err := Marshal(ev)
	if err != nil {
		// Every event type is plain data: a failure is a programming error.
		panic("agent: marshal " + ev.EventType() + " event: " + err.Error())
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
	tail := appendString([]byte(`,"session":`), session, ',')
	tail = append(append(tail, `"request":`...), request...)
	return Stamp{tail: append(tail, '}')}
}

// Append appends ev with the stamp's fields after its own.
func (s Stamp) Append(dst []byte, ev Event) []byte {
	dst = AppendEvent(dst, ev)
	return append(dst[:len(dst)-1], s.tail...)
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string the way encoding/json writes it
// (HTML characters, U+2028 and U+2029 escaped, invalid UTF-8 replaced),
// then the byte end.
func appendString(dst []byte, s string, end byte) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case c == utf8.RuneError && size == 1:
			dst = append(append(dst, s[start:i]...), `\ufffd`...)
		case c == '\u2028' || c == '\u2029':
			dst = append(append(dst, s[start:i]...), '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(append(dst, s[start:]...), '"', end)
}
