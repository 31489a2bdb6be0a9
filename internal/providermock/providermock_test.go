package providermock

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// holdRecorder records whether anything was written after the first flush
// (the first delta's) before released was set.
type holdRecorder struct {
	*httptest.ResponseRecorder
	flushed  chan struct{}
	released atomic.Bool
	early    atomic.Bool
}

func (r *holdRecorder) Write(b []byte) (int, error) {
	select {
	case <-r.flushed:
		if !r.released.Load() {
			r.early.Store(true)
		}
	default:
	}
	return r.ResponseRecorder.Write(b)
}

func (r *holdRecorder) Flush() {
	r.ResponseRecorder.Flush()
	close(r.flushed)
}

func TestHoldNext(t *testing.T) {
	for _, api := range APIs {
		t.Run(api, func(t *testing.T) {
			s := NewServer(api, 3)
			held := make(chan struct{})
			s.held = func() { close(held) }
			release := s.HoldNext()
			rec := &holdRecorder{ResponseRecorder: httptest.NewRecorder(), flushed: make(chan struct{})}
			done := make(chan struct{})
			go func() {
				defer close(done)
				s.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, Path(api), strings.NewReader("{}")))
			}()
			select {
			case <-held:
			case <-done:
				t.Fatal("the answer ended without waiting for its release")
			}
			head, deltas, tail := Body(api, 3)
			if got, want := rec.Body.Bytes(), append(head, deltas[0]...); !bytes.Equal(got, want) {
				t.Errorf("before the release:\n%s\nwant:\n%s", got, want)
			}
			rec.released.Store(true)
			release()
			release() // a second call is harmless
			<-done
			if rec.early.Load() {
				t.Error("the rest of the answer was written before the release")
			}
			want := bytes.Join([][]byte{head, bytes.Join(deltas, nil), tail}, nil)
			if got := rec.Body.Bytes(); !bytes.Equal(got, want) {
				t.Errorf("body:\n%s\nwant:\n%s", got, want)
			}
			if n := len(s.Firsts()); n != 1 {
				t.Errorf("%d first-delta times, want 1", n)
			}
			// The hold is for one answer: the next streams at once.
			s.held = func() { t.Error("the next answer waited too") }
			next := httptest.NewRecorder()
			s.ServeHTTP(next, httptest.NewRequest(http.MethodPost, Path(api), strings.NewReader("{}")))
			if !bytes.Equal(next.Body.Bytes(), want) {
				t.Errorf("next answer: %q", next.Body.Bytes())
			}
		})
	}
}

// chunkRecorder records what was written between flushes.
type chunkRecorder struct {
	*httptest.ResponseRecorder
	chunks [][]byte
	from   int
}

func (r *chunkRecorder) Flush() {
	r.chunks = append(r.chunks, bytes.Clone(r.Body.Bytes()[r.from:]))
	r.from = r.Body.Len()
}

// With Flush every delta after the first is flushed alone, and the body is
// the same answer.
func TestFlushEachDelta(t *testing.T) {
	for _, api := range APIs {
		t.Run(api, func(t *testing.T) {
			s := NewServer(api, 3)
			s.Flush = true
			rec := &chunkRecorder{ResponseRecorder: httptest.NewRecorder()}
			s.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, Path(api), strings.NewReader("{}")))
			head, deltas, tail := Body(api, 3)
			want := [][]byte{append(head, deltas[0]...), deltas[1], deltas[2]}
			if diff := cmp.Diff(want, rec.chunks); diff != "" {
				t.Errorf("chunks (-want +got):\n%s", diff)
			}
			if got, want := rec.Body.Bytes(), bytes.Join([][]byte{head, bytes.Join(deltas, nil), tail}, nil); !bytes.Equal(got, want) {
				t.Errorf("body:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}
