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
	if sp.resume != "" && isPiSession(sp.resume) {
		if err := b.fromPi(&sp); err != nil {
			return nil, err
		}
	}
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

// fromPi turns sp's resume of a pi session file into a new session that
// starts from its active branch, the file its parent: with its cwd (when it
// still exists), its name, and its last model and thinking level when e has
// that model and sp names none.
func (b *backend) fromPi(sp *spec) error {
	ps, err := readPiSession(sp.resume)
	if err != nil {
		return err
	}
	sp.entries, sp.parent, sp.resume = ps.entries, sp.resume, ""
	if st, err := os.Stat(ps.cwd); err == nil && st.IsDir() {
		sp.cwd = ps.cwd
	}
	if sp.name == "" {
		sp.name = ps.name
	}
	if sp.model == "" {
		if info, err := b.h.Model(ps.model); err == nil && ps.model != "" {
			sp.model, sp.effort = info.ID, Effort(info, Clamp(info, cmpOr(ps.level, levelOf(info.DefaultEffort))))
		}
	}
	return nil
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
	if path := abs(cwd, arg); isFile(path) {
		return path, nil
	}
	if b.sessionsDir != "" && !strings.ContainsAny(arg, `/\`) {
		// e's logs are named by id, pi's files <timestamp>_<id>.jsonl.
		files, _ := filepath.Glob(filepath.Join(b.sessionsDir, "*", arg+"*.jsonl"))
		pis, _ := filepath.Glob(filepath.Join(b.sessionsDir, "*", "*_"+arg+"*.jsonl"))
		files = append(files, pis...)
		if len(files) == 1 {
			return files[0], nil
		}
		if len(files) > 1 {
			return "", fmt.Errorf("pi: session %q is ambiguous: %d sessions match", arg, len(files))
		}
	}
	return "", fmt.Errorf("pi: no session %q (neither a file nor a saved session's id)", arg)
}

// abs resolves path against cwd.
func abs(cwd, path string) string {
	if filepath.IsAbs(path) {
		return filepath.Clean(path)
	}
	return filepath.Join(cwd, path)
}

func isFile(path string) bool {
	st, err := os.Stat(path)
	return err == nil && !st.IsDir()
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
