package lineserver

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// growPipe grows a pipe's buffer to pipeSize, and leaves a file that is no
// pipe alone.
func TestGrowPipe(t *testing.T) {
	b, _ := os.ReadFile("/proc/sys/fs/pipe-max-size")
	if max, err := strconv.Atoi(strings.TrimSpace(string(b))); err != nil || max < pipeSize {
		t.Skipf("pipe-max-size %q: this system caps pipes below %d bytes", b, pipeSize)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	growPipe(w)
	n, _, errno := syscall.Syscall(syscall.SYS_FCNTL, w.Fd(), fGetPipeSize, 0)
	if errno != 0 {
		t.Fatal(errno)
	}
	if n < pipeSize {
		t.Errorf("pipe buffer %d bytes, want %d", n, pipeSize)
	}
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	growPipe(f) // not a pipe: nothing to do, nothing fails
}
