package tool

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"unsafe"
)

// PITFALLS "symlink race": while a directory of the session and a link to a
// directory outside swap places over and over, file tools run on names
// beneath the swapping one. No read may return the outside file's content,
// no write or edit may land outside, and no listing may show the outside.
func TestSymlinkRace(t *testing.T) {
	s := newSession(t)
	s.writeFile(t, "d/f", "inside\n")
	s.writeFile(t, filepath.Join(s.outside, "f"), "OUTSIDE\n")
	s.symlink(t, s.outside, "l")
	d, l, parked := filepath.Join(s.cwd, "d"), filepath.Join(s.cwd, "l"), filepath.Join(s.cwd, "parked")

	var stop atomic.Bool
	var swaps atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // d is the directory, then the link, then the directory again
		defer wg.Done()
		for !stop.Load() {
			if !exchange(d, l) {
				os.Rename(d, parked)
				os.Rename(l, d)
				os.Rename(d, l)
				os.Rename(parked, d)
			}
			swaps.Add(1)
		}
	}()
	calls := []struct{ tool, args string }{
		{"read", `{"path":"d/f"}`},
		{"write", `{"path":"d/new","content":"pwned"}`},
		{"write", `{"path":"d/sub/new","content":"pwned"}`},
		{"edit", `{"path":"d/f","old":"OUTSIDE","new":"pwned"}`},
		{"ls", `{"path":"d"}`},
		{"grep", `{"pattern":"OUTSIDE","path":"d"}`},
		{"grep", `{"pattern":"OUTSIDE","path":"d/f"}`},
		{"find", `{"pattern":"*","path":"d"}`},
	}
	const rounds = 500
	var leaks []string
	var mu sync.Mutex
	var runners sync.WaitGroup
	for _, c := range calls {
		runners.Add(1)
		go func() {
			defer runners.Done()
			for range rounds {
				r := Run(t.Context(), s.env, c.tool, json.RawMessage(c.args))
				if strings.Contains(r.Content, "OUTSIDE") || strings.Contains(r.Content, "secret") {
					mu.Lock()
					leaks = append(leaks, fmt.Sprintf("%s %s: %q", c.tool, c.args, r.Content))
					mu.Unlock()
				}
			}
		}()
	}
	runners.Wait()
	stop.Store(true)
	wg.Wait()
	t.Logf("%d swaps during %d calls", swaps.Load(), rounds*len(calls))
	if len(leaks) > 0 {
		t.Errorf("%d calls saw outside content, e.g. %s", len(leaks), leaks[0])
	}
	entries, _ := os.ReadDir(s.outside)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "f secret.txt" {
		t.Errorf("the outside directory holds %v; want only f and secret.txt", names)
	}
	if data, _ := os.ReadFile(filepath.Join(s.outside, "f")); string(data) != "OUTSIDE\n" {
		t.Errorf("outside f = %q; want it untouched", data)
	}
}

// renameat2 is the system call number of renameat2(2) where the syscall
// package lacks it.
var renameat2 = map[string]uintptr{"amd64": 316, "arm64": 276, "riscv64": 276, "loong64": 276}[runtime.GOARCH]

// exchange swaps a and b atomically (renameat2 RENAME_EXCHANGE), as an
// attacker would; false where that is not available.
func exchange(a, b string) bool {
	if runtime.GOOS != "linux" || renameat2 == 0 {
		return false
	}
	const atFDCWD, renameExchange = ^uintptr(99), 2 // AT_FDCWD is -100
	pa, _ := syscall.BytePtrFromString(a)
	pb, _ := syscall.BytePtrFromString(b)
	_, _, errno := syscall.Syscall6(renameat2, atFDCWD, uintptr(unsafe.Pointer(pa)), atFDCWD, uintptr(unsafe.Pointer(pb)), renameExchange, 0)
	return errno == 0
}
