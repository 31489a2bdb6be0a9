package tool

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/e-agent/e/internal/sandbox"
)

// TestSandboxedTools: under a sandbox, bash's denied write fails with the
// command's own error and a summary naming the sandbox, while writing in
// the cwd works; write and edit refuse under read-only (W1, W3, W5).
func TestSandboxedTools(t *testing.T) {
	if err := sandbox.Probe().Enforceable(sandbox.Policy{Mode: sandbox.ReadOnly}); err != nil {
		t.Skip(err)
	}
	tests := []struct {
		name    string
		mode    sandbox.Mode
		tool    string
		args    func(s *session) map[string]any
		content string // "~" prefix: a part of it
		summary string
		failed  bool
	}{
		{name: "bash writes outside", mode: sandbox.WorkspaceWrite, tool: "bash",
			args: func(s *session) map[string]any {
				return map[string]any{"command": "echo x > " + s.outside + "/secret.txt"}
			},
			content: "~Read-only file system", summary: "exit 1 (the sandbox denied a write)", failed: true},
		{name: "bash connects", mode: sandbox.WorkspaceWrite, tool: "bash",
			args:    func(*session) map[string]any { return map[string]any{"command": "echo > /dev/tcp/127.0.0.1/9"} },
			content: "~Network is unreachable", summary: "exit 1 (the sandbox denied a connection)", failed: true},
		{name: "bash writes cwd", mode: sandbox.WorkspaceWrite, tool: "bash",
			args:    func(*session) map[string]any { return map[string]any{"command": "echo x > new.txt && cat new.txt"} },
			content: "x\n[exit 0]", summary: "exit 0"},
		{name: "bash read-only cwd", mode: sandbox.ReadOnly, tool: "bash",
			args:    func(*session) map[string]any { return map[string]any{"command": "echo x > new.txt"} },
			content: "~Read-only file system", summary: "exit 1 (the sandbox denied a write)", failed: true},
		{name: "bash timed out", mode: sandbox.WorkspaceWrite, tool: "bash",
			args: func(*session) map[string]any {
				return map[string]any{"command": "sleep 30 & sleep 30", "timeout_ms": 300}
			},
			content: "~[timed out after 300 ms: the command was killed]", summary: "timed out", failed: true},
		{name: "bash fails by itself", mode: sandbox.WorkspaceWrite, tool: "bash",
			args:    func(*session) map[string]any { return map[string]any{"command": "exit 3"} },
			summary: "exit 3", failed: true},
		{name: "write read-only", mode: sandbox.ReadOnly, tool: "write",
			args:    func(*session) map[string]any { return map[string]any{"path": "a.txt", "content": "x"} },
			content: "write: a.txt: the sandbox is read-only: this session may not write files", summary: "sandbox denied the write", failed: true},
		{name: "edit read-only", mode: sandbox.ReadOnly, tool: "edit",
			args:    func(*session) map[string]any { return map[string]any{"path": "b.txt", "old": "b", "new": "c"} },
			content: "edit: b.txt: the sandbox is read-only: this session may not write files", summary: "sandbox denied the write", failed: true},
		{name: "write workspace", mode: sandbox.WorkspaceWrite, tool: "write",
			args:    func(*session) map[string]any { return map[string]any{"path": "a.txt", "content": "x"} },
			summary: "wrote 1 byte"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSession(t)
			s.writeFile(t, "b.txt", "b")
			s.env.Sandbox, s.env.TempDir = sandbox.Policy{Mode: tt.mode}, t.TempDir()
			checkResult(t, s.run(tt.tool, jsonArgs(t, tt.args(s))), tt.content, tt.summary, tt.failed)
			if b, err := os.ReadFile(filepath.Join(s.outside, "secret.txt")); err != nil || string(b) != "secret\n" {
				t.Errorf("secret.txt = %q, %v", b, err)
			}
			if got := s.readFile(t, "b.txt"); got != "b" {
				t.Errorf("b.txt = %q", got)
			}
		})
	}
}

// TestSandboxUnsupported: a policy the kernel cannot enforce fails the
// command before it starts, never runs it unconfined (W4).
func TestSandboxUnsupported(t *testing.T) {
	t.Setenv(sandbox.LimitEnv, "landlock=0")
	s := newSession(t)
	s.env.Sandbox, s.env.TempDir = sandbox.Policy{Mode: sandbox.WorkspaceWrite}, t.TempDir()
	r := s.run("bash", `{"command":"echo ran > ran.txt"}`)
	checkResult(t, r, "~cannot be enforced here: it needs Landlock", "failed", true)
	if _, err := os.Stat(filepath.Join(s.cwd, "ran.txt")); err == nil {
		t.Error("the command ran")
	}
}
