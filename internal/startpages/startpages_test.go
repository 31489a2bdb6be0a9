package startpages

import (
	"bufio"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// rssFile reads RssFile (kB) of /proc/self/status.
func rssFile(t *testing.T) int {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "RssFile:"); ok {
			n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no RssFile in /proc/self/status")
	return 0
}

// TestRelease: the test binary's read-only pages leave its RSS, and the code
// and data they held still work afterwards (they fault back in).
func TestRelease(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("linux only")
	}
	before := rssFile(t)
	t0 := time.Now()
	n := Release()
	t.Logf("released %d KiB of address space in %v", n>>10, time.Since(t0))
	after := rssFile(t)
	t.Logf("RssFile %d -> %d kB", before, after)
	if n == 0 {
		t.Fatal("Release released nothing")
	}
	if after >= before {
		t.Errorf("RssFile %d kB after Release, %d kB before: want less", after, before)
	}
	// Code and read-only data come back: a string constant and a call.
	if got := strconv.Itoa(42) + "x"; got != "42x" {
		t.Errorf("after Release: %q", got)
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		name, line  string
		lo, hi      uintptr
		perms, path string
		ok          bool
	}{
		{name: "text", line: "00400000-00a85000 r-xp 00000000 08:01 123 /usr/bin/e", lo: 0x400000, hi: 0xa85000, perms: "r-xp", path: "/usr/bin/e", ok: true},
		{name: "space in path", line: "00400000-00a85000 r--p 00000000 08:01 123 /a b/e", lo: 0x400000, hi: 0xa85000, perms: "r--p", path: "/a b/e", ok: true},
		{name: "anonymous", line: "7fd3d441f000-7fd3d449f000 rw-p 00000000 00:00 0", ok: false},
		{name: "bad range", line: "zz-00a85000 r-xp 00000000 08:01 123 /e", ok: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lo, hi, perms, path, ok := parse([]byte(tt.line))
			if ok != tt.ok || (ok && (lo != tt.lo || hi != tt.hi || perms != tt.perms || path != tt.path)) {
				t.Errorf("parse(%q) = %x %x %q %q %v, want %x %x %q %q %v", tt.line, lo, hi, perms, path, ok, tt.lo, tt.hi, tt.perms, tt.path, tt.ok)
			}
		})
	}
}
