package agent

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/e-agent/e/internal/model"
	"github.com/e-agent/e/internal/store"
)

const bashStarted = `/tool bash {"command":"echo started; sleep 100"}`

func isStarted(ev Event) bool {
	o, ok := ev.(ToolOutput)
	return ok && strings.Contains(o.Delta, "started")
}

// M8: an interrupt ends the turn promptly with aborted true on every path,
// records the interruption, leaves no orphan tool call, and the next prompt
// works (PITFALLS: cancellation).
func TestInterrupt(t *testing.T) {
	tests := []struct {
		name        string
		prompt      string
		when        func(Event) bool // interrupt once this event came
		wantEnds    []ToolEnd        // Content ignored
		wantStopped []string         // sleep_stopped reasons
		wantFinal   bool             // final_output holds the partial answer
	}{
		{
			name:   "before the first delta",
			prompt: "/delay 3600000\n/text never",
			when:   isType[SessionName],
		},
		{
			name:      "mid-stream",
			prompt:    "/delay 1\n/long 1000000",
			when:      isType[*Text],
			wantFinal: true,
		},
		{
			name:   "mid-bash, with a call of the next wave not run",
			prompt: bashStarted + "\n/tool read {\"path\":\"a.txt\"}",
			when:   isStarted,
			wantEnds: []ToolEnd{{ID: 1, Outcome: "interrupted", Summary: "stopped"},
				{ID: 2, Outcome: "interrupted", Summary: "not run"}},
		},
		{
			name:        "mid-sleep",
			prompt:      "/tool sleep {\"ms\":3600000}",
			when:        isType[ToolStart],
			wantEnds:    []ToolEnd{{ID: 1, Outcome: "interrupted", Summary: "stopped"}},
			wantStopped: []string{"interrupt"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eng := testEngine(t)
			eng.ToolConcurrency = 1
			s := testSession(t, eng, nil)
			rec := &recorder{}
			done := startPrompt(t, s, tt.prompt, rec)
			rec.wait(t, "trigger", tt.when)
			s.Interrupt()
			res := receive(t, done)

			if !res.Aborted || res.Error != nil {
				t.Errorf("aborted %v, error %v; want aborted without error", res.Aborted, res.Error)
			}
			checkTurnEnd(t, rec, true)
			ignore := cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Content" }, cmp.Ignore())
			if diff := cmp.Diff(tt.wantEnds, ofType[ToolEnd](rec), ignore); diff != "" {
				t.Errorf("tool_end (-want +got):\n%s", diff)
			}
			for _, e := range ofType[ToolStart](rec) {
				if e.ID != 1 {
					t.Errorf("call %d started; only call 1 may run before the interrupt", e.ID)
				}
			}
			var reasons []string
			for _, e := range ofType[SleepStopped](rec) {
				reasons = append(reasons, e.Reason)
			}
			if diff := cmp.Diff(tt.wantStopped, reasons); diff != "" {
				t.Errorf("sleep_stopped reasons (-want +got):\n%s", diff)
			}
			if tt.wantFinal != (res.FinalOutput != "") || !strings.HasPrefix(res.Output, res.FinalOutput) {
				t.Errorf("output %.20q, final_output %.20q; want the partial answer kept: %v", res.Output, res.FinalOutput, tt.wantFinal)
			}
			types := entryTypes(s)
			if !strings.HasSuffix(types, "interrupted") {
				t.Errorf("entries %q, want them to end with the interruption", types)
			}
			checkHistory(t, s)

			res, rec = prompt(t, s, "/text again")
			if res.Error != nil || res.Aborted || res.FinalOutput != "again" {
				t.Errorf("next turn: error %v, aborted %v, final %q; want it to work", res.Error, res.Aborted, res.FinalOutput)
			}
			checkTurnEnd(t, rec, false)
			checkHistory(t, s)
		})
	}
}

// The partial answer of an interrupted stream stays in the history, so it
// shows what the user saw.
func TestInterruptKeepsPartial(t *testing.T) {
	s := testSession(t, testEngine(t), nil)
	rec := &recorder{}
	done := startPrompt(t, s, "/delay 1\n/long 1000000", rec)
	rec.wait(t, "text", isType[*Text])
	s.Interrupt()
	res := receive(t, done)
	msgs := History(s.Entries())
	last := msgs[len(msgs)-1]
	if last.Role != model.RoleAssistant || last.Text() != res.Output || res.Output == "" {
		t.Errorf("last message %+v, want the assistant's partial answer %.30q", last, res.Output)
	}
	// The interrupted entry describes the model call it cut short.
	es := s.Entries()
	if en := es[len(es)-1]; en.Type != store.TypeInterrupted || en.Call == nil || en.Call.Model != model.OfflineID ||
		en.Call.Attempts != 1 {
		t.Errorf("last entry %+v (call %+v), want an interrupted entry with the call it cut short", en, en.Call)
	}
}

// An interrupt that comes after Begin but before the turn has started is
// not lost: the turn ends at once, aborted.
func TestInterruptBeforeStart(t *testing.T) {
	s := testSession(t, testEngine(t), nil)
	if err := s.Begin(); err != nil {
		t.Fatal(err)
	}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		s.Interrupt()
	}()
	// Wait until Interrupt has registered itself (without letting time pass).
	for {
		s.mu.Lock()
		p := s.preempted
		s.mu.Unlock()
		if p {
			break
		}
		runtime.Gosched()
	}
	rec := &recorder{}
	done := make(chan Result, 1)
	go func() { done <- s.Prompt(t.Context(), "/delay 3600000\n/text never", nil, rec.sink) }()
	res := receive(t, done)
	<-stopped
	if !res.Aborted {
		t.Error("aborted = false, want true")
	}
	checkTurnEnd(t, rec, true)
}

// M7: a steer enters the turn at its next model call; it stops a running
// sleep (sleep_stopped reason steer).
func TestSteerStopsSleep(t *testing.T) {
	tests := []struct {
		name string
		// inSink steers from inside the sink at tool_start, before the sleep
		// has begun; otherwise the test steers once tool_start came.
		inSink bool
	}{
		{name: "steer while sleeping"},
		{name: "steer before the sleep begins", inSink: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := testSession(t, testEngine(t), nil)
			rec := &recorder{}
			if tt.inSink {
				rec.hook = func(ev Event) {
					if _, ok := ev.(ToolStart); ok {
						if err := s.Steer("go on"); err != nil {
							t.Error(err)
						}
					}
				}
			}
			done := startPrompt(t, s, "/tool sleep {\"ms\":3600000}\n/then\n/text after", rec)
			if !tt.inSink {
				rec.wait(t, "tool_start", isType[ToolStart])
				if err := s.Steer("go on"); err != nil {
					t.Fatal(err)
				}
			}
			res := receive(t, done)
			want := []string{"turn_start", "session_name", "usage", "tool_batch", "tool_start", "sleep_stopped",
				"tool_end", "steered", "text", "text", "text", "text", "text", "text", "usage", "turn_end"}
			if diff := cmp.Diff(want, rec.types()); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if got := ofType[SleepStopped](rec); len(got) != 1 || got[0].Reason != "steer" || got[0].ID != 1 {
				t.Errorf("sleep_stopped = %+v, want one for call 1 with reason steer", got)
			}
			if got := ofType[ToolEnd](rec); len(got) != 1 || got[0].Outcome != "completed" {
				t.Errorf("tool_end = %+v, want the stopped sleep completed", got)
			}
			if diff := cmp.Diff([]Steered{{Text: "go on"}}, ofType[Steered](rec)); diff != "" {
				t.Errorf("steered (-want +got):\n%s", diff)
			}
			// The offline model answers the newest user text: the steer.
			if want := `e/offline: received 2 words: "go on"`; res.FinalOutput != want || res.Aborted {
				t.Errorf("final %q, aborted %v; want %q", res.FinalOutput, res.Aborted, want)
			}
			checkHistory(t, s)
		})
	}
}

// A steer that arrives while the model gives its final answer continues
// the turn instead of being dropped.
func TestSteerDuringFinalAnswer(t *testing.T) {
	s := testSession(t, testEngine(t), nil)
	steered := false
	rec := &recorder{}
	rec.hook = func(ev Event) {
		if _, ok := ev.(*Text); ok && !steered {
			steered = true
			if err := s.Steer("more"); err != nil {
				t.Error(err)
			}
		}
	}
	res := promptWith(t, s, "/text a b c", rec)
	want := []string{"turn_start", "session_name", "text", "text", "text", "usage", "steered",
		"text", "text", "text", "text", "text", "usage", "turn_end"}
	if diff := cmp.Diff(want, rec.types()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	reply := `e/offline: received 1 words: "more"`
	if res.Output != "a b c"+reply || res.FinalOutput != reply {
		t.Errorf("output %q, final %q; want both answers, the last one final", res.Output, res.FinalOutput)
	}
	if got := ofType[Discarded](rec); len(got) != 0 {
		t.Errorf("discarded = %+v, want none", got)
	}
}

// Steers the turn never used are reported as discarded when it ends.
func TestSteerDiscardedOnInterrupt(t *testing.T) {
	s := testSession(t, testEngine(t), nil)
	rec := &recorder{}
	done := startPrompt(t, s, bashStarted, rec)
	rec.wait(t, "tool_output", isStarted)
	if err := s.Steer("late"); err != nil {
		t.Fatal(err)
	}
	s.Interrupt()
	res := receive(t, done)
	if !res.Aborted {
		t.Error("aborted = false")
	}
	evs := rec.types()
	if diff := cmp.Diff([]string{"tool_end", "discarded", "turn_end"}, evs[len(evs)-3:]); diff != "" {
		t.Errorf("last events (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]Discarded{{Reason: "steer", Text: "late"}}, ofType[Discarded](rec)); diff != "" {
		t.Errorf("discarded (-want +got):\n%s", diff)
	}
	if got := ofType[Steered](rec); len(got) != 0 {
		t.Errorf("steered = %+v, want none", got)
	}
	for _, m := range History(s.Entries()) {
		if m.Role == model.RoleUser && m.Text() == "late" {
			t.Error("a discarded steer is in the history")
		}
	}
}

// A steer left over from one turn never leaks into the next.
func TestSteerDoesNotLeak(t *testing.T) {
	s := testSession(t, testEngine(t), nil)
	rec := &recorder{}
	done := startPrompt(t, s, bashStarted, rec)
	rec.wait(t, "tool_output", isStarted)
	if err := s.Steer("late"); err != nil {
		t.Fatal(err)
	}
	s.Interrupt()
	receive(t, done)
	_, rec = prompt(t, s, "/text next")
	if got := ofType[Steered](rec); len(got) != 0 {
		t.Errorf("steered in the next turn: %+v", got)
	}
}

// The history of an interrupted bash call records a result for it, marked
// as an error, so the next request is valid.
func TestInterruptRecordsToolResult(t *testing.T) {
	s := testSession(t, testEngine(t), nil)
	if err := os.WriteFile(filepath.Join(s.Cwd(), "a.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	done := startPrompt(t, s, bashStarted, rec)
	rec.wait(t, "tool_output", isStarted)
	s.Interrupt()
	receive(t, done)
	var results []model.Part
	for _, en := range s.Entries() {
		if en.Type != store.TypeMessage {
			continue
		}
		var m model.Message
		if err := json.Unmarshal(en.Message, &m); err != nil {
			t.Fatal(err)
		}
		if m.Role == model.RoleTool {
			results = append(results, m.Content...)
		}
	}
	if len(results) != 1 || !results[0].IsError || results[0].CallID != "call_0_0" {
		t.Errorf("tool results %+v, want one error result for call_0_0", results)
	}
}

func TestSessionSwitches(t *testing.T) {
	s := testSession(t, testEngine(t), nil)
	zero := 0
	if _, err := s.AddShell(store.ShellRun{Command: "ls", Output: "a\n", ExitCode: &zero}); err != nil {
		t.Fatal(err)
	}
	msgs := History(s.Entries())
	if len(msgs) != 1 || msgs[0].Role != model.RoleUser || !strings.HasPrefix(msgs[0].Text(), "Ran `ls`") {
		t.Errorf("history %+v", msgs)
	}
	if err := s.Begin(); err != nil {
		t.Fatal(err)
	}
	if err := s.Steer("a"); err != nil {
		t.Fatal(err)
	}
	if err := s.Steer("b"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddShell(store.ShellRun{Command: "x"}); !errors.Is(err, ErrBusy) {
		t.Errorf("AddShell while running: %v, want ErrBusy", err)
	}
	if got := s.WithdrawSteers(); len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Errorf("withdrawn %q", got)
	}
	if got := s.WithdrawSteers(); len(got) != 0 {
		t.Errorf("withdrawn twice: %q", got)
	}
	s.start(context.Background())
	s.finish()
}

func TestAutoRetryOff(t *testing.T) {
	s := testSession(t, testEngine(t), nil)
	s.SetAutoRetry(false)
	res, rec := prompt(t, s, "/error retryable")
	if res.Error == nil || len(ofType[Retry](rec)) != 0 {
		t.Errorf("with retries off: error %v, retries %d; want the first failure to end the turn", res.Error, len(ofType[Retry](rec)))
	}
}

// A steer with images enters the history as one user message: its text,
// then the images.
func TestSteerParts(t *testing.T) {
	s := testSession(t, testEngine(t), nil)
	img := model.Part{Type: model.PartImage, MediaType: "image/png", Data: []byte{0x89, 'P', 'N', 'G'}}
	steered := false
	rec := &recorder{}
	rec.hook = func(ev Event) {
		if _, ok := ev.(*Text); ok && !steered {
			steered = true
			if err := s.SteerParts("look", []model.Part{img}); err != nil {
				t.Error(err)
			}
		}
	}
	promptWith(t, s, "/text a", rec)
	var got []model.Part
	for _, en := range s.Entries() {
		var m model.Message
		if en.Type == store.TypeMessage && json.Unmarshal(en.Message, &m) == nil && m.Role == model.RoleUser && m.Text() == "look" {
			got = m.Content
		}
	}
	want := []model.Part{{Type: model.PartText, Text: "look"}, img}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("steer message (-want +got):\n%s", diff)
	}
}

// tool_start of a bash call comes once its command runs: an interrupt at
// that very moment (here inside the event sink, before the turn goes on)
// kills the command; it never finds the call not yet started.
func TestInterruptAtBashStart(t *testing.T) {
	s := testSession(t, testEngine(t), nil)
	rec := &recorder{}
	rec.hook = func(ev Event) {
		if _, ok := ev.(ToolStart); ok {
			s.Stop()
		}
	}
	done := startPrompt(t, s, `/tool bash {"command":"sleep 100"}`, rec)
	res := receive(t, done)
	if !res.Aborted {
		t.Errorf("aborted %v; want true", res.Aborted)
	}
	want := []ToolEnd{{ID: 1, Outcome: "interrupted", Summary: "stopped", Content: "[stopped: the command was killed]"}}
	if diff := cmp.Diff(want, ofType[ToolEnd](rec)); diff != "" {
		t.Errorf("tool_end (-want +got):\n%s", diff)
	}
	if n := len(ofType[ToolStart](rec)); n != 1 {
		t.Errorf("%d tool_start events; want 1", n)
	}
}
