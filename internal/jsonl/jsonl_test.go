package jsonl

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// F4, F5: records split on LF only, CR stripped, U+2028/2029 are data, a
// leading byte order mark dropped.
func TestReader(t *testing.T) {
	big := strings.Repeat("a", MaxLine)
	tests := []struct {
		name    string
		input   string
		want    []string
		wantErr error // after the records in want
	}{
		{name: "LF", input: "a\nb\n", want: []string{"a", "b"}},
		{name: "CRLF stripped", input: "a\r\nb\r\n", want: []string{"a", "b"}},
		{name: "only one CR stripped", input: "a\r\r\n", want: []string{"a\r"}},
		{name: "lone CR is data", input: "a\rb\n", want: []string{"a\rb"}},
		{name: "U+2028 and U+2029 are data", input: "x\u2028y\u2029z\n", want: []string{"x\u2028y\u2029z"}},
		{name: "final line without LF", input: "a\nb", want: []string{"a", "b"}},
		{name: "byte order mark starting the stream dropped", input: "\uFEFFa\n\uFEFFb\n", want: []string{"a", "\uFEFFb"}},
		{name: "byte order mark before a blank first record", input: "\uFEFF\r\na\n", want: []string{"", "a"}},
		{name: "blank records returned empty", input: "\n\r\na\n", want: []string{"", "", "a"}},
		{name: "exactly the limit", input: big + "\n", want: []string{big}},
		{name: "exactly the limit with CRLF", input: big + "\r\n", want: []string{big}},
		{name: "exactly the limit without LF", input: big, want: []string{big}},
		{name: "limit plus one", input: big + "b\n", wantErr: ErrTooLong},
		{name: "limit plus one without LF", input: big + "b", wantErr: ErrTooLong},
		{name: "far over the limit", input: big + big + "\n", wantErr: ErrTooLong},
		{name: "good line then oversized", input: "ok\n" + big + "bb\n", want: []string{"ok"}, wantErr: ErrTooLong},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewReader(strings.NewReader(tt.input), MaxLine)
			var got []string
			var err error
			for {
				var rec []byte
				rec, err = r.Next()
				if err != nil {
					break
				}
				got = append(got, string(rec))
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("records (-want +got):\n%s", diff)
			}
			want := tt.wantErr
			if want == nil {
				want = io.EOF
			}
			if !errors.Is(err, want) {
				t.Errorf("error %v, want %v", err, want)
			}
		})
	}
}

func TestReaderLineNumbers(t *testing.T) {
	r := NewReader(strings.NewReader("a\nb\n"+strings.Repeat("x", 20)+"\n"), 10)
	r.Next()
	r.Next()
	_, err := r.Next()
	if err == nil || !strings.Contains(err.Error(), "line 3") {
		t.Errorf("error %v does not name line 3", err)
	}
}

// F5: every line lies whole inside one Write, never interleaved, and the
// lines of each goroutine keep their order.
func TestWriterWholeLines(t *testing.T) {
	var w recorder
	wr := NewWriter(&w)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				line := bytes.Repeat([]byte{byte('a' + g)}, 100+i)
				wr.Write(context.Background(), line)
			}
		}()
	}
	wg.Wait()
	if err := wr.Close(); err != nil {
		t.Fatal(err)
	}
	next := map[byte]int{} // goroutine → length of its next line
	lines := 0
	for _, b := range w.writes {
		if len(b) == 0 || b[len(b)-1] != '\n' {
			t.Fatalf("write does not end a line: %q", b)
		}
		for _, line := range bytes.SplitAfter(b[:len(b)-1], []byte("\n")) {
			line = bytes.TrimSuffix(line, []byte("\n"))
			g := line[0]
			if len(bytes.Trim(line, string(g))) != 0 || len(line) != 100+next[g] {
				t.Fatalf("line %d of goroutine %c is not whole or out of order: %q", next[g], g, line)
			}
			next[g]++
			lines++
		}
	}
	if lines != 800 {
		t.Fatalf("%d lines, want 800", lines)
	}
}

// Lines queued while a write is in progress go out together in the next
// write; a lone line is written without waiting for more.
func TestWriterBatches(t *testing.T) {
	w := &gated{release: make(chan struct{}), wrote: make(chan []byte, 16)}
	wr := NewWriter(w)
	wr.Write(context.Background(), []byte("first"))
	if got := string(<-w.wrote); got != "first\n" {
		t.Fatalf("first write %q", got)
	}
	for i := range 100 { // the writer is stuck in the first write meanwhile
		wr.Write(context.Background(), fmt.Appendf(nil, "line %d", i))
	}
	close(w.release)
	got := string(<-w.wrote)
	var want strings.Builder
	for i := range 100 {
		fmt.Fprintf(&want, "line %d\n", i)
	}
	if got != want.String() {
		t.Errorf("second write %q, want the 100 queued lines", got)
	}
	wr.Write(context.Background(), []byte("lone"))
	if got := string(<-w.wrote); got != "lone\n" {
		t.Errorf("lone line written as %q", got)
	}
	if err := wr.Close(); err != nil {
		t.Fatal(err)
	}
}

// A full queue makes Write wait for the writer, until its context ends.
func TestWriterFullQueue(t *testing.T) {
	w := &gated{release: make(chan struct{}), wrote: make(chan []byte, 16)}
	wr := NewWriter(w)
	wr.Write(context.Background(), []byte("first"))
	<-w.wrote
	line := bytes.Repeat([]byte("x"), 4095)
	for range maxPending / 4096 {
		if err := wr.Write(context.Background(), line); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := wr.Write(ctx, line); !errors.Is(err, context.Canceled) {
		t.Errorf("Write on a full queue returned %v, want context.Canceled", err)
	}
	close(w.release)
	if err := wr.Write(context.Background(), line); err != nil {
		t.Fatal(err)
	}
	if err := wr.Close(); err != nil {
		t.Fatal(err)
	}
	n := 0
	for len(w.wrote) > 0 {
		n += bytes.Count(<-w.wrote, []byte("\n"))
	}
	if want := maxPending/4096 + 1; n != want {
		t.Errorf("%d lines after the first, want %d", n, want)
	}
}

// A failed stream (EPIPE) closes Failed, and writers never block after it.
func TestWriterFailure(t *testing.T) {
	wr := NewWriter(failing{})
	for range 5000 { // more than the queue holds
		if err := wr.Write(context.Background(), []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	<-wr.Failed()
	if err := wr.Close(); err == nil {
		t.Error("Close returned no error after a failed write")
	}
}

type recorder struct{ writes [][]byte }

func (r *recorder) Write(b []byte) (int, error) {
	r.writes = append(r.writes, bytes.Clone(b))
	return len(b), nil
}

// gated sends a copy of what each Write got on wrote; the first Write
// then blocks until release is closed.
type gated struct {
	release chan struct{}
	wrote   chan []byte
	n       int
}

func (g *gated) Write(b []byte) (int, error) {
	g.wrote <- bytes.Clone(b)
	if g.n == 0 {
		<-g.release
	}
	g.n++
	return len(b), nil
}

type failing struct{}

func (failing) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }

// AppendShared's lines keep their place among the others, whole, whether
// the stream takes vectored writes (a pipe: its parts are not copied, and
// lines longer than the pipe holds are written in several goes) or not
// (the parts are copied into the queue).
func TestWriterShared(t *testing.T) {
	long := bytes.Repeat([]byte("0123456789"), 50_000) // 500 KB, more than a pipe holds
	var want bytes.Buffer
	queue := func(wr *Writer) {
		for i := range 50 {
			line := fmt.Appendf(nil, `{"n":%d}`, i)
			wr.Append(context.Background(), func(b []byte) []byte { return append(b, line...) })
			fmt.Fprintf(&want, "%s\n", line)
			if i%7 == 3 {
				parts := [][]byte{fmt.Appendf(nil, `{"s":%d,"a":"`, i), long[:i*10_000], []byte(`","b":"`), long[i*100:], []byte(`"}`)}
				if err := wr.AppendShared(context.Background(), parts...); err != nil {
					t.Fatal(err)
				}
				fmt.Fprintf(&want, "%s\n", bytes.Join(parts, nil))
			}
		}
	}

	t.Run("pipe", func(t *testing.T) {
		want.Reset()
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		got := make(chan []byte)
		go func() {
			b, _ := io.ReadAll(r)
			got <- b
		}()
		wr := NewWriter(w)
		if wr.vec == nil && runtime.GOOS == "linux" {
			t.Fatal("no vectored writes to a pipe on Linux")
		}
		queue(wr)
		if err := wr.Close(); err != nil {
			t.Fatal(err)
		}
		w.Close()
		if b := <-got; !bytes.Equal(b, want.Bytes()) {
			t.Errorf("read %d bytes, want %d: %.200q", len(b), want.Len(), b)
		}
	})
	t.Run("copied", func(t *testing.T) {
		want.Reset()
		var rec recorder
		wr := NewWriter(&rec)
		queue(wr)
		if err := wr.Close(); err != nil {
			t.Fatal(err)
		}
		var b []byte
		for _, w := range rec.writes {
			if len(w) == 0 || w[len(w)-1] != '\n' {
				t.Fatalf("write does not end a line: %.100q", w)
			}
			b = append(b, w...)
		}
		if !bytes.Equal(b, want.Bytes()) {
			t.Errorf("wrote %d bytes, want %d", len(b), want.Len())
		}
	})
}

// A pipe whose reader is gone fails AppendShared's write as it fails
// Write's, with EPIPE, and the writer drops what follows.
func TestWriterSharedFailure(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	defer w.Close()
	wr := NewWriter(w)
	if err := wr.AppendShared(context.Background(), []byte(`{"a":`), []byte(`1}`)); err != nil {
		t.Fatal(err)
	}
	<-wr.Failed()
	wr.Write(context.Background(), []byte(`{}`))
	if err := wr.Close(); !errors.Is(err, syscall.EPIPE) {
		t.Errorf("Close = %v, want EPIPE", err)
	}
}

// syncRecorder records each Write and fails the test if two overlap.
type syncRecorder struct {
	t       *testing.T
	mu      sync.Mutex
	writes  [][]byte
	writing atomic.Bool
}

func (r *syncRecorder) Write(b []byte) (int, error) {
	if !r.writing.CompareAndSwap(false, true) {
		r.t.Error("two writes at once")
	}
	r.mu.Lock()
	r.writes = append(r.writes, bytes.Clone(b))
	r.mu.Unlock()
	r.writing.Store(false)
	return len(b), nil
}

func (r *syncRecorder) taken() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]byte(nil), r.writes...)
}

// The lines a held Hold queues go out in one write, made by Release on the
// caller's goroutine before it returns, a lone line as much as several
// (F5).
func TestHoldRelease(t *testing.T) {
	tests := []struct {
		name  string
		lines []string
	}{
		{"lone line", []string{"a"}},
		{"lines of one read", []string{"a", "b", "c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &syncRecorder{t: t}
			wr := NewWriter(rec)
			h := wr.NewHold()
			h.Hold()
			for _, l := range tt.lines {
				if err := h.Append(context.Background(), func(b []byte) []byte { return append(b, l...) }); err != nil {
					t.Fatal(err)
				}
			}
			h.Release()
			want := [][]byte{[]byte(strings.Join(tt.lines, "\n") + "\n")}
			if diff := cmp.Diff(want, rec.taken()); diff != "" {
				t.Errorf("writes when Release returned (-want +got):\n%s", diff)
			}
			if err := wr.Close(); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, rec.taken()); diff != "" {
				t.Errorf("writes after Close (-want +got):\n%s", diff)
			}
		})
	}
}

// A Hold's lines do not wait for a writer goroutine that another line
// woke but that has yet to run: one may not get a processor while the
// producer keeps making lines, and every line would wait until the queue
// filled. The Hold writes the queue itself, in order, at once for a line
// appended while not held, at heldBurst while held (S2, F5). The writer
// goroutine here starts only at the end.
func TestHoldWritesPastWokenWriter(t *testing.T) {
	burst := strings.Repeat("x", heldBurst)
	tests := []struct {
		name string
		held bool
		line string
	}{
		{name: "lone line", line: "a"},
		{name: "held lines past heldBurst", held: true, line: burst},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &syncRecorder{t: t}
			wr := newWriter(rec, 0)
			if err := wr.Write(context.Background(), []byte("woke")); err != nil {
				t.Fatal(err)
			}
			h := wr.NewHold()
			if tt.held {
				h.Hold()
			}
			if err := h.Append(context.Background(), func(b []byte) []byte { return append(b, tt.line...) }); err != nil {
				t.Fatal(err)
			}
			want := shapes([][]byte{[]byte("woke\n" + tt.line + "\n")})
			if diff := cmp.Diff(want, shapes(rec.taken())); diff != "" {
				t.Errorf("writes when Append returned (-want +got):\n%s", diff)
			}
			go wr.run()
			h.Release()
			if err := wr.Close(); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, shapes(rec.taken())); diff != "" {
				t.Errorf("writes after Close (-want +got):\n%s", diff)
			}
		})
	}
}

// A Hold's AppendShared (a turn's response) is written by the caller
// before it returns, after the lines queued before it, whether the stream
// takes vectored writes (a pipe) or the parts are copied; the writer
// goroutine here starts only at the end (F5).
func TestHoldAppendShared(t *testing.T) {
	long := bytes.Repeat([]byte("abcdefgh"), 300_000)
	parts := [][]byte{[]byte(`{"id":1,"result":{"output":"`), long, []byte(`","final_output":"`), long, []byte(`"}}`)}
	want := append([]byte("woke\n"), append(bytes.Join(parts, nil), '\n')...)
	for _, pipe := range []bool{false, true} {
		t.Run(fmt.Sprintf("pipe %v", pipe), func(t *testing.T) {
			var out io.Writer
			rec := &syncRecorder{t: t}
			got := make(chan []byte, 1)
			if pipe {
				r, w, err := os.Pipe()
				if err != nil {
					t.Fatal(err)
				}
				defer r.Close()
				defer w.Close()
				go func() {
					b, _ := io.ReadAll(io.LimitReader(r, int64(len(want))))
					got <- b
				}()
				out = w
			} else {
				out = rec
			}
			wr := newWriter(out, 0)
			if pipe && wr.vec == nil && runtime.GOOS == "linux" {
				t.Fatal("no vectored writes to a pipe on Linux")
			}
			if err := wr.Write(context.Background(), []byte("woke")); err != nil {
				t.Fatal(err)
			}
			if err := wr.NewHold().AppendShared(context.Background(), parts...); err != nil {
				t.Fatal(err)
			}
			wr.mu.Lock()
			left := len(wr.pending) + len(wr.shared)
			wr.mu.Unlock()
			if left != 0 {
				t.Errorf("%d lines or bytes still queued when AppendShared returned", left)
			}
			go wr.run()
			if err := wr.Close(); err != nil {
				t.Fatal(err)
			}
			b := bytes.Join(rec.taken(), nil)
			if pipe {
				b = <-got
			}
			if !bytes.Equal(b, want) {
				t.Errorf("wrote %d bytes %.40q, want %d", len(b), b, len(want))
			}
		})
	}
}

// shapes describes writes for a diff: each by its length, its first bytes
// and a digest of the rest.
func shapes(writes [][]byte) []string {
	var s []string
	for _, w := range writes {
		s = append(s, fmt.Sprintf("%d bytes %.16q… sha256 %x", len(w), w, sha256.Sum256(w)))
	}
	return s
}

// Held lines that fill the queue do not wait for Release: the writer
// takes them, so a producer that holds never deadlocks on a full queue.
func TestHoldFullQueue(t *testing.T) {
	rec := &syncRecorder{t: t}
	wr := NewWriter(rec)
	h := wr.NewHold()
	h.Hold()
	line := bytes.Repeat([]byte("x"), 4095)
	const n = 3 * maxPending / 4096
	for range n {
		if err := h.Append(context.Background(), func(b []byte) []byte { return append(b, line...) }); err != nil {
			t.Fatal(err)
		}
	}
	h.Release()
	if err := wr.Close(); err != nil {
		t.Fatal(err)
	}
	got := 0
	for _, w := range rec.taken() {
		got += bytes.Count(w, []byte("\n"))
	}
	if got != n {
		t.Errorf("%d lines written, want %d", got, n)
	}
}

// Producers holding and releasing on several goroutines, beside plain
// Writes, never write at once: every line is whole and each producer's
// lines keep their order.
func TestHoldConcurrent(t *testing.T) {
	rec := &syncRecorder{t: t}
	wr := NewWriter(rec)
	const producers, reads, perRead = 4, 200, 3
	var wg sync.WaitGroup
	for p := range producers {
		h := wr.NewHold()
		wg.Go(func() {
			for r := range reads {
				h.Hold()
				for i := range perRead {
					_ = h.Append(context.Background(), func(b []byte) []byte { return fmt.Appendf(b, "p%d %d", p, r*perRead+i) })
				}
				h.Release()
			}
		})
	}
	wg.Go(func() {
		for i := range reads * perRead {
			_ = wr.Write(context.Background(), fmt.Appendf(nil, "p%d %d", producers, i))
		}
	})
	wg.Wait()
	if err := wr.Close(); err != nil {
		t.Fatal(err)
	}
	next := make([]int, producers+1)
	for _, w := range rec.taken() {
		if !bytes.HasSuffix(w, []byte("\n")) {
			t.Fatalf("a write ends inside a line: %q", w)
		}
		for _, l := range strings.Split(strings.TrimSuffix(string(w), "\n"), "\n") {
			var p, i int
			if _, err := fmt.Sscanf(l, "p%d %d", &p, &i); err != nil || p > producers {
				t.Fatalf("line %q is not whole", l)
			}
			if i != next[p] {
				t.Fatalf("producer %d: line %d after %d", p, i, next[p]-1)
			}
			next[p]++
		}
	}
	for p, n := range next {
		if n != reads*perRead {
			t.Errorf("producer %d: %d lines, want %d", p, n, reads*perRead)
		}
	}
}

// Held lines do not wait for Release past heldBurst bytes: the lines of
// a Read that brought many events go out as they are made, in writes of
// about heldBurst bytes (S2).
func TestHoldBurst(t *testing.T) {
	rec := &syncRecorder{t: t}
	wr := NewWriter(rec)
	h := wr.NewHold()
	h.Hold()
	line := bytes.Repeat([]byte("x"), 99)
	const per = (heldBurst + 99) / 100 * 100 // the first whole line at or past heldBurst
	const n = 3*per/100 + 1
	for range n {
		if err := h.Append(context.Background(), func(b []byte) []byte { return append(b, line...) }); err != nil {
			t.Fatal(err)
		}
	}
	var sizes []int
	for _, w := range rec.taken() {
		sizes = append(sizes, len(w))
	}
	if diff := cmp.Diff([]int{per, per, per}, sizes); diff != "" {
		t.Errorf("write sizes before Release (-want +got):\n%s", diff)
	}
	h.Release()
	if err := wr.Close(); err != nil {
		t.Fatal(err)
	}
	got := 0
	for _, w := range rec.taken() {
		got += bytes.Count(w, []byte("\n"))
	}
	if got != n {
		t.Errorf("%d lines written, want %d", got, n)
	}
}

// A vectored write into a pipe with room for part of it writes that part
// at once (pwritev2 without waiting) and the rest as the reader reads, in
// order; into a file that cannot take writes without waiting, the usual
// way.
func TestVectoredRoom(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("vectored writes are Linux's")
	}
	a, b := bytes.Repeat([]byte("a"), 3000), bytes.Repeat([]byte("b"), 70_000)
	t.Run("pipe", func(t *testing.T) {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		defer w.Close()
		vec := vectored(w)
		fill := bytes.Repeat([]byte("f"), 60_000) // of the pipe's 64 KiB
		if err := vec([][]byte{fill}); err != nil {
			t.Fatal(err)
		}
		done := make(chan error)
		go func() { done <- vec([][]byte{a, b}) }()
		got := make([]byte, len(fill)+len(a)+len(b))
		if _, err := io.ReadFull(r, got); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if want := bytes.Join([][]byte{fill, a, b}, nil); !bytes.Equal(got, want) {
			t.Errorf("read %.100q…, want %.100q…", got, want)
		}
	})
	t.Run("file", func(t *testing.T) {
		f, err := os.Create(t.TempDir() + "/out")
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		vec := vectored(f)
		for range 2 {
			if err := vec([][]byte{a, b}); err != nil {
				t.Fatal(err)
			}
		}
		got, err := os.ReadFile(f.Name())
		if want := bytes.Repeat(bytes.Join([][]byte{a, b}, nil), 2); err != nil || !bytes.Equal(got, want) {
			t.Errorf("file holds %d bytes (%v), want %d", len(got), err, len(want))
		}
	})
}
