package main

import (
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/e-agent/e/internal/sandbox"
)

// openPTY opens a pseudo-terminal pair from /dev/ptmx, so a test can give
// e a terminal without a third-party package.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals: %v", err)
	}
	var unlock int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); e != 0 {
		m.Close()
		t.Fatalf("unlock pty: %v", e)
	}
	var n uint32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); e != 0 {
		m.Close()
		t.Fatalf("pty number: %v", e)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		t.Fatalf("open pty: %v", err)
	}
	t.Cleanup(func() { s.Close(); m.Close() })
	return m, s
}

// e -p alone at a terminal shows how to use it (exit 2); piped, it says
// the prompt is empty in one line, as it does with stdin from /dev/null.
func TestPrintNoPromptAtTerminal(t *testing.T) {
	_, tty := openPTY(t)
	cmd := command(t, "-p")
	cmd.Stdin = tty
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if code := exitCode(err); code != 2 || len(out) > 0 {
		t.Errorf("exit %d, stdout %q; want 2 and nothing", code, out)
	}
	if got := stderr.String(); !strings.HasPrefix(got, "e: empty prompt") || !strings.Contains(got, printHelp) {
		t.Errorf("stderr %q, want the error and the -p page", got)
	}

	devNull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devNull.Close()
	for _, tc := range []struct {
		name  string
		stdin io.Reader
	}{
		{name: "piped", stdin: strings.NewReader("")},
		{name: "/dev/null", stdin: devNull}, // a character device, but no terminal
	} {
		cmd = command(t, "-p")
		cmd.Stdin = tc.stdin
		stderr.Reset()
		cmd.Stderr = &stderr
		if code := exitCode(cmd.Run()); code != 2 || strings.Count(stderr.String(), "\n") != 1 {
			t.Errorf("%s: exit %d, stderr %q; want 2 and one line", tc.name, code, stderr.String())
		}
	}
}

// P3: e -p shows a status line on a terminal stderr, a line per event with
// --verbose, nothing otherwise; stdout carries the reply alone in each.
func TestPrintProgress(t *testing.T) {
	prompt := "/tool bash {\"command\":\"echo hi; exit 3\"}\n/then\n/text done"
	t.Run("terminal", func(t *testing.T) {
		master, tty := openPTY(t)
		cmd := command(t, "-p", prompt, "--no-save")
		cmd.Stderr = tty
		out, err := cmd.Output()
		tty.Close()
		if err != nil || string(out) != "done\n" {
			t.Fatalf("stdout %q, %v; want the reply alone", out, err)
		}
		b, _ := io.ReadAll(master) // ends with EIO once e and our copy of the tty are closed
		screen := string(b)
		for _, want := range []string{"\x1b[2me: model e/offline…\x1b[0m", "\x1b[2me: tool bash echo hi; exit 3…\x1b[0m\r\x1b[K", "e: warning: "} {
			if !strings.Contains(screen, want) {
				t.Errorf("terminal lacks %q:\n%q", want, screen)
			}
		}
		if !strings.HasSuffix(screen, "\r\x1b[K") {
			t.Errorf("the status line is not erased at the end:\n%q", screen)
		}
	})
	t.Run("one terminal for stdout and stderr", func(t *testing.T) {
		// The status line is drawn with \r over the current line: it must
		// not overwrite the reply's unfinished line, which ends first; the
		// next answer starts where the erased status line was.
		master, tty := openPTY(t)
		cmd := command(t, "-p", "/text Let me check.\n/tool ls {}\n/then\n/text All good.", "--no-save")
		cmd.Stdout, cmd.Stderr = tty, tty
		if err := cmd.Run(); err != nil {
			t.Fatal(err)
		}
		tty.Close()
		b, _ := io.ReadAll(master)
		screen := string(b)
		i := strings.Index(screen, "Let me check.")
		if i < 0 || !strings.HasPrefix(screen[i+len("Let me check."):], "\r\n") || !strings.HasSuffix(screen, "\r\x1b[KAll good.\r\n") {
			t.Errorf("the reply's lines are not kept whole:\n%q", screen)
		}
	})
	for _, tt := range []struct {
		name, flag, want string
	}{
		{name: "pipe", want: "e: warning: no model provider configured: using the built-in offline model e/offline\n"},
		{name: "verbose", flag: "--verbose", want: "e: model e/offline\ne: warning: no model provider configured: using the built-in offline model e/offline\n" +
			"e: tool bash echo hi; exit 3\ne: tool bash failed in $MS: exit 3\ne: model e/offline\ne: turn done in $MS; tool calls: 1, failed: 1\n"},
		{name: "quiet", flag: "-q", want: ""}, // the offline model's warning too
	} {
		t.Run(tt.name, func(t *testing.T) {
			args := []string{"-p", prompt, "--no-save"}
			if tt.flag != "" {
				args = append(args, tt.flag)
			}
			cmd := command(t, args...)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil || string(out) != "done\n" {
				t.Fatalf("stdout %q, %v; want the reply alone", out, err)
			}
			got := regexp.MustCompile(`\d+ ms|\d+\.\d s`).ReplaceAllString(stderr.String(), "$$MS")
			if got != tt.want {
				t.Errorf("stderr:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

// TestSandboxNoTerminal: e -p at its own controlling terminal; a sandboxed
// command cannot open it (/dev/tty), where it could push keystrokes into
// the user's shell (TIOCSTI), while an unsandboxed one can (W1).
func TestSandboxNoTerminal(t *testing.T) {
	if err := sandbox.Probe().Enforceable(sandbox.Policy{Mode: sandbox.WorkspaceWrite}); err != nil {
		t.Skip(err)
	}
	tests := []struct {
		mode   string
		opened bool
	}{
		{mode: "off", opened: true},
		{mode: "workspace-write", opened: false},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			_, tty := openPTY(t)
			cmd := command(t, "-p", "--json", "--no-save", "--sandbox", tt.mode,
				"/tool bash {\"command\":\": < /dev/tty && echo TTY-OPENED\"}\n/then\n/text done")
			cmd.Stdin = tty
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("e -p: %v\n%s", err, out)
			}
			if got := strings.Contains(string(out), "TTY-OPENED\\n"); got != tt.opened {
				t.Errorf("/dev/tty opened: %v, want %v\n%s", got, tt.opened, out)
			}
		})
	}
}
