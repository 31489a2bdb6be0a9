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
	"sync"
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
		if len(rec) > r.max {
			return nil, &TooLongError{Line: r.line, Max: r.max}
		}
		return rec, nil
	}
}

// Writer owns an output stream: Write queues a line, one goroutine writes
// each line whole with a single Write call, in queue order.
type Writer struct {
	w      io.Writer
	queue  chan []byte
	done   chan struct{}
	failed chan struct{}
	once   sync.Once
	err    error
}

// NewWriter starts the goroutine that owns w. Close stops it.
func NewWriter(w io.Writer) *Writer {
	wr := &Writer{w: w, queue: make(chan []byte, 1024), done: make(chan struct{}), failed: make(chan struct{})}
	go wr.run()
	return wr
}

func (wr *Writer) run() {
	defer close(wr.done)
	for line := range wr.queue {
		if wr.err != nil {
			continue // drain: writers must never block on a dead peer
		}
		if _, err := wr.w.Write(line); err != nil {
			wr.err = err
			close(wr.failed)
		}
	}
}

// Write queues one record; a newline is appended. It copies line. Bytes
// that are not UTF-8 (raw JSON passed through from a peer) become U+FFFD,
// so every line written is valid UTF-8; outside strings JSON is ASCII, so
// the line stays valid JSON. It returns ctx.Err() if ctx ends while the
// queue is full.
func (wr *Writer) Write(ctx context.Context, line []byte) error {
	if !utf8.Valid(line) {
		line = bytes.ToValidUTF8(line, []byte("\uFFFD"))
	}
	rec := make([]byte, len(line)+1)
	copy(rec, line)
	rec[len(line)] = '\n'
	select {
	case wr.queue <- rec:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Failed is closed when a write to the underlying stream fails (for
// example EPIPE after the peer went away).
func (wr *Writer) Failed() <-chan struct{} { return wr.failed }

// Close flushes the queued lines and stops the writer goroutine. No Write
// may follow or run concurrently with Close.
func (wr *Writer) Close() error {
	wr.once.Do(func() { close(wr.queue) })
	<-wr.done
	return wr.err
}
