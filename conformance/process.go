package conformance

// This file starts and ends the process under test: its command, its
// environment and fixtures, its exit status, and the stderr it leaves.

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// command is the argv of the case's process: the server command with the
// case's server_args for an rpc case (another dialect's derived from it,
// "e rpc" → "e acp"); for a print case, the server command with its
// trailing "rpc" replaced by the case's args ("e rpc" → "e -p …").
func (r *run) command() ([]string, error) {
	srv := r.o.Server
	if !r.c.printMode() {
		return r.d.argv(srv, r.c)
	}
	if srv[len(srv)-1] != "rpc" {
		return nil, skipError(fmt.Sprintf("print case: the server command %q does not end in rpc, so there is no e -p to derive from it", strings.Join(srv, " ")))
	}
	return append(append([]string{}, srv[:len(srv)-1]...), r.c.Args...), nil
}

// trust records the case's cwd as trusted with the product's own command,
// `e trust DIR` (C9), derived from the server command like e -p, so that a
// server refusing every untrusted directory can run the cases. Cases about
// trust opt out with "untrusted". A failure is left for the case to show.
func (r *run) trust(cwd, home string) {
	if r.o.NoTrust || r.c.Untrusted {
		return
	}
	srv := r.o.trust
	if srv == nil {
		srv = r.o.Server
	}
	trustDir(srv, cwd, home, r.c.Env)
}

// trustDir runs the server command with its trailing rpc replaced by
// "trust CWD"; a server command not ending in rpc has no such command.
func trustDir(srv []string, cwd, home string, env map[string]string) {
	if len(srv) == 0 || srv[len(srv)-1] != "rpc" {
		return
	}
	argv := append(append([]string{}, srv[:len(srv)-1]...), "trust", cwd)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = cwd
	cmd.Env = serverEnv(home, env)
	ownGroup(cmd)
	cmd.WaitDelay = time.Second
	_ = cmd.Run()
}

func (r *run) checkExit(werr error) *Divergence {
	code := 0
	var ee *exec.ExitError
	if errors.As(werr, &ee) {
		code = ee.ExitCode()
	} else if werr != nil {
		return &Divergence{Step: "exit", Message: werr.Error()}
	}
	var sig syscall.Signal
	r.status, sig = exitStatus(werr)
	r.signaled = sig != 0
	return r.checkStatus(code, werr, r.stderr.String())
}

// checkStatus judges the exit status code (-1: killed by a signal, werr
// says which) and stderr against the case.
func (r *run) checkStatus(code int, werr error, stderr string) *Divergence {
	want := r.c.Exit
	if want == "" {
		want = "0"
	}
	switch {
	case want == "0" && code != 0 && r.c.printMode():
		return &Divergence{Step: "exit", Message: fmt.Sprintf("exit status %d, want 0: the turn completed (P4)", code)}
	case want == "0" && code != 0:
		return &Divergence{Step: "exit", Message: fmt.Sprintf("exit status %d, want 0 after EOF on stdin or shutdown (D1, M16)", code)}
	case want == "nonzero" && code == 0:
		return &Divergence{Step: "exit", Message: "exit status 0, want non-zero"}
	case want != "nonzero" && want != "any" && want != strconv.Itoa(code):
		if code == -1 {
			return &Divergence{Step: "exit", Message: fmt.Sprintf("killed by a signal (%v), want exit status %s", werr, want)}
		}
		return &Divergence{Step: "exit", Message: fmt.Sprintf("exit status %d, want %s", code, want)}
	}
	for _, s := range r.c.Stderr {
		if !strings.Contains(stderr, s) {
			return &Divergence{Step: "stderr", Message: fmt.Sprintf("stderr does not contain %q", s), Got: shorten(stderr)}
		}
	}
	if re := r.c.stderrRE; re != nil && !re.MatchString(stderr) {
		return &Divergence{Step: "stderr", Message: "stderr does not match the stderr.re section", Expected: re.String(), Got: shorten(stderr)}
	}
	return nil
}

func writeFixtures(c *Case, cwd, home, baseURL string) error {
	settings := any(tapeSettings(baseURL, c.Model))
	for _, d := range []string{cwd, home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("conformance: %w", err)
		}
	}
	for _, f := range c.files {
		dir, rel, _ := strings.Cut(f.name, "/")
		root := cwd
		if dir == "home" {
			root = home
		}
		if dir == "home" && rel == "settings.json" {
			v, err := decode(f.data)
			if err != nil {
				return fmt.Errorf("conformance: %s: home/settings.json: %w", c.File, err)
			}
			settings = mergeJSON(settings, v)
			continue
		}
		p := filepath.Join(root, filepath.FromSlash(rel))
		if strings.HasSuffix(rel, "/") {
			// An empty directory (Join dropped the slash: p is the directory).
			if err := os.MkdirAll(p, 0o755); err != nil {
				return fmt.Errorf("conformance: %w", err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("conformance: %w", err)
		}
		perm := os.FileMode(0o644)
		if dir == "home" && strings.HasPrefix(rel, "extensions/") {
			perm = 0o755 // extensions are the executables in $E_HOME/extensions
		}
		if err := os.WriteFile(p, f.data, perm); err != nil {
			return fmt.Errorf("conformance: %w", err)
		}
	}
	if err := writeJSON(filepath.Join(home, "settings.json"), settings); err != nil {
		return err
	}
	if c.Dialect == DialectPi {
		return writePiConfig(c, home, baseURL)
	}
	return nil
}

// piAgentDir is the pi configuration directory of a pi-rpc case
// ($PI_CODING_AGENT_DIR), inside E_HOME so that home/pi-agent/… fixtures
// land in it.
func piAgentDir(home string) string { return filepath.Join(home, "pi-agent") }

// writePiConfig writes pi's models.json, declaring the tape as a provider
// "tape" of api openai-completions, and a settings.json selecting the
// case's model (provider/id), each with the case's file of that name in
// home/pi-agent/ merged over it: a pi server finds the tape as pi users
// declare a provider (spec/conformance.md 1.5).
func writePiConfig(c *Case, home, baseURL string) error {
	provider, id, _ := strings.Cut(cmp.Or(c.Model, "tape/model"), "/")
	models := any(map[string]any{"providers": map[string]any{"tape": map[string]any{
		"baseUrl": baseURL, "api": "openai-completions", "apiKey": "$E_TAPE_API_KEY",
		"models": []any{map[string]any{"id": "model", "contextWindow": 200000, "input": []any{"text", "image"}, "reasoning": true}},
	}}})
	settings := any(map[string]any{"defaultProvider": provider, "defaultModel": id})
	for _, f := range c.files {
		var err error
		switch f.name {
		case "home/pi-agent/models.json":
			models, err = mergeFile(models, f)
		case "home/pi-agent/settings.json":
			settings, err = mergeFile(settings, f)
		}
		if err != nil {
			return fmt.Errorf("conformance: %s: %s: %w", c.File, f.name, err)
		}
	}
	dir := piAgentDir(home)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("conformance: %w", err)
	}
	if err := writeJSON(filepath.Join(dir, "models.json"), models); err != nil {
		return err
	}
	return writeJSON(filepath.Join(dir, "settings.json"), settings)
}

func mergeFile(base any, f archiveFile) (any, error) {
	v, err := decode(f.data)
	if err != nil {
		return nil, err
	}
	return mergeJSON(base, v), nil
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("conformance: %s: %w", filepath.Base(path), err)
	}
	return os.WriteFile(path, b, 0o644)
}

// serverEnv is the runner's environment without the user's e
// configuration, plus the case's.
func serverEnv(home string, extra map[string]string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "E_") || strings.HasPrefix(k, "PI_CODING_AGENT_") || k == "OPENAI_API_KEY" || k == "ANTHROPIC_API_KEY" {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "E_HOME="+home, "E_TAPE_API_KEY="+tapeKey)
	for _, k := range sortedKeys(extra) {
		env = append(env, k+"="+extra[k])
	}
	return env
}

// tailBuffer keeps the last 16 KiB written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > 16<<10 {
		t.buf = t.buf[len(t.buf)-16<<10:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// start starts the case's process in cwd with its stdin (a pipe for the
// client section, or the stdin section of a print case) and its stdout on
// a pipe that a reader of r drains; teardown undoes it.
func (r *run) start(argv []string, cwd, home string) (stdin io.WriteCloser, stdout *os.File, err error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = cwd
	// pi's configuration directory is the case's too (for every case: e
	// -p's pi mode, e --mode json, must not read the user's).
	env := map[string]string{"PI_CODING_AGENT_DIR": piAgentDir(home)}
	// Temp files of the server (pi's bash keeps a long output in one) go
	// to the case's directory, removed with it.
	if tmp := filepath.Join(filepath.Dir(home), "tmp"); os.MkdirAll(tmp, 0o700) == nil {
		env["TMPDIR"] = tmp
	}
	maps.Copy(env, r.c.Env)
	cmd.Env = serverEnv(home, env)
	ownGroup(cmd)
	r.cmd = cmd
	cmd.Stderr = &r.stderr
	cmd.WaitDelay = time.Second
	if r.c.printMode() {
		cmd.Stdin = bytes.NewReader(r.c.stdin) // a pipe: EOF after the section's bytes
	} else if stdin, err = cmd.StdinPipe(); err != nil {
		return nil, nil, fmt.Errorf("conformance: %w", err)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("conformance: %w", err)
	}
	cmd.Stdout = pw
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		return nil, nil, fmt.Errorf("conformance: starting %q: %w", strings.Join(argv, " "), err)
	}
	pw.Close()
	r.readers.Add(1)
	go func() {
		defer r.readers.Done()
		if r.c.printMode() && !r.c.jsonOutput() {
			r.readText(pr)
		} else {
			r.read(pr)
		}
	}()
	return stdin, pr, nil
}

// teardown ends the process group whatever happened, waits for the reader
// to end and reaps the process.
func (r *run) teardown(stdout *os.File) {
	killGroup(r.cmd)
	closed := make(chan struct{})
	go func() { r.readers.Wait(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(2 * time.Second):
		stdout.Close() // a detached grandchild still holds stdout
		<-closed
	}
	stdout.Close()
	r.cmd.Wait()
}
