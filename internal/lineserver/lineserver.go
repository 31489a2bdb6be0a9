// Package lineserver is the process loop every JSON Lines front end of e
// shares (e rpc, e --mode rpc, e acp): it reads stdin's records (package
// jsonl) and hands them, in order, to the front end, and it ends the loop
// in one of the few ways a process on stdio ends, saying which: EOF, an
// oversized record, SIGTERM, SIGHUP or SIGINT, a stdout that can no longer be
// written, or the front end's own request (shutdown). SIGPIPE is caught,
// so a client that stops reading ends the loop instead of killing e
// silently. Closing the loop flushes stdout and turns a failed write into
// exit status 1 with one line on stderr.
package lineserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/e-agent/e/internal/jsonl"
)

// ExitLimit is how long a front end's teardown may take after a signal or
// a dead stdout, from the moment the loop saw it: whatever a handler or a
// turn is doing, the process exits within H2's 2 s (the rest is margin for
// the exit itself).
const ExitLimit = 1500 * time.Millisecond

// killMargin is what a teardown keeps of ExitLimit for its steps after the
// turns' grace: extensions killed, stdout flushed.
const killMargin = 300 * time.Millisecond

// Reason is why Run returned.
type Reason int

const (
	EOF       Reason = iota // stdin ended, or could not be read (Ending.Err)
	Stopped                 // the front end's handler asked to stop
	TooLong                 // a record over jsonl.MaxLine: no safe point to resync (F4)
	Signalled               // SIGTERM, SIGHUP or SIGINT (Ending.Signal)
	Gone                    // stdout could not be written: the client went away
)

// Ending says why Run returned.
type Ending struct {
	Reason Reason
	Err    error     // EOF: a read error other than io.EOF, else nil; TooLong: the *jsonl.TooLongError
	Signal os.Signal // Signalled
	At     time.Time // Signalled, Gone: when the loop saw it
}

// Left is the time left of the teardown's ExitLimit: the bound to give
// lineserver.Within.
func (e Ending) Left() time.Duration {
	if e.At.IsZero() {
		return ExitLimit
	}
	return time.Until(e.At.Add(ExitLimit))
}

// Grace is how long turns stopped by the ending get to write their last
// events and responses (D2): what is left of ExitLimit but its margin.
func (e Ending) Grace() time.Duration { return max(e.Left()-killMargin, 0) }

// Code is the exit status the ending calls for: 0 for EOF and Stopped, 1
// for an oversized record, a read error and a gone client, 128+N for
// signal N (D2: 143 for SIGTERM, 129 for SIGHUP; 130 for SIGINT).
func (e Ending) Code() int {
	switch e.Reason {
	case TooLong, Gone:
		return 1
	case Signalled:
		if s, ok := e.Signal.(syscall.Signal); ok {
			return 128 + int(s)
		}
		return 1
	case EOF:
		if e.Err != nil {
			return 1
		}
	}
	return 0
}

// Loop is one front end's stdin and stdout. Signals are caught from Run
// until Close.
type Loop struct {
	name   string // how its lines on stderr start: "e rpc"
	in     io.Reader
	out    *jsonl.Writer
	stderr io.Writer
	sigs   chan os.Signal // SIGTERM, SIGHUP, SIGINT
	pipe   chan os.Signal // SIGPIPE, caught and dropped: the failed write says it
	stdout io.Writer      // as given, for WatchClient
	ppid   int            // the parent at the start, for WatchClient
}

// New starts the writer of stdout, which it gives a larger capacity if it
// is a pipe (growPipe); name starts what the loop says on stderr ("e rpc").
func New(name string, stdin io.Reader, stdout, stderr io.Writer) *Loop {
	growPipe(stdout)
	return &Loop{name: name, in: stdin, out: jsonl.NewWriterSize(stdout, jsonl.BurstSize), stderr: stderr,
		sigs: make(chan os.Signal, 4), pipe: make(chan os.Signal, 1), stdout: stdout, ppid: os.Getppid()}
}

// clientPoll is how often WatchClient looks.
const clientPoll = 100 * time.Millisecond

// WatchClient reports, once, why the client is gone although nothing was
// written to find out: stdout's reader has closed (a pipe or socket stdout
// polls with an error or hang-up) or the process that started e has died
// (its parent changed). A front end that waits after EOF for work to finish
// (pi's dialect) watches it, so a client killed during a silent command
// does not leave the command running to its timeout. It looks every 100 ms
// until stop is closed.
func (l *Loop) WatchClient(stop <-chan struct{}) <-chan string {
	gone := make(chan string, 1)
	go func() {
		t := time.NewTicker(clientPoll)
		defer t.Stop()
		for {
			if os.Getppid() != l.ppid {
				gone <- "the process that started e has exited"
				return
			}
			if readerGone(l.stdout) {
				gone <- "stdout's reader has closed"
				return
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	return gone
}

// Out is the writer of stdout: every line the front end prints goes
// through it.
func (l *Loop) Out() *jsonl.Writer { return l.out }

// Signals delivers the signals Run catches once it has returned, until Close:
// a front end that shuts down gracefully can stop waiting on a second one.
func (l *Loop) Signals() <-chan os.Signal { return l.sigs }

// HandlerGrace is how long an ending waits for the handler still running
// (stuck, say, in the open of a FIFO) before it ends anyway; after a signal
// the wait counts in ExitLimit.
const HandlerGrace = time.Second

// maxQueued bounds the records read ahead of a handler still running.
const maxQueued = 1024

// Run reads records and calls handle with each, in order, one at a time,
// on a goroutine of its own, with its number from 1; the record is the
// caller's to keep. Signals, stdin's end and a dead stdout are watched
// apart from handle, so a handler that blocks cannot stop the process from
// ending (H2): at a signal or a dead stdout Run returns once the running
// handler returns or after HandlerGrace, whichever is first; at stdin's
// end it first hands over the records read, while the handler keeps
// returning within HandlerGrace of the previous one. From its start until
// Close, SIGTERM, SIGHUP, SIGINT and SIGPIPE are caught. SIGINT is caught
// as SIGTERM is: Ctrl-C at a terminal reaches a client's whole process
// group, e included, and e dying of it at once would leave its bash process
// groups (not in that group) running.
// It returns when handle reports stop, stdin ends, a record is too long, a
// signal comes or stdout fails; on a read error or an oversized record it
// says so on stderr. Blank records are handed over too: what they mean is
// the front end's business. No handle call starts after Run returned.
func (l *Loop) Run(ctx context.Context, handle func(n int, record []byte) (stop bool)) Ending {
	signal.Notify(l.sigs, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT)
	signal.Notify(l.pipe, syscall.SIGPIPE)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	records := make(chan []byte)
	readErr := make(chan error, 1)
	// The reader ends at stdin's end or error; a Read blocked on a stdin that
	// never ends cannot be stopped, so the process's exit ends it then.
	go func() {
		r := jsonl.NewReader(l.in, jsonl.MaxLine)
		for {
			rec, err := r.Next()
			if err != nil {
				readErr <- err
				return
			}
			select {
			case records <- bytes.Clone(rec):
			case <-ctx.Done():
				return
			}
		}
	}()
	// The dispatcher: handle runs here, never on the goroutine that watches
	// the endings. handled is buffered so that a handler that returns after
	// Run did leaves no goroutine behind.
	work := make(chan []byte)
	handled := make(chan bool, 1)
	defer close(work)
	go func() {
		n := 0
		for rec := range work {
			n++
			handled <- handle(n, rec)
		}
	}()
	var (
		queue  [][]byte
		busy   bool
		ending *Ending     // stdin ended (or too long): drain the queue first
		stuck  *time.Timer // the running handler's grace after the ending
		expiry <-chan time.Time
	)
	defer func() {
		if stuck != nil {
			stuck.Stop()
		}
	}()
	// settle waits for the running handler, up to HandlerGrace.
	settle := func(end Ending) Ending {
		if busy {
			t := time.NewTimer(HandlerGrace)
			defer t.Stop()
			select {
			case <-handled:
			case <-t.C:
				fmt.Fprintf(l.stderr, "%s: a request still running after %v; ending without its answer\n", l.name, HandlerGrace)
			}
		}
		return end
	}
	for {
		var feed chan []byte
		var next []byte
		if !busy && len(queue) > 0 {
			feed, next = work, queue[0]
		}
		in := records
		if len(queue) >= maxQueued || ending != nil {
			in = nil
		}
		if ending != nil && !busy && len(queue) == 0 {
			return *ending
		}
		select {
		case rec := <-in:
			queue = append(queue, rec)
		case feed <- next:
			queue[0] = nil
			queue = queue[1:]
			busy = true
		case stop := <-handled:
			busy = false
			if stop {
				return Ending{Reason: Stopped}
			}
			if stuck != nil {
				stuck.Reset(HandlerGrace)
			}
		case err := <-readErr:
			end := l.readEnding(err)
			ending = &end
			stuck = time.NewTimer(HandlerGrace)
			expiry = stuck.C
		case <-expiry:
			fmt.Fprintf(l.stderr, "%s: a request still running after %v; ending without its answer\n", l.name, HandlerGrace)
			return *ending
		case <-l.out.Failed():
			return settle(Ending{Reason: Gone, At: time.Now()})
		case sig := <-l.sigs:
			return settle(Ending{Reason: Signalled, Signal: sig, At: time.Now()})
		}
	}
}

// readEnding is the ending stdin's error calls for, said on stderr when it
// is not a plain EOF.
func (l *Loop) readEnding(err error) Ending {
	var tl *jsonl.TooLongError
	switch {
	case errors.As(err, &tl):
		fmt.Fprintf(l.stderr, "%s: line %d is longer than %d bytes: no safe point to resync; exiting\n", l.name, tl.Line, tl.Max)
		return Ending{Reason: TooLong, Err: err}
	case errors.Is(err, io.EOF):
		return Ending{Reason: EOF}
	}
	fmt.Fprintf(l.stderr, "%s: reading stdin: %v\n", l.name, err)
	return Ending{Reason: EOF, Err: err}
}

// Close flushes stdout and stops catching signals. It returns code, or at
// least 1 when stdout could not be written, which it says on stderr. No
// line may be written after it.
func (l *Loop) Close(code int) int {
	signal.Stop(l.sigs)
	err := l.out.Close()
	// SIGPIPE stays caught until the last queued line is written: the
	// flush to a client that went away must fail, not kill e.
	signal.Stop(l.pipe)
	if err != nil {
		fmt.Fprintf(l.stderr, "%s: writing stdout: %v; exiting\n", l.name, err)
		code = max(code, 1)
	}
	return code
}

// Within runs teardown and returns the exit status it returns, or code
// when it has not returned within limit: a teardown that waits on a
// handler stuck in a system call (a lock the handler holds) must not keep
// the process (H2). teardown goes on running then, until the process exits.
func Within(limit time.Duration, code int, teardown func() int) int {
	done := make(chan int, 1)
	go func() { done <- teardown() }()
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case c := <-done:
		return c
	case <-t.C:
		return code
	}
}
