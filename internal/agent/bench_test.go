package agent

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/e-agent/e/internal/model"
	"github.com/e-agent/e/internal/providermock"
	"github.com/e-agent/e/internal/store"
	"github.com/e-agent/e/internal/tool"
)

// BenchmarkLongTurn streams offline answers of 2,000, 20,000 and 200,000
// words through a sink that encodes every event as the server does, and
// reports the cost per event: flat with the size when nothing is quadratic.
func BenchmarkLongTurn(b *testing.B) {
	for _, n := range []int{2000, 20000, 200000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			eng := testEngine(b)
			var events int
			st := NewStamp("0193a0b2-5b9e-7c1e-9f00-0123456789ab", json.RawMessage(`"p1"`))
			var buf []byte
			sink := func(ev Event) {
				buf = st.Append(buf[:0], ev)
				events++
			}
			for b.Loop() {
				s := eng.NewSession(Options{ID: "bench", Cwd: b.TempDir(), Model: "e/offline", Effort: "medium"})
				if err := s.Begin(); err != nil {
					b.Fatal(err)
				}
				res := s.Prompt(context.Background(), "/long "+strconv.Itoa(n), nil, sink)
				if res.Error != nil {
					b.Fatal(*res.Error)
				}
				s.Close()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(events), "ns/event")
		})
	}
}

// BenchmarkTurnAfterLong is the wait for the first text of the turn after
// an offline answer of 2,000 to 200,000 words: the next model call's
// history holds that answer, which the turn has in hand and need not
// decode again from its entry.
func BenchmarkTurnAfterLong(b *testing.B) {
	for _, n := range []int{2000, 20000, 200000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			eng := testEngine(b)
			var wait time.Duration
			for b.Loop() {
				s := eng.NewSession(Options{ID: "bench", Cwd: b.TempDir(), Model: "e/offline", Effort: "medium"})
				if err := s.Begin(); err != nil {
					b.Fatal(err)
				}
				if res := s.Prompt(context.Background(), "/long "+strconv.Itoa(n), nil, func(Event) {}); res.Error != nil {
					b.Fatal(*res.Error)
				}
				if err := s.Begin(); err != nil {
					b.Fatal(err)
				}
				start, first := time.Now(), time.Time{}
				s.Prompt(context.Background(), "/text next", nil, func(ev Event) {
					if _, ok := ev.(*Text); ok && first.IsZero() {
						first = time.Now()
					}
				})
				wait += first.Sub(start)
				s.Close()
			}
			b.ReportMetric(float64(wait.Nanoseconds())/float64(b.N)/1e6, "first-text-ms")
		})
	}
}

// BenchmarkInterruptBash measures how long Interrupt takes to end a turn
// whose bash call runs `sleep 100`, until Prompt has returned.
func BenchmarkInterruptBash(b *testing.B) {
	eng := testEngine(b)
	var total time.Duration
	n := 0
	for b.Loop() {
		n++
		s := eng.NewSession(Options{ID: "bench", Cwd: b.TempDir(), Model: "e/offline", Effort: "medium",
			Tools: []string{"bash"}})
		rec := &recorder{}
		done := startPrompt(b, s, bashStarted, rec)
		rec.wait(b, "tool_output", isStarted)
		t0 := time.Now()
		s.Interrupt()
		res := receive(b, done)
		total += time.Since(t0)
		if !res.Aborted {
			b.Fatal("not aborted")
		}
		s.Close()
	}
	b.ReportMetric(float64(total.Microseconds())/1000/float64(n), "ms/op")
}

// BenchmarkProviderTurn runs turns of 500, 5,000 and 50,000 text deltas
// from a loopback server of each provider API through the engine and a
// sink that encodes every event as e rpc does, and reports the cost per
// delta (flat with the size when nothing on the path is quadratic) and
// first-µs, the median time from the mock's write of the first delta to
// the first text event's encoding, with the rest of the answer held back
// until then (providermock.HoldNext), as a real provider's next delta comes
// later.
func BenchmarkProviderTurn(b *testing.B) {
	for _, api := range providermock.APIs {
		for _, n := range []int{500, 5000, 50000} {
			b.Run(api+"/"+strconv.Itoa(n), func(b *testing.B) {
				mock := providermock.NewServer(api, n)
				srv := httptest.NewServer(mock)
				defer srv.Close()
				cat, err := model.NewCatalog(model.Config{Getenv: func(string) string { return "" }, DefaultModel: "mock/m",
					Providers: map[string]model.ProviderConfig{"mock": {API: api, BaseURL: srv.URL, Models: []model.ModelConfig{{ID: "m"}}}}})
				if err != nil {
					b.Fatal(err)
				}
				eng := &Engine{Catalog: cat, Procs: tool.NewProcs(), DefaultModel: "mock/m"}
				st := NewStamp("0193a0b2-5b9e-7c1e-9f00-0123456789ab", json.RawMessage(`"p1"`))
				var buf []byte
				texts := 0
				var first time.Time  // the first text event's encoding done
				var firsts []float64 // µs from the mock's flush of the first delta
				var release func()
				sink := func(ev Event) {
					buf = st.Append(buf[:0], ev)
					if _, ok := ev.(*Text); ok {
						if texts == 0 {
							first = time.Now()
							release()
						}
						texts++
					}
				}
				b.ReportAllocs()
				for b.Loop() {
					s := eng.NewSession(Options{ID: "bench", Cwd: b.TempDir(), Model: "mock/m"})
					if err := s.Begin(); err != nil {
						b.Fatal(err)
					}
					texts = 0
					release = mock.HoldNext()
					if res := s.Prompt(context.Background(), "hi", nil, sink); res.Error != nil || texts != n {
						b.Fatalf("%d text events, error %v", texts, res.Error)
					}
					s.Close()
					fl := mock.Firsts()
					firsts = append(firsts, float64(first.Sub(fl[len(fl)-1]).Nanoseconds())/1e3)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/delta")
				slices.Sort(firsts)
				b.ReportMetric(firsts[len(firsts)/2], "first-µs")
			})
		}
	}
}

// BenchmarkHistory is what each model call of a long session pays for its
// history, 100 to 10,000 stored messages: messages decoded once ("kept")
// against decoding all of them at every call ("reparse", what History
// does for a caller without a session).
func BenchmarkHistory(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		var entries []store.Entry
		for i := range n {
			m, _ := json.Marshal(model.Message{Role: model.RoleUser, Content: []model.Part{{Type: model.PartText,
				Text: "please look at file " + strconv.Itoa(i) + " and tell me what it does, in detail"}}})
			entries = append(entries, store.Entry{Type: store.TypeMessage, ID: strconv.Itoa(i), Message: m})
		}
		s := testEngine(b).NewSession(Options{ID: "h", Cwd: b.TempDir(), Model: model.OfflineID, Entries: entries})
		b.Run(strconv.Itoa(n)+"/kept", func(b *testing.B) {
			for b.Loop() {
				s.mu.Lock()
				if len(s.history(s.entries)) != n {
					b.Fatal("short history")
				}
				s.mu.Unlock()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/message")
		})
		b.Run(strconv.Itoa(n)+"/reparse", func(b *testing.B) {
			for b.Loop() {
				History(entries)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/message")
		})
	}
}
