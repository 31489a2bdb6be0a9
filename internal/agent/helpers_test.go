package agent

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/e-agent/e/internal/model"
	"github.com/e-agent/e/internal/tool"
)

func TestMain(m *testing.M) {
	// Nothing in these tests may touch the real ~/.e.
	home, err := os.MkdirTemp("", "agent-test-home-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("E_HOME", home)
	code := m.Run()
	os.RemoveAll(home)
	os.Exit(code)
}

// waitLimit bounds every wait for an event, so a broken engine fails the
// test instead of hanging it. It is never used to let time pass.
const waitLimit = 30 * time.Second

// testEngine returns an engine with the offline model only, fast retries
// and a process tracker that is emptied when the test ends.
func testEngine(t testing.TB) *Engine {
	t.Helper()
	cat, err := model.NewCatalog(model.Config{Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	procs := tool.NewProcs()
	t.Cleanup(procs.KillAll)
	return &Engine{Catalog: cat, Procs: procs, RetryBase: time.Millisecond, MaxAttempts: 3,
		DefaultModel: model.OfflineID}
}

// testSession returns a memory-only offline session in a fresh directory
// with every built-in tool offered; edit adjusts the options.
func testSession(t testing.TB, eng *Engine, edit func(*Options)) *Session {
	t.Helper()
	opts := Options{ID: "s1", Cwd: t.TempDir(), Model: model.OfflineID, Effort: "medium", Tools: tool.Names()}
	if edit != nil {
		edit(&opts)
	}
	s := eng.NewSession(opts)
	t.Cleanup(func() { s.Close() })
	return s
}

// recorder is an event sink that keeps every event and lets the test wait
// for one.
type recorder struct {
	mu      sync.Mutex
	events  []Event
	waiters []waiter
	// hook, when set, runs inside the sink on the turn's goroutine, so a
	// test can act at an exact point of the turn (e.g. steer mid-answer).
	hook func(Event)
}

type waiter struct {
	match func(Event) bool
	ch    chan Event
}

func (r *recorder) sink(ev Event) {
	ev = keep(ev)
	r.mu.Lock()
	r.events = append(r.events, ev)
	kept := r.waiters[:0]
	for _, w := range r.waiters {
		if w.match(ev) {
			w.ch <- ev // buffered: never blocks
			continue
		}
		kept = append(kept, w)
	}
	r.waiters = kept
	hook := r.hook
	r.mu.Unlock()
	if hook != nil {
		hook(ev)
	}
}

// keep returns ev as a sink that keeps it must: a copy of a *Text or
// *Reasoning, which the turn reuses for its next delta.
func keep(ev Event) Event {
	switch ev := ev.(type) {
	case *Text:
		c := *ev
		return &c
	case *Reasoning:
		c := *ev
		return &c
	}
	return ev
}

// wait returns the first event, past or future, that matches.
func (r *recorder) wait(t testing.TB, what string, match func(Event) bool) Event {
	t.Helper()
	r.mu.Lock()
	for _, ev := range r.events {
		if match(ev) {
			r.mu.Unlock()
			return ev
		}
	}
	w := waiter{match: match, ch: make(chan Event, 1)}
	r.waiters = append(r.waiters, w)
	r.mu.Unlock()
	select {
	case ev := <-w.ch:
		return ev
	case <-time.After(waitLimit):
		t.Fatalf("no %s event within %v; got %v", what, waitLimit, r.types())
		return nil
	}
}

func (r *recorder) all() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.events...)
}

func (r *recorder) types() []string {
	var out []string
	for _, ev := range r.all() {
		out = append(out, ev.EventType())
	}
	return out
}

// ofType returns the events of type T.
func ofType[T Event](r *recorder) []T {
	var out []T
	for _, ev := range r.all() {
		if e, ok := ev.(T); ok {
			out = append(out, e)
		}
	}
	return out
}

func isType[T Event](ev Event) bool { _, ok := ev.(T); return ok }

// prompt runs one turn to its end.
func prompt(t testing.TB, s *Session, text string) (Result, *recorder) {
	t.Helper()
	rec := &recorder{}
	return promptWith(t, s, text, rec), rec
}

func promptWith(t testing.TB, s *Session, text string, rec *recorder) Result {
	t.Helper()
	if err := s.Begin(); err != nil {
		t.Fatalf("Begin: %v", err)
	}
	return s.Prompt(context.Background(), text, nil, rec.sink)
}

// startPrompt runs a turn on a goroutine of its own; the channel yields
// its result. The test must receive it, so the goroutine is always waited for.
func startPrompt(t testing.TB, s *Session, text string, rec *recorder) <-chan Result {
	t.Helper()
	if err := s.Begin(); err != nil {
		t.Fatalf("Begin: %v", err)
	}
	done := make(chan Result, 1)
	go func() { done <- s.Prompt(context.Background(), text, nil, rec.sink) }()
	return done
}

func receive(t testing.TB, done <-chan Result) Result {
	t.Helper()
	select {
	case res := <-done:
		return res
	case <-time.After(waitLimit):
		t.Fatalf("the turn did not end within %v", waitLimit)
		return Result{}
	}
}

// checkTurnEnd asserts that the turn's last event is its only turn_end.
func checkTurnEnd(t testing.TB, rec *recorder, aborted bool) {
	t.Helper()
	evs := rec.all()
	ends := ofType[TurnEnd](rec)
	if len(ends) != 1 {
		t.Fatalf("%d turn_end events, want exactly 1: %v", len(ends), rec.types())
	}
	if last, ok := evs[len(evs)-1].(TurnEnd); !ok {
		t.Fatalf("last event is %s, want turn_end: %v", evs[len(evs)-1].EventType(), rec.types())
	} else if last.Aborted != aborted {
		t.Errorf("turn_end aborted = %v, want %v", last.Aborted, aborted)
	}
	if evs[0].EventType() != "turn_start" {
		t.Errorf("first event is %s, want turn_start", evs[0].EventType())
	}
}

// checkHistory asserts that the history a model would see is valid: every
// tool call has exactly one result, in a tool message after it.
func checkHistory(t testing.TB, s *Session) {
	t.Helper()
	open := map[string]bool{}
	for _, m := range History(s.Entries()) {
		for _, p := range m.Content {
			switch p.Type {
			case model.PartToolCall:
				open[p.ID] = true
			case model.PartToolResult:
				if !open[p.CallID] {
					t.Errorf("tool_result for %q without an open tool_call", p.CallID)
				}
				delete(open, p.CallID)
			}
		}
	}
	for id := range open {
		t.Errorf("tool_call %q has no tool_result (orphan)", id)
	}
}

// entryTypes lists the types of a session's entries.
func entryTypes(s *Session) string {
	var out []string
	for _, en := range s.Entries() {
		out = append(out, en.Type)
	}
	return strings.Join(out, " ")
}
