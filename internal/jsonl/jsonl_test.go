package jsonl

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// F4, F5: records split on LF only, CR stripped, U+2028/2029 are data.
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

// F5: each line is written whole with one Write, never interleaved.
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
	if len(w.writes) != 800 {
		t.Fatalf("%d writes, want 800", len(w.writes))
	}
	for _, b := range w.writes {
		if b[len(b)-1] != '\n' || bytes.Count(b, []byte{'\n'}) != 1 || len(bytes.Trim(b[:len(b)-1], string(b[:1]))) != 0 {
			t.Fatalf("write is not one whole line: %q", b)
		}
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

type failing struct{}

func (failing) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }
