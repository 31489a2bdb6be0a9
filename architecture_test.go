package e_test

import (
	"bufio"
	"errors"
	"go/build"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/e-agent/e/"

// TestArchitecture checks the import arrows ARCHITECTURE.md states: every
// package of the module is in its table and imports only what its row
// allows; the "never" rules hold, for packages and for single files.
func TestArchitecture(t *testing.T) {
	allowed := block(t, "imports")
	never := block(t, "never")
	seen := map[string]bool{}
	for name, imports := range packages(t) {
		seen[name] = true
		ok, listed := allowed[name]
		if !listed {
			t.Errorf("package %s is not in ARCHITECTURE.md's import table: add its row", name)
			continue
		}
		for _, imp := range imports {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			imp = strings.TrimPrefix(imp, module)
			if !slices.Contains(ok, imp) {
				t.Errorf("%s imports %s, which ARCHITECTURE.md does not allow it", name, imp)
			}
			if slices.Contains(never[name], imp) {
				t.Errorf("%s imports %s, which ARCHITECTURE.md says it never does", name, imp)
			}
		}
	}
	for name := range allowed {
		if !seen[name] {
			t.Errorf("ARCHITECTURE.md lists package %s, which does not exist", name)
		}
	}
	for name, forbidden := range never {
		if !strings.HasSuffix(name, ".go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), filepath.FromSlash(name), nil, parser.ImportsOnly)
		if err != nil {
			t.Errorf("ARCHITECTURE.md names %s: %v", name, err)
			continue
		}
		for _, is := range f.Imports {
			imp, _ := strconv.Unquote(is.Path.Value)
			if slices.Contains(forbidden, strings.TrimPrefix(imp, module)) {
				t.Errorf("%s imports %s, which ARCHITECTURE.md says it never does", name, imp)
			}
		}
	}
}

// packages returns the module's packages (by path below the module) and
// their non-test imports, read with go/build from the source tree itself,
// so that the test cache sees every directory and file it depends on.
func packages(t *testing.T) map[string][]string {
	t.Helper()
	pkgs := map[string][]string{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		name := d.Name()
		if path != "." && (name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
			return filepath.SkipDir
		}
		p, err := build.ImportDir(path, 0)
		var none *build.NoGoError
		switch {
		case errors.As(err, &none):
			return nil
		case err != nil:
			return err
		}
		if path != "." { // the root holds only this test
			pkgs[filepath.ToSlash(path)] = p.Imports
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}

// block reads the fenced block ```name of ARCHITECTURE.md: lines
// "pkg: a b c", "-" for none.
func block(t *testing.T, name string) map[string][]string {
	t.Helper()
	f, err := os.Open("ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows := map[string][]string{}
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "```"+name:
			in = true
		case in && line == "```":
			return rows
		case in && line != "":
			pkg, deps, ok := strings.Cut(line, ":")
			if !ok {
				t.Fatalf("ARCHITECTURE.md %s block: %q is not \"package: imports\"", name, line)
			}
			rows[pkg] = slices.DeleteFunc(strings.Fields(deps), func(s string) bool { return s == "-" })
		}
	}
	t.Fatalf("ARCHITECTURE.md has no ```%s block", name)
	return nil
}
