package session

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/e-agent/e/internal/agent"
	"github.com/e-agent/e/internal/extension"
	"github.com/e-agent/e/internal/model"
	"github.com/e-agent/e/internal/sandbox"
	"github.com/e-agent/e/internal/store"
	"github.com/e-agent/e/internal/tool"
)

// Options are the process flags (L1) and build facts.
type Options struct {
	Model        string // -m; "" for the catalog default
	Effort       string // --ef
	NoTools      bool   // --nt
	NoExtensions bool   // --ne
	NoSave       bool   // --no-save: every session memory-only
	Approval     string // --approval: the approval policy of new sessions; "" is never
	MaxAttempts  int    // attempts per model call, retries included; 0: settings' max_attempts
	// RetryBase and RetryMax, when above 0, set the retry delays when the
	// provider gives no retry-after (agent.Engine.RetryBase): pi's
	// retry.baseDelayMs and retry.maxAgentDelayMs.
	RetryBase, RetryMax time.Duration
	// Providers are added to those of settings.json (one of the same name
	// replaces it): pi's models.json under e --mode rpc.
	Providers map[string]model.ProviderConfig
	// SystemPrompt (--system-prompt) replaces e's own text of the system
	// prompt, and settings' system_prompt; AppendSystemPrompt
	// (--append-system-prompt) is added after settings' append_system_prompt.
	SystemPrompt, AppendSystemPrompt string
	// Behaviour is how sessions act where dialects differ (one value for
	// all of them); the zero value is e's own, and internal/pi sets it for
	// e --mode rpc.
	Behaviour Behaviour
	// Log is the operator log (--log, E_LOG); nil logs nothing. LogContent
	// (--log-content) adds prompt text and tool arguments to it.
	Log        *slog.Logger
	LogContent bool
	// Budget is every turn's (e -p's --max-* flags), over settings' (N1).
	Budget agent.Budget
	// Sandbox (--sandbox; "": settings' sandbox, else off), WritableRoots
	// (--writable-root; nil: settings' writable_roots) and SandboxNetwork
	// (--sandbox-network, or settings' sandbox_network) are the process's
	// sandbox policy, which sessions narrow (W1, W2).
	Sandbox        string
	WritableRoots  []string
	SandboxNetwork bool

	Version, Channel, Commit string
}

// Behaviour is how sessions act where dialects differ: the agent's
// choices (agent.Behaviour: images without image input, compaction's
// rules and summary, long outputs, Set during a turn, error words) and the
// session layer's own. Each field's zero value keeps e's own behaviour
// (e rpc, e -p, e acp); the pi dialect (e --mode rpc) sets them today.
type Behaviour struct {
	agent.Behaviour
	// KeyCheckAtPrompt lets a session be created with a model whose
	// provider's key is unset, the front end refusing each prompt instead
	// (pi's dialect: pi starts so); false refuses the creation with code
	// invalid_params.
	KeyCheckAtPrompt bool
	// Codec, when set, makes each new log's format (pi's session files:
	// spec/pi.md), and a resumed file it owns is read and continued in it;
	// nil: e's own log format. It is called once per log: a codec keeps
	// state between entries.
	Codec func() store.Codec
}

// Env is where the process runs.
type Env struct {
	Cwd    string              // sessions' default cwd; relative paths resolve against it
	Home   string              // e's home ($E_HOME)
	Getenv func(string) string // provider keys and the like
}

// UI is how the session layer reaches a front end's client: extensions'
// questions and notices (X2–X7) and, when it is also an Approver, tool
// approvals. The front end implements it, one per client connection. Ask
// blocks until the client answers or ctx ends and returns ErrNoUI at once
// when nobody can be asked (X5).
//
// A session's UI (Spec.UI: the connection that created, resumed or forked
// it) gets its approvals, the questions extensions ask during its tool
// calls and gates, and notices about it (its MCP servers', extensions'
// sent during its calls). Start's UI is the process's: it gets what
// belongs to no session (extension lifecycle, notices and questions
// outside any session's call). Extensions' notices come from one
// goroutine, in order, whichever UI they go to.
type UI = extension.UI

// Approver asks the client whether a tool call may run.
type Approver = agent.Approver

// Notice is a message from or about an extension, for the person.
type Notice = extension.Notice

// ErrNoUI is UI.Ask's answer when there is no client to ask.
var ErrNoUI = extension.ErrNoUI

// Re-exported so front ends need not import the store or the catalog.
type (
	ModelInfo = model.Info    // one entry of models.list
	Summary   = store.Summary // one saved session of session.list
	Entry     = store.Entry   // one entry of a session's history
	Header    = store.Header  // the first line of a session log
	Codec     = store.Codec   // a session log format other than e's (Behaviour.Codec)
	Part      = model.Part    // one part of a message's content
	// SandboxPolicy is the sandbox of a session's commands (W1).
	SandboxPolicy = sandbox.Policy
)

// joinNonEmpty joins the texts given, a blank line apart.
func joinNonEmpty(texts ...string) string {
	var out []string
	for _, t := range texts {
		if strings.TrimSpace(t) != "" {
			out = append(out, t)
		}
	}
	return strings.Join(out, "\n\n")
}

// extensionGrace is how long extensions get to exit after shutdown.
const extensionGrace = 2 * time.Second

// Host is one e process: its settings, model catalog, extension host and
// open sessions. Its methods are safe for concurrent use.
type Host struct {
	opts     Options
	env      Env
	settings store.Settings
	engine   *agent.Engine
	// ext is the extension host, nil when no extension runs; read it
	// through extensions(), once extStarted is closed: the handshakes run
	// beside the process's first requests (H3).
	ext        *extension.Host
	extStarted chan struct{}
	extCancel  context.CancelFunc // ends handshakes still running
	extMu      sync.Mutex
	extHeld    []heldEvent    // events for the extensions before their handshakes ended
	extReady   bool           // ext is set: events go to it at once
	ui         UI             // the process's (Start's): what belongs to no session; nil: nobody
	mcp        []MCPServer    // settings' mcp_servers, started for every session
	def        string         // the model a session gets unless told otherwise
	sandbox    sandbox.Policy // the process's: sessions narrow it

	ctx    context.Context // cancelled by Shutdown and Kill: every turn stops
	cancel context.CancelFunc

	mu       sync.Mutex
	sessions map[string]*Session
	closing  bool           // no turn starts any more
	turns    sync.WaitGroup // turn goroutines; Add only while !closing, under mu
}

// Start reads settings, builds the model catalog and starts extensions.
// ui is the process's client (UI): sessions get their own (Spec.UI); nil
// shows nothing and asks nobody. Its errors are start-up problems: a bad
// settings file, an unknown -m model, an effort the model lacks. ctx
// bounds the extensions' start-up only.
func Start(ctx context.Context, opts Options, env Env, ui UI) (*Host, error) {
	settings, err := store.LoadSettings(env.Home)
	if err != nil {
		return nil, err
	}
	providers, err := model.ParseProviders(settings.Providers)
	if err != nil {
		return nil, err
	}
	if len(opts.Providers) > 0 && providers == nil {
		providers = map[string]model.ProviderConfig{}
	}
	for name, pc := range opts.Providers {
		providers[name] = pc
	}
	cat, err := model.NewCatalog(model.Config{DefaultModel: settings.DefaultModel, Providers: providers, Getenv: env.Getenv,
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
	policy, err := processSandbox(opts, settings, env.Cwd, env.Home)
	if err != nil {
		return nil, err
	}
	var servers []MCPServer
	if len(settings.MCPServers) > 0 {
		if err := json.Unmarshal(settings.MCPServers, &servers); err != nil {
			return nil, fmt.Errorf("session: settings mcp_servers: %w", err)
		}
		for i, s := range servers {
			if err := s.Check(); err != nil {
				return nil, fmt.Errorf("session: settings mcp_servers[%d]: %w", i, err)
			}
		}
	}
	opts.Budget = opts.Budget.Over(agent.Budget{MaxModelCalls: settings.MaxModelCalls, MaxTokens: settings.MaxTokens,
		MaxCostUSD: settings.MaxCostUSD, MaxDurationMS: settings.MaxDurationMS})
	hctx, cancel := context.WithCancel(context.Background())
	h := &Host{opts: opts, env: env, settings: settings, def: def, ctx: hctx, cancel: cancel, ui: ui, mcp: servers, sandbox: policy,
		sessions: map[string]*Session{}, engine: &agent.Engine{
			Catalog: cat, Procs: tool.NewProcs(), ToolConcurrency: settings.ToolConcurrency,
			CompactThreshold: settings.CompactThreshold, DefaultWarning: warning, DefaultModel: def,
			MaxAttempts: cmp.Or(opts.MaxAttempts, settings.MaxAttempts),
			RetryBase:   opts.RetryBase, RetryMax: opts.RetryMax,
			SystemPrompt:       cmp.Or(opts.SystemPrompt, settings.SystemPrompt),
			AppendSystemPrompt: joinNonEmpty(settings.AppendSystem, opts.AppendSystemPrompt),
			Behaviour:          opts.Behaviour.Behaviour,
		}}
	var extUI UI = router{h}
	if opts.Log != nil {
		h.engine.Observer = observer{log: opts.Log, content: opts.LogContent}
		extUI = loggingUI{UI: extUI, h: h}
	}
	h.extStarted = make(chan struct{})
	var cfgs []extension.Config
	if !opts.NoExtensions {
		if cfgs, err = extension.Configs(env.Home, settings.Extensions); err != nil {
			cancel()
			return nil, err
		}
	}
	if len(cfgs) == 0 {
		h.extCancel = func() {}
		h.extReady = true
		close(h.extStarted)
		h.logStart()
		return h, nil
	}
	// The handshakes (up to their timeout each) run while the front end
	// serves: hello, models.list and session.list do not wait for them; a
	// session's create and turns do (H3), as they need the extensions' tools.
	h.engine.Ext = extHost{h}
	var sctx context.Context
	sctx, h.extCancel = context.WithCancel(ctx)
	go func() {
		x := extension.StartWith(sctx, cfgs, extUI, extension.Options{Version: opts.Version})
		h.extMu.Lock()
		h.ext, h.extReady = x, true
		for _, e := range h.extHeld {
			x.Notify(e.event, e.data)
		}
		h.extHeld = nil
		h.extMu.Unlock()
		close(h.extStarted)
		h.logStart()
	}()
	return h, nil
}

// router is the extensions' UI: a question asked for a session
// (extension.SessionOf: during its tool call or gate) goes to that
// session's client, one of a session closed since to nobody; a notice
// about a session (Notice.Session) to that session's client, as Host.notice
// does; everything else goes to the process's.
type router struct{ h *Host }

func (r router) Ask(ctx context.Context, ext, method string, params json.RawMessage) (json.RawMessage, error) {
	ui := r.h.ui
	if id := extension.SessionOf(ctx); id != "" {
		ui = nil
		if s, err := r.h.Get(id); err == nil {
			ui = s.ui
		}
	}
	if ui == nil {
		return nil, ErrNoUI
	}
	return ui.Ask(ctx, ext, method, params)
}

func (r router) Notice(n Notice) {
	var ui UI
	if n.Session != "" {
		if s, err := r.h.Get(n.Session); err == nil {
			ui = s.ui
		}
	}
	r.h.notice(ui, n)
}

// heldEvent is an event for the extensions that came before their
// handshakes ended.
type heldEvent struct {
	event string
	data  any
}

// notify sends an event to the extensions without waiting for their
// handshakes: before they end it is held, and sent in order after them.
func (h *Host) notify(event string, data any) {
	h.extMu.Lock()
	defer h.extMu.Unlock()
	if !h.extReady {
		h.extHeld = append(h.extHeld, heldEvent{event, data})
		return
	}
	if h.ext != nil {
		h.ext.Notify(event, data)
	}
}

// extensions returns the extension host, nil when no extension runs, once
// every extension has completed or failed its handshake.
func (h *Host) extensions() *extension.Host {
	<-h.extStarted
	return h.ext
}

// processSandbox is the process's sandbox policy: the flags', else the
// settings'. One this kernel cannot enforce stops e at its start (W4).
func processSandbox(opts Options, settings store.Settings, cwd, home string) (sandbox.Policy, error) {
	name, roots, network := cmp.Or(opts.Sandbox, settings.Sandbox, string(sandbox.Off)), opts.WritableRoots, opts.SandboxNetwork || settings.SandboxNetwork
	flag := "--sandbox"
	if opts.Sandbox == "" {
		flag = "settings sandbox"
	}
	if roots == nil {
		roots = settings.WritableRoots
	}
	mode, err := sandbox.ParseMode(name)
	if err != nil {
		return sandbox.Policy{}, fmt.Errorf("%s: %w", flag, err)
	}
	abs := make([]string, len(roots))
	for i, r := range roots {
		if !filepath.IsAbs(r) {
			r = filepath.Join(cwd, r)
		}
		if st, err := os.Stat(r); err != nil || !st.IsDir() {
			return sandbox.Policy{}, fmt.Errorf("--writable-root: %s is not a directory", r)
		}
		abs[i] = r
	}
	p, err := sandbox.Narrow(sandbox.Policy{Mode: sandbox.Off}, cwd, &mode, abs, &network)
	if err != nil {
		return sandbox.Policy{}, err
	}
	if err := sandbox.Probe().Enforceable(p); err != nil {
		return sandbox.Policy{}, fmt.Errorf("%s: %w", flag, err)
	}
	return p, nil
}

// Sandbox returns the process's sandbox policy.
func (h *Host) Sandbox() sandbox.Policy { return h.sandbox }

// SandboxSupport returns what this machine can enforce (W5).
func (h *Host) SandboxSupport() sandbox.Support { return sandbox.Probe() }

// Options returns the process options, -m resolved to its full id.
func (h *Host) Options() Options { return h.opts }

// Cwd returns the process's working directory.
func (h *Host) Cwd() string { return h.env.Cwd }

// Home returns e's home directory.
func (h *Host) Home() string { return h.env.Home }

// DefaultModel returns the model a session gets unless told otherwise.
func (h *Host) DefaultModel() string { return h.def }

// Models returns the model catalog (models.list).
func (h *Host) Models() []ModelInfo { return h.engine.Catalog.Models() }

// Model returns the catalog entry of id (a full or bare name).
func (h *Host) Model(id string) (ModelInfo, error) { return h.engine.Catalog.Lookup(id) }

// List returns the saved sessions of cwd ("" = the process's), or of
// every directory with all (C5).
func (h *Host) List(cwd string, all bool) ([]Summary, error) {
	list, err := store.List(h.env.Home, h.abs(cwd), all)
	if err != nil {
		return nil, wrap(CodeInternal, "", err)
	}
	if list == nil {
		list = []Summary{}
	}
	return list, nil
}

// Resolve returns p resolved against the process's cwd; "" is the cwd
// itself: the directory List(p, false) lists.
func (h *Host) Resolve(p string) string { return h.abs(p) }

// abs resolves p against the process's cwd; "" is the cwd itself.
func (h *Host) abs(p string) string {
	if p == "" {
		return h.env.Cwd
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(h.env.Cwd, p)
	}
	return filepath.Clean(p)
}

// Get returns the open session id; the error has code unknown_session.
func (h *Host) Get(id string) (*Session, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s, ok := h.sessions[id]
	if !ok {
		return nil, &Error{Code: CodeUnknownSession, Err: fmt.Errorf("unknown session %q", id)}
	}
	return s, nil
}

// Sessions returns the open sessions, in no particular order.
func (h *Host) Sessions() []*Session {
	h.mu.Lock()
	defer h.mu.Unlock()
	all := make([]*Session, 0, len(h.sessions))
	for _, s := range h.sessions {
		all = append(all, s)
	}
	return all
}

func (h *Host) register(s *Session) {
	h.mu.Lock()
	h.sessions[s.ID()] = s
	h.mu.Unlock()
	h.notify("session.created", map[string]any{"session": s.ID(), "cwd": s.Cwd()})
}

// unregister removes s; it reports whether s was registered.
func (h *Host) unregister(s *Session) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sessions[s.ID()] != s {
		return false
	}
	delete(h.sessions, s.ID())
	return true
}

// reserve counts a turn goroutine about to start; false once the host
// is closing.
func (h *Host) reserve() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closing {
		return false
	}
	h.turns.Add(1)
	return true
}

// closeTurns stops new turns and cancels the running ones.
func (h *Host) closeTurns() {
	h.mu.Lock()
	h.closing = true
	h.mu.Unlock()
	h.cancel()
}

// Shutdown ends the process's work (D1): it stops every running turn
// (each still delivers its last events and its result), closes every
// session (their locks released), kills tool processes and stops the
// extensions. It returns when every turn goroutine has ended.
func (h *Host) Shutdown() {
	h.logf(slog.LevelInfo, "shutdown", slog.Int("sessions", len(h.Sessions())))
	h.closeTurns()
	var wg sync.WaitGroup
	for _, s := range h.Sessions() {
		wg.Go(func() { s.Close(context.Background()) })
	}
	wg.Wait()
	h.engine.Procs.KillAll()
	h.turns.Wait()
	h.extCancel()
	if x := h.extensions(); x != nil {
		x.Shutdown(extensionGrace)
	}
}

// Kill is the signal path (D2): it stops every turn and kills every tool
// process group at once, gives turns up to grace to deliver their last
// events and results, then kills the extensions. It reports whether every
// turn ended within grace.
func (h *Host) Kill(grace time.Duration) bool {
	h.logf(slog.LevelWarn, "killed", slog.Int("sessions", len(h.Sessions())), slog.Int64("grace_ms", grace.Milliseconds()))
	// Turns stop first, so none goes on to another model call after its
	// bash dies.
	h.closeTurns()
	h.engine.Procs.KillAll()
	ended := make(chan struct{})
	go func() {
		h.turns.Wait()
		close(ended)
	}()
	timer := time.NewTimer(grace)
	defer timer.Stop()
	ok := true
	select {
	case <-ended:
	case <-timer.C:
		ok = false
	}
	h.extCancel()
	if x := h.extensions(); x != nil {
		x.Kill()
	}
	return ok
}

// toolNames returns every tool name the process knows: built-in and extension.
func (h *Host) toolNames() []string {
	names := tool.Names()
	if h.engine.Ext != nil {
		for _, d := range h.engine.Ext.Tools() {
			names = append(names, d.Name)
		}
	}
	return names
}

// extHost adapts the extension host to the agent; each call waits for the
// handshakes (Host.extensions).
type extHost struct{ h *Host }

func (e extHost) Tools() []model.ToolDef {
	var defs []model.ToolDef
	for _, t := range e.h.extensions().Tools() {
		defs = append(defs, model.ToolDef{Name: t.Name, Description: t.Description, Parameters: t.Parameters})
	}
	return defs
}

func (e extHost) CallTool(ctx context.Context, session, name string, args json.RawMessage) (string, bool) {
	return e.h.extensions().CallTool(ctx, session, name, args)
}

func (e extHost) Gate(ctx context.Context, session, name string, args json.RawMessage) (bool, string) {
	return e.h.extensions().Gate(ctx, session, name, args)
}

func (e extHost) Notify(event string, data any) { e.h.notify(event, data) }
