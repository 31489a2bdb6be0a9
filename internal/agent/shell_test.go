package agent

import (
	"testing"

	"github.com/e-agent/e/internal/store"
)

// TestShellMessage checks what the model sees of a user's shell command:
// the command and its output, how it ended, and which note says that the
// output was cut: e's own (the last 64 KiB), or pi's naming the file with
// all of it (e --mode rpc keeps pi's 2000 lines or 50 KB, Q4).
func TestShellMessage(t *testing.T) {
	zero, three := 0, 3
	for _, c := range []struct {
		name string
		run  store.ShellRun
		want string
	}{
		{"exit 0", store.ShellRun{Command: "ls", Output: "a\n", ExitCode: &zero}, "Ran `ls`\n```\na\n```"},
		{"exit 3", store.ShellRun{Command: "f", Output: "x", ExitCode: &three}, "Ran `f`\n```\nx\n```\n(exit code 3)"},
		{"cut by e", store.ShellRun{Command: "seq", Output: "9\n", ExitCode: &zero, Truncated: true},
			"Ran `seq`\n```\n9\n```\n(only the last 64 KiB of output are shown)"},
		{"cut as pi", store.ShellRun{Command: "seq", Output: "9", ExitCode: &zero, Truncated: true, FullOutputPath: "/tmp/pi-bash-1.log"},
			"Ran `seq`\n```\n9\n```\n\n[Output truncated. Full output: /tmp/pi-bash-1.log]"},
	} {
		if got := shellMessage(&c.run).Text(); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
