package session

import (
	"context"
	"fmt"

	"github.com/e-agent/e/internal/agent"
)

// FollowUpMode says how many queued follow-ups the session's next turn
// takes when the running one ends (pi's set_follow_up_mode).
type FollowUpMode string

// The follow-up modes.
const (
	// FollowUpOneAtATime starts one turn per follow-up, oldest first (the default).
	FollowUpOneAtATime FollowUpMode = "one-at-a-time"
	// FollowUpAll starts one turn with every queued follow-up: the oldest
	// is its prompt, the others steer it (M7) in order.
	FollowUpAll FollowUpMode = "all"
)

// followQueue is a session's follow-ups, guarded by its mu.
type followQueue struct {
	all     bool
	waiting []*FollowUp
}

// FollowUpSpec is a prompt to run once the session's running work ends.
type FollowUpSpec struct {
	Text string
	// Images are paths relative to the session's cwd, as Prompt's (I1,
	// I2); Parts images already read, as PromptParts'. Both are checked
	// when queued.
	Images  []string
	Parts   []Part
	Options PromptOptions
	// Sink receives its turn's events, as Prompt's.
	Sink func(agent.Event)
	// Started, when set, is called with its turn as that begins, before
	// any of its events and before anything can stop it, with the
	// session's lock held: it must not call the session.
	Started func(*Turn)
}

// FollowUp is one queued follow-up: it becomes the session's next turn
// when the running one ends, whether that completed, failed or was
// stopped, unless an interrupt (Stop), Close or ClearFollowUps drops it
// first; those drop every follow-up queued before them, not the ones
// queued after. (pi's front keeps a queue of its own: pi holds a
// follow-up sent while idle for the next prompt's run, keeps the queue
// through an abort and compacts between a run and its follow-ups.)
type FollowUp struct {
	text    string
	parts   []Part
	opts    agent.TurnOptions
	ctx     context.Context
	sink    func(agent.Event)
	started func(*Turn)

	ready chan struct{} // closed once it started its turn or was dropped
	turn  *Turn
	err   error
}

// Text returns the follow-up's prompt.
func (f *FollowUp) Text() string { return f.text }

// Ready is closed once the follow-up started its turn or was dropped.
func (f *FollowUp) Ready() <-chan struct{} { return f.ready }

// Turn returns, once Ready is closed, the turn the follow-up started, or
// why it never ran (code interrupted when dropped).
func (f *FollowUp) Turn() (*Turn, error) { return f.turn, f.err }

func (f *FollowUp) end(t *Turn, err error) {
	f.turn, f.err = t, err
	close(f.ready)
}

// FollowUp queues a prompt for when the session's running turn, compaction
// or shell command ends, and returns at once; on an idle session it starts
// at once. Its options and images are checked now.
func (s *Session) FollowUp(ctx context.Context, spec FollowUpSpec) (*FollowUp, error) {
	to, err := s.turnOptions(spec.Options)
	if err != nil {
		return nil, err
	}
	parts, err := s.loadImages(spec.Images)
	if err != nil {
		return nil, err
	}
	if len(spec.Parts) > 0 {
		if err := s.acceptsImages(); err != nil {
			return nil, err
		}
		parts = append(parts, spec.Parts...)
	}
	f := &FollowUp{text: spec.Text, parts: parts, opts: to, ctx: ctx, sink: spec.Sink, started: spec.Started,
		ready: make(chan struct{})}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.detached {
		return nil, &Error{Code: CodeUnknownSession, Err: fmt.Errorf("session %s %w", s.ID(), errClosed)}
	}
	s.follow.waiting = append(s.follow.waiting, f)
	if s.turn == nil {
		s.nextFollowUpLocked(nil)
		if _, err := f.Turn(); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// FollowUps returns the texts of the queued follow-ups, oldest first.
func (s *Session) FollowUps() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.follow.waiting))
	for _, f := range s.follow.waiting {
		out = append(out, f.text)
	}
	return out
}

// ClearFollowUps drops every queued follow-up and returns their texts,
// oldest first.
func (s *Session) ClearFollowUps() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.follow.waiting))
	for _, f := range s.follow.waiting {
		out = append(out, f.text)
	}
	s.dropFollowUpsLocked("withdrawn")
	return out
}

// SetFollowUpMode sets how many follow-ups each next turn takes.
func (s *Session) SetFollowUpMode(m FollowUpMode) error {
	switch m {
	case FollowUpOneAtATime, FollowUpAll:
	default:
		return paramErr(CodeInvalidParams, "follow_up_mode", "%q is not one of %q, %q", m, FollowUpOneAtATime, FollowUpAll)
	}
	s.mu.Lock()
	s.follow.all = m == FollowUpAll
	s.mu.Unlock()
	return nil
}

// nextFollowUpLocked starts the next turn from the queue, when there is
// one, with s.mu held and no turn running; after is the turn just ended,
// whose done the new turn's run waits for. A follow-up that cannot start
// (the process shutting down, the session closing) is dropped, code
// interrupted, saying why, and the next is tried.
func (s *Session) nextFollowUpLocked(after <-chan struct{}) {
	for len(s.follow.waiting) > 0 {
		n := 1
		if s.follow.all {
			n = len(s.follow.waiting)
		}
		batch := s.follow.waiting[:n:n]
		s.follow.waiting = s.follow.waiting[n:]
		f := batch[0]
		t, err := s.launchLocked(f.ctx, false, after, s.promptRun(f.text, f.parts, f.opts, f.sink))
		if err != nil {
			for _, g := range batch {
				g.end(nil, &Error{Code: CodeInterrupted, Err: fmt.Errorf("session %s: follow-up dropped before its turn began: %w", s.ID(), err)})
			}
			continue
		}
		for _, g := range batch[1:] {
			// The agent runs from launchLocked on: this cannot fail.
			_ = s.a.SteerParts(g.text, g.parts)
		}
		for _, g := range batch {
			if g.started != nil {
				g.started(t)
			}
			g.end(t, nil)
		}
		return
	}
}

// dropFollowUpsLocked ends every queued follow-up unrun, with code
// interrupted; why says what dropped them. s.mu is held.
func (s *Session) dropFollowUpsLocked(why string) {
	for _, f := range s.follow.waiting {
		f.end(nil, &Error{Code: CodeInterrupted, Err: fmt.Errorf("session %s: follow-up %s before its turn began", s.ID(), why)})
	}
	s.follow.waiting = nil
}
