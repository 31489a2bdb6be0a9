package main

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"unsafe"
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
// the prompt is empty in one line.
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

	cmd = command(t, "-p")
	cmd.Stdin = strings.NewReader("")
	stderr.Reset()
	cmd.Stderr = &stderr
	if code := exitCode(cmd.Run()); code != 2 || strings.Count(stderr.String(), "\n") != 1 {
		t.Errorf("piped: exit %d, stderr %q; want 2 and one line", code, stderr.String())
	}
}
