package model

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/e-agent/e/internal/providermock"
)

// readAll parses a whole stream; it returns the events and the error that
// ended it.
func readAll(in string, max int) ([]sseEvent, error) {
	r := newSSEReader(strings.NewReader(in), max)
	var evs []sseEvent
	for {
		ev, err := r.Next()
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
}

func TestSSEReader(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []sseEvent
	}{
		{name: "data only", in: "data: a\n\n",
			want: []sseEvent{{Data: "a", Retry: -1}}},
		{name: "event and data", in: "event: ping\ndata: {}\n\n",
			want: []sseEvent{{Event: "ping", Data: "{}", Retry: -1}}},
		{name: "multi-line data", in: "data: a\ndata:b\ndata:  c\n\n",
			want: []sseEvent{{Data: "a\nb\n c", Retry: -1}}},
		{name: "CRLF", in: "event: e\r\ndata: a\r\n\r\ndata: b\r\n\r\n",
			want: []sseEvent{{Event: "e", Data: "a", Retry: -1}, {Data: "b", Retry: -1}}},
		{name: "CR", in: "data: a\rdata: b\r\r",
			want: []sseEvent{{Data: "a\nb", Retry: -1}}},
		{name: "comments and unknown fields", in: ": keep-alive\nfoo: bar\ndata: a\n\n",
			want: []sseEvent{{Data: "a", Retry: -1}}},
		{name: "id and retry", in: "id: 7\nretry: 1500\ndata: a\n\ndata: b\n\n",
			want: []sseEvent{{Data: "a", ID: "7", Retry: 1500}, {Data: "b", ID: "7", Retry: 1500}}},
		{name: "bad retry ignored", in: "retry: 1x\ndata: a\n\n",
			want: []sseEvent{{Data: "a", Retry: -1}}},
		{name: "id with NUL ignored", in: "id: a\x00b\ndata: a\n\n",
			want: []sseEvent{{Data: "a", Retry: -1}}},
		{name: "event without data not dispatched", in: "event: x\n\ndata: a\n\n",
			want: []sseEvent{{Data: "a", Retry: -1}}},
		{name: "empty data dispatched", in: "data\n\n",
			want: []sseEvent{{Data: "", Retry: -1}}},
		{name: "field without space", in: "event:x\ndata:y\n\n",
			want: []sseEvent{{Event: "x", Data: "y", Retry: -1}}},
		{name: "BOM", in: "\ufeffdata: a\n\n",
			want: []sseEvent{{Data: "a", Retry: -1}}},
		{name: "unfinished event discarded", in: "data: a\n\ndata: b\n",
			want: []sseEvent{{Data: "a", Retry: -1}}},
		{name: "unfinished line discarded", in: "data: a\n\ndata: b",
			want: []sseEvent{{Data: "a", Retry: -1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readAll(tt.in, maxEventSize)
			if !errors.Is(err, io.EOF) {
				t.Errorf("stream ended with %v, want io.EOF", err)
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(sseEvent{})); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSSEReaderTooLarge(t *testing.T) {
	tests := []struct{ name, in string }{
		{name: "one long line", in: "data: " + strings.Repeat("x", 100) + "\n\n"},
		{name: "many data lines", in: strings.Repeat("data: 0123456789\n", 10) + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := readAll(tt.in, 64)
			if !errors.Is(err, errEventTooLarge) {
				t.Errorf("err = %v, want errEventTooLarge", err)
			}
		})
	}
}

// FuzzSSE checks that the reader never panics or loops on any input, and
// that a well-formed event comes back as written whatever the line ends.
func FuzzSSE(f *testing.F) {
	f.Add([]byte("event: a\ndata: b\n\n"), "message", "line1\nline2", uint8(0))
	f.Add([]byte("data: x\r\n\r\n:c\r"), "", "", uint8(1))
	f.Add([]byte("\ufeffdata\rid:\x00\r\r"), " spaced", "a\r\nb\rc", uint8(2))
	f.Fuzz(func(t *testing.T, raw []byte, event, data string, ending uint8) {
		r := newSSEReader(strings.NewReader(string(raw)), 1<<10)
		for i := 0; ; i++ {
			if _, err := r.Next(); err != nil {
				break
			}
			if i > len(raw) {
				t.Fatalf("more events than input bytes")
			}
		}

		eol := []string{"\n", "\r\n", "\r"}[ending%3]
		event = strings.NewReplacer("\r", "", "\n", "").Replace(event)
		data = strings.NewReplacer("\r\n", "\n", "\r", "\n").Replace(data)
		var b strings.Builder
		b.WriteString(": comment" + eol)
		if event != "" {
			b.WriteString("event: " + event + eol)
		}
		for line := range strings.SplitSeq(data, "\n") {
			b.WriteString("data: " + line + eol)
		}
		b.WriteString(eol)
		evs, err := readAll(b.String(), maxEventSize)
		if !errors.Is(err, io.EOF) {
			t.Fatalf("stream %q ended with %v", b.String(), err)
		}
		want := []sseEvent{{Event: event, Data: data, Retry: -1}}
		if diff := cmp.Diff(want, evs); diff != "" {
			t.Fatalf("stream %q: events (-want +got):\n%s", b.String(), diff)
		}
	})
}

// BenchmarkSSEReader is the reader's cost per byte of answers of 500 and
// 50,000 deltas of each API (flat when nothing grows faster than the
// stream), the stream wholly buffered as a fast server sends it.
func BenchmarkSSEReader(b *testing.B) {
	for _, api := range providermock.APIs {
		for _, n := range []int{500, 50000} {
			head, deltas, tail := providermock.Body(api, n)
			body := string(head) + string(bytes.Join(deltas, nil)) + string(tail)
			b.Run(api+"/"+strconv.Itoa(n), func(b *testing.B) {
				b.SetBytes(int64(len(body)))
				for b.Loop() {
					r := newSSEReader(strings.NewReader(body), maxEventSize)
					for {
						if _, err := r.NextRaw(); err != nil {
							break
						}
					}
				}
			})
		}
	}
}
