package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/e-agent/e/internal/sandbox"
)

func TestMain(m *testing.M) {
	if err := sandbox.Main(); err != nil {
		fmt.Fprintln(os.Stderr, "e:", err)
		os.Exit(sandbox.ExitLaunch)
	}
	if os.Getenv(subreaperHelperEnv) != "" {
		os.Exit(subreaperHelper())
	}
	before := runtime.NumGoroutine()
	code := m.Run()
	if code == 0 {
		code = checkGoroutines(before)
	}
	os.Exit(code)
}

// checkGoroutines fails the run when goroutines started by the tests are
// still alive; exiting ones get a bounded moment to finish.
func checkGoroutines(before int) int {
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			fmt.Fprintf(os.Stderr, "goroutine leak: %d before, %d after\n%s\n",
				before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
			return 1
		}
		runtime.Gosched()
		time.Sleep(time.Millisecond)
	}
	return 0
}

// session is a session directory inside a temporary tree that also holds a
// directory outside it.
type session struct {
	root    string // the temporary tree
	cwd     string // root/work, the session directory
	outside string // root/outside, with secret.txt
	env     *Env
}

func newSession(t *testing.T) *session {
	t.Helper()
	root := t.TempDir()
	s := &session{root: root, cwd: filepath.Join(root, "work"), outside: filepath.Join(root, "outside")}
	for _, d := range []string{s.cwd, s.outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	s.writeFile(t, filepath.Join(s.outside, "secret.txt"), "secret\n")
	procs := NewProcs()
	t.Cleanup(procs.KillAll)
	s.env = &Env{Cwd: s.cwd, Procs: procs}
	return s
}

func (s *session) writeFile(t *testing.T, path, content string) {
	t.Helper()
	if !filepath.IsAbs(path) {
		path = filepath.Join(s.cwd, path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (s *session) symlink(t *testing.T, target, name string) {
	t.Helper()
	if err := os.Symlink(target, filepath.Join(s.cwd, name)); err != nil {
		t.Fatal(err)
	}
}

func (s *session) readFile(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(s.cwd, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// run runs a tool with arguments given as a JSON text.
func (s *session) run(name, args string) Result {
	return Run(context.Background(), s.env, name, json.RawMessage(args))
}

// jsonArgs builds an arguments object.
func jsonArgs(t *testing.T, v map[string]any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// checkResult compares the parts of a Result a case cares about; Elapsed is ignored.
func checkResult(t *testing.T, got Result, content, summary string, failed bool) {
	t.Helper()
	if got.Failed != failed || got.Stopped {
		t.Errorf("Failed, Stopped = %v, %v; want %v, false (content %q)", got.Failed, got.Stopped, failed, got.Content)
	}
	if content != "" && got.Content != content && !(strings.HasPrefix(content, "~") && strings.Contains(got.Content, content[1:])) {
		t.Errorf("Content = %q; want %q", got.Content, content)
	}
	if summary != "" && got.Summary != summary {
		t.Errorf("Summary = %q; want %q", got.Summary, summary)
	}
}
