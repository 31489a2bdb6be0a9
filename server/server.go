// Package server is e rpc: a JSON Lines session server on a pair of
// streams. One goroutine reads requests, which run off it, in order per
// session (lineserver.Queues); one writer goroutine owns the output, every
// turn runs in a goroutine of its session. See spec/protocol.md.
package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/tidwall/gjson"

	"github.com/e-agent/e/internal/agent"
	"github.com/e-agent/e/internal/extension"
	"github.com/e-agent/e/internal/jsonl"
	"github.com/e-agent/e/internal/lineserver"
	"github.com/e-agent/e/internal/session"
	"github.com/e-agent/e/protocol"
	"github.com/e-agent/e/schemas"
)

// Protocol is the protocol version hello reports: 2 is the method
// protocol; version-1 one-shot lines are still served (O1).
const Protocol = 2

// Options are e rpc's process flags (L1) and build facts.
type Options = session.Options

// Env is the process environment a Server runs in.
type Env struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Cwd            string
	Home           string
	Getenv         func(string) string
}

// Server is one e rpc process: the protocol over one session.Host.
type Server struct {
	env   Env
	host  *session.Host
	loop  *lineserver.Loop // stdin and stdout
	out   *jsonl.Writer    // the loop's stdout
	relay *extension.Relay
	// work runs each request off the loop, serially per session (H1).
	work lineserver.Queues

	ctx    context.Context // cancelled when the process stops serving
	cancel context.CancelFunc

	mu      sync.Mutex
	greeted bool
	ask     bool
	held    []protocol.NoticeLine // notices that came before hello (X7)
	closing bool                  // no goroutine starts any more
	// replies are every goroutine that may still write a line; Add only
	// while !closing, under mu, so Wait never races an Add.
	replies sync.WaitGroup
	// answered maps a running turn to the request it answers, closed once
	// that request's response is written: an interrupt or close answers
	// after the turn it ended (spec/protocol.md).
	answered map[*session.Turn]chan struct{}
	calls    clientCalls // client tool calls (clienttools.go)
}

// heldNotices bounds the notices kept for a client that has not greeted.
const heldNotices = 64

// New prepares an e rpc server on env's streams.
func New(ctx context.Context, opts Options, env Env) (*Server, error) {
	ctx, cancel := context.WithCancel(ctx)
	s := &Server{env: env, ctx: ctx, cancel: cancel, answered: map[*session.Turn]chan struct{}{}}
	s.calls.s = s
	s.loop = lineserver.New("e rpc", env.Stdin, env.Stdout, env.Stderr)
	s.out = s.loop.Out()
	s.relay = extension.NewRelay(func(a extension.Ask) { s.writeJSON(askLine(a)) })
	s.relay.Cancelled = func(a extension.Ask, why string) {
		if why == "" {
			who := "the extension"
			if a.Method == approveMethod {
				who = "the tool call"
			}
			why = who + " no longer waits for an answer"
		}
		s.writeJSON(protocol.NoticeLine{Type: "notice", Extension: a.Extension, Session: a.Session, Level: "warning", Ask: a.Ask,
			Message: fmt.Sprintf("ask %d (%s) was cancelled: %s", a.Ask, a.Method, why)})
	}
	h, err := session.Start(ctx, opts, session.Env{Cwd: env.Cwd, Home: env.Home, Getenv: env.Getenv}, ui{s})
	if err != nil {
		cancel()
		s.out.Close()
		return nil, err
	}
	s.host = h
	return s, nil
}

// Serve reads requests until EOF, shutdown, a signal or a fatal framing
// error, and returns the process exit status (D1, D2, F4).
func (s *Server) Serve() int {
	var shutdown []byte // the shutdown request, when one ended the loop
	end := s.loop.Run(s.ctx, func(n int, line []byte) bool {
		if s.handle(n, line) {
			shutdown = line
			return true
		}
		return false
	})
	switch end.Reason {
	case lineserver.Signalled:
		return lineserver.Within(end.Left(), end.Code(), func() int { return s.signalled(end) })
	case lineserver.Gone:
		return lineserver.Within(end.Left(), end.Code(), func() int { s.stop(); return s.loop.Close(end.Code()) })
	case lineserver.Stopped:
		s.stop()
		s.writeRaw([]byte(`{"id":` + shutdownID(shutdown) + `,"result":{}}`))
		return s.loop.Close(0)
	}
	// EOF, an oversized line (said on stderr), or the client went away
	// (Close says so): every session stops as on EOF.
	s.stop()
	return s.loop.Close(end.Code())
}

func shutdownID(line []byte) string {
	id := gjson.GetBytes(line, "id")
	if !id.Exists() {
		return "null"
	}
	return id.Raw
}

// signalled kills every bash process group first, then extensions (D2),
// before it waits for the handlers still running: one stuck is left behind.
func (s *Server) signalled(end lineserver.Ending) int {
	s.cancel()
	ok := s.host.Kill(end.Grace())
	ok = s.work.Close(min(lineserver.HandlerGrace, end.Grace())) && ok
	if ok {
		s.stopReplies()
		return s.loop.Close(end.Code()) // flush: no turn writes any more
	}
	return end.Code()
}

// stop ends every running turn and closes every session (D1), once the
// requests read before the end have run (up to lineserver.HandlerGrace
// for one stuck). Their last events and responses are still written.
func (s *Server) stop() {
	s.work.Close(lineserver.HandlerGrace)
	s.cancel()
	s.host.Shutdown()
	s.relay.CancelAll()
	s.stopReplies()
}

// stopReplies waits for every goroutine that may still write a response.
func (s *Server) stopReplies() {
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	s.replies.Wait()
}

// handle serves one input line; it reports whether the line was a valid
// shutdown request.
func (s *Server) handle(n int, line []byte) (shutdown bool) {
	if len(bytes.TrimSpace(line)) == 0 {
		return false // blank lines are ignored (spec/protocol.md)
	}
	id, err := jsonl.Request(line)
	if err != nil {
		code := session.CodeInvalidRequest
		if errors.Is(err, jsonl.ErrMalformed) {
			code = session.CodeParseError
		}
		s.writeError(id, fmt.Sprintf("rpc: line %d: %v", n, err), code)
		return false
	}
	m := gjson.GetBytes(line, "method")
	if !m.Exists() {
		if !s.work.Go("", func() { s.oneShot(id, line) }) {
			s.writeError(id, "oneshot: "+errShuttingDown.Err.Error(), "")
		}
		return false
	}
	if m.Type != gjson.String {
		s.writeError(id, fmt.Sprintf("rpc: line %d: method: expected string, got %s", n, jsonl.Kind(m.Raw[0])), session.CodeInvalidRequest)
		return false
	}
	method := m.String()
	h, ok := handlers[method]
	if !ok {
		s.writeError(id, fmt.Sprintf("rpc: unknown method %q", method), session.CodeUnknownMethod)
		return false
	}
	var params []byte
	if p := gjson.GetBytes(line, "params"); p.Exists() {
		params = []byte(p.Raw)
	}
	if err := schemas.ValidateParams(method, params); err != nil {
		s.writeError(id, err.Error(), session.CodeInvalidParams)
		return false
	}
	if len(params) == 0 || string(params) == "null" {
		params = []byte("{}")
	}
	if method == "shutdown" {
		return true
	}
	r := &request{id: id, method: method, params: params, param: "params."}
	// What hello said counts as of this line, though the request may run
	// after a later hello (H1 runs a create at once, beside the lines after it).
	s.mu.Lock()
	r.asks = s.greeted && s.ask
	s.mu.Unlock()
	// A request naming a session waits for that session's earlier requests
	// only; any other runs at once (H1).
	key := ""
	if name, ok := sessionParam[method]; ok {
		key = gjson.GetBytes(params, name).String() // a string: the schema says so
	}
	run := s.work.Go
	if ordered[method] {
		// hello's ask decides how the lines after it are served (a create's
		// client tools), an interrupt what the client's next answer does:
		// each takes effect before the next line is read.
		run = s.work.Now
	}
	if !run(key, func() { s.dispatch(r, h) }) {
		s.reply(r, nil, errShuttingDown)
	}
	return false
}

// dispatch calls h and writes exactly one response for r: at once, or,
// when h returns a later, once that has run.
func (s *Server) dispatch(r *request, h handler) {
	res, err := h(s, r)
	if l, ok := res.(later); ok && err == nil {
		if !s.goReply(func() {
			res, err := l()
			s.reply(r, res, err)
		}) {
			s.reply(r, nil, errShuttingDown)
		}
		return
	}
	s.reply(r, res, err)
}

var errShuttingDown = &session.Error{Code: session.CodeInternal, Err: errors.New("the process is shutting down")}

// request is one validated method call (or one-shot line).
type request struct {
	id     json.RawMessage
	method string // "oneshot" for a version-1 line
	params []byte
	param  string // how an error names a parameter: "params." or "" (one-shot)
	// asks is whether the client had greeted with ask:true when this
	// line was read (client tools need it, G1).
	asks bool
	// then, when set, runs once r's response is queued.
	then func()
	// turn is the turn r started, answered closed once r's response is written.
	turn     *session.Turn
	answered chan struct{}
}

// handler serves one method: it returns the result or an error, which the
// dispatcher writes as the one response. For work that ends later (a turn,
// a wait) it returns a later.
type handler func(*Server, *request) (any, error)

// typed adapts a method's handler, given the params decoded into P, the
// method's generated struct (dispatch_gen.go's handlers). Where the schema
// is wider than Go's types (a number beyond int64) it is an error: a
// request never brings the server down.
func typed[P any](h func(*Server, *request, P) (any, error)) handler {
	return func(s *Server, r *request) (any, error) {
		var p P
		if err := schemas.Decode(r.params, &p); err != nil {
			var de *schemas.DecodeError
			if errors.As(err, &de) {
				return nil, &session.Error{Code: session.CodeInvalidParams, Param: de.Field, Err: errors.New(de.Reason)}
			}
			return nil, &session.Error{Code: session.CodeInvalidParams, Err: fmt.Errorf("params: %w", err)}
		}
		return h(s, r, p)
	}
}

// later is a response still to come: the dispatcher runs it on a goroutine
// Serve waits for and writes what it returns.
type later func() (any, error)

// errorText is the one-line message and code of err as a response to r.
func (r *request) errorText(err error) (string, session.Code) {
	var se *session.Error
	if errors.As(err, &se) {
		msg := se.Err.Error()
		if se.Param != "" {
			msg = r.param + se.Param + ": " + msg
		}
		return r.method + ": " + msg, se.Code
	}
	return r.method + ": " + err.Error(), session.CodeInternal
}

// writeRaw queues one whole line.
func (s *Server) writeRaw(line []byte) {
	// Background: the writer drains even after a failure, so this cannot block forever.
	_ = s.out.Write(context.Background(), line)
}

func (s *Server) writeJSON(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic("server: marshal " + fmt.Sprintf("%T", v) + ": " + err.Error())
	}
	s.writeRaw(b)
}

func (s *Server) writeError(id json.RawMessage, msg string, code session.Code) {
	if id == nil {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(msg)
	if l := s.host.Logger(); l != nil {
		l.Warn("request failed", "id", string(id), "code", string(code), "error", msg)
	}
	if code == "" { // a v1 one-shot line: its answers keep the v1 shape (§8)
		s.writeRaw(concat(`{"id":`, id, `,"error":`, b, `}`))
		return
	}
	c, _ := json.Marshal(code)
	s.writeRaw(concat(`{"id":`, id, `,"error":`, b, `,"code":`, c, `}`))
}

// reply writes the one response of r: its result, or its error.
func (s *Server) reply(r *request, result any, err error) {
	if res, ok := result.(turnReply); ok && err == nil {
		// A long turn's result holds its whole text: written from the
		// history's entry, by this goroutine (a Hold) rather than after
		// a hand-off to the writer's, or encoded in place.
		if parts := resultParts(r.id, res.Result, res.finalJSON); parts != nil {
			_ = s.out.NewHold().AppendShared(context.Background(), parts...)
		} else {
			_ = s.out.Append(context.Background(), func(b []byte) []byte {
				b = append(append(append(b, `{"id":`...), bytes.ToValidUTF8(r.id, []byte("\uFFFD"))...), `,"result":`...)
				return append(appendResult(b, res.Result, res.finalJSON), '}')
			})
		}
	} else if res, ok := result.(SessionEntriesResult); ok && err == nil {
		_ = s.out.AppendShared(context.Background(), res.parts(r.id)...)
	} else if err == nil {
		var b []byte
		if b, err = json.Marshal(result); err == nil {
			s.writeRaw(concat(`{"id":`, r.id, `,"result":`, b, `}`))
		}
	}
	if err != nil {
		msg, code := r.errorText(err)
		if r.method == oneShotMethod {
			code = ""
		}
		s.writeError(r.id, msg, code)
	}
	if r.then != nil {
		r.then()
	}
	if r.turn != nil {
		close(r.answered)
		s.mu.Lock()
		delete(s.answered, r.turn)
		s.mu.Unlock()
	}
}

// events returns the sink of one turn's events: each is stamped with its
// session and request (S2) and encoded straight into the writer's queue.
func (s *Server) events(sess string, req json.RawMessage) func(agent.Event) {
	st := agent.NewStamp(sess, req)
	return func(ev agent.Event) {
		// Background: the writer drains even after a failure, so this cannot block forever.
		_ = s.out.Append(context.Background(), func(b []byte) []byte { return st.Append(b, ev) })
	}
}

// streamEvents is events for a turn that streams from a provider: ctx
// carries a read hook (session.WithReadHook), so the lines of the events one
// Read of the provider's stream brings go out in one write, by the turn's
// goroutine, before it reads again (jsonl.Hold), rather than one wake-up
// of the writer goroutine each.
func (s *Server) streamEvents(ctx context.Context, sess string, req json.RawMessage) (context.Context, func(agent.Event)) {
	st := agent.NewStamp(sess, req)
	h := s.out.NewHold()
	return session.WithReadHook(ctx, h), func(ev agent.Event) {
		// Background: the writer drains even after a failure, so this cannot block forever.
		_ = h.Append(context.Background(), func(b []byte) []byte { return st.Append(b, ev) })
	}
}

func concat(parts ...any) []byte {
	var buf bytes.Buffer
	for _, p := range parts {
		switch p := p.(type) {
		case string:
			buf.WriteString(p)
		case []byte:
			buf.Write(p)
		case json.RawMessage:
			buf.Write(p)
		}
	}
	return buf.Bytes()
}

// goReply runs f on a goroutine that Serve waits for before exiting; false
// once the server is stopping.
func (s *Server) goReply(f func()) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	s.replies.Add(1)
	go func() {
		defer s.replies.Done()
		f()
	}()
	return true
}
