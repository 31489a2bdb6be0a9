package session

import (
	"context"
	"errors"

	"github.com/e-agent/e/internal/agent"
	"github.com/e-agent/e/internal/model"
	"github.com/e-agent/e/internal/store"
	"github.com/e-agent/e/internal/tool"
)

// What a front end that keeps its own view of a session (pi's dialect:
// its entries, tree and tool flags) reads through the layer, so that it
// need not import the store, the tools or the catalog.

// The types of a history's entries (Entry.Type).
const (
	EntryMessage    = store.TypeMessage
	EntrySettings   = store.TypeSettings
	EntryCompaction = store.TypeCompaction
	EntryName       = store.TypeName
	EntryShell      = store.TypeShell
	// EntryInterrupted follows the text an interrupted answer streamed (if any).
	EntryInterrupted = store.TypeInterrupted
	// EntryAttempt is a failed attempt of a model call that was retried.
	EntryAttempt = store.TypeAttempt
	// EntryError is where an error ended a turn.
	EntryError = store.TypeError
)

// Branch returns the active branch of a history, oldest first.
func Branch(entries []Entry) []Entry { return store.Branch(entries) }

// Name returns the session name in force at the end of branch: its last
// name entry's, else the header's.
func Name(h Header, branch []Entry) string { return store.Name(h, branch) }

// ToolRun is how one tool call of a tool message ran (its duration).
type ToolRun = store.ToolRun

// ModelCall is the model call behind an assistant message of the history.
type ModelCall = store.ModelCall

// ProviderStatus describes one HTTP provider of the catalog (never its key).
type ProviderStatus = model.ProviderStatus

// Providers lists the catalog's HTTP providers, built-in and configured.
func (h *Host) Providers() []ProviderStatus { return h.engine.Catalog.Providers() }

// Tools returns the name of every tool the process has: e's built-in
// tools, then the extensions'.
func (h *Host) Tools() []string { return h.toolNames() }

// SystemPrompt returns the system prompt the session's next model call
// sends, as far as it is known before the call (MCP tools a turn
// discovers are not in it).
func (s *Session) SystemPrompt() string { return s.a.SystemPrompt() }

// ToolDefs returns the definitions of the tools the session offers the
// model: e's built-in tools' and its extensions' (MCP tools, which a turn
// discovers, are not among them).
func (s *Session) ToolDefs() []model.ToolDef {
	var ext []model.ToolDef
	if s.h.engine.Ext != nil {
		ext = s.h.engine.Ext.Tools()
	}
	var out []model.ToolDef
	for _, name := range s.a.Tools() {
		if spec, ok := tool.Lookup(name); ok {
			out = append(out, model.ToolDef{Name: spec.Name, Description: spec.Description, Parameters: spec.Parameters})
			continue
		}
		for _, d := range ext {
			if d.Name == name {
				out = append(out, d)
				break
			}
		}
	}
	return out
}

// Trusted reports whether dir is on the user's trust list (e trust DIR).
func (h *Host) Trusted(dir string) bool { return store.IsTrusted(h.env.Home, dir) }

// Builtin reports whether name is one of e's built-in tools.
func Builtin(name string) bool {
	_, ok := tool.Lookup(name)
	return ok
}

// RunShell runs a user's shell command in the session's cwd beside
// whatever the session does (a turn, a compaction, other commands), as
// pi's bash does, and records nothing: AddShell records it. ctx ending
// kills it (its result says cancelled); output streams to sink as
// agent.ShellOutput events before it returns.
func (s *Session) RunShell(ctx context.Context, spec ShellSpec, sink func(agent.Event)) (ShellRun, error) {
	if spec.Command == "" {
		return ShellRun{}, paramErr(CodeInvalidParams, "command", "expected a non-empty string")
	}
	timeout := spec.Timeout
	if timeout == 0 {
		timeout = DefaultShellTimeout
	}
	run, err := s.a.RunShell(ctx, spec.Command, timeout, sink)
	if err != nil {
		return ShellRun{}, wrap(CodeInternal, "", err)
	}
	run.Exclude = spec.Exclude
	return run, nil
}

// AddShell records a command RunShell ran as a shell entry of the history
// (as Shell records its own) and returns the entry's id; refused with
// turn_running while a turn runs.
func (s *Session) AddShell(run ShellRun) (string, error) {
	en, err := s.a.AddShell(run)
	if errors.Is(err, agent.ErrBusy) {
		return "", wrap(CodeTurnRunning, "", err)
	}
	if err != nil {
		return "", wrap(CodeInternal, "", err)
	}
	return en.ID, nil
}

// MaxAttempts returns the attempts per model call, retries included (0:
// the engine's default).
func (h *Host) MaxAttempts() int { return h.engine.MaxAttempts }
