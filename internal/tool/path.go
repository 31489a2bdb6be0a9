package tool

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/e-agent/e/internal/regfile"
)

// errOutside reports a path whose real location is outside the session directory.
var errOutside = errors.New("outside the session directory")

// maxLinks bounds the symbolic links followed while resolving one path, as the kernel does.
const maxLinks = 40

// realPath resolves every symbolic link in the existing part of the absolute
// path p, like realpath -m: components that do not exist are taken as
// written. ".." is applied after the link before it is resolved, as the
// kernel does, so "link/../x" means the parent of the link's target.
func realPath(p string) (string, error) {
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("%s: not an absolute path", p)
	}
	dest := string(filepath.Separator)
	rest := p
	links := 0
	for rest != "" {
		var comp string
		comp, rest, _ = strings.Cut(rest, string(filepath.Separator))
		switch comp {
		case "", ".":
			continue
		case "..":
			dest = filepath.Dir(dest)
			continue
		}
		next := filepath.Join(dest, comp)
		fi, err := os.Lstat(next)
		switch {
		case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
			dest = next
			continue
		case err != nil:
			return "", err
		case fi.Mode()&fs.ModeSymlink == 0:
			dest = next
			continue
		}
		if links++; links > maxLinks {
			return "", fmt.Errorf("%s: too many levels of symbolic links", p)
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", err
		}
		if filepath.IsAbs(target) {
			dest = string(filepath.Separator)
		}
		rest = target + string(filepath.Separator) + rest
	}
	return dest, nil
}

// within reports whether the cleaned path p is root or beneath it.
func within(p, root string) bool {
	return p == root || root == string(filepath.Separator) || strings.HasPrefix(p, root+string(filepath.Separator))
}

// openRoot opens the session directory as an [os.Root] and returns the name
// of p (relative to env.Cwd, or absolute) beneath it. Every file tool then
// resolves and opens that name through the Root in one step, so a symbolic
// link or a rename swapped in between a check and the open cannot lead
// outside (PITFALLS: the symlink race). Every path is mapped to a name
// through the real locations of both, so the real location decides
// (spec/engine.md §12): an absolute symbolic link inside the directory that
// points inside it is followed, which an os.Root alone refuses as an escape.
func (env *Env) openRoot(p string) (*os.Root, string, error) {
	rootReal, err := realPath(env.Cwd)
	if err != nil {
		return nil, "", err
	}
	if !filepath.IsAbs(p) {
		p = rootReal + string(filepath.Separator) + p // not Join: ".." after a link is the kernel's, not a lexical one
	}
	real, err := realPath(p)
	if err != nil {
		return nil, "", err
	}
	if !within(real, rootReal) {
		return nil, "", fmt.Errorf("%w %s", errOutside, rootReal)
	}
	name, _ := filepath.Rel(rootReal, real)
	root, err := os.OpenRoot(env.Cwd)
	if err != nil {
		return nil, "", err
	}
	return root, name, nil
}

// outside turns the error of an os.Root operation that a link or ".." led
// out of the session directory into errOutside, naming the directory.
func (env *Env) outside(err error) error {
	escapes := false
	for e := err; e != nil && !escapes; e = errors.Unwrap(e) {
		escapes = e.Error() == "path escapes from parent" // os's unexported errPathEscapes
	}
	if !escapes {
		return err
	}
	root, rerr := realPath(env.Cwd)
	if rerr != nil {
		root = env.Cwd
	}
	return fmt.Errorf("%w %s", errOutside, root)
}

// pathFailure is the Result of a failed file operation on the path named
// as given; it keeps the system's reason and drops its copy of the path.
func pathFailure(tool, path string, err error) Result {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	summary := "failed"
	switch {
	case errors.Is(err, errOutside):
		summary = "outside the session directory"
	case errors.Is(err, fs.ErrNotExist):
		summary = "not found"
	case errors.Is(err, fs.ErrPermission):
		summary = "permission denied"
	case errors.Is(err, regfile.ErrNotRegular):
		summary = "not a regular file"
	case errors.Is(err, regfile.ErrTooLarge):
		summary = "file too large"
	}
	return failure(summary, "%s: %s: %v", tool, path, err)
}
