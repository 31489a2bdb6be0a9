package lineserver

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// pipeSize is the capacity e asks for when its output is a pipe: four of
// the default 64 KiB. A long answer's events and its response then cross
// in a quarter of the writer's and the reader's wake-ups, each of which
// cost tens of microseconds on a virtual machine (a /long 200,000 turn
// through ebench: 172 -> 141 ns/event). Not the 1 MiB a user may ask for:
// the kernel counts a pipe's capacity against its user's soft limit (16,384
// pages), past which that user's new pipes get a single page.
const pipeSize = 256 << 10

// growPipe gives w pipeSize bytes of capacity if it is a pipe with less.
// It is a hint: where the kernel refuses, the pipe stays as it was.
func growPipe(w io.Writer) {
	f, ok := w.(*os.File)
	if !ok {
		return
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		var st unix.Stat_t
		if unix.Fstat(int(fd), &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFIFO {
			return
		}
		if n, err := unix.FcntlInt(fd, unix.F_GETPIPE_SZ, 0); err == nil && n < pipeSize {
			_, _ = unix.FcntlInt(fd, unix.F_SETPIPE_SZ, pipeSize)
		}
	})
}

// readerGone reports whether w is a pipe or socket whose reading end has
// closed: poll says POLLERR (a pipe without readers) or POLLHUP (a socket
// whose peer shut down), without writing.
func readerGone(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return false
	}
	gone := false
	_ = rc.Control(func(fd uintptr) {
		fds := []unix.PollFd{{Fd: int32(fd)}}
		if n, err := unix.Poll(fds, 0); err == nil && n == 1 {
			gone = fds[0].Revents&(unix.POLLERR|unix.POLLHUP) != 0
		}
	})
	return gone
}
