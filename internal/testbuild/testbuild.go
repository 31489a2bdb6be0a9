// Package testbuild builds the module's commands for tests that run them
// as processes, such as the conformance tests, which start e as a server
// over pipes and do not import it.
package testbuild

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Command builds the main package pkg (an import path such as
// github.com/e-agent/e/cmd/e) into t's temp dir, with -race when race is
// set, and returns the binary's path. It reads the module's sources
// first, so that go test's cache, which records the files a test opens,
// reruns the test when the command changes.
func Command(t testing.TB, pkg string, race bool) string {
	t.Helper()
	trackSources(t)
	bin := filepath.Join(t.TempDir(), filepath.Base(pkg))
	args := []string{"build", "-o", bin}
	if race {
		args = append(args, "-race")
	}
	if out, err := exec.Command("go", append(args, pkg)...).CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", pkg, err, out)
	}
	if race {
		out, err := exec.Command("go", "version", "-m", bin).Output()
		if err != nil || !strings.Contains(string(out), "-race=true") {
			t.Fatalf("%s built for a -race test binary is not a -race build: %v\n%s", pkg, err, out)
		}
	}
	return bin
}

// trackSources reads the module's Go sources, JSON files (the schemas),
// go.mod and go.sum.
func trackSources(t testing.TB) {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(out)))
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") || strings.HasSuffix(path, ".json") || strings.HasSuffix(path, "go.mod") || strings.HasSuffix(path, "go.sum") {
			_, err = os.ReadFile(path)
		}
		return err
	})
	if err != nil {
		t.Fatalf("reading the sources: %v", err)
	}
}
