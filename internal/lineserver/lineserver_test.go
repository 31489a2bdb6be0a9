package lineserver

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/e-agent/e/internal/jsonl"
	"github.com/e-agent/e/internal/leakcheck"
)

func TestMain(m *testing.M) { os.Exit(leakcheck.Main(m)) }

// failing is a stdout whose reader went away.
type failing struct{}

func (failing) Write([]byte) (int, error) { return 0, syscall.EPIPE }

// broken is a stdin that fails after its text.
type broken struct{ r io.Reader }

func (b broken) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err == io.EOF {
		return n, errors.New("device gone")
	}
	return n, err
}

func TestRun(t *testing.T) {
	tests := []struct {
		name       string
		stdin      io.Reader
		stdout     io.Writer
		stopAt     string // handle asks to stop at this record
		wantReason Reason
		wantCode   int
		wantSeen   []string
		wantStderr string // substring; "" wants none
	}{
		{name: "EOF", stdin: strings.NewReader("a\r\n\nb"), wantReason: EOF, wantSeen: []string{"a", "", "b"}},
		{name: "stopped", stdin: strings.NewReader("a\nquit\nnever\n"), stopAt: "quit", wantReason: Stopped, wantSeen: []string{"a", "quit"}},
		{name: "too long", stdin: io.MultiReader(strings.NewReader("a\n"), bytes.NewReader(bytes.Repeat([]byte("x"), jsonl.MaxLine+2))),
			wantReason: TooLong, wantCode: 1, wantSeen: []string{"a"},
			wantStderr: "e x: line 2 is longer than 10485760 bytes: no safe point to resync; exiting\n"},
		{name: "read error", stdin: broken{strings.NewReader("a\n")}, wantReason: EOF, wantCode: 1, wantSeen: []string{"a"},
			wantStderr: "e x: reading stdin: device gone\n"},
		{name: "stdout gone", stdin: strings.NewReader("a\n"), stdout: failing{}, wantReason: Gone, wantCode: 1, wantSeen: []string{"a"},
			wantStderr: "e x: writing stdout: broken pipe; exiting\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			stdout := tt.stdout
			if stdout == nil {
				stdout = io.Discard
			}
			// stdin stays open after its text when the test waits for stdout to fail.
			stdin := tt.stdin
			var pw *io.PipeWriter
			if tt.stdout != nil {
				var pr *io.PipeReader
				pr, pw = io.Pipe()
				go func() { io.Copy(pw, tt.stdin) }()
				stdin = pr
			}
			l := New("e x", stdin, stdout, &stderr)
			var seen []string
			end := l.Run(context.Background(), func(n int, rec []byte) bool {
				if n != len(seen)+1 {
					t.Errorf("record %q numbered %d, want %d", rec, n, len(seen)+1)
				}
				seen = append(seen, string(rec))
				if tt.stdout != nil {
					l.Out().Write(context.Background(), []byte(`{"ok":true}`))
				}
				return tt.stopAt != "" && string(rec) == tt.stopAt
			})
			code := l.Close(end.Code())
			if pw != nil {
				pw.Close()
			}
			if end.Reason != tt.wantReason || code != tt.wantCode {
				t.Errorf("ended %+v with code %d, want reason %d and code %d", end, code, tt.wantReason, tt.wantCode)
			}
			if diff := cmp.Diff(tt.wantSeen, seen); diff != "" {
				t.Errorf("records (-want +got):\n%s", diff)
			}
			if got := stderr.String(); got != tt.wantStderr {
				t.Errorf("stderr %q, want %q", got, tt.wantStderr)
			}
		})
	}
}

func TestCode(t *testing.T) {
	for _, tt := range []struct {
		end  Ending
		want int
	}{
		{Ending{Reason: EOF}, 0},
		{Ending{Reason: Stopped}, 0},
		{Ending{Reason: Signalled, Signal: syscall.SIGTERM}, 143},
		{Ending{Reason: Signalled, Signal: syscall.SIGHUP}, 129},
		{Ending{Reason: Signalled, Signal: syscall.SIGINT}, 130},
		{Ending{Reason: Gone}, 1},
		{Ending{Reason: TooLong}, 1},
	} {
		if got := tt.end.Code(); got != tt.want {
			t.Errorf("%+v: code %d, want %d", tt.end, got, tt.want)
		}
	}
}

// H2: a handler that never returns does not hold the loop's end: stdin's
// end is still seen, and Run returns after HandlerGrace without starting
// the records queued behind it.
func TestRunStuckHandler(t *testing.T) {
	var stderr bytes.Buffer
	l := New("e x", strings.NewReader("stuck\nnever\n"), io.Discard, &stderr)
	release := make(chan struct{})
	started := make(chan string, 2)
	end := l.Run(context.Background(), func(_ int, rec []byte) bool {
		started <- string(rec)
		<-release
		return false
	})
	if end.Reason != EOF {
		t.Errorf("ended %+v, want EOF", end)
	}
	if !strings.Contains(stderr.String(), "e x: a request still running after") {
		t.Errorf("stderr %q does not say a request was left running", stderr.String())
	}
	close(release)
	l.Close(end.Code())
	if got := <-started; got != "stuck" || len(started) != 0 {
		t.Errorf("handled %q and %d more, want only \"stuck\"", got, len(started))
	}
}

// H1: the work of one key runs in order, one at a time; another key's, and
// keyless work, runs while it is blocked.
func TestQueues(t *testing.T) {
	var q Queues
	release := make(chan struct{})
	var mu sync.Mutex
	var got []string
	add := func(s string) {
		mu.Lock()
		got = append(got, s)
		mu.Unlock()
	}
	q.Go("a", func() { <-release; add("a1") })
	q.Go("a", func() { add("a2") })
	other := make(chan struct{})
	q.Go("b", func() { add("b1"); close(other) })
	<-other
	keyless := make(chan struct{})
	q.Go("", func() { add("none"); close(keyless) })
	<-keyless
	close(release)
	if !q.Close(time.Minute) {
		t.Fatal("Close: work still running")
	}
	if q.Go("a", func() { add("late") }) {
		t.Error("Go after Close ran work")
	}
	if diff := cmp.Diff([]string{"b1", "none", "a1", "a2"}, got); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}

// H1: a query passes the key's running work only when that work is stuck
// in a blocking section and nothing else waits before the query.
func TestQueuesQuery(t *testing.T) {
	tests := []struct {
		name     string
		blocking bool // the blocked work is in a blocking section
		between  bool // a Go waits behind it
		want     []string
	}{
		{name: "beside work stuck in a blocking section", blocking: true, want: []string{"query", "blocked"}},
		{name: "behind work that is not in one", want: []string{"blocked", "query"}},
		{name: "behind what waits after stuck work", blocking: true, between: true, want: []string{"blocked", "between", "query"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var q Queues
			release := make(chan struct{})
			var mu sync.Mutex
			var got []string
			add := func(s string) {
				mu.Lock()
				got = append(got, s)
				mu.Unlock()
			}
			q.Go("k", func() {
				if tt.blocking {
					defer q.Blocking("k")()
				}
				<-release
				add("blocked")
			})
			if tt.between {
				q.Go("k", func() { add("between") })
			}
			ran := make(chan struct{})
			q.GoQuery("k", func() { add("query"); close(ran) })
			if tt.want[0] == "query" {
				<-ran // it must run while the stuck work is blocked
			}
			close(release)
			if !q.Close(time.Minute) {
				t.Fatal("Close: work still running")
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("order (-want +got):\n%s", diff)
			}
		})
	}
}

// H1, K5: Now runs on the caller when its key is idle (its effect comes
// before the caller's next line), and keeps its place behind running work.
func TestQueuesNow(t *testing.T) {
	tests := []struct {
		name string
		busy bool // work of the key runs when Now is called
	}{
		{name: "idle key: on the caller"},
		{name: "busy key: after its work", busy: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var q Queues
			release := make(chan struct{})
			var mu sync.Mutex
			var got []string
			add := func(s string) {
				mu.Lock()
				got = append(got, s)
				mu.Unlock()
			}
			want := []string{"now"}
			if tt.busy {
				q.Go("k", func() { <-release; add("running") })
				want = []string{"running", "now"}
			}
			inline := false
			if !q.Now("k", func() {
				mu.Lock()
				inline = true
				mu.Unlock()
				add("now")
			}) {
				t.Fatal("Now refused work before Close")
			}
			mu.Lock()
			ranHere := inline
			mu.Unlock()
			if ranHere != !tt.busy {
				t.Errorf("ran on the caller: %v, want %v", ranHere, !tt.busy)
			}
			q.Go("k", func() { add("after") })
			want = append(want, "after")
			close(release)
			if !q.Close(time.Minute) {
				t.Fatal("Close: work still running")
			}
			if q.Now("k", func() { add("late") }) {
				t.Error("Now after Close ran work")
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("order (-want +got):\n%s", diff)
			}
		})
	}
}

// H2: a teardown that does not end in time gives way to the ending's code.
func TestWithin(t *testing.T) {
	if got := Within(time.Minute, 143, func() int { return 1 }); got != 1 {
		t.Errorf("a teardown that returns: %d, want its 1", got)
	}
	release := make(chan struct{})
	ended := make(chan struct{})
	got := Within(time.Millisecond, 143, func() int { <-release; close(ended); return 1 })
	close(release)
	<-ended
	if got != 143 {
		t.Errorf("a stuck teardown: %d, want the ending's 143", got)
	}
}

// H2: a teardown's time counts from the ending, handler's grace included,
// so that the exit comes within 2 s of the signal.
func TestEndingLeft(t *testing.T) {
	tests := []struct {
		name      string
		at        time.Time
		wantLeft  bool // time is left
		wantGrace bool // turns get a grace
	}{
		{name: "no time of ending", wantLeft: true, wantGrace: true},
		{name: "just now", at: time.Now(), wantLeft: true, wantGrace: true},
		{name: "within the margin", at: time.Now().Add(-ExitLimit + killMargin/2), wantLeft: true},
		{name: "past the limit", at: time.Now().Add(-ExitLimit)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := Ending{Reason: Signalled, At: tt.at}
			if got := e.Left() > 0; got != tt.wantLeft {
				t.Errorf("Left() = %v, want time left: %v", e.Left(), tt.wantLeft)
			}
			if got := e.Grace() > 0; got != tt.wantGrace {
				t.Errorf("Grace() = %v, want a grace: %v", e.Grace(), tt.wantGrace)
			}
			if e.Left() > ExitLimit || e.Grace() > ExitLimit-killMargin {
				t.Errorf("Left() = %v, Grace() = %v: more than ExitLimit %v", e.Left(), e.Grace(), ExitLimit)
			}
		})
	}
}
