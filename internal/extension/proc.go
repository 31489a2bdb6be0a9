package extension

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/e-agent/e/internal/jsonl"
	"github.com/e-agent/e/internal/reaper"
)

// Limits on what an extension may write; past them it is cut off.
const (
	maxExtLine    = 1 << 20 // bytes per stdout line
	maxLinesPerS  = 1000    // stdout lines within one second
	maxOutQueue   = 1024    // lines queued for an extension that does not read its stdin
	maxStderrLine = 4 << 10 // longer stderr lines are truncated
)

// ext is one extension process and the goroutines that serve it.
type ext struct {
	h   *Host
	cfg Config

	cmd    *exec.Cmd
	marker string   // NAME=VALUE in the environment of its every process
	stdin  *os.File // our ends of the pipes
	stdout *os.File
	stderr *os.File

	life   context.Context // ends when the process is gone
	end    context.CancelFunc
	out    chan []byte   // lines for the extension; one forwarder goroutine owns the writer
	noMore chan struct{} // closed when no more lines will be sent (shutdown, death)
	once   sync.Once     // closes noMore
	exited chan struct{} // closed when the process has exited
	done   chan struct{} // closed when every goroutine of this extension has ended

	gate     atomic.Bool
	asking   atomic.Int64 // questions to the person in flight
	stopping atomic.Bool  // Shutdown or Kill: an exit is expected, not a crash
	wg       sync.WaitGroup

	mu      sync.Mutex
	started bool
	dead    string // why the extension is not running; "" while it is
	cut     bool   // cut off: the notice is already out
	nextID  int64
	pending map[int64]pendingCall
	events  map[string]bool
	// questions are the person's questions in flight, each tied to the
	// requests e had pending with the extension when it asked.
	questions map[*question]bool
}

// question is one ui.* question of the extension in flight. calls are the
// requests (tool.call, tool.gate) e had pending with the extension when it
// asked, the ones that may have asked it; once every one of them has ended
// and e stopped waiting for at least one (its turn was interrupted, its gate
// became moot), nobody wants the answer any more and the question ends.
type question struct {
	calls     map[int64]bool
	cancelled bool
	stop      context.CancelCauseFunc
}

// askerKey is the context key of the session a question was asked for.
type askerKey struct{}

// SessionOf returns the session a question passed to UI.Ask was asked
// for: that of the tool calls and gates e had pending with the extension
// when it asked (spec/extensions.md); "" when there were none, or they
// were of several sessions. The session layer routes the ask to that
// session's client by it.
func SessionOf(ctx context.Context) string {
	s, _ := ctx.Value(askerKey{}).(string)
	return s
}

// ErrCallStopped is why a question ends when e no longer waits for the
// call that asked it.
var ErrCallStopped = errors.New("the tool call that asked was interrupted")

// callEnded updates the questions tied to request id: cancelled says e
// stopped waiting for it.
func (e *ext) callEnded(id int64, cancelled bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for q := range e.questions {
		if !q.calls[id] {
			continue
		}
		delete(q.calls, id)
		q.cancelled = q.cancelled || cancelled
		if len(q.calls) == 0 && q.cancelled {
			q.stop(ErrCallStopped)
		}
	}
}

// caller is the session of the requests pending now, when they are all of
// one session: the session a question or notice of the extension is for.
// It is called with e.mu held.
func (e *ext) caller() string {
	session, first := "", true
	for _, c := range e.pending {
		if !first && c.session != session {
			return ""
		}
		session, first = c.session, false
	}
	return session
}

// newQuestion ties a question to the requests pending now; done forgets
// it. ctx names the session those requests are made for (SessionOf).
func (e *ext) newQuestion() (ctx context.Context, done func()) {
	ctx, stop := context.WithCancelCause(e.life)
	q := &question{calls: map[int64]bool{}, stop: stop}
	e.mu.Lock()
	defer e.mu.Unlock()
	for id := range e.pending {
		q.calls[id] = true
	}
	ctx = context.WithValue(ctx, askerKey{}, e.caller())
	if len(q.calls) > 0 {
		if e.questions == nil {
			e.questions = map[*question]bool{}
		}
		e.questions[q] = true
	}
	return ctx, func() {
		e.mu.Lock()
		delete(e.questions, q)
		e.mu.Unlock()
		stop(nil)
	}
}

// pendingCall is a request e sent the extension and waits on; session is
// the session it is made for ("" for initialize).
type pendingCall struct {
	ch      chan reply
	session string
}

type reply struct {
	result json.RawMessage
	err    error
}

func newExt(h *Host, c Config) *ext {
	life, end := context.WithCancel(context.Background())
	return &ext{h: h, cfg: c, life: life, end: end, out: make(chan []byte, maxOutQueue),
		noMore: make(chan struct{}), exited: make(chan struct{}), done: make(chan struct{}),
		pending: make(map[int64]pendingCall), dead: "it has not started"}
}

func (e *ext) noticef(level, format string, args ...any) {
	e.h.notice(Notice{Extension: e.cfg.Name, Level: level, Message: fmt.Sprintf("extension "+e.cfg.Name+" "+format, args...)})
}

// start launches the process and performs the handshake; on any failure
// the extension is left dead with a notice.
func (e *ext) start(ctx context.Context) {
	if err := e.spawn(); err != nil {
		e.noticef("error", "did not start: %v", err)
		e.mu.Lock()
		e.dead = "it did not start: " + err.Error()
		e.mu.Unlock()
		e.end()
		close(e.exited)
		close(e.done)
		return
	}
	ctx, cancel := context.WithTimeout(ctx, e.h.opts.HandshakeTimeout)
	defer cancel()
	res, err := e.call(ctx, "initialize", "", map[string]any{"protocol": Protocol, "e_version": e.h.opts.Version, "extension": e.cfg.Name})
	if err == nil {
		err = e.handshake(res)
	}
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("did not answer initialize within %v", e.h.opts.HandshakeTimeout)
		}
		e.cutOff("failed its handshake: %v", err)
	}
}

func (e *ext) spawn() error {
	path, err := exec.LookPath(e.cfg.Command)
	if err != nil {
		return err
	}
	cmd := exec.Command(path, e.cfg.Args...)
	cmd.Env = os.Environ()
	for k, v := range e.cfg.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	// Every descendant inherits the marker, one that leaves the process
	// group (setsid) included, so that it ends with the extension (D2).
	reaper.Enable()
	e.marker = markerPrefix + randomHex() + "=" + e.cfg.Name
	cmd.Env = append(cmd.Env, e.marker)
	setGroup(cmd)
	// Plain pipes, not cmd.StdoutPipe: Wait must not close our ends while
	// the reader drains what the process wrote just before it exited.
	var files [6]*os.File
	for i := 0; i < 6; i += 2 {
		if files[i], files[i+1], err = os.Pipe(); err != nil {
			closeAll(files[:i]...)
			return err
		}
	}
	cmd.Stdin, e.stdin = files[0], files[1]
	e.stdout, cmd.Stdout = files[2], files[3]
	e.stderr, cmd.Stderr = files[4], files[5]
	err = reaper.Start(cmd)                // e's own child, never taken for an adopted orphan
	closeAll(files[0], files[3], files[5]) // the child's ends
	if err != nil {
		closeAll(files[1], files[2], files[4])
		return err
	}
	e.cmd = cmd
	e.mu.Lock()
	e.started, e.dead = true, ""
	e.mu.Unlock()

	readers := make(chan struct{}, 2)
	e.wg.Add(4)
	go func() { defer e.wg.Done(); defer func() { readers <- struct{}{} }(); e.read() }()
	go func() { defer e.wg.Done(); defer func() { readers <- struct{}{} }(); e.readStderr() }()
	go func() { defer e.wg.Done(); e.forward() }()
	go func() { defer e.wg.Done(); e.reap(readers) }()
	go func() { e.wg.Wait(); close(e.done) }()
	return nil
}

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		if f != nil {
			f.Close()
		}
	}
}

// reap waits for the process to exit, then cleans up after it.
func (e *ext) reap(readers chan struct{}) {
	err := e.cmd.Wait()
	reaper.KillTree(0, e.marker) // children it left behind, in its group or not
	killGroup(e.cmd)
	reaper.Forget(e.cmd.Process.Pid)
	close(e.exited)
	// Let the readers drain what the process wrote before it exited; a
	// descendant outside the group may hold the pipes open, so bound it.
	timeout := time.NewTimer(time.Second)
	defer timeout.Stop()
	for n := 0; n < 2; n++ {
		select {
		case <-readers:
		case <-timeout.C:
			closeAll(e.stdout, e.stderr) // unblocks the readers
			<-readers
		}
	}
	closeAll(e.stdin, e.stdout, e.stderr)

	status := "exited with status 0"
	var xe *exec.ExitError
	switch {
	case errors.As(err, &xe) && xe.ExitCode() >= 0:
		status = fmt.Sprintf("exited with status %d", xe.ExitCode())
	case errors.As(err, &xe):
		status = "ended: " + xe.ProcessState.String()
	case err != nil:
		status = "ended: " + err.Error()
	}
	if e.die("it " + status) {
		e.noticef("error", "%s; its tools are unavailable until e restarts", status)
	}
}

// die marks the extension dead for reason, fails what waits on it, and
// reports whether a crash notice is due (not cut off, not stopped by e).
func (e *ext) die(reason string) bool {
	e.mu.Lock()
	first := e.dead == ""
	if first {
		e.dead = reason
	}
	pending := e.pending
	e.pending = map[int64]pendingCall{}
	crash := first && !e.cut && !e.stopping.Load()
	e.mu.Unlock()
	e.end()
	e.once.Do(func() { close(e.noMore) })
	err := fmt.Errorf("extension %s is not running: %s", e.cfg.Name, e.reason())
	for _, c := range pending {
		c.ch <- reply{err: err}
	}
	return crash
}

func (e *ext) reason() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.dead
}

func (e *ext) running() bool { return e.reason() == "" }

func (e *ext) wants(event string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.dead == "" && e.events[event]
}

// cutOff stops a misbehaving extension: a notice, then SIGKILL.
func (e *ext) cutOff(format string, args ...any) {
	why := fmt.Sprintf(format, args...)
	e.mu.Lock()
	first := !e.cut && e.dead == ""
	e.cut = true
	e.mu.Unlock()
	if first {
		e.noticef("error", "was cut off: %s", why)
	}
	e.die("it was cut off: " + why)
	e.killNow()
}

// killNow kills the process, its group and every descendant unless the
// process was already reaped (its id could then belong to someone else).
// The descendants go first, while their parent chains still lead to it.
func (e *ext) killNow() {
	select {
	case <-e.exited:
	default:
		reaper.KillTree(e.cmd.Process.Pid, e.marker)
		killGroup(e.cmd)
	}
}

// markerPrefix starts the name of the variable that marks an extension's
// processes (spec/extensions.md).
const markerPrefix = "E_EXTENSION_"

func randomHex() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// send queues a line for the extension without blocking. An extension
// that lets maxOutQueue lines pile up is not reading its stdin: cut off.
func (e *ext) send(line []byte) {
	select {
	case <-e.noMore:
		return
	default:
	}
	select {
	case e.out <- line:
	default:
		e.cutOff("it stopped reading its stdin (%d lines queued)", maxOutQueue)
	}
}

// forward owns the jsonl writer on the extension's stdin.
func (e *ext) forward() {
	w := jsonl.NewWriter(e.stdin)
	for {
		select {
		case line := <-e.out:
			w.Write(e.life, line) // fails only once the extension is gone
			continue
		case <-e.noMore:
		}
		// Flush what was queued before noMore, such as the shutdown line.
		for len(e.out) > 0 {
			w.Write(e.life, <-e.out)
		}
		w.Close()       // returns once the lines are written or the pipe broke
		e.stdin.Close() // EOF for the extension
		return
	}
}

// call sends request method and waits for the response, the extension's
// death, or ctx. ctx ending sends a cancel notification.
func (e *ext) call(ctx context.Context, method, session string, params any) (json.RawMessage, error) {
	e.mu.Lock()
	if e.dead != "" {
		e.mu.Unlock()
		return nil, fmt.Errorf("extension %s is not running: %s", e.cfg.Name, e.dead)
	}
	id := e.nextID
	e.nextID++
	ch := make(chan reply, 1)
	e.pending[id] = pendingCall{ch: ch, session: session}
	e.mu.Unlock()

	line, err := json.Marshal(map[string]any{"id": id, "method": method, "params": params})
	if err != nil {
		e.forget(id)
		return nil, err
	}
	e.send(line)
	select {
	case r := <-ch:
		return r.result, r.err
	case <-ctx.Done():
		if e.forget(id) {
			e.send([]byte(`{"method":"cancel","params":{"id":` + strconv.FormatInt(id, 10) + `}}`))
			e.callEnded(id, true)
		}
		return nil, ctx.Err()
	}
}

// forget drops a pending request; false if it was already answered.
func (e *ext) forget(id int64) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	_, ok := e.pending[id]
	delete(e.pending, id)
	return ok
}

// askGate runs tool.gate on this extension; "" allows, anything else is
// the reason to deny.
func (e *ext) askGate(ctx context.Context, session string, params map[string]any, silence time.Duration) string {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type answer struct {
		res json.RawMessage
		err error
	}
	answers := make(chan answer, 1)
	go func() {
		res, err := e.call(ctx, "tool.gate", session, params)
		answers <- answer{res, err}
	}()
	timer := time.NewTimer(silence)
	defer timer.Stop()
	var a answer
	for waiting := true; waiting; {
		select {
		case a = <-answers:
			waiting = false
		case <-timer.C:
			if e.asking.Load() > 0 { // the person is being asked: their time is not the gate's silence
				timer.Reset(silence)
				continue
			}
			cancel()
			<-answers
			return fmt.Sprintf("gate %s did not answer within %v; the call is denied", e.cfg.Name, silence)
		}
	}
	switch {
	case a.err != nil && ctx.Err() != nil:
		return fmt.Sprintf("gate %s: %v", e.cfg.Name, a.err)
	case a.err != nil:
		return fmt.Sprintf("gate %s: %v; the call is denied", e.cfg.Name, a.err)
	}
	var v ToolGateResult
	if json.Unmarshal(a.res, &v) != nil || v.Allow == nil {
		return fmt.Sprintf("gate %s answered without a boolean allow; the call is denied", e.cfg.Name)
	}
	if *v.Allow {
		return ""
	}
	if v.Reason == "" {
		v.Reason = "denied"
	}
	return e.cfg.Name + ": " + v.Reason
}

func (e *ext) handshake(res json.RawMessage) error {
	var r InitializeResult
	if err := json.Unmarshal(res, &r); err != nil {
		return fmt.Errorf("invalid initialize result: %v", err)
	}
	if r.Protocol == nil || *r.Protocol != Protocol {
		return fmt.Errorf("it speaks protocol %s; e speaks %d", string(mustJSON(r.Protocol)), Protocol)
	}
	events := map[string]bool{}
	for _, ev := range r.Events {
		events[ev] = eventNames[ev] // unknown names are ignored: events are additive
	}
	e.mu.Lock()
	e.events = events
	e.mu.Unlock()
	e.gate.Store(r.Gate)
	return e.h.addTools(e, r.Tools, false)
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// shutdown asks the extension to exit, then kills it after grace.
func (e *ext) shutdown(grace time.Duration) {
	if e.cmd == nil {
		return
	}
	e.stopping.Store(true)
	e.send([]byte(`{"method":"shutdown"}`))
	e.once.Do(func() { close(e.noMore) }) // the forwarder flushes, then closes stdin
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-e.exited:
	case <-timer.C:
		e.killNow()
	}
}

func (e *ext) kill() {
	if e.cmd == nil {
		return
	}
	e.stopping.Store(true)
	e.killNow()
}

func (e *ext) read() {
	r := jsonl.NewReader(e.stdout, maxExtLine)
	window, count := time.Now(), 0
	for {
		line, err := r.Next()
		if errors.Is(err, jsonl.ErrTooLong) {
			e.cutOff("it wrote a line longer than %d bytes", maxExtLine)
			return
		}
		if err != nil {
			return // EOF, or the pipe closed by reap
		}
		if now := time.Now(); now.Sub(window) >= time.Second {
			window, count = now, 0
		}
		if count++; count > maxLinesPerS {
			e.cutOff("it wrote more than %d lines in one second", maxLinesPerS)
			return
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		var env Envelope
		if line[0] != '{' || json.Unmarshal(line, &env) != nil {
			e.cutOff("it wrote a line that is not a protocol message: %q", clip(line, 80))
			return
		}
		if env.Method != "" {
			e.request(env)
			continue
		}
		e.response(env)
	}
}

func clip(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

func (e *ext) response(env Envelope) {
	id, err := strconv.ParseInt(string(env.ID), 10, 64)
	if err != nil {
		return // not an id e used: nothing waits for it
	}
	e.mu.Lock()
	c, ok := e.pending[id]
	delete(e.pending, id)
	e.mu.Unlock()
	if !ok {
		return // answered after e stopped waiting (cancel)
	}
	e.callEnded(id, false)
	if len(env.Error) > 0 && string(env.Error) != "null" {
		var msg string
		if json.Unmarshal(env.Error, &msg) != nil {
			msg = string(env.Error)
		}
		c.ch <- reply{err: errors.New(msg)}
		return
	}
	c.ch <- reply{result: env.Result}
}

// respond answers the extension's request id (nothing for a notification).
func (e *ext) respond(id json.RawMessage, result any, errMsg string) {
	if len(id) == 0 || string(id) == "null" {
		return
	}
	msg := map[string]any{"id": id}
	if errMsg != "" {
		msg["error"] = errMsg
	} else {
		msg["result"] = result
	}
	e.send(mustJSON(msg))
}

func (e *ext) request(env Envelope) {
	switch m := env.Method; {
	case m == "ui.confirm" || m == "ui.select" || m == "ui.input" || m == "ui.editor":
		if len(env.ID) == 0 || string(env.ID) == "null" {
			return // a question without an id has nowhere to get its answer
		}
		e.asking.Add(1)
		e.wg.Add(1)
		ctx, done := e.newQuestion() // before the goroutine: the calls pending as it asks
		go func() {
			defer e.wg.Done()
			defer e.asking.Add(-1)
			defer done()
			e.ask(ctx, env)
		}()
	case m == "ui.notify" || m == "ui.show":
		// ui.notify's params are ui.show's less title, which e reads in both.
		var p UIShowParams
		json.Unmarshal(env.Params, &p) // a malformed params object still yields a notice
		switch p.Level {
		case "info", "warning", "error":
		default:
			p.Level = "info"
		}
		message := p.Title
		if p.Message != nil && *p.Message != "" {
			message = *p.Message
		}
		e.mu.Lock()
		session := e.caller()
		e.mu.Unlock()
		if !e.h.notice(Notice{Extension: e.cfg.Name, Level: p.Level, Message: message, Method: m, Params: env.Params, Session: session}) {
			e.respond(env.ID, nil, m+" was dropped: too many notices are waiting for the client")
			return
		}
		e.respond(env.ID, struct{}{}, "")
	case m == "tools.register":
		var p ToolsRegisterParams
		if err := json.Unmarshal(env.Params, &p); err != nil {
			e.respond(env.ID, nil, "tools.register: params must be {tools:[{name, description, parameters}]}")
			return
		}
		if err := e.h.addTools(e, p.Tools, true); err != nil {
			e.respond(env.ID, nil, "tools.register: "+err.Error())
			return
		}
		e.respond(env.ID, struct{}{}, "")
	case strings.HasPrefix(m, "ui.") || strings.HasPrefix(m, "session."):
		e.respond(env.ID, nil, m+" is not available: e has no terminal")
	default:
		e.respond(env.ID, nil, "unknown method "+m)
	}
}

// ask relays a question to the person. It runs on its own goroutine so the
// reader keeps serving the extension while the person thinks.
func (e *ext) ask(ctx context.Context, env Envelope) {
	params := env.Params
	if len(params) == 0 || string(params) == "null" {
		params = json.RawMessage(`{}`)
	}
	var p QuestionParams
	if json.Unmarshal(params, &p) != nil {
		e.respond(env.ID, nil, env.Method+": params must be an object")
		return
	}
	asked := ctx
	if p.TimeoutMS > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, time.Duration(p.TimeoutMS*float64(time.Millisecond)),
			fmt.Errorf("no answer within %v ms", p.TimeoutMS))
		defer cancel()
	}
	res, err := e.h.ui.Ask(ctx, e.cfg.Name, env.Method, params)
	switch {
	case e.life.Err() != nil:
		return // the extension is gone; nobody to answer
	case asked.Err() != nil: // the call that asked was interrupted
		e.respond(env.ID, cancelled, "")
	case ctx.Err() != nil: // timeout_ms elapsed
		e.h.notice(Notice{Extension: e.cfg.Name, Level: "warning", Session: SessionOf(asked),
			Message: fmt.Sprintf("extension %s asked %s and got no answer within %v ms; the question was cancelled", e.cfg.Name, env.Method, p.TimeoutMS)})
		e.respond(env.ID, cancelled, "")
	case errors.Is(err, ErrNoUI):
		e.respond(env.ID, nil, env.Method+" was refused: there is no client to ask (e -p, or e rpc without hello ask:true)")
	case err != nil:
		e.respond(env.ID, nil, env.Method+" failed: "+err.Error())
	case len(res) == 0 || string(res) == "null":
		e.respond(env.ID, cancelled, "")
	default:
		e.respond(env.ID, res, "")
	}
}

// readStderr forwards the extension's stderr to e's, each line prefixed
// with its name. Lines are dropped rather than block the extension.
func (e *ext) readStderr() {
	r := bufio.NewReaderSize(e.stderr, maxStderrLine)
	for {
		line, err := r.ReadSlice('\n')
		if len(line) > 0 {
			out := make([]byte, 0, len(line)+len(e.cfg.Name)+12)
			out = append(out, "extension "+e.cfg.Name+": "...)
			out = append(out, bytes.TrimRight(line, "\r\n")...)
			out = append(out, '\n')
			select {
			case e.h.stderr <- out:
			default:
			}
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			for errors.Is(err, bufio.ErrBufferFull) { // skip the rest of an overlong line
				_, err = r.ReadSlice('\n')
			}
			if err != nil {
				return
			}
		case err != nil:
			return
		}
	}
}
