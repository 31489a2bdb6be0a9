package jsonl

import (
	"io"
	"os"
	"syscall"
	"unsafe"
)

// pipePage is the kernel's pipe buffer page: a pipe holds its bytes in
// pages, the last one filled by later writes, so a write of n bytes into a
// pipe holding u never waits while n+u+2*pipePage fits its capacity.
const pipePage = 4096

// vectored returns a function that writes bufs in order with writev(2),
// one call for them all unless the kernel takes less, when w is a file
// (a pipe, a terminal, a file); nil otherwise.
//
// Into a pipe with room for all of bufs (asked of the kernel each time,
// the peer may read or resize it meanwhile) the writev is a raw one,
// without the runtime's syscall bookkeeping, as it cannot block: that
// bookkeeping wakes the runtime's sysmon thread whenever e was idle, as it
// is between the events of a provider that sends each alone, and sysmon
// then polls every 20 µs for a while. With the provider's reads raw too
// (model's rawReads), that was a third of e's CPU per delta.
func vectored(w io.Writer) func(bufs [][]byte) error {
	f, ok := w.(*os.File)
	if !ok {
		return nil
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return nil
	}
	fifo := false
	_ = rc.Control(func(fd uintptr) {
		var st syscall.Stat_t
		fifo = syscall.Fstat(int(fd), &st) == nil && st.Mode&syscall.S_IFMT == syscall.S_IFIFO
	})
	var vecs []syscall.Iovec // reused
	return func(bufs [][]byte) error {
		vecs = vecs[:0]
		total := 0
		for _, b := range bufs {
			if len(b) > 0 {
				v := syscall.Iovec{Base: &b[0]}
				v.SetLen(len(b))
				vecs = append(vecs, v)
				total += len(b)
			}
		}
		iov := vecs
		var werr error
		err := rc.Write(func(fd uintptr) bool {
			raw := fifo && pipeRoom(fd) >= total+2*pipePage
			for len(iov) > 0 {
				var n uintptr
				var errno syscall.Errno
				if raw {
					n, _, errno = syscall.RawSyscall(syscall.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&iov[0])), uintptr(len(iov)))
				} else {
					n, _, errno = syscall.Syscall(syscall.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&iov[0])), uintptr(len(iov)))
				}
				switch errno {
				case 0:
				case syscall.EINTR:
					continue
				case syscall.EAGAIN:
					return false // a non-blocking stream: wait until it takes more
				default:
					werr = errno
					return true
				}
				iov = advance(iov, int(n))
			}
			return true
		})
		clear(vecs) // let go of the buffers
		if err == nil {
			err = werr
		}
		if err != nil {
			return &os.PathError{Op: "write", Path: f.Name(), Err: err}
		}
		return nil
	}
}

// pipeRoom returns how many bytes the pipe fd has room for, or 0 if the
// kernel does not say.
func pipeRoom(fd uintptr) int {
	size, _, errno := syscall.RawSyscall(syscall.SYS_FCNTL, fd, syscall.F_GETPIPE_SZ, 0)
	if errno != 0 {
		return 0
	}
	var unread int32
	if _, _, errno := syscall.RawSyscall(syscall.SYS_IOCTL, fd, syscall.TIOCINQ, uintptr(unsafe.Pointer(&unread))); errno != 0 {
		return 0
	}
	return int(size) - int(unread)
}

// advance drops the first n bytes of iov.
func advance(iov []syscall.Iovec, n int) []syscall.Iovec {
	for n > 0 && len(iov) > 0 {
		l := int(iov[0].Len)
		if n < l {
			iov[0].Base = (*byte)(unsafe.Add(unsafe.Pointer(iov[0].Base), n))
			iov[0].SetLen(l - n)
			return iov
		}
		n -= l
		iov = iov[1:]
	}
	return iov
}
