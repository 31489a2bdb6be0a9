package main

import (
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// P3: text of a failed attempt is never printed twice; a retried answer that
// differs from what is on the screen restarts on a line of its own. P1: each
// model call's answer starts on a line of its own.
func TestReply(t *testing.T) {
	// Steps: "t:X" a delta, "d" a discarded attempt, "u" a finished call.
	tests := []struct {
		name      string
		steps     []string
		wantOut   string
		wantNotes int
	}{
		{name: "no retry", steps: []string{"t:ab", "t:c", "u"}, wantOut: "abc"},
		{name: "same answer again", steps: []string{"t:do", "t:ne", "d", "t:d", "t:one", "u"}, wantOut: "done"},
		{name: "retried answer goes further", steps: []string{"t:par", "d", "t:pa", "t:rtial", "u"}, wantOut: "partial"},
		{name: "two failed attempts", steps: []string{"t:ab", "d", "t:a", "d", "t:abc", "u"}, wantOut: "abc"},
		{name: "answer differs", steps: []string{"t:hello", "d", "t:help", "u"}, wantOut: "hello\nhelp", wantNotes: 1},
		{name: "answer differs after a newline", steps: []string{"t:a\n", "d", "t:b", "u"}, wantOut: "a\nb", wantNotes: 1},
		{name: "answer shorter than the screen", steps: []string{"t:done more", "d", "t:done", "u"}, wantOut: "done more\ndone", wantNotes: 1},
		{name: "next call on a line of its own", steps: []string{"t:x", "u", "t:x", "u"}, wantOut: "x\nx"},
		{name: "next call after a newline", steps: []string{"t:x\n", "u", "t:y", "u"}, wantOut: "x\ny"},
		{name: "a call without text", steps: []string{"t:x", "u", "u", "t:y", "u"}, wantOut: "x\ny"},
		{name: "first call without text", steps: []string{"u", "t:y", "u"}, wantOut: "y"},
		{name: "retry in a later call", steps: []string{"t:one ", "u", "t:two", "d", "t:two", "u"}, wantOut: "one \ntwo"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			notes := 0
			r := &reply{write: func(s string) { out.WriteString(s) }, note: func(string) { notes++ },
				midLine: func() bool { return out.Len() > 0 && !strings.HasSuffix(out.String(), "\n") }}
			for _, s := range tt.steps {
				switch {
				case strings.HasPrefix(s, "t:"):
					r.text(s[2:])
				case s == "d":
					r.discard()
				case s == "u":
					r.callDone()
				}
			}
			if diff := cmp.Diff(tt.wantOut, out.String()); diff != "" {
				t.Errorf("stdout (-want +got):\n%s", diff)
			}
			if notes != tt.wantNotes {
				t.Errorf("%d notes, want %d", notes, tt.wantNotes)
			}
		})
	}
}

// BenchmarkReply streams N deltas, a failed attempt of half of them and the
// retry, through reply: ns/delta must stay flat as N grows (text on the
// screen is appended, never re-copied per delta).
func BenchmarkReply(b *testing.B) {
	for _, n := range []int{2000, 20000, 200000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			for b.Loop() {
				r := &reply{write: func(string) {}, note: func(string) {}}
				for i := range n / 2 {
					r.text(" w" + strconv.Itoa(i))
				}
				r.discard()
				for i := range n {
					r.text(" w" + strconv.Itoa(i))
				}
				r.callDone()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n*3/2), "ns/delta")
		})
	}
}
