package e_test

import (
	"bufio"
	"encoding/json"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
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
	out, err := exec.Command("go", "list", "-json", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	seen := map[string]bool{}
	for dec.More() {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(p.ImportPath, module)
		if p.ImportPath == strings.TrimSuffix(module, "/") {
			continue // this test's own package
		}
		seen[name] = true
		ok, listed := allowed[name]
		if !listed {
			t.Errorf("package %s is not in ARCHITECTURE.md's import table: add its row", name)
			continue
		}
		for _, imp := range p.Imports {
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
