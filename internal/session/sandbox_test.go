package session

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/e-agent/e/internal/agent"
	"github.com/e-agent/e/internal/sandbox"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestCreateSandbox: a session narrows the process's sandbox, never widens
// it, keeps e's home unwritable and is refused what the kernel cannot
// enforce (W1, W2, W4); Info reports the policy in force (W5).
func TestCreateSandbox(t *testing.T) {
	if err := sandbox.Probe().Enforceable(sandbox.Policy{Mode: sandbox.ReadOnly}); err != nil {
		t.Skip(err)
	}
	str := func(s string) *string { return &s }
	yes := true
	tests := []struct {
		name  string
		proc  Options
		spec  func(h *Host) Spec
		limit string // sandbox.LimitEnv
		want  sandbox.Policy
		code  Code // "" when created
		param string
	}{
		{name: "process off", proc: Options{}, spec: func(*Host) Spec { return Spec{} }, want: sandbox.Policy{Mode: sandbox.Off}},
		{name: "narrowed to read-only", proc: Options{}, spec: func(*Host) Spec { return Spec{Sandbox: str("read-only")} },
			want: sandbox.Policy{Mode: sandbox.ReadOnly}},
		{name: "process workspace", proc: Options{Sandbox: "workspace-write"}, spec: func(*Host) Spec { return Spec{} },
			want: sandbox.Policy{Mode: sandbox.WorkspaceWrite}},
		{name: "root inside the cwd", proc: Options{Sandbox: "workspace-write"},
			spec: func(h *Host) Spec { return Spec{WritableRoots: []string{mkdir(t, h.Cwd(), "sub")}} },
			want: sandbox.Policy{Mode: sandbox.WorkspaceWrite, Roots: []string{"SUB"}}},
		{name: "widen mode", proc: Options{Sandbox: "read-only"}, spec: func(*Host) Spec { return Spec{Sandbox: str("off")} },
			code: CodeInvalidParams, param: "sandbox"},
		{name: "widen network", proc: Options{Sandbox: "read-only"}, spec: func(*Host) Spec { return Spec{Network: &yes} },
			code: CodeInvalidParams, param: "network"},
		{name: "root outside", proc: Options{Sandbox: "workspace-write"}, spec: func(*Host) Spec { return Spec{WritableRoots: []string{t.TempDir()}} },
			code: CodeInvalidParams, param: "writable_roots[0]"},
		{name: "root missing", proc: Options{}, spec: func(*Host) Spec { return Spec{WritableRoots: []string{"/no/such/dir"}} },
			code: CodeInvalidParams, param: "writable_roots[0]"},
		{name: "unknown mode", proc: Options{}, spec: func(*Host) Spec { return Spec{Sandbox: str("strict")} },
			code: CodeInvalidParams, param: "sandbox"},
		{name: "home in cwd", proc: Options{}, spec: func(h *Host) Spec { return Spec{Cwd: filepath.Dir(h.Home()), Sandbox: str("workspace-write")} },
			code: CodeInvalidParams, param: "cwd"},
		{name: "no landlock", proc: Options{}, limit: "landlock=0", spec: func(*Host) Spec { return Spec{Sandbox: str("read-only")} },
			code: CodeUnsupported, param: "sandbox"},
		{name: "no user namespaces", proc: Options{}, limit: "userns=0", spec: func(*Host) Spec { return Spec{Sandbox: str("read-only")} },
			code: CodeUnsupported, param: "sandbox"},
		{name: "no user namespaces, network on", proc: Options{}, limit: "userns=0", spec: func(*Host) Spec { return Spec{Sandbox: str("read-only"), Network: &yes} },
			code: CodeUnsupported, param: "sandbox"},
		{name: "network on", proc: Options{}, spec: func(*Host) Spec { return Spec{Sandbox: str("read-only"), Network: &yes} },
			want: sandbox.Policy{Mode: sandbox.ReadOnly, Network: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := startHost(t, tt.proc)
			t.Setenv(sandbox.LimitEnv, tt.limit)
			spec := tt.spec(h)
			s, err := h.Create(context.Background(), spec)
			if tt.code != "" {
				var se *Error
				if !errors.As(err, &se) || se.Code != tt.code || se.Param != tt.param {
					t.Fatalf("Create: %v, want code %s param %s", err, tt.code, tt.param)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range tt.want.Roots {
				tt.want.Roots[i] = strings.Replace(r, "SUB", filepath.Join(h.Cwd(), "sub"), 1)
			}
			if diff := cmp.Diff(tt.want, s.Info().Sandbox, cmpopts.IgnoreFields(sandbox.Policy{}, "Dir")); diff != "" {
				t.Errorf("Info().Sandbox (-want +got):\n%s", diff)
			}
		})
	}
}

func mkdir(t *testing.T, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.Mkdir(p, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSandboxedShellAndFork: a user's shell command runs in the session's
// sandbox, and so does a fork's, and the private temp dir goes with the
// session (W3).
func TestSandboxedShellAndFork(t *testing.T) {
	if err := sandbox.Probe().Enforceable(sandbox.Policy{Mode: sandbox.ReadOnly}); err != nil {
		t.Skip(err)
	}
	h := startHost(t, Options{Sandbox: "read-only"})
	s := create(t, h, Spec{})
	outside := filepath.Join(t.TempDir(), "x")
	shell := func(s *Session, cmd string) ShellResult {
		t.Helper()
		turn, err := s.Shell(context.Background(), ShellSpec{Command: cmd, Timeout: time.Minute}, func(agent.Event) {})
		if err != nil {
			t.Fatal(err)
		}
		<-turn.Done()
		r, err := turn.Shell()
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r := shell(s, `echo $TMPDIR; echo x > "$TMPDIR/ok" && echo x > `+outside)
	if r.ExitCode == nil || *r.ExitCode == 0 || !strings.Contains(r.Output, "Read-only file system") {
		t.Errorf("shell: exit %v, output %q; want a denied write", r.ExitCode, r.Output)
	}
	tmp := strings.SplitN(r.Output, "\n", 2)[0]
	if _, err := os.Stat(filepath.Join(tmp, "ok")); err != nil {
		t.Errorf("the private temp dir %q: %v", tmp, err)
	}
	f, err := s.Fork(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Info().Sandbox.Mode; got != sandbox.ReadOnly {
		t.Errorf("fork's sandbox %q", got)
	}
	if r := shell(f, "echo x > "+outside); r.ExitCode == nil || *r.ExitCode == 0 {
		t.Errorf("fork's shell wrote outside: %q", r.Output)
	}
	if _, err := os.Stat(outside); err == nil {
		t.Error("a command wrote outside")
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the temp dir outlived its session: %v", err)
	}
}

// TestStartSandbox: the process's policy comes from flags, else settings,
// and one the kernel cannot enforce stops the start (W2, W4).
func TestStartSandbox(t *testing.T) {
	if err := sandbox.Probe().Enforceable(sandbox.Policy{Mode: sandbox.ReadOnly}); err != nil {
		t.Skip(err)
	}
	tests := []struct {
		name     string
		settings string
		opts     Options
		limit    string
		want     sandbox.Policy
		err      string
	}{
		{name: "default", want: sandbox.Policy{Mode: sandbox.Off}},
		{name: "settings", settings: `{"sandbox":"read-only","sandbox_network":true}`, want: sandbox.Policy{Mode: sandbox.ReadOnly, Network: true}},
		{name: "flag over settings", settings: `{"sandbox":"read-only"}`, opts: Options{Sandbox: "workspace-write"}, want: sandbox.Policy{Mode: sandbox.WorkspaceWrite}},
		{name: "bad flag", opts: Options{Sandbox: "on"}, err: `--sandbox: sandbox: unknown mode "on"`},
		{name: "bad settings", settings: `{"sandbox":"on"}`, err: `settings sandbox: sandbox: unknown mode "on"`},
		{name: "unenforceable", opts: Options{Sandbox: "read-only"}, limit: "landlock=0", err: "--sandbox: sandbox: mode read-only without network cannot be enforced here"},
		{name: "missing root", opts: Options{WritableRoots: []string{"nope"}}, err: "is not a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(sandbox.LimitEnv, tt.limit)
			env := Env{Cwd: t.TempDir(), Home: t.TempDir(), Getenv: func(string) string { return "" }}
			if tt.settings != "" {
				if err := os.WriteFile(filepath.Join(env.Home, "settings.json"), []byte(tt.settings), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			h, err := Start(context.Background(), tt.opts, env, nil)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Start: %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer h.Shutdown()
			if diff := cmp.Diff(tt.want, h.Sandbox()); diff != "" {
				t.Errorf("Sandbox (-want +got):\n%s", diff)
			}
		})
	}
}
