package acp

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidwall/gjson"

	"github.com/e-agent/e/internal/agent"
	"github.com/e-agent/e/internal/lineserver"
	"github.com/e-agent/e/internal/session"
	"github.com/e-agent/e/internal/trace"
)

// Options configure e acp: the process options every front end has. An
// empty Approval means writes here: editors expect to be asked before an
// edit or a command runs.
type Options = session.Options

// Env is where e acp runs: the session layer's environment and the streams.
type Env struct {
	session.Env
	Stdin          io.Reader
	Stdout, Stderr io.Writer
}

// Agent is one e acp process: the sessions of one client connection.
type Agent struct {
	opts Options
	env  Env
	host *session.Host
	conn *Conn
	loop *lineserver.Loop // stdin and stdout

	ctx    context.Context // cancelled when the connection ends
	cancel context.CancelFunc
	work   sync.WaitGroup // turns, cancels and closes in flight
	// requests runs each request off the loop, serially per session (H1).
	requests lineserver.Queues

	mu     sync.Mutex
	client ClientCapabilities
}

// acpSession is an open session with what its updates need. It is made
// on each lookup: the host keeps the sessions (Host.Get), and each keeps
// its updates (session.Spec.Front), so e acp needs no session map.
type acpSession struct {
	*session.Session
	*updates
}

// updates is ACP's state of one session.
type updates struct {
	mu   sync.Mutex // tr and cost, between a turn and set_config_option
	tr   Translator
	cost float64 // the session's cost so far, when the model has prices
	// answered is closed once the answer to the session's latest prompt
	// is written (nil before the first): a prompt's turn ends before its
	// answer goes out, from another goroutine, and the next prompt's
	// updates must not overtake it (the client would take them for the
	// first prompt's).
	answered chan struct{}
}

// client is how the session layer reaches the ACP client: approvals become
// session/request_permission; extension questions are refused (ACP has no
// place for ui.* asks) and their notices go to stderr, never to stdout.
type client struct{ a *Agent }

func (client) Ask(context.Context, string, string, json.RawMessage) (json.RawMessage, error) {
	return nil, session.ErrNoUI
}

func (c client) Notice(n session.Notice) {
	fmt.Fprintf(c.a.env.Stderr, "e acp: %s: %s\n", n.Extension, n.Message)
}

func (c client) Approve(ctx context.Context, id string, call agent.Call, _ time.Duration) agent.Decision {
	return c.a.approve(ctx, id, call)
}

// New starts e acp's process on env's streams: settings, model catalog and
// extensions, as e rpc does.
func New(ctx context.Context, opts Options, env Env) (*Agent, error) {
	if opts.Approval == "" {
		opts.Approval = agent.ApproveWrites
	}
	ctx, cancel := context.WithCancel(ctx)
	loop := lineserver.New("e acp", env.Stdin, env.Stdout, env.Stderr)
	a := &Agent{opts: opts, env: env, loop: loop, conn: newConn(loop.Out()), ctx: ctx, cancel: cancel}
	h, err := session.Start(ctx, opts, env.Env, client{a})
	if err != nil {
		cancel()
		loop.Close(0)
		return nil, err
	}
	a.host = h
	return a, nil
}

// Serve reads messages until EOF, a signal or a fatal framing error, and
// returns the exit status: 0 at EOF, 1 for an oversized line or a client
// gone (said on stderr), 143, 129 and 130 for SIGTERM, SIGHUP and SIGINT.
func (a *Agent) Serve() int {
	end := a.loop.Run(a.ctx, func(_ int, line []byte) bool {
		a.handle(line)
		return false
	})
	if end.Reason == lineserver.Signalled || end.Reason == lineserver.Gone {
		return lineserver.Within(end.Left(), end.Code(), func() int { return a.end(end) })
	}
	return a.end(end)
}

// end stops what runs after the loop ended and returns the exit status.
func (a *Agent) end(end lineserver.Ending) int {
	if end.Reason == lineserver.Signalled {
		// Turns and bash process groups stop at once, before the requests
		// still running are waited for; turns get a grace to answer, then
		// e exits whether or not they did.
		a.cancel()
		a.conn.cancelAll()
		ok := a.host.Kill(end.Grace())
		if !a.requests.Close(min(lineserver.HandlerGrace, end.Grace())) || !ok {
			return end.Code()
		}
		a.work.Wait()
		return a.loop.Close(end.Code())
	}
	// The requests read run (at EOF, before the sessions stop); one stuck
	// is left behind after its grace (H2).
	a.requests.Close(lineserver.HandlerGrace)
	a.cancel()
	a.conn.cancelAll()
	// Every turn stops (each still gets its response written), the sessions
	// close, tool processes and extensions stop.
	a.host.Shutdown()
	a.work.Wait()
	return a.loop.Close(end.Code())
}

// handle serves one line: a request, a notification or a response to one
// of e's requests. Requests are answered in order of arrival except the
// long ones (a prompt, a close waiting for its turn), which answer when done.
func (a *Agent) handle(line []byte) {
	if len(bytes.TrimSpace(line)) == 0 {
		return
	}
	var m message
	if !json.Valid(line) {
		a.conn.reply(nil, nil, errorf(CodeParseError, "acp: malformed JSON"))
		return
	}
	if t := bytes.TrimLeft(line, " \t\r\n"); t[0] != '{' {
		a.conn.reply(nil, nil, errorf(CodeInvalidRequest, "acp: a message must be a JSON object"))
		return
	}
	if err := json.Unmarshal(line, &m); err != nil {
		a.conn.reply(nil, nil, errorf(CodeInvalidRequest, "acp: not a JSON-RPC message: "+err.Error()))
		return
	}
	isNotification := len(m.ID) == 0
	if m.JSONRPC != "2.0" {
		if !isNotification || m.Method != "" {
			a.conn.reply(m.ID, nil, errorf(CodeInvalidRequest, `acp: jsonrpc must be "2.0"`))
		}
		return
	}
	if m.Method == "" {
		if !isNotification && (m.Result != nil || m.Error != nil) {
			a.conn.deliver(m)
			return
		}
		a.conn.reply(m.ID, nil, errorf(CodeInvalidRequest, "acp: a request needs a method"))
		return
	}
	params := m.Params
	if len(params) == 0 || string(params) == "null" {
		params = json.RawMessage("{}")
	}
	// A message naming a session waits for that session's earlier ones
	// only; any other runs at once (H1).
	key := ""
	if name := sessionParam[m.Method]; name != "" {
		if k := gjson.GetBytes(params, name); k.Type == gjson.String {
			key = k.String()
		}
	}
	if isNotification {
		if n := notifications[m.Method]; n != nil {
			// In effect before the next line is read: the client answers
			// the permission request session/cancel cancels right after (K5).
			a.requests.Now(key, func() { n(a, params) })
		}
		return // unknown notifications are ignored (ACP extensibility)
	}
	h, ok := methods[m.Method]
	if !ok {
		a.conn.reply(m.ID, nil, errorf(CodeMethodNotFound, fmt.Sprintf("acp: unknown method %q", m.Method)))
		return
	}
	if !a.requests.Go(key, func() { a.serve(m, h, params) }) {
		a.conn.reply(m.ID, nil, errorf(CodeInternal, "acp: the connection is closing"))
	}
}

// serve runs one request's handler and writes its one answer: at once, or
// once its later has run.
func (a *Agent) serve(m message, h handler, params json.RawMessage) {
	res, later, err := h(a, params)
	if later == nil {
		a.conn.reply(m.ID, res, err)
		return
	}
	a.goWork(func() {
		res, err, written := later()
		if testHookBeforeLateReply != nil {
			testHookBeforeLateReply(m.Method)
		}
		a.conn.reply(m.ID, res, err)
		if written != nil {
			written()
		}
	})
}

// testHookBeforeLateReply, when set by a test, runs before a long
// request's answer is written (the window in which the next prompt's
// updates, or a close's answer, could overtake it), with its method.
var testHookBeforeLateReply func(method string)

func (a *Agent) goWork(f func()) {
	a.work.Add(1)
	go func() {
		defer a.work.Done()
		f()
	}()
}

// handler serves a request. It answers at once with result or err, or
// returns later, which runs on its own goroutine and gives the answer, and
// what to do once that answer is written (nil: nothing).
type handler func(a *Agent, params json.RawMessage) (result any, later func() (any, *Error, func()), err *Error)

// answer adapts the handler of a request answered at once, given its
// params decoded into P (dispatch_gen.go's methods).
func answer[P any](method string, f func(*Agent, P) (any, *Error)) handler {
	return func(a *Agent, params json.RawMessage) (any, func() (any, *Error, func()), *Error) {
		p, err := decode[P](method, params)
		if err != nil {
			return nil, nil, err
		}
		res, err := f(a, p)
		return res, nil, err
	}
}

// answerLater adapts the handler of a request that may answer later.
func answerLater[P any](method string, f func(*Agent, P) (any, func() (any, *Error, func()), *Error)) handler {
	return func(a *Agent, params json.RawMessage) (any, func() (any, *Error, func()), *Error) {
		p, err := decode[P](method, params)
		if err != nil {
			return nil, nil, err
		}
		return f(a, p)
	}
}

// answerBare adapts the handler of a request whose params e does not read.
func answerBare(f func(*Agent) (any, *Error)) handler {
	return func(a *Agent, _ json.RawMessage) (any, func() (any, *Error, func()), *Error) {
		res, err := f(a)
		return res, nil, err
	}
}

// notified adapts the handler of a notification: params a request would
// refuse are ignored (a notification has no answer).
func notified[P any](method string, f func(*Agent, P)) func(*Agent, json.RawMessage) {
	return func(a *Agent, params json.RawMessage) {
		if p, err := decode[P](method, params); err == nil {
			f(a, p)
		}
	}
}

// decode reads params into T; a shape Go cannot hold is invalid params.
func decode[T any](method string, params json.RawMessage) (T, *Error) {
	var v T
	if err := json.Unmarshal(params, &v); err != nil {
		return v, errorf(CodeInvalidParams, fmt.Sprintf("%s: params: %v", method, err))
	}
	return v, nil
}

func invalid(method, format string, args ...any) *Error {
	return errorf(CodeInvalidParams, method+": "+fmt.Sprintf(format, args...))
}

func (a *Agent) initialize(p InitializeParams) (any, *Error) {
	a.mu.Lock()
	a.client = p.ClientCapabilities
	a.mu.Unlock()
	// e speaks version 1 only: asked for any other, it answers its own (the
	// client then decides whether to go on).
	info, _ := a.host.Model(a.host.DefaultModel())
	return InitializeResult{
		ProtocolVersion: ProtocolVersion,
		AgentCapabilities: AgentCapabilities{
			LoadSession:         true,
			PromptCapabilities:  PromptCapabilities{Image: info.ImageInput, EmbeddedContext: true},
			SessionCapabilities: SessionCapabilities{List: &Marker{}, Resume: &Marker{}, Close: &Marker{}},
		},
		AuthMethods: []any{},
		AgentInfo:   Implementation{Name: "e", Title: "e", Version: a.opts.Version},
	}, nil
}

// checkSetup validates what session/new, load and resume share, and
// returns the MCP servers to start: stdio ones only (mcpCapabilities
// advertises neither http nor sse).
func checkSetup(method, cwd string, servers []MCPServer) ([]session.MCPServer, *Error) {
	if cwd == "" {
		return nil, invalid(method, "cwd: required")
	}
	if !filepath.IsAbs(cwd) {
		return nil, invalid(method, "cwd: %q is not an absolute path", cwd)
	}
	var out []session.MCPServer
	for i, s := range servers {
		if s.Type != "" && s.Type != "stdio" {
			return nil, invalid(method, "mcpServers[%d]: transport %q is not supported (mcpCapabilities.%s is false)", i, s.Type, s.Type)
		}
		cfg := session.MCPServer{Name: s.Name, Command: s.Command, Args: s.Args}
		for _, e := range s.Env {
			if cfg.Env == nil {
				cfg.Env = map[string]string{}
			}
			cfg.Env[e.Name] = e.Value
		}
		out = append(out, cfg)
	}
	return out, nil
}

// fail maps a session-layer error onto an ACP error of method.
func fail(method string, err error) *Error {
	code := CodeInternal
	switch session.CodeOf(err) {
	case session.CodeInvalidParams, session.CodeUnsupported, session.CodeTurnRunning, session.CodeUntrusted, session.CodeLocked:
		code = CodeInvalidParams
	case session.CodeUnknownSession, session.CodeNotFound:
		code = CodeNotFound
	}
	msg := err.Error()
	// The session layer names its inputs as e rpc spells them; ACP's
	// params are camelCase.
	var se *session.Error
	if errors.As(err, &se) && strings.HasPrefix(se.Param, "mcp_servers") {
		msg = "mcpServers" + strings.TrimPrefix(se.Param, "mcp_servers") + ": " + se.Err.Error()
	}
	return errorf(code, method+": "+msg)
}

func (a *Agent) create(method string, spec session.Spec) (*acpSession, *Error) {
	spec.Save = true // ignored under --no-save
	u := &updates{}
	spec.UI, spec.Front = client{a}, u
	s, err := a.host.Create(a.ctx, spec)
	if err != nil {
		return nil, fail(method, err)
	}
	info, _ := a.host.Model(s.Info().Model)
	u.mu.Lock()
	u.tr = Translator{Cwd: s.Cwd(), ContextWindow: int64(info.ContextWindow)}
	u.mu.Unlock()
	return &acpSession{s, u}, nil
}

// lookup returns the open session id, if this connection has it.
func (a *Agent) lookup(id string) (*acpSession, bool) {
	s, err := a.host.Get(id)
	if err != nil {
		return nil, false
	}
	u, ok := s.Front().(*updates)
	if !ok {
		return nil, false
	}
	return &acpSession{s, u}, true
}

// authenticate answers {}: e needs no authentication of its own (a
// provider's key comes from its environment).
func (a *Agent) authenticate() (any, *Error) { return struct{}{}, nil }

func (a *Agent) sessionNew(p NewSessionParams) (any, *Error) {
	const method = "session/new"
	servers, err := checkSetup(method, p.Cwd, p.MCPServers)
	if err != nil {
		return nil, err
	}
	s, err := a.create(method, session.Spec{Cwd: p.Cwd, MCP: servers})
	if err != nil {
		return nil, err
	}
	return NewSessionResult{SessionID: s.ID(), ConfigOptions: a.configOptions(s)}, nil
}

// find returns the saved log of session id.
func (a *Agent) find(method, id string) (string, *Error) {
	if id == "" {
		return "", invalid(method, "sessionId: required")
	}
	list, err := a.host.List("", true)
	if err != nil {
		return "", errorf(CodeInternal, method+": "+err.Error())
	}
	for _, s := range list {
		if strings.TrimSuffix(filepath.Base(s.Path), ".jsonl") == id {
			return s.Path, nil
		}
	}
	return "", errorf(CodeNotFound, fmt.Sprintf("%s: no saved session %q", method, id))
}

// open returns the live session id, or opens its saved log.
func (a *Agent) open(method string, p LoadSessionParams) (*acpSession, *Error) {
	servers, err := checkSetup(method, p.Cwd, p.MCPServers)
	if err != nil {
		return nil, err
	}
	if s, ok := a.lookup(p.SessionID); ok {
		return s, nil
	}
	path, err := a.find(method, p.SessionID)
	if err != nil {
		return nil, err
	}
	return a.create(method, session.Spec{Cwd: p.Cwd, Resume: path, MCP: servers})
}

func (a *Agent) sessionLoad(p LoadSessionParams) (any, *Error) {
	return a.reopen("session/load", p, true)
}

func (a *Agent) sessionResume(p LoadSessionParams) (any, *Error) {
	return a.reopen("session/resume", p, false)
}

// reopen serves session/load (replay: the history is sent first, so the
// client knows it is complete when the response comes) and session/resume.
func (a *Agent) reopen(method string, p LoadSessionParams, replay bool) (any, *Error) {
	s, err := a.open(method, p)
	if err != nil {
		return nil, err
	}
	if replay {
		a.send(s, func() []Update { return s.tr.History(s.Entries()) })
	}
	return LoadSessionResult{ConfigOptions: a.configOptions(s)}, nil
}

// send notifies the client of s's updates, which translate makes under
// s.mu (the translator and the cost are shared with set_config_option).
func (a *Agent) send(s *acpSession, translate func() []Update) {
	s.mu.Lock()
	ups := translate()
	s.mu.Unlock()
	for _, u := range ups {
		a.conn.notify("session/update", Notification{SessionID: s.ID(), Update: u})
	}
}

func (a *Agent) sessionList(p ListSessionsParams) (any, *Error) {
	const method = "session/list"
	cwd, all := "", true
	if p.Cwd != nil {
		if !filepath.IsAbs(*p.Cwd) {
			return nil, invalid(method, "cwd: %q is not an absolute path", *p.Cwd)
		}
		cwd, all = filepath.Clean(*p.Cwd), false
	}
	list, lerr := a.host.List(cwd, all)
	if lerr != nil {
		return nil, errorf(CodeInternal, method+": "+lerr.Error())
	}
	out := ListSessionsResult{Sessions: []SessionInfo{}}
	for _, s := range list {
		info := SessionInfo{SessionID: strings.TrimSuffix(filepath.Base(s.Path), ".jsonl"), Cwd: s.Cwd,
			UpdatedAt: s.Modified.UTC().Format(time.RFC3339)}
		if t := cmpOr(s.Name, s.Title); t != "" {
			info.Title = &t
		}
		out.Sessions = append(out.Sessions, info)
	}
	return out, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func (a *Agent) session(method, id string) (*acpSession, *Error) {
	if id == "" {
		return nil, invalid(method, "sessionId: required")
	}
	s, ok := a.lookup(id)
	if !ok {
		return nil, errorf(CodeNotFound, fmt.Sprintf("%s: unknown session %q", method, id))
	}
	return s, nil
}

// sessionClose interrupts the session's turn (its prompt answers
// cancelled first) and closes it.
func (a *Agent) sessionClose(p SessionIDParams) (any, func() (any, *Error, func()), *Error) {
	const method = "session/close"
	s, err := a.session(method, p.SessionID)
	if err != nil {
		return nil, nil, err
	}
	s.Detach() // unknown from now on; Close below finishes
	s.mu.Lock()
	prompted := s.answered
	s.mu.Unlock()
	return nil, func() (any, *Error, func()) {
		err := s.Close(context.Background())
		if prompted != nil {
			// The prompt Close stopped is answered first, from its own
			// goroutine, as a client reading the close's answer expects.
			<-prompted
		}
		if err != nil {
			return nil, fail(method, err), nil
		}
		return struct{}{}, nil, nil
	}, nil
}

// sessionCancel serves session/cancel: the running prompt stops and
// answers cancelled. An unknown session or an idle one is ignored (a
// notification has no answer).
func (a *Agent) sessionCancel(p SessionIDParams) {
	if s, ok := a.lookup(p.SessionID); ok {
		s.Stop() // the prompt answers when its turn has ended
	}
}

func (a *Agent) sessionPrompt(p PromptParams) (any, func() (any, *Error, func()), *Error) {
	const method = "session/prompt"
	s, err := a.session(method, p.SessionID)
	if err != nil {
		return nil, nil, err
	}
	text, images, err := promptContent(method, p.Prompt)
	if err != nil {
		return nil, nil, err
	}
	// Requests are read one at a time, so no other prompt of s starts
	// between here and PromptParts: if this one starts, the previous one
	// has ended, and its answer is written before this one's updates.
	s.mu.Lock()
	prev := s.answered
	s.mu.Unlock()
	var waited atomic.Bool // prev is closed: the hot path skips the channel
	sink := func(ev agent.Event) {
		if prev != nil && !waited.Load() {
			<-prev
			waited.Store(true)
		}
		a.send(s, func() []Update { return s.tr.Event(ev) })
	}
	turn, serr := s.PromptParts(withTraceparent(a.ctx, p.Meta), text, images, sink)
	if serr != nil {
		return nil, nil, fail(method, serr)
	}
	answered := make(chan struct{})
	s.mu.Lock()
	s.answered = answered
	s.mu.Unlock()
	written := func() { close(answered) }
	return nil, func() (any, *Error, func()) {
		<-turn.Done()
		res := turn.Result()
		if res.CostUSD != nil {
			a.send(s, func() []Update {
				s.cost += *res.CostUSD
				if u, ok := s.tr.Cost(&s.cost); ok {
					return []Update{u}
				}
				return nil
			})
		}
		switch {
		case res.Aborted:
			return PromptResult{StopReason: StopCancelled}, nil, written
		case stopReasons[res.StopReason] != "":
			return PromptResult{StopReason: stopReasons[res.StopReason]}, nil, written
		case res.Error != nil:
			return nil, errorf(CodeInternal, *res.Error), written
		}
		return PromptResult{StopReason: StopEndTurn}, nil, written
	}, nil
}

// stopReasons maps the stop reasons of e's budgets and output schema (N2)
// to ACP's nearest: a limit of tokens is ACP's max_tokens, every other
// budget a limit of the turn's requests, an answer that stayed invalid a
// refusal to go on.
var stopReasons = map[string]string{
	agent.StopModelCalls: StopMaxTurnRequests, agent.StopTokens: StopMaxTokens, agent.StopCostUSD: StopMaxTurnRequests,
	agent.StopDurationMS: StopMaxTurnRequests, agent.StopInvalidOutput: StopRefusal,
}

// promptContent turns ACP content blocks into e's prompt: text blocks as
// they are, resource links and embedded text resources as context the
// model can see, images (base64) as image parts.
func promptContent(method string, blocks []json.RawMessage) (string, []session.Part, *Error) {
	var b strings.Builder
	var images []session.Part
	add := func(s string) {
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(s)
	}
	for i, raw := range blocks {
		var c PromptBlock
		if err := json.Unmarshal(raw, &c); err != nil {
			return "", nil, invalid(method, "prompt[%d]: %v", i, err)
		}
		switch c.Type {
		case "text":
			if c.Text == nil {
				return "", nil, invalid(method, "prompt[%d].text: required", i)
			}
			add(*c.Text)
		case "resource_link":
			if c.URI == "" {
				return "", nil, invalid(method, "prompt[%d].uri: required", i)
			}
			add(fmt.Sprintf("[%s](%s)", cmpOr(c.Name, c.URI), c.URI))
		case "resource":
			r := c.Resource
			switch {
			case r == nil || r.URI == "":
				return "", nil, invalid(method, "prompt[%d].resource.uri: required", i)
			case r.Text != nil:
				add(fmt.Sprintf("<context uri=%q>\n%s\n</context>", r.URI, *r.Text))
			case r.Blob != nil && strings.HasPrefix(r.MimeType, "image/"):
				part, err := image(method, i, *r.Blob)
				if err != nil {
					return "", nil, err
				}
				images = append(images, part)
			case r.Blob != nil:
				add(fmt.Sprintf("<context uri=%q>(binary content, %s, not shown)</context>", r.URI, cmpOr(r.MimeType, "unknown type")))
			default:
				return "", nil, invalid(method, "prompt[%d].resource: expected text or blob", i)
			}
		case "image":
			part, err := image(method, i, c.Data)
			if err != nil {
				return "", nil, err
			}
			images = append(images, part)
		case "audio":
			return "", nil, invalid(method, "prompt[%d]: audio is not supported (promptCapabilities.audio is false)", i)
		default:
			return "", nil, invalid(method, "prompt[%d].type: unknown content type %q", i, c.Type)
		}
	}
	if len(images) > agent.MaxImages {
		return "", nil, invalid(method, "prompt: %d images, at most %d allowed", len(images), agent.MaxImages)
	}
	if b.Len() == 0 && len(images) == 0 {
		return "", nil, invalid(method, "prompt: no content")
	}
	return b.String(), images, nil
}

func image(method string, i int, data string) (session.Part, *Error) {
	raw, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		return session.Part{}, invalid(method, "prompt[%d].data: not base64: %v", i, err)
	}
	part, err := agent.ImageData(fmt.Sprintf("prompt[%d]", i), raw)
	if err != nil {
		return session.Part{}, invalid(method, "%v", err)
	}
	return part, nil
}

// Config option ids.
const (
	optModel    = "model"
	optEffort   = "effort"
	optApproval = "approval"
)

// configOptions lists the session's options: the model (every catalog
// model whose provider can be reached), its effort levels when it has
// any, and the approval policy.
func (a *Agent) configOptions(s *acpSession) []ConfigOption {
	in := s.Info()
	mo := ConfigOption{ID: optModel, Name: "Model", Category: "model", Type: "select", CurrentValue: in.Model}
	for _, m := range a.host.Models() {
		if m.ID == in.Model || m.Available == nil || *m.Available {
			mo.Options = append(mo.Options, ConfigChoice{Value: m.ID, Name: m.ID})
		}
	}
	opts := []ConfigOption{mo}
	if info, err := a.host.Model(in.Model); err == nil && len(info.Efforts) > 0 {
		eo := ConfigOption{ID: optEffort, Name: "Effort", Category: "thought_level", Type: "select", CurrentValue: in.Effort}
		for _, e := range info.Efforts {
			eo.Options = append(eo.Options, ConfigChoice{Value: e, Name: e})
		}
		opts = append(opts, eo)
	}
	ap := ConfigOption{ID: optApproval, Name: "Approval", Description: "which tool calls ask for permission first",
		Type: "select", CurrentValue: in.Approval, Options: []ConfigChoice{
			{Value: agent.ApproveNever, Name: "Never ask"},
			{Value: agent.ApproveWrites, Name: "Ask before edits and commands"},
			{Value: agent.ApproveAll, Name: "Ask before every tool call"},
		}}
	return append(opts, ap)
}

func (a *Agent) sessionSetConfigOption(p SetConfigOptionParams) (any, *Error) {
	const method = "session/set_config_option"
	s, err := a.session(method, p.SessionID)
	if err != nil {
		return nil, err
	}
	var v string
	if json.Unmarshal(p.Value, &v) != nil {
		return nil, invalid(method, "value: expected a string, got %s", clip(p.Value))
	}
	var serr error
	switch p.ConfigID {
	case optModel:
		_, _, serr = s.Set(&v, nil)
		if serr == nil {
			info, _ := a.host.Model(s.Info().Model)
			s.mu.Lock()
			s.tr.ContextWindow = int64(info.ContextWindow)
			s.mu.Unlock()
		}
	case optEffort:
		_, _, serr = s.Set(nil, &v)
	case optApproval:
		_, serr = s.SetApproval(&v, nil)
	default:
		return nil, invalid(method, "configId: unknown option %q (known: %v)", p.ConfigID, []string{optModel, optEffort, optApproval})
	}
	if serr != nil {
		return nil, fail(method, serr)
	}
	return SetConfigOptionResult{ConfigOptions: a.configOptions(s)}, nil
}

func clip(b []byte) string {
	if len(b) > 60 {
		return string(b[:57]) + "..."
	}
	return string(b)
}

// Permission options e offers; their ids are its answers.
var permissionOptions = []PermissionOption{
	{OptionID: "allow", Name: "Allow", Kind: "allow_once"},
	{OptionID: "allow_session", Name: "Allow for this session", Kind: "allow_always"},
	{OptionID: "reject", Name: "Reject", Kind: "reject_once"},
}

// approve asks the client with session/request_permission. fs/* and
// terminal/* are never called: e's tools run here.
func (a *Agent) approve(ctx context.Context, id string, c agent.Call) agent.Decision {
	s, ok := a.lookup(id)
	tc := Translator{}
	if ok {
		tc.Cwd = s.Cwd()
	}
	call := tc.Call(c)
	call.SessionUpdate = ""
	res, err := a.conn.call(ctx, "session/request_permission", PermissionParams{SessionID: id, ToolCall: call, Options: permissionOptions})
	if err != nil {
		return agent.Decision{Reason: err.Error()}
	}
	var r PermissionResult
	if json.Unmarshal(res, &r) != nil {
		return agent.Decision{Reason: "session/request_permission: the client's answer is not a RequestPermissionResponse"}
	}
	switch {
	case r.Outcome.Outcome == "cancelled":
		return agent.Decision{Reason: "the client cancelled the permission request"}
	case r.Outcome.OptionID == "allow":
		return agent.Decision{Allow: true}
	case r.Outcome.OptionID == "allow_session":
		return agent.Decision{Allow: true, Always: true}
	case slices.ContainsFunc(permissionOptions, func(o PermissionOption) bool { return o.OptionID == r.Outcome.OptionID }):
		return agent.Decision{Reason: "rejected by the user"}
	}
	return agent.Decision{Reason: fmt.Sprintf("session/request_permission: unknown optionId %q", r.Outcome.OptionID)}
}

// withTraceparent returns ctx under the caller's trace when _meta carries
// a valid W3C traceparent (Z1); any other _meta leaves ctx as it is, since
// _meta is free-form extension data.
func withTraceparent(ctx context.Context, meta json.RawMessage) context.Context {
	if !gjson.ValidBytes(meta) {
		return ctx
	}
	if tp := gjson.GetBytes(meta, "traceparent"); tp.Type == gjson.String && trace.CheckTraceparent(tp.Str) == nil {
		return trace.WithParent(ctx, tp.Str)
	}
	return ctx
}
