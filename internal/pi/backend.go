package pi

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/e-agent/e/internal/agent"
	"github.com/e-agent/e/internal/session"
	"github.com/e-agent/e/internal/store"
	"github.com/e-agent/e/internal/tool"
)

// This file is the one place that knows how sessions are made: it builds
// them from the Host's engine the way session.Host.Create does, with pi's
// folder for their logs, pi's tool selection and a fork point's history. It moves onto Host.Create once the session
// layer takes a sessions folder and a starting history.

// spec describes one session to make.
type spec struct {
	cwd     string
	model   string // catalog id
	effort  string
	resume  string        // a log to continue ("": a new session)
	entries []store.Entry // a new session's starting history (fork, clone)
	parent  string        // the parent log of a fork
	name    string
}

// backend makes sessions for the front end.
type backend struct {
	h           *session.Host
	sessionsDir string // "" keeps sessions in memory (--no-session)
	tools       []string
}

// made is a session and the log header it was made with.
type made struct {
	sess   *agent.Session
	header store.Header
}

func (b *backend) make(sp spec) (*made, error) {
	var log *store.Log
	var entries []store.Entry
	var header *store.Header
	var warnings []string
	if sp.resume != "" {
		var err error
		log, header, entries, err = store.OpenWritable(sp.resume)
		if err != nil {
			return nil, err
		}
		warnings = log.Warnings()
		entries = store.Branch(entries)
		sp.cwd = header.Cwd
		if sp.model == "" {
			sp.model, sp.effort = header.Model, header.Effort
			for _, en := range entries {
				if en.Type == store.TypeSettings {
					sp.model, sp.effort = en.Model, en.Effort
				}
			}
		}
	}
	fail := func(err error) (*made, error) {
		if log != nil {
			log.Close()
		}
		return nil, err
	}
	if st, err := os.Stat(sp.cwd); err != nil || !st.IsDir() {
		return fail(fmt.Errorf("pi: working directory %s is not a directory", sp.cwd))
	}
	cat := b.h.Engine().Catalog
	info, err := cat.Lookup(sp.model)
	if err != nil {
		return fail(err)
	}
	if _, err := cat.Provider(info.ID); err != nil {
		return fail(err)
	}
	effort, err := cat.CheckEffort(info.ID, sp.effort)
	if err != nil {
		return fail(err)
	}
	instructions, needTrust, err := store.Instructions(b.h.Home(), sp.cwd)
	if err != nil {
		return fail(err)
	}
	if needTrust {
		return fail(fmt.Errorf("pi: directory %s has an AGENTS.md but is not trusted: run `e trust %s` first", sp.cwd, sp.cwd))
	}
	h := store.Header{Type: "session", Version: store.Version, ID: store.NewID(), Cwd: sp.cwd, Created: time.Now().UTC(),
		Model: info.ID, Effort: effort, Name: sp.name, Parent: sp.parent}
	switch {
	case header != nil:
		h = *header
	case b.sessionsDir != "" && len(sp.entries) > 0:
		log, err = store.ForkIn(b.dir(sp.cwd), h, sp.entries)
	case b.sessionsDir != "":
		log, err = store.CreateIn(b.dir(sp.cwd), h)
	}
	if err != nil {
		return fail(err)
	}
	if entries == nil {
		entries = sp.entries
		if log != nil {
			// The fork's log gave its entries new parents: start from what it holds.
			if rr, err := store.Read(log.Path()); err == nil {
				entries = store.Branch(rr.Entries)
			}
		}
	}
	sess := b.h.Engine().NewSession(agent.Options{ID: h.ID, Cwd: sp.cwd, Model: info.ID, Effort: effort,
		Tools: b.tools, Log: log, Entries: entries, System: instructions, Name: h.Name, Warnings: warnings})
	if header != nil && (info.ID != header.Model || effort != header.Effort) {
		if _, _, err := sess.Set(&info.ID, &effort); err != nil {
			sess.Close()
			return nil, err
		}
	}
	return &made{sess: sess, header: h}, nil
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
		sel = slices.DeleteFunc(sel, func(n string) bool { _, ok := tool.Lookup(n); return ok })
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
