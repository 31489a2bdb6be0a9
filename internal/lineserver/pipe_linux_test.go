package lineserver

import (
	"io"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// A pipe on stdout gets pipeSize bytes of capacity; a pipe that already
// has more keeps it, and a file is left alone.
func TestGrowPipe(t *testing.T) {
	size := func(f *os.File) int {
		t.Helper()
		n, err := unix.FcntlInt(f.Fd(), unix.F_GETPIPE_SZ, 0)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	tests := []struct {
		name         string
		before, want int
	}{
		{name: "default pipe", want: pipeSize},
		{name: "larger pipe kept", before: 2 * pipeSize, want: 2 * pipeSize},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			defer w.Close()
			if tt.before > 0 {
				if _, err := unix.FcntlInt(w.Fd(), unix.F_SETPIPE_SZ, tt.before); err != nil {
					t.Skipf("this kernel refuses a %d-byte pipe: %v", tt.before, err)
				}
			}
			l := New("e test", strings.NewReader(""), w, os.Stderr)
			defer l.Close(0)
			if got := size(w); got != tt.want {
				t.Errorf("pipe capacity %d, want %d", got, tt.want)
			}
		})
	}
	t.Run("file", func(t *testing.T) {
		f, err := os.Create(t.TempDir() + "/out")
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		growPipe(f) // must not fail or panic on a regular file
	})
}

// WatchClient tells a pipe stdout whose reader closed without a write, and
// stays quiet while the reader is there (pi's dialect after EOF, D2).
func TestWatchClientReaderGone(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	l := New("test", strings.NewReader(""), w, io.Discard)
	defer l.Close(0)
	stop := make(chan struct{})
	defer close(stop)
	gone := l.WatchClient(stop)
	if readerGone(w) {
		t.Fatal("readerGone with the reader open")
	}
	r.Close()
	if why := <-gone; why != "stdout's reader has closed" {
		t.Errorf("WatchClient = %q", why)
	}
}
