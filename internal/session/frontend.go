package session

import (
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
)

// Branch returns the active branch of a history, oldest first.
func Branch(entries []Entry) []Entry { return store.Branch(entries) }

// ModelCall is the model call behind an assistant message of the history.
type ModelCall = store.ModelCall

// ProviderStatus describes one HTTP provider of the catalog (never its key).
type ProviderStatus = model.ProviderStatus

// Providers lists the catalog's HTTP providers, built-in and configured.
func (h *Host) Providers() []ProviderStatus { return h.engine.Catalog.Providers() }

// Tools returns the name of every tool the process has: e's built-in
// tools, then the extensions'.
func (h *Host) Tools() []string { return h.toolNames() }

// Builtin reports whether name is one of e's built-in tools.
func Builtin(name string) bool {
	_, ok := tool.Lookup(name)
	return ok
}

// AddUserText records text as a user message of the history outside any
// turn, seen by the next model call; refused while a turn runs.
func (s *Session) AddUserText(text string) error {
	if err := s.a.AddUserText(text); err != nil {
		return wrap(CodeTurnRunning, "", err)
	}
	return nil
}

// MaxAttempts returns the attempts per model call, retries included (0:
// the engine's default).
func (h *Host) MaxAttempts() int { return h.engine.MaxAttempts }
