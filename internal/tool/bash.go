package tool

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/e-agent/e/internal/reaper"
	"github.com/e-agent/e/internal/sandbox"
)

const (
	defaultBashTimeout = 120_000 // ms
	maxBashTimeout     = 600_000 // ms
	maxBashOutput      = 64 << 10
	// outputGrace is how long output is still collected after the shell has
	// exited, while a background job keeps the pipe open.
	outputGrace = 250 * time.Millisecond
	// killPatience bounds how long a kill keeps finding and killing marked
	// processes (one that forks as fast as it is killed, or hangs in the kernel).
	killPatience = 2 * time.Second
	// markerPrefix starts the name of the environment variable that marks every
	// process a bash call starts: markerPrefix + <Procs id> = <call id>.
	markerPrefix = "E_TOOL_CALL_"
)

var bashTool = &builtin{
	spec: Spec{
		Name:     "bash",
		Category: "execute",
		Description: "Run a command with /bin/bash -c in the working directory. stdin is empty; stdout and " +
			"stderr are combined and the last 64 KiB are returned with the exit status. Default timeout " +
			"120000 ms, at most 600000. Background jobs (cmd &) keep running after the call but must " +
			"redirect their output (cmd >log 2>&1 &); all are killed when e exits.",
	},
	params: []param{
		{name: "command", kind: kString, required: true, nonEmpty: true, desc: "The bash command line to run."},
		{name: "timeout_ms", kind: kInteger, min: 1, max: maxBashTimeout, desc: "Kill the command after this many milliseconds (default 120000)."},
	},
	target:     "command",
	run:        runBash,
	startsLate: true, // once the command runs: execBash
}

// Procs tracks every process started by bash calls of this e process so none
// outlives e. Each call's shell runs in a process group of its own and carries
// the environment variable E_TOOL_CALL_<procs id>=<call id>, which every
// descendant inherits, detached ones (setsid, nohup, disown) included; killing
// finds them by scanning /proc/*/environ, and finds a process without the
// variable (env -i) by its parent chain. One that also leaves the group and
// loses its parent ((env -i setsid cmd &)) re-parents to e, which NewProcs
// makes a child subreaper ([reaper.Enable]): such an adopted orphan is
// killed with every call that was running when it started, and by KillAll.
type Procs struct {
	key string // the marker variable's name, unique to this Procs

	mu     sync.Mutex
	closed bool // KillAll was called: no new shells
	// running maps the pid of each running shell, which is also its process
	// group id, to a channel closed once cmd.Wait has reaped it.
	running map[int]chan struct{}
}

// NewProcs returns an empty tracker.
func NewProcs() *Procs {
	reaper.Enable()
	return &Procs{key: markerPrefix + randomHex(), running: map[int]chan struct{}{}}
}

// KillAll sends SIGKILL to every running bash process group and to every
// process carrying this tracker's marker, detached descendants and leftovers
// of finished calls included, until none is left; it returns once the shells
// are reaped and the killed processes that became e's own children are reaped
// too. Later bash calls fail: KillAll is meant for shutdown (D1, D2). It is
// safe to call many times and concurrently.
func (p *Procs) KillAll() {
	p.mu.Lock()
	p.closed = true
	var groups []int
	var done []chan struct{}
	for pid, reaped := range p.running {
		groups = append(groups, pid)
		done = append(done, reaped)
	}
	p.mu.Unlock()
	killed := p.kill(groups, func(string) bool { return true }, 0)
	timeout := time.NewTimer(killPatience)
	defer timeout.Stop()
wait:
	for _, d := range done {
		select {
		case <-d:
		case <-timeout.C:
			break wait
		}
	}
	p.reap(killed, groups)
	reaper.ReapAdopted()
}

// errNotStarted: ctx ended before the command could start.
var errNotStarted = errors.New("stopped before it started")

// start starts cmd and records it; under the lock, so KillAll either sees it
// or has already refused it. A stop (ctx) that came first, as it comes
// before KillAll at shutdown, refuses it with errNotStarted.
func (p *Procs) start(ctx context.Context, cmd *exec.Cmd) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if ctx.Err() != nil {
		return errNotStarted
	}
	if p.closed {
		return errors.New("e is shutting down")
	}
	if err := reaper.Start(cmd); err != nil {
		return err
	}
	p.running[cmd.Process.Pid] = make(chan struct{})
	return nil
}

// finished forgets a shell once cmd.Wait has reaped it.
func (p *Procs) finished(pid int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if reaped, ok := p.running[pid]; ok {
		close(reaped)
		delete(p.running, pid)
	}
	reaper.Forget(pid)
}

func (p *Procs) isShell(pid int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.running[pid]
	return ok
}

// killCall kills the shell's group, every process carrying the call's
// marker, and the orphans e adopted since the call started (ticks).
func (p *Procs) killCall(pid int, call string, started uint64) map[int]uint64 {
	return p.kill([]int{pid}, func(v string) bool { return v == call }, started)
}

// kill sends SIGKILL to the groups and to the live processes scan finds,
// scanning /proc again until a scan finds none. It returns the processes it
// killed, with their start times.
func (p *Procs) kill(groups []int, match func(call string) bool, adoptedSince uint64) map[int]uint64 {
	killed := map[int]uint64{}
	kill := func(pids []int) {
		for _, pid := range pids {
			if st, ok := readStat(pid); ok {
				killed[pid] = st.start
			}
			_ = syscall.Kill(pid, syscall.SIGKILL) // ESRCH: already gone
		}
	}
	// Scan first: once the group is killed, its members can no longer be
	// recognised, and reap needs to know them.
	pids := p.scan(match, adoptedSince)
	for _, g := range groups {
		_ = syscall.Kill(-g, syscall.SIGKILL)
	}
	deadline := time.Now().Add(killPatience)
	for pause := 50 * time.Microsecond; len(pids) > 0 && time.Now().Before(deadline); pause = min(2*pause, 10*time.Millisecond) {
		kill(pids)
		time.Sleep(pause) // let the kernel finish the killed processes before looking again
		pids = p.scan(match, adoptedSince)
	}
	return killed
}

// reap waits for killed processes that end up as e's own zombies: orphans are
// re-parented to e when e is a subreaper or PID 1 (a container's init). It
// follows each killed process, and each member of the killed groups that e
// adopted, until it is gone or a zombie of another parent: re-parenting
// happens only when its parent has exited. Shells are left to cmd.Wait, and a
// process is recognised by its start time, so this never takes another
// child's exit status.
func (p *Procs) reap(killed map[int]uint64, groups []int) {
	self := os.Getpid()
	deadline := time.Now().Add(killPatience)
	for pause := 50 * time.Microsecond; ; pause = min(2*pause, 10*time.Millisecond) {
		// A member the group kill ended before any scan saw it is known by its group.
		if names, err := readDirNames("/proc"); err == nil && len(groups) > 0 {
			for _, name := range names {
				pid, err := strconv.Atoi(name)
				if err != nil {
					continue
				}
				if st, ok := readStat(pid); ok && st.ppid == self && slices.Contains(groups, st.pgrp) {
					if _, known := killed[pid]; !known {
						killed[pid] = st.start
					}
				}
			}
		}
		for pid, start := range killed {
			st, ok := readStat(pid)
			switch {
			case !ok || st.start != start:
				delete(killed, pid) // gone
			case st.ppid == self:
				if p.isShell(pid) {
					delete(killed, pid)
					continue
				}
				var ws syscall.WaitStatus
				if st.state == 'Z' {
					if wpid, _ := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil); wpid == pid {
						delete(killed, pid)
					}
				}
			default:
				if _, dying := killed[st.ppid]; !dying && !p.isShell(st.ppid) {
					delete(killed, pid) // a live parent other than e reaps it
				}
			}
		}
		if len(killed) == 0 || time.Now().After(deadline) {
			return
		}
		time.Sleep(pause)
	}
}

// scan returns the live processes to kill: those whose marker value
// satisfies match; those without a marker (env -i, or in the middle of an
// execve, when environ reads empty for a moment) below a marked one; and the
// orphans e adopted that started at adoptedSince or later (clock ticks after
// boot), with everything below them. Parent chains are followed through
// processes that are exiting, whose children are about to be re-parented.
func (p *Procs) scan(match func(call string) bool, adoptedSince uint64) []int {
	names, err := readDirNames("/proc")
	if err != nil {
		return nil
	}
	prefix := []byte(p.key + "=")
	self := os.Getpid()
	stats := map[int]procStat{}
	take := map[int]bool{}   // marked, then adopted roots
	others := map[int]bool{} // marked by another call: never taken as adopted
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil || pid == self {
			continue
		}
		st, ok := readStat(pid)
		if !ok || st.flags&pfKthread != 0 {
			continue
		}
		stats[pid] = st
		env, err := os.ReadFile("/proc/" + name + "/environ")
		if err != nil {
			continue // gone, or not ours to read
		}
		for _, kv := range bytes.Split(env, []byte{0}) {
			if v, ok := bytes.CutPrefix(kv, prefix); ok {
				if match(string(v)) {
					take[pid] = true
				} else {
					others[pid] = true
				}
				break
			}
		}
	}
	reaper.Classify(func(own func(int) bool) {
		for pid, st := range stats {
			// Start times tick every 10 ms, so a finished call's background
			// job can look as young as this call: its marker tells them apart.
			if st.ppid == self && !own(pid) && !others[pid] && !st.dead() && st.start >= adoptedSince {
				take[pid] = true
			}
		}
	})
	var pids []int
	for pid, st := range stats {
		if st.dead() {
			continue
		}
		// Below a marked or adopted process? Chains are short; the bound
		// only guards against a cycle seen across changing reads.
		for q, n := pid, 0; n < 64; n++ {
			if take[q] {
				pids = append(pids, pid)
				break
			}
			up, ok := stats[q]
			if !ok || up.ppid == self || up.ppid <= 1 {
				break
			}
			q = up.ppid
		}
	}
	return pids
}

const (
	pfExiting  = 0x00000004 // PF_EXITING in the flags of /proc/<pid>/stat
	pfKthread  = 0x00200000 // PF_KTHREAD
	clockTicks = 100        // USER_HZ: the unit of start times, 100 on every Linux architecture
)

// uptimeTicks returns the time since boot in clock ticks.
func uptimeTicks() (uint64, error) {
	data, err := os.ReadFile("/proc/uptime")
	if err != nil {
		return 0, err
	}
	secs, _, _ := strings.Cut(string(data), " ")
	f, err := strconv.ParseFloat(secs, 64)
	if err != nil {
		return 0, err
	}
	return uint64(f * clockTicks), nil
}

func readDirNames(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}

// procStat is what reap needs of /proc/<pid>/stat.
type procStat struct {
	state byte
	ppid  int
	pgrp  int
	flags uint64
	start uint64 // clock ticks after boot: with the pid, identifies a process
}

// dead reports whether the process has exited or is exiting.
func (st procStat) dead() bool {
	return st.state == 'Z' || st.state == 'X' || st.flags&pfExiting != 0
}

func readStat(pid int) (procStat, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, false
	}
	// The command name in parentheses may hold anything; fields resume after the last ')'.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return procStat{}, false
	}
	f := strings.Fields(string(data[i+1:])) // f[0] is field 3, state
	if len(f) < 20 || len(f[0]) != 1 {
		return procStat{}, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	pgrp, err2 := strconv.Atoi(f[2])
	flags, err3 := strconv.ParseUint(f[6], 10, 64)  // field 9
	start, err4 := strconv.ParseUint(f[19], 10, 64) // field 22
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
		return procStat{}, false
	}
	return procStat{state: f[0][0], ppid: ppid, pgrp: pgrp, flags: flags, start: start}, true
}

func randomHex() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on Linux
	return hex.EncodeToString(b[:])
}

// piLog returns env with its Output also feeding a new outputLog, and that
// log, when env asks for pi's output; else env and nil.
func piLog(env *Env) (*Env, *outputLog) {
	if !env.SpillOutput {
		return env, nil
	}
	log := &outputLog{prefix: "pi-bash"}
	e := *env
	e.Output = func(chunk string) {
		log.write(chunk)
		if env.SpillUpdate != nil {
			env.SpillUpdate(log.snapshot())
		}
		if env.Output != nil {
			env.Output(chunk)
		}
	}
	return &e, log
}

func runBash(ctx context.Context, env *Env, a args) Result {
	if env.Procs == nil {
		return failure("no process tracker", "bash: no process tracker (Env.Procs is nil)")
	}
	timeout := time.Duration(a.integer("timeout_ms", defaultBashTimeout)) * time.Millisecond
	env, log := piLog(env)
	r := execBash(ctx, env, a.str("command"), timeout)
	if errors.Is(r.err, errNotStarted) {
		return notStarted("bash")
	}
	if r.err != nil {
		return failure("failed", "bash: %v", r.err)
	}
	var b strings.Builder
	var details json.RawMessage
	if log == nil {
		b.WriteString(r.out.String())
	} else {
		t, path, err := log.finish()
		if err != nil {
			return failure("failed", "%v", err)
		}
		b.WriteString(t.Content)
		if t.Truncated {
			b.WriteString("\n\n" + log.note(t, path))
		}
		details = log.details(t, path)
	}
	if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
		b.WriteByte('\n')
	}
	switch {
	case r.cancelled:
		b.WriteString("[stopped: the command was killed]")
		return stopped(b.String())
	case r.timedOut:
		fmt.Fprintf(&b, "[timed out after %d ms: the command was killed]", timeout.Milliseconds())
		return Result{Content: b.String(), Summary: "timed out", Failed: true}
	case r.waitErr != nil:
		fmt.Fprintf(&b, "[%v]", r.waitErr)
		return Result{Content: b.String(), Summary: "failed", Failed: true}
	}
	summary := fmt.Sprintf("exit %d", r.status.ExitStatus())
	if r.status.Signaled() {
		summary = "killed by " + signalName(r.status.Signal())
	}
	b.WriteString("[" + summary + "]")
	if r.status.ExitStatus() != 0 {
		summary += denied(env.Sandbox, r.out.String())
	}
	res := Result{Content: b.String(), Summary: summary, Failed: r.status.ExitStatus() != 0}
	if r.status.Exited() {
		code := r.status.ExitStatus()
		res.Shell = &ShellResult{Output: string(r.out.kept()), Truncated: r.out.truncated(), ExitCode: &code}
		if log != nil {
			// pi's bash gives the whole output as data (its head and tail
			// past 1 MiB), and the details of a cut one.
			out, cut, err := log.full()
			if err != nil {
				return failure("failed", "bash: full output file: %v", err)
			}
			res.Shell.Output, res.Shell.Truncated, res.Details = out, cut, details
			if cut {
				res.Shell.FullOutputPath = log.path
			}
		}
	}
	return res
}

// denied is what a failed command's summary adds when it was sandboxed
// and its output carries the error the sandbox gives (W5): a guess from
// the words, as the command's own error is all the kernel reports.
func denied(p sandbox.Policy, out string) string {
	if !p.Sandboxed() {
		return ""
	}
	var what []string
	if strings.Contains(out, "Permission denied") || strings.Contains(out, "Read-only file system") {
		what = append(what, "a write") // or a unix socket: EACCES too
	}
	if !p.Network && strings.Contains(out, "Network is unreachable") {
		what = append(what, "a connection")
	}
	if len(what) == 0 {
		return ""
	}
	return " (the sandbox denied " + strings.Join(what, " and ") + ")"
}

// ShellResult is how a user's shell command ended (Shell).
type ShellResult struct {
	Output    string // the last 64 KiB of stdout and stderr, combined (the bash tool under SpillOutput: all of it, its head and tail past 1 MiB)
	Truncated bool   // some output was dropped
	ExitCode  *int   // nil when it did not exit by itself: stopped, timed out, killed by a signal
	Stopped   bool   // ctx ended first: the command was killed
	TimedOut  bool   // it ran past its timeout and was killed
	// FullOutputPath names the file with the whole output when Output is
	// a part of it (Env.SpillOutput).
	FullOutputPath string
}

// Shell runs a user's command line the way the bash tool runs the
// model's (its own process group, tracked by env.Procs, killed with its
// descendants when ctx ends or timeout passes), streaming its output to
// env.Output. Its error is a failure to start it.
func Shell(ctx context.Context, env *Env, command string, timeout time.Duration) (ShellResult, error) {
	if env == nil || env.Procs == nil || !filepath.IsAbs(env.Cwd) {
		return ShellResult{}, errors.New("shell: no process tracker or no absolute working directory")
	}
	env, log := piLog(env)
	var clean *sanitizer
	if log != nil { // as pi's, a user's command's output is sanitised, for the log too
		clean = &sanitizer{out: env.Output}
		e := *env
		e.Output = clean.write
		env = &e
	}
	r := execBash(ctx, env, command, timeout)
	if clean != nil {
		clean.flush()
	}
	if errors.Is(r.err, errNotStarted) {
		return ShellResult{Stopped: true}, nil
	}
	if r.err != nil {
		return ShellResult{}, fmt.Errorf("shell: %w", r.err)
	}
	out := ShellResult{Output: string(r.out.kept()), Truncated: r.out.truncated(), Stopped: r.cancelled, TimedOut: r.timedOut}
	if log != nil {
		t, path, err := log.finish()
		if err != nil {
			return ShellResult{}, fmt.Errorf("shell: %w", err)
		}
		out.Output = t.Content // sanitised, all of it when it is not cut
		if t.Truncated {
			out.Truncated, out.FullOutputPath = true, path
		}
	}
	if !r.cancelled && !r.timedOut && r.waitErr == nil && r.status.Exited() {
		code := r.status.ExitStatus()
		out.ExitCode = &code
	}
	return out, nil
}

// bashRun is how one /bin/bash -c ended.
type bashRun struct {
	out                 *tail
	cancelled, timedOut bool
	waitErr             error // not an exit status: the wait itself failed
	status              syscall.WaitStatus
	err                 error // it could not start
}

// execBash runs command with /bin/bash -c in env.Cwd until it exits, ctx
// ends or timeout passes; then its process group and every process it
// started are killed. It calls env.Started once the command runs.
func execBash(ctx context.Context, env *Env, command string, timeout time.Duration) bashRun {
	call := randomHex()
	started, _ := uptimeTicks()
	started = max(started, 1) - 1 // a tick of slack for the rounding of /proc/uptime
	pr, pw, err := os.Pipe()
	if err != nil {
		return bashRun{err: err}
	}
	cmd := exec.Command("/bin/bash", "-c", command)
	cmd.Dir = env.Cwd
	// PWD as os/exec sets it when it builds the environment itself.
	cmd.Env = append(os.Environ(), "PWD="+env.Cwd, env.Procs.key+"="+call)
	cmd.Stdout, cmd.Stderr = pw, pw // stdin stays nil: /dev/null
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := sandbox.Command(cmd, env.Sandbox, env.Cwd, env.TempDir); err != nil {
		pw.Close()
		pr.Close()
		return bashRun{err: err}
	}
	err = env.Procs.start(ctx, cmd)
	pw.Close()
	if err != nil {
		pr.Close()
		return bashRun{err: err}
	}
	pid := cmd.Process.Pid
	env.started()

	r := bashRun{out: &tail{max: maxBashOutput}}
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		stream(pr, r.out, env.Output)
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var waitErr error
	ended := false // waitErr holds the shell's end
	select {
	case waitErr = <-exited:
		ended = true
		// A stop at shutdown ends ctx, then KillAll kills the shell: it
		// may die before this select sees ctx end. It was stopped all the
		// same, whichever came first here.
		r.cancelled = ctx.Err() != nil && cmd.ProcessState != nil && !cmd.ProcessState.Exited()
	case <-ctx.Done():
		r.cancelled = true
	case <-timer.C:
		r.timedOut = true
	}
	if r.cancelled || r.timedOut {
		killed := env.Procs.killCall(pid, call, started)
		if !ended {
			waitErr = <-exited
		}
		env.Procs.finished(pid)
		env.Procs.reap(killed, []int{pid})
	} else {
		env.Procs.finished(pid)
	}
	reaper.ReapAdopted()

	// The output ends when the last writer closes the pipe; a background job
	// that did not redirect its output would hold it open forever.
	grace := time.NewTimer(outputGrace)
	defer grace.Stop()
	select {
	case <-readDone:
	case <-grace.C:
	}
	pr.Close() // ends a pending read
	<-readDone

	var ee *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &ee) {
		r.waitErr = waitErr
	} else {
		r.status = cmd.ProcessState.Sys().(syscall.WaitStatus)
	}
	return r
}

func signalName(s syscall.Signal) string {
	if s == syscall.SIGKILL {
		return "SIGKILL"
	}
	return fmt.Sprintf("signal %d (%v)", int(s), s)
}

// stream copies r into out and hands each chunk to output, holding back a
// UTF-8 sequence cut at a chunk's end until its remaining bytes arrive, so
// every chunk is valid text if the output is.
func stream(r io.Reader, out *tail, output func(string)) {
	buf := make([]byte, 32<<10)
	var pending []byte
	for {
		n, err := r.Read(buf)
		if n > 0 {
			out.Write(buf[:n])
			if output != nil {
				pending = append(pending, buf[:n]...)
				if cut := validPrefix(pending); cut > 0 {
					output(string(pending[:cut]))
					pending = append(pending[:0], pending[cut:]...)
				}
			}
		}
		if err != nil {
			break
		}
	}
	if len(pending) > 0 {
		output(string(pending))
	}
}

// tail keeps the last max bytes written to it.
type tail struct {
	max     int
	buf     []byte
	dropped int64
}

func (t *tail) Write(p []byte) {
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > t.max { // trim in batches: amortised O(1)
		t.buf = append(t.buf[:0], t.buf[over:]...)
		t.dropped += int64(over)
	}
}

// String returns the kept output, starting at a character boundary, with a
// note when the beginning was dropped.
func (t *tail) String() string {
	b, dropped := t.cut()
	if dropped == 0 {
		return string(b)
	}
	return fmt.Sprintf("[output truncated: the first %d bytes are not shown]\n%s", dropped, b)
}

// kept returns the kept output, starting at a character boundary.
func (t *tail) kept() []byte {
	b, _ := t.cut()
	return b
}

// truncated reports whether output was dropped.
func (t *tail) truncated() bool { return t.dropped > 0 || len(t.buf) > t.max }

// cut returns the last max bytes, from a character boundary, and how many
// bytes came before them.
func (t *tail) cut() ([]byte, int64) {
	b := t.buf
	dropped := t.dropped
	if over := len(b) - t.max; over > 0 {
		b, dropped = b[over:], dropped+int64(over)
	}
	if dropped == 0 {
		return b, 0
	}
	for n := 0; n < utf8.UTFMax && len(b) > 0 && !utf8.RuneStart(b[0]); n++ {
		b, dropped = b[1:], dropped+1
	}
	return b, dropped
}
