package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// agent is a long-lived agent process driven over its stdin and stdout.
type agent struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	out   *bufio.Reader
	start time.Time
}

// spawn starts argv in dir with env added to this process's environment.
func spawn(dir string, env []string, argv ...string) (*agent, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	a := &agent{cmd: cmd, in: in, out: takeReader(out), start: time.Now()}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return a, nil
}

// readers are the buffers of agents that stopped, for the next to spawn:
// a long-lived client reads through a buffer it has used before, and the
// first long line a fresh megabyte of it takes costs this reader a page
// fault a page (3 ms a /long 200000 response here), which the floor's
// reader, whose lines fit in its first 64 KiB, never pays.
var readers struct {
	sync.Mutex
	free []*bufio.Reader
}

func takeReader(r io.Reader) *bufio.Reader {
	readers.Lock()
	defer readers.Unlock()
	if n := len(readers.free); n > 0 {
		b := readers.free[n-1]
		readers.free = readers.free[:n-1]
		b.Reset(r)
		return b
	}
	return bufio.NewReaderSize(r, 1<<20)
}

func putReader(b *bufio.Reader) {
	b.Reset(nil)
	readers.Lock()
	readers.free = append(readers.free, b)
	readers.Unlock()
}

func (a *agent) send(line string) error {
	_, err := io.WriteString(a.in, line+"\n")
	return err
}

// line returns the next output line without its LF, valid until the next call.
func (a *agent) line() ([]byte, error) {
	b, err := a.out.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		// A line longer than the buffer: keep reading it whole.
		full := bytes.Clone(b)
		for err == bufio.ErrBufferFull {
			b, err = a.out.ReadSlice('\n')
			full = append(full, b...)
		}
		b = full
	}
	if err != nil {
		return nil, err
	}
	return b[:len(b)-1], nil
}

// head returns the next output line, or its first 256 bytes if it is
// longer than the buffer, valid until the next call: for a reader that
// looks at lines' starts only, and should not pay for copying the long
// ones (a long answer's response holds its text twice), which the floor
// it is compared with never writes. (A copy of the buffer's megabyte per
// long line cost this reader 3 ms a /long 200000 turn in fresh pages.)
func (a *agent) head() ([]byte, error) {
	b, err := a.out.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		b = bytes.Clone(b[:min(len(b), 256)])
		for err == bufio.ErrBufferFull {
			_, err = a.out.ReadSlice('\n')
		}
		if err != nil {
			return nil, err
		}
		return b, nil
	}
	if err != nil {
		return nil, err
	}
	return b[:len(b)-1], nil
}

// until reads lines until one starts with prefix and returns it (a copy)
// and how many lines came before it.
func (a *agent) until(prefix string) (string, int, error) {
	n := 0
	for {
		b, err := a.line()
		if err != nil {
			return "", n, fmt.Errorf("waiting for %s: %w", prefix, err)
		}
		if bytes.HasPrefix(b, []byte(prefix)) {
			return string(b), n, nil
		}
		n++
	}
}

func (a *agent) stop() {
	a.in.Close()
	done := make(chan struct{})
	go func() { a.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		a.cmd.Process.Kill()
		<-done
	}
	putReader(a.out)
}

// cpu returns the CPU time the process and its live threads have used,
// from /proc/PID/task/*/schedstat (nanoseconds), or from /proc/PID/stat
// (clock ticks) where schedstat is missing.
func cpu(pid int) time.Duration {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	var total time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		f := strings.Fields(string(b))
		if len(f) > 0 {
			n, _ := strconv.ParseInt(f[0], 10, 64)
			total += time.Duration(n)
		}
	}
	if total > 0 {
		return total
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// treeCPU is cpu summed over pid and its descendants.
func treeCPU(pid int) time.Duration {
	total := cpu(pid)
	for _, c := range children(pid) {
		total += treeCPU(c)
	}
	return total
}

// treeRSS is the resident set of pid and its descendants, in bytes.
func treeRSS(pid int) int64 {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	var total int64
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			total = kb << 10
		}
	}
	for _, c := range children(pid) {
		total += treeRSS(c)
	}
	return total
}

func children(pid int) []int {
	var out []int
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, t := range tasks {
		b, _ := os.ReadFile(t)
		for _, f := range strings.Fields(string(b)) {
			n, _ := strconv.Atoi(f)
			out = append(out, n)
		}
	}
	return out
}

func median[T int64 | float64 | time.Duration](xs []T) T {
	s := append([]T(nil), xs...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

// binaries splits a comma-separated -e list, making relative paths
// absolute: the agents run in their own temporary directories.
func binaries(list string) []string {
	bins := strings.Split(list, ",")
	for i, b := range bins {
		if strings.ContainsRune(b, filepath.Separator) {
			if abs, err := filepath.Abs(b); err == nil {
				bins[i] = abs
			}
		}
	}
	return bins
}
