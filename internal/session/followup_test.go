package session

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/e-agent/e/internal/agent"
)

// blocked starts a turn whose first event waits for release, so what a
// test queues meanwhile is queued while it runs, without timing.
func blocked(t *testing.T, s *Session) (turn *Turn, release func()) {
	t.Helper()
	started, gate := make(chan struct{}), make(chan struct{})
	first := true
	turn, err := s.Prompt(context.Background(), "/text first", nil, func(agent.Event) {
		if first {
			first = false
			close(started)
			<-gate
		}
	})
	if err != nil {
		t.Fatalf("prompt: %v", err)
	}
	<-started
	var once sync.Once
	release = func() { once.Do(func() { close(gate) }) }
	t.Cleanup(release) // before the host's shutdown, which waits for the turn
	return turn, release
}

// followUp queues text; its sink records whether the turn before it had
// ended by the follow-up's first event.
func followUp(t *testing.T, s *Session, text string, before *Turn, early *bool) *FollowUp {
	t.Helper()
	f, err := s.FollowUp(context.Background(), FollowUpSpec{Text: text, Sink: func(agent.Event) {
		if before == nil {
			return
		}
		select {
		case <-before.Done():
		default:
			*early = true
		}
	}})
	if err != nil {
		t.Fatalf("FollowUp(%q): %v", text, err)
	}
	return f
}

// turnOf waits for f's turn to end and returns it and its output.
func turnOf(f *FollowUp) (*Turn, string, error) {
	<-f.Ready()
	turn, err := f.Turn()
	if err != nil {
		return nil, "", err
	}
	<-turn.Done()
	return turn, turn.Result().Output, nil
}

// TestFollowUpQueue: follow-ups queued during a turn start, oldest first,
// once it ended (one per turn, or all in one turn in mode all); an idle
// session starts one at once (issue 29; pi's follow_up, M6).
func TestFollowUpQueue(t *testing.T) {
	tests := []struct {
		name     string
		mode     FollowUpMode
		texts    []string
		want     []string // each follow-up's turn's output
		sameTurn bool
	}{
		{name: "one at a time", mode: FollowUpOneAtATime, texts: []string{"/text a", "/text b"}, want: []string{"a", "b"}},
		{name: "all", mode: FollowUpAll, texts: []string{"/text a", "b c"},
			want:     []string{`e/offline: received 2 words: "b c"`, `e/offline: received 2 words: "b c"`},
			sameTurn: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := startHost(t, Options{NoTools: true})
			s := create(t, h, Spec{})
			if err := s.SetFollowUpMode(tt.mode); err != nil {
				t.Fatal(err)
			}
			first, release := blocked(t, s)
			early := false
			var fs []*FollowUp
			for _, text := range tt.texts {
				fs = append(fs, followUp(t, s, text, first, &early))
			}
			if diff := cmp.Diff(tt.texts, s.FollowUps()); diff != "" {
				t.Errorf("FollowUps() while the turn runs (-want +got):\n%s", diff)
			}
			release()
			var got []string
			var turns []*Turn
			for _, f := range fs {
				turn, out, err := turnOf(f)
				if err != nil {
					t.Fatalf("follow-up %q: %v", f.Text(), err)
				}
				got, turns = append(got, out), append(turns, turn)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("outputs (-want +got):\n%s", diff)
			}
			if early {
				t.Error("a follow-up's event came before the turn it follows had ended")
			}
			if same := turns[0] == turns[1]; same != tt.sameTurn {
				t.Errorf("follow-ups share a turn: %v, want %v", same, tt.sameTurn)
			}
			if got := s.FollowUps(); len(got) != 0 {
				t.Errorf("FollowUps() after: %q, want none", got)
			}
		})
	}
}

// TestFollowUpIdle: on an idle session a follow-up is the next turn at once.
func TestFollowUpIdle(t *testing.T) {
	h := startHost(t, Options{NoTools: true})
	s := create(t, h, Spec{})
	early := false
	f := followUp(t, s, "/text now", nil, &early)
	select {
	case <-f.Ready():
	default:
		t.Fatal("a follow-up on an idle session did not start at once")
	}
	if _, out, err := turnOf(f); err != nil || out != "now" {
		t.Fatalf("follow-up: %q, %v; want now", out, err)
	}
}

// TestFollowUpDropped: an interrupt, ClearFollowUps and Close drop the
// follow-ups queued before them (code interrupted); one queued after an
// interrupt runs once the stopped turn ended.
func TestFollowUpDropped(t *testing.T) {
	tests := []struct {
		name  string
		drop  func(*Session) []string // what the drop returns, if anything
		after bool                    // queue one after the drop, which runs
	}{
		{name: "interrupt", drop: func(s *Session) []string { s.Stop(); return nil }, after: true},
		{name: "clear", drop: func(s *Session) []string { return s.ClearFollowUps() }, after: true},
		{name: "close", drop: func(s *Session) []string { s.Detach(); return nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := startHost(t, Options{NoTools: true})
			s := create(t, h, Spec{})
			first, release := blocked(t, s)
			early := false
			f := followUp(t, s, "/text dropped", first, &early)
			got := tt.drop(s)
			if tt.name == "clear" {
				if diff := cmp.Diff([]string{"/text dropped"}, got); diff != "" {
					t.Errorf("ClearFollowUps (-want +got):\n%s", diff)
				}
			}
			select {
			case <-f.Ready():
			default:
				t.Fatal("the dropped follow-up is not ready at once")
			}
			if _, err := f.Turn(); CodeOf(err) != CodeInterrupted {
				t.Errorf("dropped follow-up: %v, want code %s", err, CodeInterrupted)
			}
			var next *FollowUp
			if tt.after {
				next = followUp(t, s, "/text next", first, &early)
			} else if _, err := s.FollowUp(context.Background(), FollowUpSpec{Text: "/text no"}); CodeOf(err) != CodeUnknownSession {
				t.Errorf("FollowUp after close: %v, want code %s", err, CodeUnknownSession)
			}
			release()
			<-first.Done()
			if next != nil {
				if _, out, err := turnOf(next); err != nil || out != "next" {
					t.Errorf("follow-up queued after the drop: %q, %v; want next", out, err)
				}
			}
			if early {
				t.Error("a follow-up's event came before the turn it follows had ended")
			}
		})
	}
}

// TestFollowUpMode: an unknown mode is invalid_params naming it.
func TestFollowUpMode(t *testing.T) {
	h := startHost(t, Options{NoTools: true})
	s := create(t, h, Spec{})
	err := s.SetFollowUpMode("some")
	var se *Error
	if CodeOf(err) != CodeInvalidParams || !errors.As(err, &se) || se.Param != "follow_up_mode" {
		t.Errorf("SetFollowUpMode(some) = %v, want invalid_params naming follow_up_mode", err)
	}
}
