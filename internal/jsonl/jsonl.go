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
// AppendShared), in queue order (F5). A Hold lets a producer that reads
// its input in chunks write the lines of a chunk itself, in one write,
// before it reads again.
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
	// writing: a Hold's Release is writing a batch; the writer goroutine
	// leaves pending alone until it is done, so writes never overlap.
	writing bool
	// batch and batchShared are the buffers of the one writing a batch
	// (the writer goroutine or a Release), swapped with pending's.
	batch       []byte
	batchShared []sharedLine
	bufs        [][]byte // write's, reused

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
// (the events of e rpc): room for a Hold's burst (heldBurst) and a long
// line, which a Hold writes before it grows the buffer. A queue that
// fills up to maxPending (a writer goroutine that lags) grows it, once.
// Not a full queue's megabyte each: the runtime counts that as heap even
// where no page of it is touched, and the two made a /long 200,000 turn
// start a garbage collection during its last milliseconds.
const BurstSize = 2 * heldBurst

// NewWriterSize is NewWriter with each of the writer's two buffers
// starting at size bytes.
func NewWriterSize(w io.Writer, size int) *Writer {
	wr := newWriter(w, size)
	go wr.run()
	return wr
}

// newWriter is NewWriterSize without the goroutine, which the caller starts.
func newWriter(w io.Writer, size int) *Writer {
	return &Writer{w: w, vec: vectored(w), wake: make(chan struct{}, 1), done: make(chan struct{}),
		failed: make(chan struct{}), pending: make([]byte, 0, size), batch: make([]byte, 0, size)}
}

func (wr *Writer) run() {
	defer close(wr.done)
	for range wr.wake {
		wr.mu.Lock()
		wr.woken = false
		closing := wr.closing
		if wr.writing {
			// A Release writes; it wakes the writer again when it is done
			// if there is more, or the writer is closing.
			wr.mu.Unlock()
			continue
		}
		wr.idleSince.Store(busy)
		wr.writeBatch()
		wr.idleSince.Store(monotonic())
		wr.mu.Unlock()
		if closing {
			return
		}
	}
}

// writeBatch writes what is queued. mu is held on entry and on return;
// it is unlocked during the write, which only the caller then does
// (writing is set).
func (wr *Writer) writeBatch() {
	batch, shared := wr.batch[:0], wr.batchShared[:0]
	batch, wr.pending = wr.pending, batch
	shared, wr.shared, wr.sharedBytes = wr.shared, shared, 0
	if wr.room != nil {
		close(wr.room)
		wr.room = nil
	}
	failed := wr.err != nil
	wr.writing = true
	wr.mu.Unlock()
	var err error
	if len(batch)+len(shared) > 0 && !failed {
		err = wr.write(batch, shared)
	}
	clear(shared) // let go of the parts
	if cap(batch) > keepBuffer {
		batch = nil
	}
	wr.mu.Lock()
	wr.writing = false
	wr.batch, wr.batchShared = batch, shared
	if err != nil {
		wr.err = err
		wr.pending, wr.shared, wr.sharedBytes = wr.pending[:0], wr.shared[:0], 0
		close(wr.failed)
	}
}

var newline = []byte{'\n'}

// write writes batch with its shared lines: each shared line, with the
// lines before it, in one vectored write, and the lines after the last
// one too where the stream takes vectored writes (see vectored).
func (wr *Writer) write(batch []byte, shared []sharedLine) error {
	from := 0
	bufs := wr.bufs[:0]
	defer func() { clear(bufs); wr.bufs = bufs[:0] }() // let go of the parts
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
	if wr.vec != nil {
		bufs = append(bufs[:0], batch[from:])
		return wr.vec(bufs)
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
		wr.appendShared(parts)
		yield = wr.wake1()
	}
	wr.unlock(yield)
	return nil
}

// appendShared queues the record that is parts joined. mu is held.
func (wr *Writer) appendShared(parts [][]byte) {
	if wr.vec == nil {
		for _, p := range parts {
			wr.pending = append(wr.pending, p...)
		}
		wr.pending = append(wr.pending, '\n')
		return
	}
	wr.shared = append(wr.shared, sharedLine{at: len(wr.pending), parts: parts})
	for _, p := range parts {
		wr.sharedBytes += len(p)
	}
}

// lock locks mu once the queue has room (or the writer has failed).
func (wr *Writer) lock(ctx context.Context) error {
	wr.mu.Lock()
	for len(wr.pending)+wr.sharedBytes >= maxPending && wr.err == nil {
		// Lines held by a Hold (or just queued) must not keep the queue
		// full: the writer takes it now.
		wr.wake1()
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

// A Hold is one producer's way into a Writer for a stream of lines it
// makes from input read in chunks (a provider's events): while held, the
// lines it appends wait in the queue, without waking the writer, and
// Release writes the queue from the producer's goroutine, in one write,
// before it reads its next chunk. A chunk's lines then cost one write(2)
// and no hand-off to the writer goroutine; a lone line still goes out
// before the producer can block, as Release comes before every read, and
// a read that brings many lines has them written every heldBurst bytes.
// A line appended while not held is written at once, the same way.
// Lines of other producers wake the writer as usual, and take the held
// lines with them, in queue order.
type Hold struct {
	wr   *Writer
	held bool // guarded by wr.mu
}

// NewHold returns a Hold on wr, not held.
func (wr *Writer) NewHold() *Hold { return &Hold{wr: wr} }

// Append is wr.Append, except that the caller writes the queue (flush):
// at once while h is not held; while it is, at Release or once heldBurst
// bytes wait, unless another line's write takes it first.
func (h *Hold) Append(ctx context.Context, appendLine func([]byte) []byte) error {
	wr := h.wr
	if err := wr.lock(ctx); err != nil {
		return err
	}
	if wr.err == nil {
		wr.pending = append(appendLine(wr.pending), '\n')
		if !h.held || len(wr.pending) >= heldBurst {
			// A lone line goes out now, from this goroutine, as Release
			// would write it; so do the first lines of a Read that brought
			// many events, rather than after the last event is parsed.
			wr.flush()
		}
	}
	wr.mu.Unlock()
	return nil
}

// AppendShared is wr.AppendShared, written by the caller as Append writes:
// a long record (a turn's response, its text twice) goes out without
// waiting for the writer goroutine to be scheduled.
func (h *Hold) AppendShared(ctx context.Context, parts ...[]byte) error {
	wr := h.wr
	if err := wr.lock(ctx); err != nil {
		return err
	}
	if wr.err == nil {
		wr.appendShared(parts)
		if !h.held {
			wr.flush()
		}
	}
	wr.mu.Unlock()
	return nil
}

// heldBurst is how many bytes of lines a Hold lets wait in the queue
// before it writes them without waiting for Release: a pipe's capacity,
// about 800 text events. Each write wakes the reader, and a reader that
// is woken less often reads more per wake-up; a burst (an offline answer,
// a Read that brought many events) costs one write per pipeful.
const heldBurst = 64 << 10

// Hold makes the lines appended from now on wait for Release.
func (h *Hold) Hold() {
	h.wr.mu.Lock()
	h.held = true
	h.wr.mu.Unlock()
}

// Release ends the hold and writes what is queued, from the caller's
// goroutine, unless a write is in progress: then the writer goroutine
// takes the queue after it. It must come before the producer blocks.
func (h *Hold) Release() {
	wr := h.wr
	wr.mu.Lock()
	defer wr.mu.Unlock()
	h.held = false
	wr.flush()
}

// flush writes what is queued from the caller's goroutine, unless a write
// is in progress or the writer goroutine is told to close: then it takes
// the queue. A writer goroutine that is only due to write (woken) is not
// waited for: it may not get a processor while the caller keeps making
// lines, and the lines that woke it would wait with every line after them
// until the queue filled. Writes never overlap (writing), so whichever
// comes first writes the queue, in order, and the other finds it taken.
// mu is held.
func (wr *Writer) flush() {
	if len(wr.pending)+len(wr.shared) == 0 {
		return
	}
	if wr.writing || wr.closing {
		wr.wake1()
		return
	}
	wr.writeBatch()
	if len(wr.pending)+len(wr.shared) > 0 || wr.closing {
		// Lines queued during the write, or a Close waiting: the writer
		// goroutine left them to us.
		wr.wake1()
	}
}
