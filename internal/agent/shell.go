package agent

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/e-agent/e/internal/model"
	"github.com/e-agent/e/internal/store"
	"github.com/e-agent/e/internal/tool"
)

// Shell runs a user's shell command in the session's cwd and records it
// in the history as a shell entry, which the next model call sees as a
// user message unless exclude is set. Like Prompt and Compact it ends the
// run a successful Begin started; Stop kills the command (its entry says
// cancelled). Output streams to sink as ShellOutput events.
func (s *Session) Shell(ctx context.Context, command string, exclude bool, timeout time.Duration, sink func(Event)) (store.Entry, error) {
	ctx = s.start(ctx)
	defer s.finish()
	run, err := s.RunShell(ctx, command, timeout, sink)
	if err != nil {
		return store.Entry{}, err
	}
	run.Exclude = exclude
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.appendShellLocked(run)
}

// RunShell runs a user's shell command in the session's cwd beside
// whatever the session is doing, and records nothing: AddShell does. ctx
// ending kills it (the result says cancelled).
func (s *Session) RunShell(ctx context.Context, command string, timeout time.Duration, sink func(Event)) (store.ShellRun, error) {
	env := s.toolEnv()
	env.Output = func(chunk string) { sink(ShellOutput{Delta: chunk}) }
	r, err := tool.Shell(ctx, &env, command, timeout)
	if err != nil {
		return store.ShellRun{}, err
	}
	return store.ShellRun{Command: command, Output: r.Output, ExitCode: r.ExitCode, Cancelled: r.Stopped,
		TimedOut: r.TimedOut, Truncated: r.Truncated, FullOutputPath: r.FullOutputPath}, nil
}

// AddShell records a shell command RunShell ran as a shell entry of the
// history, outside any turn. It fails while a turn runs.
func (s *Session) AddShell(run store.ShellRun) (store.Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running {
		return store.Entry{}, fmt.Errorf("session %s %w", s.id, ErrBusy)
	}
	return s.appendShellLocked(run)
}

func (s *Session) appendShellLocked(run store.ShellRun) (store.Entry, error) {
	en := []store.Entry{{Type: store.TypeShell, Shell: &run}}
	if err := s.appendLocked(en...); err != nil {
		return store.Entry{}, err
	}
	if s.log != nil {
		if err := s.log.Sync(); err != nil {
			return en[0], err
		}
	}
	return en[0], nil
}

// shellMessage is what the model sees of a shell entry: the command, its
// output in a fence, and how it ended when that was not exit 0.
func shellMessage(r *store.ShellRun) model.Message {
	var b strings.Builder
	fmt.Fprintf(&b, "Ran `%s`\n```\n%s\n```", r.Command, strings.TrimSuffix(r.Output, "\n"))
	switch {
	case r.Cancelled:
		b.WriteString("\n(interrupted: the command was killed)")
	case r.TimedOut:
		b.WriteString("\n(timed out: the command was killed)")
	case r.ExitCode == nil:
		b.WriteString("\n(killed by a signal)")
	case *r.ExitCode != 0:
		fmt.Fprintf(&b, "\n(exit code %d)", *r.ExitCode)
	}
	switch {
	case r.Truncated && r.FullOutputPath != "": // pi's note (e --mode rpc keeps pi's part of the output)
		b.WriteString("\n\n[Output truncated. Full output: " + r.FullOutputPath + "]")
	case r.Truncated:
		b.WriteString("\n(only the last 64 KiB of output are shown)")
	}
	return model.Message{Role: model.RoleUser, Content: []model.Part{{Type: model.PartText, Text: b.String()}}}
}
