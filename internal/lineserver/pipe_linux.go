package lineserver

import (
	"io"
	"os"
	"syscall"
)

// pipeSize is the buffer e asks for when its stdout is a pipe: a burst of
// events then wakes the reader once per megabyte rather than once per
// 64 KiB (events per second at /long 200,000: about a third more). It is
// the most an unprivileged process may ask on a default system; the
// kernel counts it against the user's pipe-user-pages-soft (64 MiB), and
// keeps the old size when it refuses.
const pipeSize = 1 << 20

// growPipe asks for pipeSize when w is a pipe.
func growPipe(w io.Writer) {
	f, ok := w.(*os.File)
	if !ok {
		return
	}
	var st syscall.Stat_t
	if syscall.Fstat(int(f.Fd()), &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFIFO {
		return
	}
	_, _, _ = syscall.Syscall(syscall.SYS_FCNTL, f.Fd(), fSetPipeSize, pipeSize)
}

// The fcntl commands of pipe sizes (linux/fcntl.h).
const (
	fSetPipeSize = 1031
	fGetPipeSize = 1032
)
