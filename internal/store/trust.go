package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/e-agent/e/internal/regfile"
)

// trustFile is $E_HOME/trust.json (0600): the directories trusted with
// `e trust <dir>`, as real paths (C9).
type trustFile struct {
	Version int      `json:"version"`
	Trusted []string `json:"trusted"`
}

// Trust records dir (resolved to its real path; it must exist) as trusted.
func Trust(home, dir string) error {
	real, err := realDir(dir)
	if err != nil {
		return fmt.Errorf("store: trust: %w", err)
	}
	return updateTrust(home, func(list []string) []string {
		if !slices.Contains(list, real) {
			list = append(list, real)
		}
		return list
	})
}

// Revoke removes dir from the trust list; a directory that no longer
// exists is matched by its absolute path. Revoking an untrusted directory
// does nothing.
func Revoke(home, dir string) error {
	real, err := realDir(dir)
	if err != nil {
		if real, err = filepath.Abs(dir); err != nil {
			return fmt.Errorf("store: revoke: %w", err)
		}
	}
	return updateTrust(home, func(list []string) []string {
		return slices.DeleteFunc(list, func(s string) bool { return s == real })
	})
}

// Trusted returns the trusted directories, sorted.
func Trusted(home string) ([]string, error) {
	b, err := regfile.ReadFile(filepath.Join(home, "trust.json"), MaxConfigBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store: trust list: %w", err)
	}
	var t trustFile
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("store: trust list %s: %w", filepath.Join(home, "trust.json"), err)
	}
	slices.Sort(t.Trusted)
	return t.Trusted, nil
}

// IsTrusted reports whether dir's real path is a trusted directory or lies
// below one. Stored entries are compared as written, never re-resolved, so
// a trusted directory later replaced by a symlink does not extend trust.
func IsTrusted(home, dir string) bool {
	real, err := realDir(dir)
	if err != nil {
		return false
	}
	list, err := Trusted(home)
	return err == nil && trustRoot(list, real) != ""
}

// trustRoot returns the outermost entry of list that is real or one of its
// parents, "" when none.
func trustRoot(list []string, real string) string {
	root := ""
	for _, t := range list {
		if within(real, t) && (root == "" || len(t) < len(root)) {
			root = t
		}
	}
	return root
}

func within(path, dir string) bool {
	if path == dir {
		return true
	}
	if !strings.HasSuffix(dir, string(filepath.Separator)) {
		dir += string(filepath.Separator)
	}
	return strings.HasPrefix(path, dir)
}

// MaxInstructionsBytes is the largest AGENTS.md e reads (Y1); a bigger one,
// or a FIFO, device or socket, fails the session's creation naming it.
const MaxInstructionsBytes = 1 << 20

// Instructions returns the AGENTS.md text for a session in dir (C9):
// $home/AGENTS.md (the user's own) first, then, when dir is trusted, the
// AGENTS.md of each directory from the outermost trusted ancestor down to
// dir, each file preceded by a line "<!-- /path/AGENTS.md -->". AGENTS.md
// files above the trusted root are not used. needTrust is true when dir is
// untrusted and an AGENTS.md exists in dir or any of its parents.
func Instructions(home, dir string) (text string, needTrust bool, err error) {
	real, err := realDir(dir)
	if err != nil {
		return "", false, fmt.Errorf("store: instructions: %w", err)
	}
	list, err := Trusted(home)
	if err != nil {
		return "", false, err
	}
	root := trustRoot(list, real)
	var files []string
	if root == "" {
		for d := real; ; d = filepath.Dir(d) {
			if exists(filepath.Join(d, "AGENTS.md")) {
				needTrust = true
				break
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	} else {
		for d := real; ; d = filepath.Dir(d) {
			files = append(files, filepath.Join(d, "AGENTS.md"))
			if d == root {
				break
			}
		}
	}
	files = append(files, filepath.Join(home, "AGENTS.md"))
	var parts []string
	for _, f := range slices.Backward(files) {
		b, err := regfile.ReadFile(f, MaxInstructionsBytes)
		if fi, serr := os.Stat(f); errors.Is(err, fs.ErrNotExist) || err != nil && serr == nil && fi.IsDir() {
			continue // a directory named AGENTS.md is no instructions file, as for trust
		}
		if err != nil {
			return "", needTrust, fmt.Errorf("store: instructions: %w", err)
		}
		parts = append(parts, "<!-- "+f+" -->\n"+strings.TrimRight(string(b), "\n"))
	}
	return strings.Join(parts, "\n\n"), needTrust, nil
}

// exists reports whether there is anything at path, a dangling link or a
// special file included: an untrusted directory's AGENTS.md asks for trust
// whatever it is but a directory (C9), and is never opened to find out.
func exists(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && !fi.IsDir()
}

// realDir resolves dir to an absolute path free of symlinks; it must be an
// existing directory.
func realDir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", err
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("%s: not a directory", dir)
	}
	return real, nil
}

// updateTrust rewrites trust.json under a lock, atomically.
func updateTrust(home string, change func([]string) []string) error {
	path := filepath.Join(home, "trust.json")
	lf, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("store: trust list: %w", err)
	}
	defer lf.Close()
	if _, err := lockFile(lf, true); err != nil {
		return fmt.Errorf("store: trust list: lock: %w", err)
	}
	list, err := Trusted(home)
	if err != nil {
		return err
	}
	list = change(list)
	if list == nil {
		list = []string{} // never null in the file
	}
	slices.Sort(list)
	b, err := json.MarshalIndent(trustFile{Version: 1, Trusted: slices.Compact(list)}, "", "  ")
	if err != nil {
		return fmt.Errorf("store: trust list: %w", err)
	}
	f, err := os.CreateTemp(home, "trust.json.*")
	if err != nil {
		return fmt.Errorf("store: trust list: %w", err)
	}
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if err = errors.Join(err, f.Close()); err == nil {
		err = os.Rename(f.Name(), path) // CreateTemp made it 0600
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("store: trust list %s: %w", path, err)
	}
	return nil
}
