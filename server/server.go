// Package server is e rpc: a JSON Lines session server on a pair of
// streams. One goroutine reads requests, one writer goroutine owns the
// output, every turn runs in a goroutine of its session. See spec/protocol.md.
package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/tidwall/gjson"

	"github.com/e-agent/e/internal/agent"
	"github.com/e-agent/e/internal/extension"
	"github.com/e-agent/e/internal/jsonl"
	"github.com/e-agent/e/internal/model"
	"github.com/e-agent/e/internal/store"
	"github.com/e-agent/e/internal/tool"
	"github.com/e-agent/e/schemas"
)

// Protocol is the protocol version hello reports: 2 is the method
// protocol; version-1 one-shot lines are still served (O1).
const Protocol = 2

// Options are e rpc's process flags (L1) and build facts.
type Options struct {
	Model        string // -m; "" for the catalog default
	Effort       string // --ef
	NoTools      bool   // --nt
	NoExtensions bool   // --ne
	NoSave       bool   // --no-save
	Approval     string // --approval: the approval policy of new sessions; "" is never

	Version, Channel, Commit string
}

// Env is the process environment a Server runs in.
type Env struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Cwd            string
	Home           string
	Getenv         func(string) string
}

// Server is one e rpc process.
type Server struct {
	env Env

	*Process
	out   *jsonl.Writer
	relay *extension.Relay

	ctx    context.Context // cancelled when the process stops serving
	cancel context.CancelFunc
	turns  sync.WaitGroup // every goroutine that may still write a line

	mu       sync.Mutex
	sessions map[string]*session
	hello    bool
	ask      bool
	held     []Notice // notices that came before hello (X7)
}

type session struct {
	*agent.Session
	header store.Header
	turn   sync.WaitGroup // the running prompt or compact, until its response is written
}

// heldNotices bounds the notices kept for a client that has not greeted.
const heldNotices = 64

// Process is what every session of one e process shares: settings, the
// model catalog, the agent engine and the extension host. e rpc and e -p
// both start one.
type Process struct {
	Opts     Options
	Home     string
	Cwd      string
	Settings store.Settings
	Engine   *agent.Engine
	Ext      *extension.Host // nil when no extension runs
	Default  string          // the model a session gets unless told otherwise
}

// Start reads settings and starts extensions with ui as their client. It
// returns an error for a start-up problem: a bad settings file, an unknown
// -m model, an effort the model lacks.
func Start(ctx context.Context, opts Options, home, cwd string, getenv func(string) string, u extension.UI) (*Process, error) {
	settings, err := store.LoadSettings(home)
	if err != nil {
		return nil, err
	}
	providers, err := model.ParseProviders(settings.Providers)
	if err != nil {
		return nil, err
	}
	cat, err := model.NewCatalog(model.Config{DefaultModel: settings.DefaultModel, Providers: providers, Getenv: getenv,
		StallTimeout: time.Duration(settings.StallTimeoutMS) * time.Millisecond})
	if err != nil {
		return nil, err
	}
	def, warning := cat.Default()
	if opts.Model != "" {
		info, err := cat.Lookup(opts.Model)
		if err != nil {
			return nil, fmt.Errorf("-m: %w", err)
		}
		def, warning = info.ID, ""
		opts.Model = info.ID
	}
	if _, err := cat.CheckEffort(def, opts.Effort); err != nil {
		return nil, fmt.Errorf("--ef: %w", err)
	}
	if _, err := agent.CheckPolicy(opts.Approval); err != nil {
		return nil, fmt.Errorf("--approval: %w", err)
	}
	p := &Process{Opts: opts, Home: home, Cwd: cwd, Settings: settings, Default: def, Engine: &agent.Engine{
		Catalog: cat, Procs: tool.NewProcs(), ToolConcurrency: settings.ToolConcurrency,
		CompactThreshold: settings.CompactThreshold, DefaultWarning: warning, DefaultModel: def,
		MaxAttempts: settings.MaxAttempts,
	}}
	if !opts.NoExtensions {
		cfgs, err := extension.Configs(home, settings.Extensions)
		if err != nil {
			return nil, err
		}
		if len(cfgs) > 0 {
			p.Ext = extension.StartWith(ctx, cfgs, u, extension.Options{Version: opts.Version})
			p.Engine.Ext = extHost{p.Ext}
		}
	}
	return p, nil
}

// New prepares an e rpc server on env's streams.
func New(ctx context.Context, opts Options, env Env) (*Server, error) {
	ctx, cancel := context.WithCancel(ctx)
	s := &Server{
		env: env, ctx: ctx, cancel: cancel, sessions: map[string]*session{},
	}
	s.out = jsonl.NewWriter(env.Stdout)
	s.relay = extension.NewRelay(func(a extension.Ask) { s.writeJSON(a) })
	s.relay.Cancelled = func(a extension.Ask, why string) {
		if why == "" {
			who := "the extension"
			if a.Method == approveMethod {
				who = "the tool call"
			}
			why = who + " no longer waits for an answer"
		}
		s.writeJSON(Notice{Type: "notice", Extension: a.Extension, Session: a.Session, Level: "warning", Ask: a.Ask,
			Message: fmt.Sprintf("ask %d (%s) was cancelled: %s", a.Ask, a.Method, why)})
	}
	p, err := Start(ctx, opts, env.Home, env.Cwd, env.Getenv, ui{s})
	if err != nil {
		cancel()
		s.out.Close()
		return nil, err
	}
	s.Process = p
	p.Engine.Approver = approver{s}
	return s, nil
}

// Serve reads requests until EOF, shutdown, a signal or a fatal framing
// error, and returns the process exit status (D1, D2, F4).
func (s *Server) Serve() int {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE)
	defer signal.Stop(sigs)

	lines := make(chan []byte)
	readErr := make(chan error, 1)
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		r := jsonl.NewReader(s.env.Stdin, jsonl.MaxLine)
		for {
			line, err := r.Next()
			if err != nil {
				readErr <- err
				return
			}
			select {
			case lines <- bytes.Clone(line):
			case <-s.ctx.Done():
				return
			}
		}
	}()

	n := 0
	for {
		select {
		case line := <-lines:
			n++
			if s.handle(n, line) {
				s.stop()
				s.writeRaw([]byte(`{"id":` + shutdownID(line) + `,"result":{}}`))
				return s.close(0)
			}
		case err := <-readErr:
			var tl *jsonl.TooLongError
			if errors.As(err, &tl) {
				fmt.Fprintf(s.env.Stderr, "e rpc: line %d is longer than %d bytes: no safe point to resync; exiting\n", tl.Line, tl.Max)
				s.stop()
				return s.close(1)
			}
			if !errors.Is(err, io.EOF) {
				fmt.Fprintf(s.env.Stderr, "e rpc: reading stdin: %v\n", err)
			}
			s.stop()
			return s.close(0)
		case <-s.out.Failed():
			// The client went away; close says so on stderr.
			s.stop()
			return s.close(0)
		case sig := <-sigs:
			switch sig {
			case syscall.SIGTERM:
				return s.signalled(143)
			case syscall.SIGHUP:
				return s.signalled(129)
			}
		}
	}
}

func shutdownID(line []byte) string {
	id := gjson.GetBytes(line, "id")
	if !id.Exists() {
		return "null"
	}
	return id.Raw
}

// signalled kills every bash process group first, then extensions (D2).
// Turns get this long after a signal to write their turn_end and response.
const signalGrace = 2 * time.Second

func (s *Server) signalled(code int) int {
	// Turns stop first, so none goes on to another model call after its
	// bash dies; each still ends with turn_end and its response (F2).
	s.cancel()
	s.Engine.Procs.KillAll()
	ended := make(chan struct{})
	go func() {
		s.turns.Wait()
		close(ended)
	}()
	timer := time.NewTimer(signalGrace)
	defer timer.Stop()
	select {
	case <-ended:
	case <-timer.C:
	}
	if s.Ext != nil {
		s.Ext.Kill()
	}
	select {
	case <-ended:
		s.out.Close() // flush: no turn writes any more
	default:
	}
	return code
}

// stop ends every running turn and closes every session (D1). Their last
// events and responses are still written.
func (s *Server) stop() {
	// Every turn stops now, one-shot turns (which belong to no session)
	// included; the writer goes on, so their last lines still get out.
	s.cancel()
	s.mu.Lock()
	all := make([]*session, 0, len(s.sessions))
	for _, ss := range s.sessions {
		all = append(all, ss)
	}
	s.sessions = map[string]*session{}
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, ss := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ss.Close()
		}()
	}
	wg.Wait()
	s.Engine.Procs.KillAll()
	s.relay.CancelAll()
	s.turns.Wait()
	if s.Ext != nil {
		s.Ext.Shutdown(shutdownGrace)
	}
	s.cancel()
}

// close flushes the writer and returns code, or 1 when stdout failed: the
// client stopped reading, and e says so on stderr.
func (s *Server) close(code int) int {
	s.cancel()
	if err := s.out.Close(); err != nil {
		fmt.Fprintf(s.env.Stderr, "e rpc: writing stdout: %v; exiting\n", err)
		code = max(code, 1)
	}
	return code
}

// handle serves one input line; it reports whether the line was a valid
// shutdown request.
func (s *Server) handle(n int, line []byte) (shutdown bool) {
	if len(bytes.TrimSpace(line)) == 0 {
		return false // blank lines are ignored (spec/protocol.md)
	}
	if !json.Valid(line) {
		var v any
		err := json.Unmarshal(line, &v)
		s.writeError(nil, fmt.Sprintf("rpc: line %d: malformed JSON: %v", n, jsonErr(err)))
		return false
	}
	if t := bytes.TrimLeft(line, " \t\r\n"); t[0] != '{' {
		s.writeError(nil, fmt.Sprintf("rpc: line %d: expected a JSON object, got %s", n, kind(t[0])))
		return false
	}
	id := json.RawMessage("null")
	if v := gjson.GetBytes(line, "id"); v.Exists() {
		id = json.RawMessage(v.Raw)
	}
	m := gjson.GetBytes(line, "method")
	if !m.Exists() {
		s.oneShot(id, line)
		return false
	}
	if m.Type != gjson.String {
		s.writeError(id, fmt.Sprintf("rpc: line %d: method: expected string, got %s", n, kind(m.Raw[0])))
		return false
	}
	method := m.String()
	h, ok := handlers[method]
	if !ok {
		s.writeError(id, fmt.Sprintf("rpc: unknown method %q", method))
		return false
	}
	var params []byte
	if p := gjson.GetBytes(line, "params"); p.Exists() {
		params = []byte(p.Raw)
	}
	if err := schemas.ValidateParams(method, params); err != nil {
		s.writeError(id, err.Error())
		return false
	}
	if len(params) == 0 || string(params) == "null" {
		params = []byte("{}")
	}
	if method == "shutdown" {
		return true
	}
	h(s, &request{id: id, method: method, params: params})
	return false
}

func jsonErr(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%s (at byte %d)", se.Error(), se.Offset)
	}
	if err == nil {
		return "invalid"
	}
	return err.Error()
}

func kind(c byte) string {
	switch c {
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	case '{':
		return "object"
	}
	return "number"
}

// request is one validated method call.
type request struct {
	id     json.RawMessage
	method string
	params []byte
}

func (r *request) errorf(format string, args ...any) error {
	return fmt.Errorf(r.method+": "+format, args...)
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

func (s *Server) writeError(id json.RawMessage, msg string) {
	if id == nil {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(msg)
	s.writeRaw(concat(`{"id":`, id, `,"error":`, b, `}`))
}

func (s *Server) writeResult(id json.RawMessage, result any) {
	b, err := json.Marshal(result)
	if err != nil {
		s.writeError(id, "rpc: internal error: "+err.Error())
		return
	}
	s.writeRaw(concat(`{"id":`, id, `,"result":`, b, `}`))
}

// reply writes the response of r: its result, or its error.
func (s *Server) reply(r *request, result any, err error) {
	if err != nil {
		s.writeError(r.id, err.Error())
		return
	}
	s.writeResult(r.id, result)
}

// events returns the sink of one turn's events: each is stamped with its
// session and request (S2) and queued. The buffer is reused, as the writer
// copies each line and a turn calls its sink from one goroutine at a time.
func (s *Server) events(sess string, req json.RawMessage) func(agent.Event) {
	st := agent.NewStamp(sess, req)
	var buf []byte
	return func(ev agent.Event) {
		buf = st.Append(buf[:0], ev)
		s.writeRaw(buf)
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

// go runs f in a goroutine that Serve waits for before exiting.
func (s *Server) goTurn(f func()) {
	s.turns.Add(1)
	go func() {
		defer s.turns.Done()
		f()
	}()
}

func (s *Server) session(r *request, id string) (*session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, ok := s.sessions[id]
	if !ok {
		return nil, r.errorf("unknown session %q", id)
	}
	return ss, nil
}
