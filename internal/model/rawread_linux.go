package model

import (
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"
)

// rawReads wraps a provider connection so that each Read tries read(2)
// without the runtime's syscall bookkeeping before it parks in the
// netpoller. The socket is non-blocking, so the call never blocks; a
// plain Read's entersyscall wakes the runtime's sysmon thread out of its
// deep sleep whenever e was idle, as it is between the events of a
// provider that sends each alone, and sysmon then polls every 20 µs for a
// while: measured, that was a third of e's CPU per delta.
func rawReads(c net.Conn) net.Conn {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return c
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return c
	}
	return &rawReadConn{Conn: c, rc: rc}
}

type rawReadConn struct {
	net.Conn
	rc syscall.RawConn
}

func (c *rawReadConn) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	var n int
	var errno syscall.Errno
	err := c.rc.Read(func(fd uintptr) bool {
		for {
			r, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
			switch e {
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false // nothing yet: wait in the netpoller
			}
			n, errno = int(r), e
			return true
		}
	})
	switch {
	case err != nil:
	case errno != 0:
		n, err = 0, os.NewSyscallError("read", errno)
	case n == 0:
		return 0, io.EOF
	default:
		return n, nil
	}
	return n, &net.OpError{Op: "read", Net: c.LocalAddr().Network(), Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}
