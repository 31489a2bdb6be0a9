package tool

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/e-agent/e/internal/regfile"
)

const (
	maxListEntries = 1000
	maxFindResults = 1000
	maxGrepMatches = 1000
	maxGrepBytes   = 64 << 10 // content returned by one grep
	maxGrepLine    = 500      // bytes of a matching line shown
)

var lsTool = &builtin{
	spec: Spec{
		Name:     "ls",
		Category: "read",
		Description: "List a directory, sorted by name. Directories end in /, symbolic links in @. " +
			"At most 1000 entries.",
	},
	params: []param{
		{name: "path", kind: kString, nonEmpty: true, desc: "Directory to list (default: the working directory)."},
	},
	target: "path",
	dflt:   ".",
	run:    runLs,
}

var findTool = &builtin{
	spec: Spec{
		Name:     "find",
		Category: "search",
		Description: "Find files and directories by name, recursively. pattern is a glob (* ? [a-z]) matched " +
			"against each name; a pattern containing / is matched against the path relative to path instead. " +
			".git directories are skipped and symbolic links are not followed. At most 1000 results.",
	},
	params: []param{
		{name: "pattern", kind: kString, required: true, nonEmpty: true, desc: `Glob, e.g. "*.go" or "cmd/*/main.go".`},
		{name: "path", kind: kString, nonEmpty: true, desc: "Directory to search (default: the working directory)."},
	},
	target: "path",
	dflt:   ".",
	run:    runFind,
}

var grepTool = &builtin{
	spec: Spec{
		Name:     "grep",
		Category: "search",
		Description: "Search file contents with a regular expression (Go RE2 syntax; (?i) for case-insensitive), " +
			"recursively. Prints file:line:text for each matching line. .git directories, binary files and " +
			"symbolic links are skipped. At most 1000 matches.",
	},
	params: []param{
		{name: "pattern", kind: kString, required: true, nonEmpty: true, desc: "Regular expression (RE2 syntax)."},
		{name: "path", kind: kString, nonEmpty: true, desc: "File or directory to search (default: the working directory)."},
		{name: "glob", kind: kString, nonEmpty: true, desc: `Only search files whose name matches this glob, e.g. "*.go".`},
	},
	target: "path",
	dflt:   ".",
	run:    runGrep,
}

func runLs(ctx context.Context, env *Env, a args) Result {
	path := a.str("path")
	if path == "" {
		path = "."
	}
	root, name, err := env.openRoot(path)
	if err != nil {
		return pathFailure("ls", path, err)
	}
	defer root.Close()
	f, fi, err := regfile.OpenAny(root, name) // a FIFO's open must not block (Y1)
	if err != nil {
		return pathFailure("ls", path, env.outside(err))
	}
	defer f.Close()
	if !fi.IsDir() {
		return Result{Content: path, Summary: "1 entry"}
	}
	entries, err := f.ReadDir(-1)
	if err != nil {
		return pathFailure("ls", path, err)
	}
	if len(entries) == 0 {
		return Result{Content: "(empty directory)", Summary: "0 entries"}
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	var b strings.Builder
	for i, e := range entries {
		if i == maxListEntries {
			fmt.Fprintf(&b, "[%d more entries not shown]\n", len(entries)-i)
			break
		}
		b.WriteString(e.Name())
		switch {
		case e.IsDir():
			b.WriteByte('/')
		case e.Type()&fs.ModeSymlink != 0:
			b.WriteByte('@')
		}
		b.WriteByte('\n')
	}
	return Result{Content: strings.TrimSuffix(b.String(), "\n"), Summary: plural(int64(len(entries)), "entry", "entries")}
}

// walk visits the tree at path (as the model gave it) beneath the session
// directory without following links or entering .git; visit gets the name to
// show, the slash-separated path relative to the walk's root, the entry, and a
// function reading the file. Every open goes through an os.Root of the walk's
// root, so a directory swapped for a link mid-walk cannot lead outside. It
// stops when visit returns false or ctx is done.
func walk(ctx context.Context, env *Env, path string, visit func(name, rel string, d fs.DirEntry, read func() ([]byte, error)) bool) error {
	root, name, err := env.openRoot(path)
	if err != nil {
		return err
	}
	defer root.Close()
	f, fi, err := regfile.OpenAny(root, name) // a FIFO's open must not block (Y1)
	if err != nil {
		return env.outside(err)
	}
	defer f.Close()
	if !fi.IsDir() {
		visit(path, ".", fs.FileInfoToDirEntry(fi), func() ([]byte, error) {
			if err := regfile.Check(path, fi); err != nil {
				return nil, err
			}
			return regfile.ReadAll(f, path, fi.Size(), maxEditBytes)
		})
		return nil
	}
	sub, err := root.OpenRoot(name)
	if err != nil {
		return env.outside(err)
	}
	defer sub.Close()
	fsys := sub.FS()
	stop := errors.New("stop")
	err = fs.WalkDir(fsys, ".", func(rel string, d fs.DirEntry, err error) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			// An unreadable directory below the root is skipped, not fatal.
			if rel == "." {
				return err
			}
			return nil
		}
		if d.IsDir() && d.Name() == ".git" && rel != "." {
			return fs.SkipDir
		}
		// The entry was a regular file when listed; regfile makes sure it
		// still is when opened, and reads no more than the limit (Y1).
		read := func() ([]byte, error) {
			f, fi, err := regfile.OpenIn(sub, filepath.FromSlash(rel), os.O_RDONLY, 0)
			if err != nil {
				return nil, err
			}
			defer f.Close()
			return regfile.ReadAll(f, rel, fi.Size(), maxEditBytes)
		}
		if !visit(filepath.Join(path, filepath.FromSlash(rel)), rel, d, read) {
			return stop
		}
		return nil
	})
	if err == stop {
		return nil
	}
	return err
}

func runFind(ctx context.Context, env *Env, a args) Result {
	pattern, path := a.str("pattern"), a.str("path")
	if path == "" {
		path = "."
	}
	if _, err := filepath.Match(pattern, ""); err != nil {
		return failure("invalid pattern", "find: invalid pattern %q: %v", pattern, err)
	}
	byPath := strings.Contains(pattern, "/")
	var b strings.Builder
	n := 0
	full := false
	err := walk(ctx, env, path, func(name, rel string, d fs.DirEntry, read func() ([]byte, error)) bool {
		subject := d.Name()
		if byPath {
			subject = rel
		}
		if ok, _ := filepath.Match(pattern, subject); !ok {
			return true
		}
		if n == maxFindResults {
			full = true
			return false
		}
		n++
		b.WriteString(name)
		if d.IsDir() {
			b.WriteByte('/')
		}
		b.WriteByte('\n')
		return true
	})
	switch {
	case ctx.Err() != nil:
		return stopped("find: stopped")
	case err != nil:
		return pathFailure("find", path, err)
	case n == 0:
		return Result{Content: "no matches", Summary: "0 matches"}
	case full:
		fmt.Fprintf(&b, "[stopped after %d results; narrow the pattern or the path]\n", n)
	}
	return Result{Content: strings.TrimSuffix(b.String(), "\n"), Summary: plural(int64(n), "match", "matches") + suffixIf(full, " (truncated)")}
}

func runGrep(ctx context.Context, env *Env, a args) Result {
	pattern, path, glob := a.str("pattern"), a.str("path"), a.str("glob")
	if path == "" {
		path = "."
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return failure("invalid pattern", "grep: invalid pattern: %v", err)
	}
	if _, err := filepath.Match(glob, ""); err != nil {
		return failure("invalid glob", "grep: invalid glob %q: %v", glob, err)
	}
	var b strings.Builder
	n := 0
	full := false
	var special error // the path named is a FIFO, device or socket
	err = walk(ctx, env, path, func(name, rel string, d fs.DirEntry, read func() ([]byte, error)) bool {
		if ok, _ := filepath.Match(glob, d.Name()); glob != "" && !ok {
			return true
		}
		var data []byte
		if rel == "." && !d.IsDir() {
			// The file named: a FIFO, device, socket or oversize file fails
			// the call, naming it (Y1).
			var err error
			if data, err = read(); err != nil {
				special = err
				return false
			}
		} else {
			if !d.Type().IsRegular() { // special files inside a tree are skipped (Y1)
				return true
			}
			info, err := d.Info()
			if err != nil || info.Size() > maxEditBytes {
				return true
			}
			if data, err = read(); err != nil {
				return true
			}
		}
		if bytes.IndexByte(data[:min(len(data), sniffBytes)], 0) >= 0 {
			return true
		}
		if len(data) == 0 {
			return true
		}
		for i, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
			line = strings.TrimSuffix(line, "\r")
			if !re.MatchString(line) {
				continue
			}
			if n == maxGrepMatches || b.Len() >= maxGrepBytes {
				full = true
				return false
			}
			n++
			if len(line) > maxGrepLine {
				line = line[:validPrefix([]byte(line[:maxGrepLine]))] + "…"
			}
			fmt.Fprintf(&b, "%s:%d:%s\n", name, i+1, line)
		}
		return true
	})
	switch {
	case ctx.Err() != nil:
		return stopped("grep: stopped")
	case err != nil:
		return pathFailure("grep", path, err)
	case special != nil:
		return pathFailure("grep", path, special)
	case n == 0:
		return Result{Content: "no matches", Summary: "0 matches"}
	case full:
		fmt.Fprintf(&b, "[stopped after %d matches; narrow the pattern, the path or the glob]\n", n)
	}
	return Result{Content: strings.TrimSuffix(b.String(), "\n"), Summary: plural(int64(n), "match", "matches") + suffixIf(full, " (truncated)")}
}

func suffixIf(cond bool, s string) string {
	if cond {
		return s
	}
	return ""
}
