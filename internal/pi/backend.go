package pi

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/e-agent/e/internal/regfile"
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
	file    string          // a new saved session's file ("": one in the sessions folder)
	leaf    string          // the entry of resume to go on from ("": its last)
	entries []session.Entry // a new session's starting history (fork, clone)
	parent  string          // the parent log of a fork
	name    string
}

// backend makes sessions for the front end.
type backend struct {
	h           *session.Host
	ui          session.UI // the connection's client, every session's
	sessionsDir string     // "" keeps sessions in memory (--no-session)
	flat        bool       // sessionsDir holds the sessions, not a folder per cwd
	tools       []string
}

func (b *backend) make(sp spec) (*session.Session, error) {
	cwd := sp.cwd
	if _, logCwd := readHeader(sp.resume); sp.resume != "" && isDir(logCwd) {
		cwd = "" // the log's, when it still exists (a file pi wrote elsewhere may name one that does not)
	}
	ss := session.Spec{Cwd: cwd, Tools: b.tools, NoTools: len(b.tools) == 0, Save: b.sessionsDir != "",
		Resume: sp.resume, History: sp.entries, Parent: sp.parent, File: sp.file, Leaf: sp.leaf, UI: b.ui}
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

// dir is the folder of cwd's sessions: a flat sessionsDir itself, else
// one in it named as pi names it (session-format.md): the path without
// its leading separator, with separators and colons as dashes, between
// double dashes.
func (b *backend) dir(cwd string) string {
	if b.flat {
		return b.sessionsDir
	}
	slug := strings.NewReplacer("/", "-", "\\", "-", ":", "-").Replace(strings.TrimPrefix(cwd, string(filepath.Separator)))
	return filepath.Join(b.sessionsDir, "--"+slug+"--")
}

// saved is a saved session's file and what its header says.
type saved struct {
	path, id, cwd string
	mod           time.Time
}

// sessions returns the saved sessions of cwd (all of them when cwd is ""),
// newest first. In a flat folder, as pi's, a session is cwd's when its
// header names cwd.
func (b *backend) sessions(cwd string) []saved {
	if b.sessionsDir == "" {
		return nil
	}
	pattern := filepath.Join(b.sessionsDir, "*", "*.jsonl")
	switch {
	case b.flat:
		pattern = filepath.Join(b.sessionsDir, "*.jsonl")
	case cwd != "":
		pattern = filepath.Join(b.dir(cwd), "*.jsonl")
	}
	files, _ := filepath.Glob(pattern)
	var out []saved
	for _, f := range files {
		st, err := os.Stat(f)
		if err != nil {
			continue
		}
		s := saved{path: f, mod: st.ModTime()}
		s.id, s.cwd = readHeader(f)
		if s.id == "" || (b.flat && cwd != "" && s.cwd != cwd) {
			continue
		}
		out = append(out, s)
	}
	slices.SortStableFunc(out, func(x, y saved) int { return y.mod.Compare(x.mod) })
	return out
}

// readHeader returns the id and cwd of a session file's header (e's log or
// pi's file), "" when it has none.
func readHeader(path string) (id, cwd string) {
	f, _, err := regfile.Open(path) // a FIFO named *.jsonl must not hang the listing (Y1)
	if err != nil {
		return "", ""
	}
	defer f.Close()
	line, _ := bufio.NewReaderSize(f, 4096).ReadBytes('\n')
	var h struct{ Type, ID, Cwd string }
	if json.Unmarshal(line, &h) != nil || h.Type != "session" {
		return "", ""
	}
	return h.ID, h.Cwd
}

// latest returns the newest saved session of cwd, or "".
func (b *backend) latest(cwd string) string {
	if ss := b.sessions(cwd); len(ss) > 0 {
		return ss[0].path
	}
	return ""
}

// find resolves --session as pi's resolveSessionPath does: an argument
// that looks like a path (a separator, or a .jsonl name) is one, whether
// or not it exists; else a session id, or the start of one, first among
// cwd's sessions, then among all (the newest of several that match).
func (b *backend) find(arg, cwd string) (string, error) {
	if strings.ContainsAny(arg, `/\`) || strings.HasSuffix(arg, ".jsonl") {
		return abs(cwd, arg), nil
	}
	for _, ss := range [][]saved{b.sessions(cwd), b.sessions("")} {
		if i := slices.IndexFunc(ss, func(s saved) bool { return s.id == arg }); i >= 0 {
			return ss[i].path, nil
		}
		if i := slices.IndexFunc(ss, func(s saved) bool { return strings.HasPrefix(s.id, arg) }); i >= 0 {
			return ss[i].path, nil
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

func isDir(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}

func isFile(path string) bool {
	st, err := os.Stat(path)
	return err == nil && !st.IsDir()
}

// piDefaultTools are the built-in tools pi 1.6.0 turns on by default
// (DEFAULT_TOOL_NAMES); e's others (find, grep, ls, …) are there for
// --tools to name, as pi's are.
var piDefaultTools = []string{"read", "bash", "edit", "write"}

// toolSelection applies pi's tool flags to the tools e has (cli.md): by
// default pi's default built-ins (those of settings' defaultTools,
// defaults, when not nil) and every tool that is not built in (an
// extension's); --tools replaces that with the tools its names or
// patterns match, or with only +name/-name entries edits it;
// --exclude-tools removes; --no-tools offers none. As pi 1.6.0's, a name
// no tool has is left out (e says so in a warning).
func toolSelection(all, defaults []string, f Flags) (tools, warnings []string) {
	if f.NoTools {
		return []string{}, nil
	}
	if defaults == nil {
		defaults = piDefaultTools
	}
	var sel []string
	if !f.NoBuiltin {
		sel = slices.DeleteFunc(slices.Clone(defaults), func(n string) bool { return !slices.Contains(all, n) })
	}
	for _, n := range all {
		if !session.Builtin(n) {
			sel = append(sel, n)
		}
	}
	if f.Tools != nil {
		edits := isToolEdit(f.Tools)
		if !edits {
			sel = nil
		}
		for _, t := range f.Tools {
			name := strings.TrimLeft(t, "+-")
			matches := slices.DeleteFunc(slices.Clone(all), func(n string) bool { ok, _ := filepath.Match(name, n); return !ok })
			if edits {
				matches = slices.DeleteFunc(matches, func(n string) bool { return n != name })
			}
			if len(matches) == 0 {
				warnings = append(warnings, fmt.Sprintf("--tools: no tool %q (e has %s); left out", name, strings.Join(all, ", ")))
				continue
			}
			for _, n := range matches {
				switch {
				case strings.HasPrefix(t, "-"):
					sel = slices.DeleteFunc(sel, func(s string) bool { return s == n })
				case !slices.Contains(sel, n):
					sel = append(sel, n)
				}
			}
		}
	}
	for _, x := range f.ExcludeTools {
		sel = slices.DeleteFunc(sel, func(n string) bool { ok, _ := filepath.Match(x, n); return ok })
	}
	if sel == nil {
		sel = []string{}
	}
	return sel, warnings
}

// isToolEdit reports whether a --tools list has only +name/-name entries
// (ParseFlags refuses a list that mixes them with names).
func isToolEdit(list []string) bool {
	return len(list) > 0 && !slices.ContainsFunc(list, func(t string) bool { return !isToolModifier(t) })
}

func isToolModifier(t string) bool { return strings.HasPrefix(t, "+") || strings.HasPrefix(t, "-") }
