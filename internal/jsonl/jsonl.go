// Package jsonl frames JSON Lines the way e rpc and its extensions speak them:
// records split on LF only, a trailing CR stripped, U+2028/U+2029 kept as
// data, a size cap per record, and one goroutine owning the output.
package jsonl

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// MaxLine is the largest record e accepts: 10 MiB, not counting the LF and
// a stripped CR (F4).
const MaxLine = 10 << 20

// ErrTooLong reports a record longer than the reader's limit. There is no
// safe point to resync after it, so callers stop reading.
var ErrTooLong = errors.New("jsonl: line exceeds the size limit")

// TooLongError is the error Next returns for an oversized record; it
// matches ErrTooLong with errors.Is.
type TooLongError struct {
	Line int // 1-based record number
	Max  int
}

func (e *TooLongError) Error() string {
	return fmt.Sprintf("jsonl: line %d is longer than %d bytes", e.Line, e.Max)
}

func (e *TooLongError) Is(target error) bool { return target == ErrTooLong }

// Reader reads records. Blank records (empty after stripping CR) are
// returned as empty slices; callers decide what they mean.
type Reader struct {
	r    *bufio.Reader
	max  int
	buf  []byte
	line int
}

// NewReader returns a Reader of records of at most max bytes.
func NewReader(r io.Reader, max int) *Reader {
	return &Reader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// Line reports the 1-based number of the record last returned.
func (r *Reader) Line() int { return r.line }

// Next returns the next record, valid until the following call. It returns
// io.EOF after the last record; a final record without LF is still returned.
// A UTF-8 byte order mark that starts the stream is dropped.
// A record over the limit returns an error wrapping ErrTooLong.
func (r *Reader) Next() ([]byte, error) {
	r.buf = r.buf[:0]
	for {
		chunk, err := r.r.ReadSlice('\n')
		r.buf = append(r.buf, chunk...)
		// One extra byte of slack for a CR that is about to be stripped.
		if len(r.buf) > r.max+2 || (err == bufio.ErrBufferFull && len(r.buf) > r.max+1) {
			r.line++
			return nil, &TooLongError{Line: r.line, Max: r.max}
		}
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err == io.EOF:
			if len(r.buf) == 0 {
				return nil, io.EOF
			}
		case err != nil:
			return nil, err
		}
		r.line++
		rec := bytes.TrimSuffix(r.buf, []byte("\n"))
		rec = bytes.TrimSuffix(rec, []byte("\r"))
		if r.line == 1 {
			// Editors and Windows shells may start a UTF-8 stream with a
			// byte order mark; it is no part of the first record.
			rec = bytes.TrimPrefix(rec, []byte("\uFEFF"))
		}
		if len(rec) > r.max {
			return nil, &TooLongError{Line: r.line, Max: r.max}
		}
		return rec, nil
	}
}

// Writer owns an output stream: Write queues a line, one goroutine writes
// the queue. Lines queued while a write is in progress go out together in
// the next one, so a burst of events costs one write(2) per batch rather
// than one per line, while a lone line is written as soon as it is queued:
// a line that wakes a writer idle for a while (a lone line, the first of a
// burst) yields the caller's processor to it (wake1).
// Every line lies whole inside one Write call (or one vectored write, for
// AppendShared), in queue order (F5).
type Writer struct {
	w   io.Writer
	vec func(bufs [][]byte) error // writes bufs with one call; nil if w cannot

	mu          sync.Mutex
	pending     []byte       // whole lines, each ending in LF
	shared      []sharedLine // lines queued by AppendShared, between those of pending
	sharedBytes int
	wake        chan struct{} // holds a token while pending is non-empty or the writer is closing
	woken       bool          // a token for pending was sent and pending not yet taken
	room        chan struct{} // closed when pending is taken; made when a Write waits for room
	closing     bool
	err         error

	// idleSince is when the writer last finished a write (monotonic
	// nanoseconds from epoch), or busy while it writes a batch.
	idleSince atomic.Int64

	done   chan struct{}
	failed chan struct{}
}

// sharedLine is a line queued by AppendShared: its parts go out after
// pending[:at], then an LF.
type sharedLine struct {
	at    int
	parts [][]byte
}

// maxPending is how many bytes of queued lines make Write wait for the
// writer; one line longer than that is still queued whole.
const maxPending = 1 << 20

// keepBuffer is the largest buffer the writer keeps for reuse after a burst
// of long lines.
const keepBuffer = 4 << 20

// NewWriter starts the goroutine that owns w. Close stops it.
func NewWriter(w io.Writer) *Writer { return NewWriterSize(w, 0) }

// BurstSize is the buffer size for NewWriterSize of a stream of bursts
// (the events of e rpc): room for a full queue and a line, so that a burst
// never copies the queue into a grown buffer. Pages of it the kernel has
// not handed out cost nothing until a burst first fills them.
const BurstSize = maxPending + 64<<10

// NewWriterSize is NewWriter with each of the writer's two buffers
// starting at size bytes.
func NewWriterSize(w io.Writer, size int) *Writer {
	wr := &Writer{w: w, vec: vectored(w), wake: make(chan struct{}, 1), done: make(chan struct{}),
		failed: make(chan struct{}), pending: make([]byte, 0, size)}
	go wr.run(size)
	return wr
}

func (wr *Writer) run(size int) {
	defer close(wr.done)
	batch := make([]byte, 0, size)
	var shared []sharedLine
	for range wr.wake {
		wr.mu.Lock()
		batch, wr.pending = wr.pending, batch[:0]
		shared, wr.shared, wr.sharedBytes = wr.shared, shared[:0], 0
		wr.woken = false
		wr.idleSince.Store(busy)
		closing := wr.closing
		if wr.room != nil {
			close(wr.room)
			wr.room = nil
		}
		failed := wr.err != nil
		wr.mu.Unlock()
		if len(batch)+len(shared) > 0 && !failed {
			if err := wr.write(batch, shared); err != nil {
				wr.mu.Lock()
				wr.err = err
				wr.pending, wr.shared, wr.sharedBytes = wr.pending[:0], wr.shared[:0], 0
				wr.mu.Unlock()
				close(wr.failed)
			}
		}
		wr.idleSince.Store(monotonic())
		clear(shared) // let go of the parts
		if cap(batch) > keepBuffer {
			batch = nil
		}
		if closing {
			return
		}
	}
}

var newline = []byte{'\n'}

// write writes batch with its shared lines: each shared line, with the
// lines before it, in one vectored write.
func (wr *Writer) write(batch []byte, shared []sharedLine) error {
	from := 0
	var bufs [][]byte
	for _, l := range shared {
		bufs = append(append(append(bufs[:0], batch[from:l.at]), l.parts...), newline)
		if err := wr.vec(bufs); err != nil {
			return err
		}
		from = l.at
	}
	if from == len(batch) {
		return nil
	}
	_, err := wr.w.Write(batch[from:])
	return err
}

// Write queues one record; a newline is appended. It copies line, so the
// caller may reuse it at once. Bytes that are not UTF-8 (raw JSON passed
// through from a peer) become U+FFFD, so every line written is valid UTF-8;
// outside strings JSON is ASCII, so the line stays valid JSON. It returns
// ctx.Err() if ctx ends while the queue is full. After a failed write it
// drops the line: writers must never block on a dead peer.
func (wr *Writer) Write(ctx context.Context, line []byte) error {
	if !utf8.Valid(line) {
		line = bytes.ToValidUTF8(line, []byte("\uFFFD"))
	}
	if err := wr.lock(ctx); err != nil {
		return err
	}
	yield := false
	if wr.err == nil {
		wr.pending = append(wr.pending, line...)
		yield = wr.queued()
	}
	wr.unlock(yield)
	return nil
}

// Append queues the record that appendLine appends to the slice it is
// given; a newline is appended. It saves Write's copy and its UTF-8 check
// for encoders that append valid UTF-8 JSON (the event encoders): the
// record goes straight into the queue. appendLine runs with the queue
// locked, so it must only append, quickly, and must not call wr.
func (wr *Writer) Append(ctx context.Context, appendLine func([]byte) []byte) error {
	if err := wr.lock(ctx); err != nil {
		return err
	}
	yield := false
	if wr.err == nil {
		wr.pending = appendLine(wr.pending)
		yield = wr.queued()
	}
	wr.unlock(yield)
	return nil
}

// AppendShared queues the record that is parts joined, like Append (the
// parts must be valid UTF-8 JSON), without copying parts when the stream
// takes vectored writes (a file, on Linux; otherwise they are copied into
// the queue): a long record made mostly of bytes held elsewhere, such as
// a long answer's text in its history entry, then costs no fresh copy.
// The parts must never change afterwards.
func (wr *Writer) AppendShared(ctx context.Context, parts ...[]byte) error {
	if err := wr.lock(ctx); err != nil {
		return err
	}
	yield := false
	if wr.err == nil {
		if wr.vec == nil {
			for _, p := range parts {
				wr.pending = append(wr.pending, p...)
			}
			yield = wr.queued()
		} else {
			wr.shared = append(wr.shared, sharedLine{at: len(wr.pending), parts: parts})
			for _, p := range parts {
				wr.sharedBytes += len(p)
			}
			yield = wr.wake1()
		}
	}
	wr.unlock(yield)
	return nil
}

// lock locks mu once the queue has room (or the writer has failed).
func (wr *Writer) lock(ctx context.Context) error {
	wr.mu.Lock()
	for len(wr.pending)+wr.sharedBytes >= maxPending && wr.err == nil {
		if wr.room == nil {
			wr.room = make(chan struct{})
		}
		room := wr.room
		wr.mu.Unlock()
		select {
		case <-room:
		case <-ctx.Done():
			return ctx.Err()
		}
		wr.mu.Lock()
	}
	return nil
}

// queued ends the record just appended to pending and wakes the writer
// unless it is already due to take pending. mu is held. It reports
// whether the caller should yield to the writer (wake1).
func (wr *Writer) queued() bool {
	wr.pending = append(wr.pending, '\n')
	return wr.wake1()
}

// idleYield is how long the writer must have had nothing to write for a
// line that wakes it to count as a lone line or the first of a burst.
const idleYield = 100 * time.Microsecond

// busy is idleSince while the writer writes.
const busy = math.MaxInt64

var epoch = time.Now()

func monotonic() int64 { return int64(time.Since(epoch)) }

// wake1 wakes the writer unless it is already due to take the queue. mu
// is held. It reports whether the writer had been idle for idleYield: then
// the caller yields to it once mu is unlocked. A producer that keeps
// finding its input buffered (a provider's stream read faster than it is
// parsed) never blocks, so the woken writer waits for another thread, and
// on a loaded machine that thread waits for the OS, for milliseconds; the
// first text of an answer would wait with it. Within a burst the writer is
// never idle that long, so lines still go out in batches.
func (wr *Writer) wake1() bool {
	if wr.woken {
		return false
	}
	wr.woken = true
	select {
	case wr.wake <- struct{}{}:
		return monotonic()-wr.idleSince.Load() >= int64(idleYield)
	default: // Close's token is there: the writer takes pending after it
		return false
	}
}

// unlock unlocks mu, then lets the woken writer run now if yield is set.
func (wr *Writer) unlock(yield bool) {
	wr.mu.Unlock()
	if yield {
		runtime.Gosched()
	}
}

// Failed is closed when a write to the underlying stream fails (for
// example EPIPE after the peer went away).
func (wr *Writer) Failed() <-chan struct{} { return wr.failed }

// Close flushes the queued lines and stops the writer goroutine. No Write
// may follow or run concurrently with Close.
func (wr *Writer) Close() error {
	wr.mu.Lock()
	if !wr.closing {
		wr.closing = true
		// wake has room for this token unless one is already there, which
		// the writer has yet to take: it reads closing after taking it.
		select {
		case wr.wake <- struct{}{}:
		default:
		}
	}
	wr.mu.Unlock()
	<-wr.done
	wr.mu.Lock()
	defer wr.mu.Unlock()
	return wr.err
}
