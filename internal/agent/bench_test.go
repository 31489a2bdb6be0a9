package agent

import (
	"context"
	"testing"
	"time"
)

// BenchmarkLongTurn streams a 20000-word answer through a sink that
// encodes every event as the server would, and reports events per second.
func BenchmarkLongTurn(b *testing.B) {
	eng := testEngine(b)
	var events int
	var buf []byte
	sink := func(ev Event) {
		buf = AppendEvent(buf[:0], ev)
		events++
	}
	start := time.Now()
	for b.Loop() {
		s := eng.NewSession(Options{ID: "bench", Cwd: b.TempDir(), Model: "e/offline", Effort: "medium"})
		if err := s.Begin(); err != nil {
			b.Fatal(err)
		}
		res := s.Prompt(context.Background(), "/long 20000", nil, sink)
		if res.Error != nil {
			b.Fatal(*res.Error)
		}
		s.Close()
	}
	b.ReportMetric(float64(events)/time.Since(start).Seconds(), "events/s")
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
