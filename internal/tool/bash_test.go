package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/e-agent/e/internal/reaper"
)

func TestBash(t *testing.T) {
	s := newSession(t)
	exit := func(n int) *int { return &n }
	tests := []struct {
		name, command    string
		timeoutMs        int
		content, summary string
		failed           bool
		shell            *ShellResult // Result.Shell; checked where set
	}{
		{name: "output and exit 0", command: "echo hi", content: "hi\n[exit 0]", summary: "exit 0",
			shell: &ShellResult{Output: "hi\n", ExitCode: exit(0)}},
		{name: "no output", command: "true", content: "[exit 0]", summary: "exit 0"},
		{name: "no final newline", command: "printf x", content: "x\n[exit 0]"},
		{name: "stderr combined", command: "echo a; echo b >&2; echo c", content: "a\nb\nc\n[exit 0]"},
		{name: "non-zero exit", command: "echo bad; exit 3", content: "bad\n[exit 3]", summary: "exit 3", failed: true,
			shell: &ShellResult{Output: "bad\n", ExitCode: exit(3)}},
		{name: "killed by a signal", command: "kill -KILL $$", content: "[killed by SIGKILL]", summary: "killed by SIGKILL", failed: true,
			shell: &ShellResult{}},
		{name: "working directory", command: "pwd", content: s.cwd + "\n[exit 0]"},
		{name: "stdin is empty", command: "cat; read x; echo rc=$?", content: "rc=1\n[exit 0]"},
		{name: "own process group", command: `read -r -a f </proc/$$/stat; [ "${f[4]}" = $$ ] && echo leader`, content: "leader\n[exit 0]"},
		{name: "marked", command: `env | grep -c '^` + s.env.Procs.key + `='`, content: "1\n[exit 0]"},
		{name: "background job holding the output", command: "sleep 1000 & echo done", content: "done\n[exit 0]", summary: "exit 0"},
		{name: "timeout", command: "echo started; sleep 100", timeoutMs: 50,
			content: "started\n[timed out after 50 ms: the command was killed]", summary: "timed out", failed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := map[string]any{"command": tt.command}
			if tt.timeoutMs != 0 {
				args["timeout_ms"] = tt.timeoutMs
			}
			r := s.run("bash", jsonArgs(t, args))
			checkResult(t, r, tt.content, tt.summary, tt.failed)
			// A command that did not exit by itself has no Shell: shell {} says so.
			if want := tt.shell; want != nil {
				if want.ExitCode == nil {
					want = nil
				}
				if diff := cmp.Diff(want, r.Shell); diff != "" {
					t.Errorf("Shell (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestBashOutputBounded(t *testing.T) {
	s := newSession(t)
	// 100000 bytes of "é": the kept tail must start on a character boundary.
	got := s.run("bash", `{"command":"for i in $(seq 50000); do printf 'é'; done"}`)
	if got.Failed {
		t.Fatalf("failed: %.200s", got.Content)
	}
	first, rest, _ := strings.Cut(got.Content, "\n")
	if want := "[output truncated: the first 34464 bytes are not shown]"; first != want {
		t.Errorf("first line = %q; want %q", first, want)
	}
	if want := strings.Repeat("é", maxBashOutput/2) + "\n[exit 0]"; rest != want {
		t.Errorf("rest is %d bytes, valid UTF-8 %v; want %d bytes", len(rest), utf8.ValidString(rest), len(want))
	}
}

// Output receives chunks while the command runs: the command waits for a
// file that the test creates only when it has seen the first line.
func TestBashStreams(t *testing.T) {
	s := newSession(t)
	flag := filepath.Join(s.root, "flag")
	var mu sync.Mutex
	var chunks []string
	s.env.Output = func(chunk string) {
		mu.Lock()
		defer mu.Unlock()
		chunks = append(chunks, chunk)
		if strings.Contains(strings.Join(chunks, ""), "first\n") {
			if err := os.WriteFile(flag, nil, 0o644); err != nil {
				t.Error(err)
			}
		}
	}
	cmd := fmt.Sprintf("echo first; while [ ! -e %q ]; do sleep 0.01; done; echo second", flag)
	got := s.run("bash", jsonArgs(t, map[string]any{"command": cmd, "timeout_ms": 20000}))
	checkResult(t, got, "first\nsecond\n[exit 0]", "exit 0", false)
	mu.Lock()
	defer mu.Unlock()
	if len(chunks) < 2 || strings.Join(chunks, "") != "first\nsecond\n" {
		t.Errorf("chunks = %q; want at least two making up %q", chunks, "first\nsecond\n")
	}
}

func TestStreamKeepsRunesWhole(t *testing.T) {
	// "é" is 0xC3 0xA9; the reader cuts between them.
	r := &chunkReader{chunks: []string{"a\xc3", "\xa9b", "\xe2\x82", "\xac", "\xff"}}
	var got []string
	stream(r, &tail{max: 100}, func(c string) { got = append(got, c) })
	if diff := cmp.Diff([]string{"a", "éb", "€", "\xff"}, got); diff != "" {
		t.Errorf("chunks (-want +got):\n%s", diff)
	}
}

type chunkReader struct{ chunks []string }

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.chunks) == 0 {
		return 0, fmt.Errorf("EOF")
	}
	n := copy(p, r.chunks[0])
	r.chunks = r.chunks[1:]
	return n, nil
}

// startBash runs command in the background and returns once its output
// contains "ready"; it returns the pids the command printed as "pid=N" and a
// function that waits for the result.
func startBash(t *testing.T, ctx context.Context, s *session, command string) ([]int, func() Result) {
	t.Helper()
	ready := make(chan string, 1)
	var out strings.Builder
	s.env.Output = func(chunk string) {
		out.WriteString(chunk)
		if strings.Contains(out.String(), "ready\n") {
			select {
			case ready <- out.String():
			default:
			}
		}
	}
	done := make(chan Result, 1)
	go func() {
		done <- Run(ctx, s.env, "bash", json.RawMessage(jsonArgs(t, map[string]any{"command": command})))
	}()
	var text string
	select {
	case text = <-ready:
	case r := <-done:
		t.Fatalf("bash ended before ready: %s", r.Content)
	}
	var pids []int
	for _, f := range strings.Fields(text) {
		if v, ok := strings.CutPrefix(f, "pid="); ok {
			pid, err := strconv.Atoi(v)
			if err != nil {
				t.Fatal(err)
			}
			pids = append(pids, pid)
		}
	}
	return pids, func() Result { return <-done }
}

// marked returns the live processes carrying any marker of procs, and
// those below them (no adopted orphans).
func marked(procs *Procs) []int {
	return procs.scan(func(string) bool { return true }, math.MaxUint64)
}

// alive reports whether pid is a process that is not exiting or exited.
func alive(pid int) bool {
	st, ok := readStat(pid)
	return ok && !st.dead()
}

// detached are commands that leave processes the shell's group does not hold.
var detached = []struct{ name, command string }{
	{"setsid", "setsid sleep 1000 & echo pid=$!"},
	{"nohup", "nohup sleep 1000 >/dev/null 2>&1 & echo pid=$!"},
	{"disown", "sleep 1000 & disown; echo pid=$!"},
	{"double fork", "(setsid sleep 1000 >/dev/null 2>&1 & echo pid=$!)"},
	{"background group", "set -m; sleep 1000 & echo pid=$!"},
	// No marker and no group: found only because e is their subreaper (12.4).
	{"env -i setsid double fork", "(env -i setsid sleep 1000 >/dev/null 2>&1 & echo pid=$!)"},
	{"python Popen env={} start_new_session", `python3 -c 'import subprocess; p = subprocess.Popen(["sleep", "1000"], env={}, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); print("pid=%d" % p.pid)'`},
}

// D2, PITFALLS "Processes": cancelling a call kills its group and every
// detached descendant, and returns promptly with Stopped.
func TestBashCancelKillsDetached(t *testing.T) {
	for _, tt := range detached {
		t.Run(tt.name, func(t *testing.T) {
			s := newSession(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			pids, wait := startBash(t, ctx, s, tt.command+"; echo pid=$$; echo ready; sleep 1000; exit 0") // exit: bash would exec the last sleep in place of the shell
			shell := pids[len(pids)-1]
			if before := marked(s.env.Procs); !slices.Contains(before, shell) {
				t.Fatalf("marked processes before cancel: %v; want the shell %d among them", before, shell)
			}
			for _, pid := range pids {
				if !alive(pid) {
					t.Fatalf("pid %d is not running before cancel", pid)
				}
			}
			start := time.Now()
			cancel()
			got := wait()
			elapsed := time.Since(start)
			if !got.Stopped || got.Failed || !strings.HasSuffix(got.Content, "ready\n[stopped: the command was killed]") {
				t.Errorf("result = %+v; want Stopped with the output", got)
			}
			if elapsed > time.Second {
				t.Errorf("cancel took %v; want well under 1 s", elapsed)
			}
			if left := marked(s.env.Procs); len(left) > 0 {
				t.Errorf("marked processes left after cancel: %v", left)
			}
			for _, pid := range pids {
				if alive(pid) {
					st, _ := readStat(pid)
					env, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
					cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
					t.Errorf("pid %d still runs after cancel: %+v %q env %d bytes", pid, st, cmdline, len(env))
				}
			}
		})
	}
}

// D2: KillAll kills running calls and what finished calls left behind, and
// refuses new calls.
func TestKillAll(t *testing.T) {
	for _, tt := range detached {
		t.Run(tt.name, func(t *testing.T) {
			s := newSession(t)
			// A finished call leaves a background job behind, on purpose.
			left := s.run("bash", `{"command":"nohup sleep 1000 >/dev/null 2>&1 & echo pid=$!"}`)
			checkResult(t, left, "~[exit 0]", "exit 0", false)
			pids, wait := startBash(t, context.Background(), s, tt.command+"; echo ready; sleep 1000")
			leftPid, err := strconv.Atoi(strings.TrimPrefix(strings.Fields(left.Content)[0], "pid="))
			if err != nil {
				t.Fatal(err)
			}
			pids = append(pids, leftPid)
			for _, pid := range pids {
				if !alive(pid) {
					t.Fatalf("pid %d is not running before KillAll", pid)
				}
			}
			s.env.Procs.KillAll()
			got := wait()
			checkResult(t, got, "~ready\n[killed by SIGKILL]", "killed by SIGKILL", true)
			if left := marked(s.env.Procs); len(left) > 0 {
				t.Errorf("marked processes left after KillAll: %v", left)
			}
			for _, pid := range pids {
				if alive(pid) {
					t.Errorf("pid %d still runs after KillAll", pid)
				}
			}
			checkResult(t, s.run("bash", `{"command":"echo hi"}`), "bash: e is shutting down", "", true)
			s.env.Procs.KillAll() // again: harmless
		})
	}
}

func TestKillAllConcurrent(t *testing.T) {
	s := newSession(t)
	_, wait := startBash(t, context.Background(), s, "setsid sleep 1000 & echo ready; sleep 1000")
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(s.env.Procs.KillAll)
	}
	wg.Wait()
	checkResult(t, wait(), "", "killed by SIGKILL", true)
	if left := marked(s.env.Procs); len(left) > 0 {
		t.Errorf("marked processes left: %v", left)
	}
}

// A call's own kill spares the processes of other calls.
func TestBashCancelSparesOtherCalls(t *testing.T) {
	s := newSession(t)
	other := s.run("bash", `{"command":"nohup sleep 1000 >/dev/null 2>&1 & echo pid=$!"}`)
	pid, err := strconv.Atoi(strings.TrimPrefix(strings.Fields(other.Content)[0], "pid="))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	_, wait := startBash(t, ctx, s, "echo ready; sleep 1000")
	cancel()
	if got := wait(); !got.Stopped {
		t.Errorf("result = %+v; want Stopped", got)
	}
	if !alive(pid) {
		t.Errorf("the other call's background job %d was killed", pid)
	}
}

func TestBashNeedsProcs(t *testing.T) {
	got := Run(context.Background(), &Env{Cwd: t.TempDir()}, "bash", json.RawMessage(`{"command":"true"}`))
	checkResult(t, got, "bash: no process tracker (Env.Procs is nil)", "", true)
}

const subreaperHelperEnv = "E_TOOL_TEST_SUBREAPER_HELPER"

// TestReapsAdoptedOrphans runs subreaperHelper in a child process that is a
// subreaper, as e is when it runs as a container's PID 1: killed detached
// processes are re-parented to it, and must not stay zombies.
func TestReapsAdoptedOrphans(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), subreaperHelperEnv+"=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = reaper.Start(cmd) // this process is a subreaper too: the helper is its own child
	if err == nil {
		err = cmd.Wait()
	}
	if err != nil {
		t.Errorf("helper: %v\n%s", err, out.String())
	}
}

// subreaperHelper becomes a subreaper, cancels a call that left detached
// processes, and reports zombie children left behind.
func subreaperHelper() int {
	const prSetChildSubreaper = 36
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		fmt.Println("prctl:", errno)
		return 1
	}
	dir, err := os.MkdirTemp("", "e-tool-subreaper")
	if err != nil {
		fmt.Println(err)
		return 1
	}
	defer os.RemoveAll(dir)
	procs := NewProcs()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	var once sync.Once
	env := &Env{Cwd: dir, Procs: procs, Output: func(c string) {
		if strings.Contains(c, "ready") {
			once.Do(func() { close(ready) })
		}
	}}
	done := make(chan Result, 1)
	go func() {
		done <- Run(ctx, env, "bash", json.RawMessage(`{"command":"setsid sleep 1000 & (sleep 1000 &); nohup sleep 1000 >/dev/null 2>&1 & echo ready; sleep 1000"}`))
	}()
	<-ready
	cancel()
	if r := <-done; !r.Stopped {
		fmt.Printf("result: %+v\n", r)
		return 1
	}
	// A call that finished normally leaves an orphan; KillAll reaps it too.
	if r := Run(context.Background(), env, "bash", json.RawMessage(`{"command":"(sleep 1000 >/dev/null 2>&1 &)"}`)); r.Failed {
		fmt.Printf("result: %+v\n", r)
		return 1
	}
	adopted := children()
	procs.KillAll()
	if len(adopted) == 0 {
		fmt.Println("no orphan was adopted: the test proves nothing")
		return 1
	}
	if left := children(); len(left) > 0 {
		fmt.Println("children left (zombies?):", left)
		return 1
	}
	return 0
}

// children lists the processes whose parent is this process, with their state.
func children() []string {
	names, _ := readDirNames("/proc")
	var list []string
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		if st, ok := readStat(pid); ok && st.ppid == os.Getpid() {
			list = append(list, fmt.Sprintf("%d:%c", pid, st.state))
		}
	}
	return list
}

func TestSleep(t *testing.T) {
	s := newSession(t)
	checkResult(t, s.run("sleep", `{"ms":1}`), "slept 1 ms", "slept 1 ms", false)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan Result, 1)
	go func() { done <- Run(ctx, s.env, "sleep", json.RawMessage(`{"ms":3600000}`)) }()
	cancel()
	if got := <-done; !got.Stopped || got.Failed || got.Elapsed > time.Second {
		t.Errorf("result = %+v; want Stopped at once", got)
	}
	// The sleep itself, past Run's check of the context.
	got := runSleep(ctx, s.env, args{"ms": int64(3600000)})
	checkResult(t, Result{Content: got.Content, Summary: got.Summary}, "stopped after 0 ms", "stopped", false)
	if !got.Stopped {
		t.Errorf("result = %+v; want Stopped", got)
	}
}

func TestCancelledBeforeStart(t *testing.T) {
	s := newSession(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, name := range Names() {
		if got := Run(ctx, s.env, name, json.RawMessage(`{"command":"touch x","ms":1,"path":"x","content":"","old":"a","new":"b","pattern":"x"}`)); !got.Stopped {
			t.Errorf("%s: result = %+v; want Stopped", name, got)
		}
	}
	if _, err := os.Stat(filepath.Join(s.cwd, "x")); !os.IsNotExist(err) {
		t.Errorf("a stopped call ran: %v", err)
	}
}

// Env.Started: bash calls it once its command runs, before any output, and
// a stop before that (the stop at shutdown comes before KillAll) ends the
// call without it and without running the command; other tools call it as
// they begin, and a call refused for its arguments still began.
func TestStarted(t *testing.T) {
	s := newSession(t)
	calls := 0
	running := -1
	s.env.Started = func() {
		calls++
		s.env.Procs.mu.Lock()
		running = len(s.env.Procs.running)
		s.env.Procs.mu.Unlock()
	}
	s.env.Output = func(string) {
		if calls != 1 {
			t.Errorf("output before Started (%d calls)", calls)
		}
	}
	checkResult(t, s.run("bash", `{"command":"echo hi"}`), "hi\n[exit 0]", "exit 0", false)
	if calls != 1 || running != 1 {
		t.Errorf("bash: Started called %d times, with %d shells running; want once, with 1", calls, running)
	}

	calls = 0
	checkResult(t, s.run("bash", `{"command":""}`), "", "invalid arguments", true)
	checkResult(t, s.run("read", `{"path":"none.txt"}`), "", "", true)
	if calls != 2 {
		t.Errorf("refused calls: Started called %d times; want 2", calls)
	}

	calls = 0
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if got := Run(ctx, s.env, "bash", json.RawMessage(`{"command":"touch x"}`)); !got.Stopped || got.Content != "bash: stopped before it started" {
		t.Errorf("stopped bash: result = %+v; want Stopped before it started", got)
	}
	// Past Run's check of the context, as at shutdown: ctx ended, then KillAll.
	s.env.Procs.KillAll()
	if got := runBash(ctx, s.env, args{"command": "touch x"}); !got.Stopped || got.Content != "bash: stopped before it started" {
		t.Errorf("bash stopped at shutdown: result = %+v; want Stopped before it started", got)
	}
	if calls != 0 {
		t.Errorf("stopped bash: Started called %d times; want none", calls)
	}
	if _, err := os.Stat(filepath.Join(s.cwd, "x")); !os.IsNotExist(err) {
		t.Errorf("a stopped call ran: %v", err)
	}
}

// A stop at shutdown ends the calls' context, then kills every shell: the
// call ends Stopped (killed), whichever its wait sees first.
func TestStopThenKillAll(t *testing.T) {
	s := newSession(t)
	for range 5 {
		ctx, cancel := context.WithCancel(context.Background())
		_, wait := startBash(t, ctx, s, "echo ready; sleep 1000")
		cancel()
		go s.env.Procs.KillAll()
		if got := wait(); !got.Stopped || got.Failed || got.Content != "ready\n[stopped: the command was killed]" {
			t.Fatalf("result = %+v; want Stopped, killed", got)
		}
		s.env.Procs.mu.Lock()
		s.env.Procs.closed = false // the next round
		s.env.Procs.mu.Unlock()
	}
}

// BenchmarkBashCancel measures the time from cancelling a running `sleep 100`
// to Run's return.
func BenchmarkBashCancel(b *testing.B) {
	dir := b.TempDir()
	procs := NewProcs()
	defer procs.KillAll()
	for b.Loop() {
		b.StopTimer()
		ctx, cancel := context.WithCancel(context.Background())
		started := make(chan struct{})
		var once sync.Once
		env := &Env{Cwd: dir, Procs: procs, Output: func(string) { once.Do(func() { close(started) }) }}
		done := make(chan Result, 1)
		go func() { done <- Run(ctx, env, "bash", json.RawMessage(`{"command":"echo started; sleep 100"}`)) }()
		<-started
		b.StartTimer()
		cancel()
		r := <-done
		if !r.Stopped {
			b.Fatalf("result = %+v", r)
		}
	}
}
