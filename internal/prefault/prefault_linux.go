package prefault

import (
	"runtime"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Min is the smallest buffer Write populates: below it a few page faults
// cost less than the system call.
const Min = 64 << 10

// hugeMin is the smallest buffer Write also asks huge pages for.
const hugeMin = 512 << 10

const (
	page = 4096
	huge = 2 << 20
	// maxHuge bounds the 2 MiB ranges ever marked: each may split a
	// mapping of the heap in two, and a process has at most
	// vm.max_map_count (65,530) mappings. 4,096 ranges are 8 GiB of
	// long buffers.
	maxHuge = 4096
)

// marked holds the 2 MiB ranges Write has marked MADV_HUGEPAGE: the Go
// heap never unmaps memory, so a range stays marked, and marking it again
// would only cost the system call.
var marked struct {
	sync.Mutex
	ranges map[uintptr]struct{}
}

// Write maps in, writable, the whole pages that b's capacity spans, if it
// is at least Min bytes; b's contents do not change. It is a hint: a
// kernel without MADV_POPULATE_WRITE (before Linux 5.14) leaves the pages
// to fault in as they are written.
//
// A buffer of hugeMin bytes or more is first offered huge pages, where the
// kernel hands them out on request (transparent_hugepage "madvise"): the
// 2 MiB-aligned ranges it overlaps are marked MADV_HUGEPAGE. On the
// virtual machine e's benchmarks ran on, the first write to a 4 KiB page
// still cost about 6 µs after MADV_POPULATE_WRITE had mapped it (3 to 4 ms
// for 2 MiB), and 0.05 to 0.2 ms went to a whole huge page. A range's
// other bytes belong to the Go heap; a huge page backs them as the
// kernel's zeroed pages would, and only where none of the range had been
// mapped in yet.
func Write(b []byte) {
	if cap(b) < Min {
		return
	}
	b = b[:cap(b)]
	addr := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	start := (addr + page - 1) &^ (page - 1)
	end := (addr + uintptr(len(b))) &^ (page - 1)
	if end <= start {
		return
	}
	if len(b) >= hugeMin {
		markHuge(addr&^(huge-1), (addr+uintptr(len(b))+huge-1)&^(huge-1))
	}
	_, _, _ = unix.Syscall(unix.SYS_MADVISE, start, end-start, unix.MADV_POPULATE_WRITE)
	runtime.KeepAlive(b)
}

// markHuge marks the 2 MiB ranges from start to end MADV_HUGEPAGE, those
// not marked yet, while fewer than maxHuge are.
func markHuge(start, end uintptr) {
	marked.Lock()
	defer marked.Unlock()
	if marked.ranges == nil {
		marked.ranges = map[uintptr]struct{}{}
	}
	for r := start; r < end; r += huge {
		if _, ok := marked.ranges[r]; ok || len(marked.ranges) >= maxHuge {
			continue
		}
		marked.ranges[r] = struct{}{}
		_, _, _ = unix.Syscall(unix.SYS_MADVISE, r, huge, unix.MADV_HUGEPAGE)
	}
}
