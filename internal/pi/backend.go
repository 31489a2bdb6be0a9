package pi

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/e-agent/e/internal/session"
)

// This file is the one place that knows how pi's sessions are made: through
// the session layer (Host.Create), with pi's folder for their logs, pi's
// tool selection and a fork point's history.

// spec describes one session to make.
type spec struct {
	cwd     string
	model   string // catalog id ("" with resume: the log's)
	effort  string
	resume  string          // a log to continue ("": a new session)
	entries []session.Entry // a new session's starting history (fork, clone)
	parent  string          // the parent log of a fork
	name    string
}

// backend makes sessions for the front end.
type backend struct {
	h           *session.Host
	sessionsDir string // "" keeps sessions in memory (--no-session)
	tools       []string
}

func (b *backend) make(sp spec) (*session.Session, error) {
	cwd := sp.cwd
	if sp.resume != "" {
		cwd = "" // the log's
	}
	ss := session.Spec{Cwd: cwd, Tools: b.tools, NoTools: len(b.tools) == 0, Save: b.sessionsDir != "",
		Resume: sp.resume, History: sp.entries, Parent: sp.parent}
	if sp.model != "" {
		ss.Model, ss.Effort = &sp.model, &sp.effort
	}
	if sp.name != "" {
		ss.Name = &sp.name
	}
	if ss.Save && sp.resume == "" {
		ss.Dir = b.dir(sp.cwd)
	}
	s, err := b.h.Create(context.Background(), ss)
	if err != nil {
		return nil, fmt.Errorf("pi: %w", err)
	}
	return s, nil
}

// dir is the folder of cwd's sessions, named as pi names it
// (session-format.md): the path without its leading separator, with
// separators and colons as dashes, between double dashes.
func (b *backend) dir(cwd string) string {
	slug := strings.NewReplacer("/", "-", "\\", "-", ":", "-").Replace(strings.TrimPrefix(cwd, string(filepath.Separator)))
	return filepath.Join(b.sessionsDir, "--"+slug+"--")
}

// latest returns the newest saved session of cwd, or "".
func (b *backend) latest(cwd string) string {
	if b.sessionsDir == "" {
		return ""
	}
	files, _ := filepath.Glob(filepath.Join(b.dir(cwd), "*.jsonl"))
	best, bestTime := "", time.Time{}
	for _, f := range files {
		if st, err := os.Stat(f); err == nil && st.ModTime().After(bestTime) {
			best, bestTime = f, st.ModTime()
		}
	}
	return best
}

// find resolves --session: a path, else a full or partial session id
// among the saved sessions.
func (b *backend) find(arg, cwd string) (string, error) {
	if st, err := os.Stat(arg); err == nil && !st.IsDir() {
		return filepath.Abs(arg)
	}
	if b.sessionsDir != "" && !strings.ContainsAny(arg, `/\`) {
		files, _ := filepath.Glob(filepath.Join(b.sessionsDir, "*", arg+"*.jsonl"))
		if len(files) == 1 {
			return files[0], nil
		}
		if len(files) > 1 {
			return "", fmt.Errorf("pi: session %q is ambiguous: %d sessions match", arg, len(files))
		}
	}
	return "", fmt.Errorf("pi: no session %q (neither a file nor a saved session's id)", arg)
}

// toolSelection applies pi's tool flags to the tools e has (cli.md):
// --tools replaces the selection, or with only +name/-name entries edits
// it; --exclude-tools removes; --no-tools offers none.
func toolSelection(all []string, f Flags) ([]string, error) {
	if f.NoTools {
		return []string{}, nil
	}
	sel := slices.Clone(all)
	if f.NoBuiltin {
		sel = slices.DeleteFunc(sel, session.Builtin)
	}
	if f.Tools != nil {
		edits := len(f.Tools) > 0
		for _, t := range f.Tools {
			if !strings.HasPrefix(t, "+") && !strings.HasPrefix(t, "-") {
				edits = false
			}
		}
		if !edits {
			sel = nil
		}
		for _, t := range f.Tools {
			name := strings.TrimLeft(t, "+-")
			if !slices.Contains(all, name) {
				return nil, fmt.Errorf("%w: --tools: unknown tool %q (e has %s)", ErrUsage, name, strings.Join(all, ", "))
			}
			switch {
			case strings.HasPrefix(t, "-"):
				sel = slices.DeleteFunc(sel, func(n string) bool { return n == name })
			case !slices.Contains(sel, name):
				sel = append(sel, name)
			}
		}
	}
	for _, x := range f.ExcludeTools {
		sel = slices.DeleteFunc(sel, func(n string) bool { ok, _ := filepath.Match(x, n); return ok })
	}
	if sel == nil {
		sel = []string{}
	}
	return sel, nil
}
