package model

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// maxEventSize bounds one server-sent event (its lines and data together),
// so a broken or hostile server cannot make e buffer without limit.
const maxEventSize = 8 << 20

// sseEvent is one dispatched server-sent event.
type sseEvent struct {
	Event string // "" when the server sent no event field
	Data  string // data lines joined by "\n"
	ID    string // last event id seen on the stream
	Retry int    // reconnection time in ms from the last retry field, -1 when none
}

// rawEvent is a dispatched event whose Event and Data are views of the
// reader's buffers, valid until its next call: the provider adapters decode
// each event before reading the next, so none is copied.
type rawEvent struct {
	Event []byte
	Data  []byte
	ID    string
	Retry int
}

// errEventTooLarge reports an event over the reader's size limit.
var errEventTooLarge = errors.New("server-sent event too large")

// sseReader parses a text/event-stream as the WHATWG HTML standard describes
// it: lines end in CRLF, LF or CR; lines starting with ':' are comments; an
// empty line dispatches the pending event, and an event without data is not
// dispatched. A pending event at end of stream is discarded.
type sseReader struct {
	br      *bufio.Reader
	max     int
	line    []byte
	data    bytes.Buffer
	hasData bool
	event   []byte
	id      string
	retry   int
	skipLF  bool // the last line ended in CR: a following LF belongs to it
	// dispatched: the last call returned the pending event, to be cleared
	// on the next one (its views point into event and data).
	dispatched bool
	started    bool // the optional leading BOM has been handled
}

func newSSEReader(r io.Reader, max int) *sseReader {
	return &sseReader{br: bufio.NewReaderSize(r, streamReadBuffer), max: max, retry: -1}
}

// Next returns the next event. At the end of the stream it returns io.EOF;
// read errors are returned as they are.
func (r *sseReader) Next() (sseEvent, error) {
	ev, err := r.NextRaw()
	return sseEvent{Event: string(ev.Event), Data: string(ev.Data), ID: ev.ID, Retry: ev.Retry}, err
}

// NextRaw is Next without copying: the event is valid until the next call.
func (r *sseReader) NextRaw() (rawEvent, error) {
	if r.dispatched {
		r.event, r.hasData, r.dispatched = r.event[:0], false, false
		r.data.Reset()
	}
	for {
		line, err := r.readLine()
		if err != nil {
			return rawEvent{}, err
		}
		if len(line) == 0 {
			if !r.hasData {
				r.event = r.event[:0]
				continue
			}
			r.dispatched = true
			return rawEvent{Event: r.event, Data: r.data.Bytes(), ID: r.id, Retry: r.retry}, nil
		}
		if value, ok := bytes.CutPrefix(line, []byte("data:")); ok && !r.hasData && r.blankNext() {
			// An event of one data line whose blank line is already
			// buffered (a provider's delta): its data is the line as it is,
			// not a copy.
			r.dispatched = true
			return rawEvent{Event: r.event, Data: bytes.TrimPrefix(value, []byte{' '}), ID: r.id, Retry: r.retry}, nil
		}
		r.field(line)
	}
}

// blankNext consumes the empty line that comes next if it is wholly
// buffered, reading nothing, and reports whether it did: the line just
// returned stays valid.
func (r *sseReader) blankNext() bool {
	buf, _ := r.br.Peek(r.br.Buffered())
	i := 0
	if r.skipLF && len(buf) > 0 && buf[0] == '\n' {
		i = 1 // the end of the line just read
	}
	if i == len(buf) || buf[i] != '\n' && buf[i] != '\r' {
		return false
	}
	r.skipLF = buf[i] == '\r'
	_, _ = r.br.Discard(i + 1)
	return true
}

// field applies one non-empty line to the pending event.
func (r *sseReader) field(line []byte) {
	if line[0] == ':' {
		return
	}
	name, value := line, []byte(nil)
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		name, value = line[:i], line[i+1:]
		value = bytes.TrimPrefix(value, []byte{' '})
	}
	switch string(name) {
	case "event":
		r.event = append(r.event[:0], value...)
	case "data":
		if r.hasData {
			r.data.WriteByte('\n')
		}
		r.data.Write(value)
		r.hasData = true
	case "id":
		if bytes.IndexByte(value, 0) < 0 {
			r.id = string(value)
		}
	case "retry":
		if n, err := strconv.Atoi(string(value)); err == nil && n >= 0 && isDigits(value) {
			r.retry = n
		}
	}
}

func isDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return len(b) > 0
}

// readLine returns the next line without its terminator. The slice is valid
// until the next call. It never waits for bytes beyond the line's end, so a
// CR-terminated event is dispatched as soon as it arrives.
func (r *sseReader) readLine() ([]byte, error) {
	r.line = r.line[:0]
	if !r.started {
		r.started = true
		if b, err := r.br.Peek(1); err == nil && b[0] == 0xEF {
			if b, err := r.br.Peek(3); err == nil && string(b) == "\ufeff" {
				_, _ = r.br.Discard(3)
			}
		}
	}
	for {
		if _, err := r.br.Peek(1); err != nil {
			// A line without its terminator at the end is discarded, as is
			// the event it belongs to.
			return nil, err
		}
		buf, _ := r.br.Peek(r.br.Buffered())
		if r.skipLF {
			r.skipLF = false
			if buf[0] == '\n' {
				_, _ = r.br.Discard(1)
				continue
			}
		}
		i := lineEnd(buf)
		if len(r.line)+i+r.data.Len() > r.max {
			return nil, fmt.Errorf("%w: over %d bytes", errEventTooLarge, r.max)
		}
		if i < len(buf) && len(r.line) == 0 {
			// The whole line is buffered: a view of it, not a copy, stays
			// valid until the next read fills the buffer.
			r.skipLF = buf[i] == '\r'
			_, _ = r.br.Discard(i + 1)
			return buf[:i], nil
		}
		r.line = append(r.line, buf[:i]...)
		if i == len(buf) {
			_, _ = r.br.Discard(i)
			continue
		}
		r.skipLF = buf[i] == '\r'
		_, _ = r.br.Discard(i + 1)
		return r.line, nil
	}
}

// lineEnd returns the index of the first CR or LF in b, or len(b).
func lineEnd(b []byte) int {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		i = len(b)
	}
	if j := bytes.IndexByte(b[:i], '\r'); j >= 0 {
		return j
	}
	return i
}
