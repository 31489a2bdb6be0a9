// Package clients_test runs the reference clients' own test suites
// (clients/python, clients/typescript) against a freshly built e, so that
// go test ./... covers them: python3 -m unittest, and tsc --strict then
// node --test; then client-side conformance (e-conformance client) on each.
// Each skips, saying why, when its interpreter is missing; .ci/run
// installs tsc from npm.
package clients_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

func build(t *testing.T, pkg string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), filepath.Base(pkg))
	if out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	return bin
}

// conform runs client-side conformance on a client command, in dir.
func conform(t *testing.T, dir, command string) {
	t.Helper()
	run(t, dir, nil, build(t, "../cmd/e-conformance"), "client", "--timeout-scale", "2", "--command", command)
}

func need(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed (bash .ci/run installs what CI needs)", tool)
		}
	}
}

func run(t *testing.T, dir string, env []string, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
	t.Logf("%s %v:\n%s", name, args, out)
}

func TestPython(t *testing.T) {
	t.Parallel()
	need(t, "python3")
	run(t, "python", []string{"E_BIN=" + build(t, "../cmd/e"), "PYTHONDONTWRITEBYTECODE=1"}, "python3", "-m", "unittest", "-v")
	conform(t, "python", "env PYTHONDONTWRITEBYTECODE=1 python3 -m e_client.task")
}

func TestTypeScript(t *testing.T) {
	t.Parallel()
	need(t, "node", "tsc")
	out := t.TempDir()
	args := []string{"-p", ".", "--outDir", out}
	// tsc from .ci/run's npm cache finds Node's types beside itself.
	if tsc, err := exec.LookPath("tsc"); err == nil {
		if types := filepath.Join(filepath.Dir(tsc), "..", "@types"); isDir(types) {
			args = append(args, "--typeRoots", types)
		}
	}
	run(t, "typescript", nil, "tsc", args...)
	pkg, _ := filepath.Abs("typescript")
	run(t, "typescript", []string{"E_BIN=" + build(t, "../cmd/e"), "E_TS_PKG=" + pkg}, "node", "--test", filepath.Join(out, "test"))
	conform(t, "typescript", "node "+filepath.Join(out, "src", "task.js"))
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}
