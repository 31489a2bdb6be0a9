package prefault

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"unsafe"
)

// vmFlags returns the VmFlags of the mapping of /proc/self/smaps that holds
// addr.
func vmFlags(t *testing.T, addr uintptr) []string {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("no smaps: %v", err)
	}
	defer f.Close()
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		var lo, hi uintptr
		if n, _ := fmt.Sscanf(line, "%x-%x", &lo, &hi); n == 2 && strings.Contains(line, " ") {
			in = lo <= addr && addr < hi
			continue
		}
		if in && strings.HasPrefix(line, "VmFlags:") {
			return strings.Fields(strings.TrimPrefix(line, "VmFlags:"))
		}
	}
	t.Fatalf("no mapping holds %#x", addr)
	return nil
}

// A long buffer's 2 MiB ranges are marked for huge pages, once each, and
// its bytes are kept; a buffer under hugeMin is not marked.
func TestWriteHuge(t *testing.T) {
	long := make([]byte, 0, 4*huge)
	Write(long)
	addr := uintptr(unsafe.Pointer(unsafe.SliceData(long[:1])))
	mid := (addr + huge) &^ (huge - 1) // inside long, 2 MiB-aligned
	flags := vmFlags(t, mid)
	if !slices.Contains(flags, "hg") {
		t.Errorf("mapping of a %d-byte buffer has VmFlags %v, want hg", cap(long), flags)
	}
	n := markedRanges()
	Write(long)
	if again := markedRanges(); again != n {
		t.Errorf("writing the same buffer again marked %d more ranges", again-n)
	}
	b := append(long, "kept"...)
	Write(b)
	if string(b) != "kept" {
		t.Errorf("contents %q after Write", b)
	}

	short := make([]byte, 0, hugeMin-page)
	before := markedRanges()
	Write(short)
	if after := markedRanges(); after != before {
		t.Errorf("a %d-byte buffer marked %d ranges", cap(short), after-before)
	}
}

func markedRanges() int {
	marked.Lock()
	defer marked.Unlock()
	return len(marked.ranges)
}
