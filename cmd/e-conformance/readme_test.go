package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The commands of README.md's "Conformance suite" section work exactly as
// written, in a copy of the repository's files (as on a fresh clone): a
// relative --server, case globs, the JUnit report, coverage. The last
// line, go test ./conformance/..., is what this test suite runs anyway.
func TestREADMECommands(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the whole suite")
	}
	cmds := readmeCommands(t, "../../README.md", "## Conformance suite")
	if len(cmds) < 3 {
		t.Fatalf("README's conformance section has %d commands: %q", len(cmds), cmds)
	}
	root := copyRepo(t)
	for _, c := range cmds {
		if strings.HasPrefix(c, "go test ") {
			continue
		}
		cmd := exec.Command("sh", "-c", c)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("README command %q: %v\n%s", c, err, tailOf(out))
		}
	}
	if _, err := os.Stat(filepath.Join(root, "report.xml")); err != nil {
		t.Errorf("the --junit command wrote no report.xml: %v", err)
	}
}

// readmeCommands returns the indented command lines of the section that
// starts with heading, comments cut.
func readmeCommands(t *testing.T, path, heading string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cmds []string
	in := false
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "## "):
			in = line == heading
		case in && strings.HasPrefix(line, "    "):
			c, _, _ := strings.Cut(strings.TrimSpace(line), " # ")
			cmds = append(cmds, strings.TrimSpace(c))
		}
	}
	return cmds
}

// copyRepo copies the files git would put in a clone (tracked, plus new
// files not ignored) to a temp dir.
func copyRepo(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("git", "-C", "../..", "ls-files", "-co", "--exclude-standard", "-z").Output()
	if err != nil {
		t.Skipf("git ls-files: %v (not a git checkout)", err)
	}
	root := t.TempDir()
	for _, f := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		data, err := os.ReadFile(filepath.Join("../..", f))
		if err != nil {
			continue // deleted in the work tree
		}
		fi, _ := os.Stat(filepath.Join("../..", f))
		dst := filepath.Join(root, f)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, data, fi.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func tailOf(b []byte) string {
	if len(b) > 3000 {
		b = b[len(b)-3000:]
	}
	return string(b)
}
