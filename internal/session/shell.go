package session

import (
	"context"
	"fmt"
	"time"

	"github.com/e-agent/e/internal/agent"
	"github.com/e-agent/e/internal/store"
)

// ShellRun is a recorded shell command: what ran and how it ended.
type ShellRun = store.ShellRun

// ShellSpec is a shell command the user runs into a session's context.
type ShellSpec struct {
	Command string
	// Exclude keeps the command and its output in the log but out of the
	// model's context.
	Exclude bool
	// Timeout kills the command after this long; 0 is DefaultShellTimeout.
	Timeout time.Duration
}

// DefaultShellTimeout is a shell command's timeout unless one is given:
// the bash tool's default.
const DefaultShellTimeout = 120 * time.Second

// ShellResult is how a shell command ended and the history entry that
// records it.
type ShellResult struct {
	Entry string // the entry's id
	ShellRun
}

// Shell runs a user's shell command in the session's cwd and records it in
// the history (session.shell): the next model call sees the command and its
// output as a user message, unless spec.Exclude. It is the session's one
// running thing, like a turn: while it runs, Prompt, Compact and Shell are
// refused with code turn_running and Steer with no_turn; Stop, Interrupt,
// Close and Shutdown kill it, and its result then says cancelled. It
// returns at once; the output streams to sink as agent.ShellOutput
// events, all before the Turn's Done closes. Turn.Shell gives the result.
func (s *Session) Shell(ctx context.Context, spec ShellSpec, sink func(agent.Event)) (*Turn, error) {
	if spec.Command == "" {
		return nil, paramErr(CodeInvalidParams, "command", "expected a non-empty string")
	}
	timeout := spec.Timeout
	if timeout == 0 {
		timeout = DefaultShellTimeout
	}
	return s.begin(ctx, true, func(ctx context.Context, t *Turn) {
		en, err := s.a.Shell(ctx, spec.Command, spec.Exclude, timeout, sink)
		if err != nil {
			t.err = wrap(CodeInternal, "", err)
			return
		}
		t.shellRun = ShellResult{Entry: en.ID, ShellRun: *en.Shell}
	})
}

// Shell returns a shell command's result, once Done is closed.
func (t *Turn) Shell() (ShellResult, error) { return t.shellRun, t.err }

// errShellRunning refuses work while a shell command runs.
func (s *Session) errShellRunning() error {
	return &Error{Code: CodeTurnRunning, Err: fmt.Errorf("session %s is running a shell command: interrupt it first", s.ID())}
}
