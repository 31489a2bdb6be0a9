package jsonl

import (
	"io"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// vectored returns a function that writes bufs in order with writev(2),
// one call for them all unless the kernel takes less, when w is a file
// (a pipe, a terminal, a file); nil otherwise.
//
// It first offers them to the kernel with pwritev2(RWF_NOWAIT), which
// takes what fits without waiting (a pipe with room: e's output read as
// it comes), as a raw system call, without the runtime's bookkeeping of
// one that may block: that bookkeeping wakes the runtime's sysmon thread
// whenever e was idle, as it is between the reads of a provider's stream,
// and sysmon then polls every 20 µs for a while, which cost e more CPU
// than the write. What the kernel did not take goes the usual way.
func vectored(w io.Writer) func(bufs [][]byte) error {
	f, ok := w.(*os.File)
	if !ok {
		return nil
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return nil
	}
	var vecs []syscall.Iovec // reused
	nowait := true           // until the file says it cannot
	return func(bufs [][]byte) error {
		vecs = vecs[:0]
		for _, b := range bufs {
			if len(b) > 0 {
				v := syscall.Iovec{Base: &b[0]}
				v.SetLen(len(b))
				vecs = append(vecs, v)
			}
		}
		iov := vecs
		var werr error
		err := rc.Write(func(fd uintptr) bool {
			if nowait && len(iov) > 0 {
				n, _, errno := syscall.RawSyscall6(unix.SYS_PWRITEV2, fd, uintptr(unsafe.Pointer(&iov[0])), uintptr(len(iov)), ^uintptr(0), ^uintptr(0), unix.RWF_NOWAIT)
				switch errno {
				case 0:
					iov = advance(iov, int(n))
				case syscall.EOPNOTSUPP, syscall.EINVAL, syscall.ENOSYS:
					nowait = false // not for this file, or this kernel
				}
				// Otherwise (full, or failed) the usual way waits or
				// reports it.
			}
			for len(iov) > 0 {
				n, _, errno := syscall.Syscall(syscall.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&iov[0])), uintptr(len(iov)))
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
