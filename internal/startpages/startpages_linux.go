package startpages

import (
	"bufio"
	"bytes"
	"os"
	"runtime/debug"
	"syscall"
)

// Release drops the process's mappings of its executable's read-only
// segments (text, read-only data), which only page faults map back. The
// writable segment is left alone: dropping it would lose its data. It
// reports how many bytes of address space it released; failures (no /proc)
// leave everything as it was.
func Release() int {
	// A collection now, rather than during the first request, walks the
	// heap and the stacks (reading the read-only data's pointer maps) before
	// the pages are dropped, and gives back the heap init left behind.
	debug.FreeOSMemory()
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return 0
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return 0
	}
	released := 0
	sc := bufio.NewScanner(bytes.NewReader(maps))
	for sc.Scan() {
		lo, hi, perms, path, ok := parse(sc.Bytes())
		// Only private mappings that can never be written hold nothing but
		// the file's pages; a w (or a copy-on-write page) would lose data.
		if !ok || path != exe || len(perms) < 4 || perms[1] == 'w' || perms[3] != 'p' {
			continue
		}
		if _, _, e := syscall.Syscall(syscall.SYS_MADVISE, lo, hi-lo, syscall.MADV_DONTNEED); e == 0 {
			released += int(hi - lo)
		}
	}
	return released
}

// parse reads one line of /proc/self/maps:
// "lo-hi perms offset dev inode path".
func parse(line []byte) (lo, hi uintptr, perms, path string, ok bool) {
	f := bytes.Fields(line)
	if len(f) < 6 {
		return 0, 0, "", "", false
	}
	r := bytes.SplitN(f[0], []byte("-"), 2)
	if len(r) != 2 {
		return 0, 0, "", "", false
	}
	l, ok1 := hex(r[0])
	h, ok2 := hex(r[1])
	if !ok1 || !ok2 || h <= l {
		return 0, 0, "", "", false
	}
	return l, h, string(f[1]), string(bytes.Join(f[5:], []byte(" "))), true
}

func hex(b []byte) (uintptr, bool) {
	var v uintptr
	if len(b) == 0 {
		return 0, false
	}
	for _, c := range b {
		switch {
		case '0' <= c && c <= '9':
			v = v<<4 | uintptr(c-'0')
		case 'a' <= c && c <= 'f':
			v = v<<4 | uintptr(c-'a'+10)
		default:
			return 0, false
		}
	}
	return v, true
}
