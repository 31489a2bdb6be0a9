// Package sandbox confines the processes a session starts (W1–W5): a
// policy (off, read-only, workspace-write; network on or off), what this
// kernel can enforce of it, and the launcher that applies it. On Linux a
// sandboxed command starts as e itself (Main, in a new user and network
// namespace when the network is off), which restricts itself with
// Landlock and a seccomp filter and then execs the command, so the rules
// bind the command and everything it starts, and never e.
package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Mode is how much a sandboxed command may write.
type Mode string

const (
	Off            Mode = "off"             // no sandbox: today's behaviour
	WorkspaceWrite Mode = "workspace-write" // write only in the cwd, the writable roots and a private temp dir
	ReadOnly       Mode = "read-only"       // write only in a private temp dir
)

// Modes lists the modes from the widest to the narrowest.
var Modes = []Mode{Off, WorkspaceWrite, ReadOnly}

// ParseMode checks a mode's name.
func ParseMode(s string) (Mode, error) {
	if m := Mode(s); slices.Contains(Modes, m) {
		return m, nil
	}
	return "", fmt.Errorf("sandbox: unknown mode %q (known: off, workspace-write, read-only)", s)
}

// width orders modes: a larger one allows more.
func (m Mode) width() int { return len(Modes) - slices.Index(Modes, m) }

// Policy is what the commands of a session may do.
type Policy struct {
	Mode Mode `json:"mode"`
	// Roots are writable directories besides the cwd (workspace-write
	// only), absolute and cleaned.
	Roots []string `json:"writable_roots,omitempty"`
	// Network lets a sandboxed command reach the network; off, every
	// TCP, UDP and unix-socket connection out fails. Under mode off it is
	// what a session that sandboxes itself gets unless it says.
	Network bool `json:"network"`
	// Dir is the real location of the session's cwd when it was created
	// (Settle): what workspace-write lets commands write, rather than the
	// cwd's path resolved again at each command, which a command could
	// have pointed elsewhere by replacing a directory with a link.
	Dir string `json:"-"`
}

// Settle fixes the real location of the session's cwd as the one
// commands may write (Dir).
func (p Policy) Settle(cwd string) Policy {
	p.Dir = realOr(cwd)
	return p
}

// Reaches reports whether commands reach the network: unconfined ones
// reach what e reaches, sandboxed ones only with Network.
func (p Policy) Reaches() bool { return !p.Sandboxed() || p.Network }

// Sandboxed reports whether commands run confined.
func (p Policy) Sandboxed() bool { return p.Mode != "" && p.Mode != Off }

// Field names the part of a request a narrowing error is about.
type Field string

// NarrowError is a session's request for more than the process allows.
type NarrowError struct {
	Field Field
	Err   error
}

func (e *NarrowError) Error() string { return e.Err.Error() }
func (e *NarrowError) Unwrap() error { return e.Err }

// Narrow returns the policy a session asks for within the process's (W2):
// a mode no wider, the network only when the process allows it, and,
// when the process is sandboxed in workspace-write, roots that lie within
// the process's cwd or roots (procCwd). Nil fields keep the process's
// values; the session's roots replace the process's.
func Narrow(proc Policy, procCwd string, mode *Mode, roots []string, network *bool) (Policy, error) {
	p := proc
	if proc.Mode == "" {
		p.Mode = Off
	}
	if mode != nil {
		if mode.width() > p.Mode.width() {
			return Policy{}, &NarrowError{"sandbox", fmt.Errorf("sandbox: %q is wider than the process's %q: a session may narrow it, never widen it", *mode, p.Mode)}
		}
		p.Mode = *mode
	}
	if network != nil {
		if *network && proc.Sandboxed() && !proc.Network {
			return Policy{}, &NarrowError{"network", errors.New("sandbox: network true is wider than the process's policy, which keeps sandboxed commands off the network")}
		}
		p.Network = *network
	}
	if roots != nil {
		var clean []string
		for i, r := range roots {
			if !filepath.IsAbs(r) {
				return Policy{}, &NarrowError{Field(fmt.Sprintf("writable_roots[%d]", i)), fmt.Errorf("sandbox: writable root %q is not an absolute path", r)}
			}
			// Real locations decide: a root that is a link inside the cwd
			// to a directory outside it lies outside.
			r = realOr(r)
			allowed := []string{realOr(procCwd)}
			for _, pr := range proc.Roots {
				allowed = append(allowed, realOr(pr))
			}
			if proc.Sandboxed() && !within(r, allowed) {
				return Policy{}, &NarrowError{Field(fmt.Sprintf("writable_roots[%d]", i)), fmt.Errorf("sandbox: writable root %s lies outside the process's writable roots", r)}
			}
			clean = append(clean, r)
		}
		p.Roots = clean
	}
	if p.Mode != WorkspaceWrite {
		p.Roots = nil
	}
	return p, nil
}

// within reports whether path is one of dirs or lies beneath one.
func within(path string, dirs []string) bool {
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if path == d || strings.HasPrefix(path, strings.TrimSuffix(d, "/")+"/") {
			return true
		}
	}
	return false
}

// Writable returns the directories a command of a session in cwd may
// write, besides its private temp dir: the cwd and the roots in
// workspace-write, none otherwise.
func (p Policy) Writable(cwd string) []string {
	if p.Mode != WorkspaceWrite {
		return nil
	}
	if p.Dir != "" {
		cwd = p.Dir
	}
	return append([]string{cwd}, p.Roots...)
}

// CheckHome refuses a policy under which a command could write e's home
// (W1): Landlock grants beneath a directory and cannot take a subtree
// back, so a home inside a writable directory, or one holding it, cannot
// be kept unwritable. It names the offending field.
func (p Policy) CheckHome(cwd, home string) error {
	if !p.Sandboxed() || home == "" {
		return nil
	}
	home = realOr(home)
	for i, d := range p.Writable(cwd) {
		d = realOr(d)
		if within(home, []string{d}) || within(d, []string{home}) {
			field := Field("cwd")
			if i > 0 {
				field = Field(fmt.Sprintf("writable_roots[%d]", i-1))
			}
			return &NarrowError{field, fmt.Errorf("sandbox: e's home %s overlaps the writable directory %s, and a sandboxed command may never write the home: move E_HOME or choose another directory", home, d)}
		}
	}
	return nil
}

// realOr resolves symbolic links in path, or returns it cleaned when it
// does not exist.
func realOr(path string) string {
	if r, err := filepath.EvalSymlinks(path); err == nil {
		return r
	}
	return filepath.Clean(path)
}

// TempDir makes a session's private temp dir (TMPDIR of its commands).
func TempDir() (string, error) {
	dir, err := os.MkdirTemp("", "e-sandbox-")
	if err != nil {
		return "", fmt.Errorf("sandbox: private temp dir: %w", err)
	}
	return realOr(dir), nil
}

// ExitLaunch is the launcher's exit status when its command cannot start
// (a shell's 126: found but not runnable).
const ExitLaunch = 126

// launchArg, as e's first argument, makes e the launcher of one sandboxed
// command (Main). It is not a command of e's: nobody types it.
const launchArg = "__sandbox-exec"
