package model

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
)

// FuzzSSEChunking: any byte stream parses without panic into the same events
// whether it arrives whole or one byte per read, each within the size
// limit, ending with EOF or the too-large error.
func FuzzSSEChunking(f *testing.F) {
	for _, seed := range []string{
		"data: a\n\n", "event: x\r\ndata: 1\r\ndata: 2\r\n\r\n", "\xef\xbb\xbfdata:b\r\r", ": c\nid: 7\nretry: 30\ndata\n\n",
		"data: half", "data: " + string(bytes.Repeat([]byte("x"), 300)) + "\n\n",
	} {
		f.Add([]byte(seed))
	}
	const max = 256
	read := func(r io.Reader) ([]sseEvent, error) {
		sr := newSSEReader(r, max)
		var evs []sseEvent
		for {
			ev, err := sr.Next()
			if err != nil {
				return evs, err
			}
			evs = append(evs, ev)
		}
	}
	f.Fuzz(func(t *testing.T, stream []byte) {
		whole, err1 := read(bytes.NewReader(stream))
		bytewise, err2 := read(iotest.OneByteReader(bytes.NewReader(stream)))
		if diff := cmp.Diff(whole, bytewise); diff != "" {
			t.Errorf("events differ, whole vs one byte per read (-whole +bytewise):\n%s", diff)
		}
		for _, err := range []error{err1, err2} {
			if err != io.EOF && !errors.Is(err, errEventTooLarge) {
				t.Errorf("stream ended with %v", err)
			}
		}
		if (err1 == io.EOF) != (err2 == io.EOF) {
			t.Errorf("whole ended with %v, bytewise with %v", err1, err2)
		}
		for _, ev := range whole {
			if len(ev.Data)+len(ev.Event) > max {
				t.Errorf("event over the limit: %d bytes", len(ev.Data)+len(ev.Event))
			}
		}
	})
}
