package prefault

import (
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Min is the smallest buffer Write populates: below it a few page faults
// cost less than the system call.
const Min = 64 << 10

// Write maps in, writable, the whole pages that b's capacity spans, if it
// is at least Min bytes; b's contents do not change. It is a hint: a
// kernel without MADV_POPULATE_WRITE (before Linux 5.14) leaves the pages
// to fault in as they are written.
func Write(b []byte) {
	if cap(b) < Min {
		return
	}
	b = b[:cap(b)]
	const page = 4096
	start := (uintptr(unsafe.Pointer(unsafe.SliceData(b))) + page - 1) &^ (page - 1)
	end := (uintptr(unsafe.Pointer(unsafe.SliceData(b))) + uintptr(len(b))) &^ (page - 1)
	if end <= start {
		return
	}
	_, _, _ = unix.Syscall(unix.SYS_MADVISE, start, end-start, unix.MADV_POPULATE_WRITE)
	runtime.KeepAlive(b)
}
