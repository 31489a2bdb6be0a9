package extension

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime/debug"
	"sync"
	"time"
)

// Protocol is the extension protocol version e speaks.
const Protocol = 1

// Options tune a Host. The zero value is what Start uses.
type Options struct {
	Version          string        // e's version for initialize; "" = the module version of the binary
	Stderr           io.Writer     // where extension stderr lines go, prefixed with the name; nil = os.Stderr
	HandshakeTimeout time.Duration // 0 = defaultHandshake
	GateTimeout      time.Duration // silence a gate may keep while none of its questions is pending; 0 = 10 s
}

// defaultHandshake bounds the wait for initialize. An interpreter that
// imports a few libraries on a loaded machine can take seconds to start, and
// an extension left out is worse than a slower start.
const defaultHandshake = 10 * time.Second

// Host runs the extension processes of one e process (X1).
type Host struct {
	ui   UI
	opts Options
	exts []*ext

	mu      sync.Mutex
	tools   []registered // in registration order
	closing bool

	notices noticeQueue
	stderr  chan []byte
	stopped sync.Once
	wg      sync.WaitGroup // the notice and stderr goroutines
}

type registered struct {
	Tool
	ext *ext
}

// Start starts each extension once and performs its handshake. It never
// fails: an extension that cannot start, or does not complete the handshake
// within the timeout, yields a Notice and is left out. ctx bounds start-up
// only; the processes run until Shutdown or Kill.
func Start(ctx context.Context, cfgs []Config, ui UI) *Host {
	return StartWith(ctx, cfgs, ui, Options{})
}

// StartWith is Start with options.
func StartWith(ctx context.Context, cfgs []Config, ui UI, opts Options) *Host {
	if opts.Version == "" {
		opts.Version = "dev"
		if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
			opts.Version = bi.Main.Version
		}
	}
	if opts.Stderr == nil {
		opts.Stderr = os.Stderr
	}
	if opts.HandshakeTimeout <= 0 {
		opts.HandshakeTimeout = defaultHandshake
	}
	if opts.GateTimeout <= 0 {
		opts.GateTimeout = 10 * time.Second
	}
	h := &Host{ui: ui, opts: opts, stderr: make(chan []byte, 256)}
	h.notices.wake = make(chan struct{}, 1)
	h.wg.Add(2)
	go h.deliverNotices()
	go h.forwardStderr()

	var wg sync.WaitGroup
	for _, c := range cfgs {
		e := newExt(h, c)
		h.exts = append(h.exts, e)
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.start(ctx)
		}()
	}
	wg.Wait()
	return h
}

// Tools returns the tools of the extensions that are running.
func (h *Host) Tools() []Tool {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []Tool
	for _, r := range h.tools {
		if r.ext.running() {
			out = append(out, r.Tool)
		}
	}
	return out
}

// CallTool runs an extension tool. A failure of any kind (unknown tool, the
// extension gone, an error response, ctx ended) comes back as failed
// content that names the reason.
func (h *Host) CallTool(ctx context.Context, session, name string, args json.RawMessage) (content string, failed bool) {
	e := h.owner(name)
	if e == nil {
		return fmt.Sprintf("no extension tool named %q", name), true
	}
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	res, err := e.call(ctx, "tool.call", session, map[string]any{"session": session, "name": name, "arguments": args})
	if err != nil {
		return fmt.Sprintf("%s: %v", name, err), true
	}
	var out ToolCallResult
	if json.Unmarshal(res, &out) != nil || out.Content == nil {
		return fmt.Sprintf("%s: extension %s answered tool.call without a content string", name, e.cfg.Name), true
	}
	return *out.Content, out.Failed
}

func (h *Host) owner(tool string) *ext {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range h.tools {
		if r.Name == tool {
			return r.ext
		}
	}
	return nil
}

// Gate asks every extension that declared a gate whether a tool call may
// run; one deny wins. A gate fails closed: if its extension is gone, answers
// with an error, is silent for GateTimeout while none of its questions to
// the person is pending, or ctx ends, the call is denied with that reason.
func (h *Host) Gate(ctx context.Context, session, name string, args json.RawMessage) (allow bool, reason string) {
	var gates []*ext
	for _, e := range h.exts {
		if e.gate.Load() {
			gates = append(gates, e)
		}
	}
	if len(gates) == 0 {
		return true, ""
	}
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	params := map[string]any{"session": session, "name": name, "arguments": args}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	denials := make(chan string, len(gates))
	for _, e := range gates {
		go func() { denials <- e.askGate(ctx, session, params, h.opts.GateTimeout) }()
	}
	for range gates {
		if r := <-denials; r != "" && reason == "" {
			reason = r
			cancel() // the other gates need not decide any more
		}
	}
	return reason == "", reason
}

// eventNames are the lifecycle events an extension may subscribe to.
var eventNames = map[string]bool{
	"session.created": true, "session.closed": true, "turn.start": true,
	"turn.end": true, "tool.call": true, "tool.result": true,
}

// Notify sends a lifecycle event to the extensions that subscribed to it,
// without waiting. data should marshal to a JSON object; its fields are
// sent beside "event".
func (h *Host) Notify(event string, data any) {
	params := map[string]any{}
	if data != nil {
		b, err := json.Marshal(data)
		if err != nil || json.Unmarshal(b, &params) != nil {
			params = map[string]any{"data": json.RawMessage(b)}
		}
	}
	params["event"] = event
	line, err := json.Marshal(map[string]any{"method": "event", "params": params})
	if err != nil {
		return // data that cannot be marshalled is a caller bug; events are best effort
	}
	h.mu.Lock()
	closing := h.closing
	h.mu.Unlock()
	if closing {
		return
	}
	for _, e := range h.exts {
		if e.wants(event) {
			e.send(line)
		}
	}
}

// Shutdown sends each extension the shutdown notification and closes its
// stdin, waits up to grace for it to exit, then kills its process group.
// It returns when every process is gone and every goroutine has ended.
func (h *Host) Shutdown(grace time.Duration) {
	h.stop(func(e *ext) { e.shutdown(grace) })
}

// Kill kills every extension's process group at once (SIGKILL) and waits
// for the host's goroutines (D2).
func (h *Host) Kill() {
	h.stop(func(e *ext) { e.kill() })
}

func (h *Host) stop(how func(*ext)) {
	h.mu.Lock()
	h.closing = true
	h.mu.Unlock()
	var wg sync.WaitGroup
	for _, e := range h.exts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			how(e)
			<-e.done
		}()
	}
	wg.Wait()
	h.stopped.Do(func() {
		close(h.stderr)
		h.notices.close()
		h.wg.Wait()
	})
}

// notice queues n for the UI. From extensions (ui.notify, ui.show) it is
// refused when too many are waiting; e's own notices are always kept.
func (h *Host) notice(n Notice) bool {
	return h.notices.push(n, n.Method == "")
}

func (h *Host) deliverNotices() {
	defer h.wg.Done()
	for {
		batch, open := h.notices.take()
		for _, n := range batch {
			h.ui.Notice(n)
		}
		if !open {
			return
		}
	}
}

// noticeQueue decouples extensions from a UI that is slow to take notices.
type noticeQueue struct {
	mu     sync.Mutex
	q      []Notice
	closed bool
	wake   chan struct{}
}

const maxQueuedNotices = 1000

func (q *noticeQueue) push(n Notice, always bool) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed || (!always && len(q.q) >= maxQueuedNotices) {
		return false
	}
	q.q = append(q.q, n)
	select {
	case q.wake <- struct{}{}:
	default:
	}
	return true
}

// take waits for notices; open is false once the queue is closed and empty.
func (q *noticeQueue) take() (batch []Notice, open bool) {
	for {
		q.mu.Lock()
		batch, q.q = q.q, nil
		closed := q.closed
		q.mu.Unlock()
		if len(batch) > 0 || closed {
			return batch, !closed
		}
		<-q.wake
	}
}

func (q *noticeQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (h *Host) forwardStderr() {
	defer h.wg.Done()
	for line := range h.stderr {
		h.opts.Stderr.Write(line) // diagnostics are best effort
	}
}

// toolName is what providers accept as a function name.
var toolName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// addTools registers specs for e. All-or-nothing when strict (tools.register
// answers with the error); otherwise invalid tools are skipped with a notice
// (the handshake has nobody to answer).
func (h *Host) addTools(e *ext, specs []ToolSpec, strict bool) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	var ok []registered
	seen := map[string]bool{}
	for _, s := range specs {
		t := Tool{Extension: e.cfg.Name, Description: s.Description, Parameters: s.Parameters}
		if s.Name != nil { // one left out fails checkTool as ""
			t.Name = *s.Name
		}
		err := h.checkTool(e, t, seen)
		if err != nil && strict {
			return err
		}
		if err != nil {
			h.notice(Notice{Extension: e.cfg.Name, Level: "warning", Message: fmt.Sprintf("extension %s: %v; the tool is left out", e.cfg.Name, err)})
			continue
		}
		seen[t.Name] = true
		if len(t.Parameters) == 0 || string(t.Parameters) == "null" {
			t.Parameters = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		ok = append(ok, registered{t, e})
	}
	for _, r := range ok {
		replaced := false
		for i := range h.tools {
			if h.tools[i].Name == r.Name { // checkTool allowed it: same extension, so an update
				h.tools[i] = r
				replaced = true
			}
		}
		if !replaced {
			h.tools = append(h.tools, r)
		}
	}
	return nil
}

// checkTool checks s, a tool as the extension sent it (parameters raw).
func (h *Host) checkTool(e *ext, s Tool, seen map[string]bool) error {
	if !toolName.MatchString(s.Name) {
		return fmt.Errorf("tool name %q must match %s", s.Name, toolName)
	}
	if seen[s.Name] {
		return fmt.Errorf("tool %q is listed twice", s.Name)
	}
	if len(s.Parameters) > 0 && string(s.Parameters) != "null" && s.Parameters[0] != '{' {
		return fmt.Errorf("tool %q: parameters must be a JSON Schema object", s.Name)
	}
	for _, r := range h.tools {
		if r.Name == s.Name && r.ext != e && r.ext.running() {
			return fmt.Errorf("tool %q is already registered by extension %s", s.Name, r.Extension)
		}
	}
	return nil
}
