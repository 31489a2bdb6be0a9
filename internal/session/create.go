package session

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/e-agent/e/internal/agent"
	"github.com/e-agent/e/internal/mcp"
	"github.com/e-agent/e/internal/model"
	"github.com/e-agent/e/internal/regfile"
	"github.com/e-agent/e/internal/sandbox"
	"github.com/e-agent/e/internal/store"
	"github.com/e-agent/e/internal/tool"
)

// Spec describes a session to create: what session.create, a one-shot
// line and e -p share (O4). Zero values mean "not given".
type Spec struct {
	Cwd     string   // "" = the process's cwd, or the resumed log's; relative to the process's
	Model   *string  // nil = the default, or the resumed log's
	Effort  *string  // nil = the default, or the resumed log's
	Tools   []string // nil = every tool the process allows; non-nil narrows, never widens (C3, C4)
	NoTools bool     // tool_mode "none"
	Save    bool     // write a log; ignored under Options.NoSave
	// Resume is a log to continue. With Save it is opened for writing and
	// locked (C6): a log open for writing anywhere, this process included,
	// is refused with code locked. Without Save it is a read-only copy
	// (C7) under a new session id, so it never shadows an open session.
	// Leaf, when set, is the entry the resumed session goes on from
	// instead of the log's last (the branch ending there); the entries
	// after it stay on a branch of their own.
	Resume string
	Leaf   string
	Name   *string // C8
	// Approval is the approval policy (never, writes, all; nil: the
	// process's); ApprovalTimeout bounds each question (nil: none).
	Approval        *string
	ApprovalTimeout *time.Duration
	// MCP are MCP servers for this session, started beside the settings'
	// (mcp_servers) when it opens and stopped when it closes.
	MCP []MCPServer
	// Dir is the folder a new saved session's log goes into; "" is e's
	// own layout under the home (sessions/<cwd slug>/). File, when set, is
	// the log's file itself, which must not exist yet (a session file its
	// user names: pi's --session PATH); it takes no History.
	Dir  string
	File string
	// History is a new session's starting history (a fork or clone point,
	// oldest first); saved, it is copied into the new log. Parent is the
	// log it came from, recorded in the new log's header.
	History []Entry
	Parent  string
	// Budget is each turn's unless its prompt sets its own (N1).
	Budget agent.Budget
	// ClientTools are tools the client provides (G1), run through
	// ToolClient, each call waiting at most ClientToolTimeout (0: until
	// the turn is interrupted).
	ClientTools       []ClientTool
	ToolClient        ToolClient
	ClientToolTimeout time.Duration
	// Sandbox, WritableRoots and Network narrow the process's sandbox
	// policy (W2); nil keeps the process's.
	Sandbox       *string
	WritableRoots []string
	Network       *bool
	// UI is the client of the connection the session belongs to: its
	// approvals, its extension questions and notices about it go there
	// (UI); its forks keep it. nil: nobody can be asked (asks get
	// ErrNoUI, calls the approval policy names are denied) and its
	// notices go to the process's UI.
	UI UI
	// Front is the front end's own state of the session, kept with it
	// (Session.Front) so that the front end needs no session map of its
	// own beside the host's; a fork starts with none.
	Front any
}

// MCPServer is one MCP server to start (stdio transport).
type MCPServer = mcp.Config

// Create makes a session from spec and registers it with the host. ctx
// bounds the start of its MCP servers (a slow one fails the create when
// ctx ends first).
func (h *Host) Create(ctx context.Context, spec Spec) (*Session, error) {
	c, err := h.prepare(spec)
	if err != nil {
		return nil, err
	}
	s, err := h.open(ctx, c)
	if err != nil {
		return nil, err
	}
	h.register(s)
	return s, nil
}

// creation is a spec resolved against the process and the resumed log.
type creation struct {
	spec     Spec
	cwd      string
	save     bool
	header   *store.Header // of the resumed log
	resumed  string        // the resumed log's path
	log      *store.Log    // the resumed log, when opened for writing
	logged   [2]string     // the resumed log's model and effort in force: a resume records a settings entry only when they change
	entries  []store.Entry
	warnings []string // what reading the resumed log repaired or skipped
	model    string
	effort   string
	tools    []string
	extTools bool // the extensions' tools join tools at first use
	system   string
	approval agent.Approval
	client   *clientTools
	sandbox  sandbox.Policy
}

func paramErr(code Code, param, format string, args ...any) *Error {
	return &Error{Code: code, Param: param, Err: fmt.Errorf(format, args...)}
}

// prepare checks spec: the log to resume, the cwd, model, effort, tools
// and trust. On error nothing stays open.
func (h *Host) prepare(spec Spec) (*creation, error) {
	c := &creation{spec: spec, cwd: h.abs(spec.Cwd), save: spec.Save && !h.opts.NoSave}
	if err := h.check(c); err != nil {
		if c.log != nil {
			c.log.Close()
		}
		return nil, err
	}
	return c, nil
}

func (h *Host) check(c *creation) error {
	spec := c.spec
	if spec.File != "" && (len(spec.History) > 0 || spec.Resume != "") {
		return paramErr(CodeInvalidParams, "file", "%s: a session file of its own takes no history and resumes nothing", spec.File)
	}
	if spec.Resume != "" {
		if err := h.resume(c); err != nil {
			return err
		}
	}
	if st, err := os.Stat(c.cwd); err != nil {
		return paramErr(CodeNotFound, "cwd", "%s does not exist", c.cwd)
	} else if !st.IsDir() {
		return paramErr(CodeInvalidParams, "cwd", "%s is not a directory", c.cwd)
	}
	if err := h.chooseModel(c); err != nil {
		return err
	}
	if err := h.chooseTools(c); err != nil {
		return err
	}
	if c.spec.Budget.MaxCostUSD > 0 {
		if info, err := h.engine.Catalog.Lookup(c.model); err == nil && info.Price == nil {
			return paramErr(CodeInvalidParams, "max_cost_usd", "model %s has no prices in the catalog, so its cost cannot be counted", c.model)
		}
	}
	client, err := h.checkClientTools(spec)
	if err != nil {
		return err
	}
	c.client = client
	appr, err := approval(agent.Approval{Policy: h.opts.Approval}, spec.Approval, spec.ApprovalTimeout)
	if err != nil {
		return err
	}
	c.approval = appr
	if err := h.chooseSandbox(c); err != nil {
		return err
	}
	system, needTrust, err := store.Instructions(h.env.Home, c.cwd)
	if errors.Is(err, regfile.ErrNotRegular) || errors.Is(err, regfile.ErrTooLarge) {
		return wrap(CodeInvalidParams, "cwd", err) // an AGENTS.md that is a FIFO, a device or too large (Y1)
	}
	if err != nil {
		return wrap(CodeInternal, "cwd", err)
	}
	if needTrust {
		return &Error{Code: CodeUntrusted, Err: fmt.Errorf("directory %s has an AGENTS.md but is not trusted: run `e trust %s` first", c.cwd, c.cwd)}
	}
	c.system = system
	return nil
}

// resume reads the log to continue: locked for writing when saving,
// else a read-only copy.
func (h *Host) resume(c *creation) error {
	path, err := store.Locate(h.env.Home, h.env.Cwd, c.spec.Resume)
	if err != nil {
		return wrap(CodeInvalidParams, "resume", err)
	}
	c.resumed = path
	if c.save {
		c.log, c.header, c.entries, err = store.OpenWritableWith(path, h.codec())
		if err == nil {
			c.warnings = c.log.Warnings()
		}
	} else {
		var rr *store.ReadResult
		if rr, err = store.ReadWith(path, h.codec()); err == nil {
			c.header, c.entries, c.warnings = &rr.Header, rr.Entries, rr.Warnings
		}
	}
	if err != nil {
		return wrap(CodeInvalidParams, "resume", err)
	}
	if leaf := c.spec.Leaf; leaf != "" {
		i := slices.IndexFunc(c.entries, func(e store.Entry) bool { return e.ID == leaf })
		if i < 0 {
			return paramErr(CodeInvalidParams, "leaf", "%s has no entry %q", path, leaf)
		}
		c.entries = c.entries[:i+1]
		if c.log != nil {
			if err := c.log.ContinueFrom(leaf); err != nil {
				return wrap(CodeInternal, "leaf", err)
			}
		}
	}
	c.entries = store.Branch(c.entries)
	if c.spec.Cwd == "" {
		c.cwd = c.header.Cwd
	}
	return nil
}

// chooseModel settles model and effort: the spec's, else the resumed
// log's last setting (with -m still applying), else the process default.
func (h *Host) chooseModel(c *creation) error {
	cat := h.engine.Catalog
	modelID, effort := h.def, h.opts.Effort
	if c.header != nil {
		modelID, effort = c.header.Model, c.header.Effort
		for _, en := range c.entries {
			if en.Type == store.TypeSettings {
				modelID, effort = en.Model, en.Effort
			}
		}
		c.logged = [2]string{modelID, effort}
		if h.opts.Model != "" {
			modelID = h.opts.Model
		}
	}
	if c.spec.Model != nil {
		modelID = *c.spec.Model
		if c.spec.Effort == nil {
			effort = h.opts.Effort
		}
	}
	if c.spec.Effort != nil {
		effort = *c.spec.Effort
	}
	info, err := cat.Lookup(modelID)
	if err != nil {
		return wrap(CodeInvalidParams, "model", err)
	}
	modelID = info.ID // a bare name is recorded and reported as the full id
	if _, err := cat.Provider(modelID); err != nil && !(h.opts.Behaviour.KeyCheckAtPrompt && !keySet(cat, modelID)) {
		return wrap(CodeInvalidParams, "model", err) // e.g. no API key: say so now, not at every prompt
	}
	if effort, err = cat.CheckEffort(modelID, effort); err != nil {
		return wrap(CodeInvalidParams, "effort", err)
	}
	c.model, c.effort = modelID, effort
	return nil
}

// chooseTools narrows what the process allows, never widens it (C3, C4, L1).
func (h *Host) chooseTools(c *creation) error {
	// The extensions' tools are known once their handshakes end: a
	// session offered every tool takes them at its first use of its tool
	// list (agent.Options.ExtTools), and only a list naming one of them
	// waits here (H3).
	all := tool.Names()
	if c.spec.Tools != nil && slices.ContainsFunc(c.spec.Tools, func(n string) bool { return !slices.Contains(all, n) }) {
		all = h.toolNames()
	}
	allowed := all
	c.extTools = c.spec.Tools == nil
	if h.opts.NoTools || c.spec.NoTools {
		allowed, c.extTools = nil, false
	}
	if c.spec.Tools != nil {
		var narrowed []string
		for i, name := range c.spec.Tools {
			if !slices.Contains(all, name) {
				return paramErr(CodeInvalidParams, fmt.Sprintf("tools[%d]", i), "unknown tool %q (known: %v)", name, all)
			}
			if slices.Contains(allowed, name) && !slices.Contains(narrowed, name) {
				narrowed = append(narrowed, name)
			}
		}
		allowed = narrowed
	}
	c.tools = allowed
	return nil
}

// chooseSandbox narrows the process's sandbox policy (W2), keeps e's home
// unwritable (W1) and refuses what the kernel cannot enforce (W4).
func (h *Host) chooseSandbox(c *creation) error {
	spec := c.spec
	var mode *sandbox.Mode
	if spec.Sandbox != nil {
		m, err := sandbox.ParseMode(*spec.Sandbox)
		if err != nil {
			return wrap(CodeInvalidParams, "sandbox", err)
		}
		mode = &m
	}
	for i, r := range spec.WritableRoots {
		if st, err := os.Stat(r); filepath.IsAbs(r) && (err != nil || !st.IsDir()) {
			return paramErr(CodeInvalidParams, fmt.Sprintf("writable_roots[%d]", i), "%s is not a directory", r)
		}
	}
	p, err := sandbox.Narrow(h.sandbox, c.cwd, mode, spec.WritableRoots, spec.Network)
	if err == nil {
		err = p.CheckHome(c.cwd, h.env.Home)
	}
	var ne *sandbox.NarrowError
	if errors.As(err, &ne) {
		return wrap(CodeInvalidParams, string(ne.Field), err)
	}
	if err := sandbox.Probe().Enforceable(p); err != nil {
		return wrap(CodeUnsupported, "sandbox", err)
	}
	c.sandbox = p.Settle(c.cwd)
	return nil
}

// connectMCP starts the settings' MCP servers and the spec's for a session
// in cwd. A server that cannot start fails the session, naming it; one
// that exits later is reported as a notice to ui, the session's.
func (h *Host) connectMCP(ctx context.Context, cwd string, spec []MCPServer, ui UI) ([]*mcp.Client, error) {
	all := append(slices.Clone(h.mcp), spec...)
	var clients []*mcp.Client
	seen := map[string]bool{}
	for i, cfg := range all {
		param := fmt.Sprintf("mcp_servers[%d]", i-len(h.mcp))
		if i < len(h.mcp) {
			param = "settings mcp_servers"
		}
		var err error
		if seen[cfg.Name] {
			err = fmt.Errorf("two MCP servers are named %q", cfg.Name)
		}
		seen[cfg.Name] = true
		var c *mcp.Client
		if err == nil {
			name := cfg.Name
			c, err = mcp.Connect(ctx, cfg, cwd, func(why string) {
				h.notice(ui, Notice{Extension: "mcp:" + name, Level: "error", Message: why + "; its tools fail from now on"})
			})
		}
		if err != nil {
			for _, c := range clients {
				c.Close()
			}
			return nil, paramErr(CodeInvalidParams, param, "%v", err)
		}
		clients = append(clients, c)
	}
	return clients, nil
}

// open makes the session of a prepared creation; it takes c.log.
func (h *Host) open(ctx context.Context, c *creation) (*Session, error) {
	var tmp string
	if c.sandbox.Sandboxed() {
		var err error
		if tmp, err = sandbox.TempDir(); err != nil {
			if c.log != nil {
				c.log.Close()
			}
			return nil, wrap(CodeInternal, "", err)
		}
	}
	servers, err := h.connectMCP(ctx, c.cwd, c.spec.MCP, c.spec.UI)
	if err != nil {
		if c.log != nil {
			c.log.Close()
		}
		if tmp != "" {
			os.RemoveAll(tmp)
		}
		return nil, err
	}
	hd := store.Header{Type: store.TypeSession, Version: store.Version, ID: store.NewID(), Cwd: c.cwd,
		Created: time.Now().UTC(), Model: c.model, Effort: c.effort}
	if c.spec.Name != nil {
		hd.Name = *c.spec.Name
	}
	name := ""
	log := c.log
	switch {
	case c.header != nil && log != nil:
		// Resumed for writing: its log's header and id; a name entry in
		// the history overrides the header's name.
		hd, name = *c.header, c.header.Name
	case c.header != nil:
		// A read-only copy: the log's header under a new id, so the copy
		// never takes over a session open under the log's id.
		id := hd.ID
		hd, name = *c.header, c.header.Name
		hd.ID = id
	case c.save:
		hd.Parent = c.spec.Parent
		if log, err = h.newLog(c.spec.Dir, c.spec.File, hd, c.spec.History); err != nil {
			for _, s := range servers {
				s.Close()
			}
			if tmp != "" {
				os.RemoveAll(tmp)
			}
			return nil, wrap(CodeInternal, "", err)
		}
		c.entries = relinked(c.spec.History)
	default:
		hd.Parent = c.spec.Parent
		c.entries = relinked(c.spec.History)
	}
	a := h.engine.NewSession(agent.Options{
		ID: hd.ID, Cwd: c.cwd, Model: c.model, Effort: c.effort, Tools: c.tools, ExtTools: c.extTools, Log: log,
		Entries: c.entries, System: c.system, Name: name, Warnings: c.warnings, Approval: c.approval,
		MCP: servers, Client: c.agentClient(), Sandbox: c.sandbox, TempDir: tmp, Approver: approver(c.spec.UI),
	})
	c.log = nil // the agent session owns it now
	s := newSession(h, a, hd, c.spec.MCP, c.spec.UI)
	s.front = c.spec.Front
	if c.header != nil && log == nil {
		s.copyOf = c.resumed
		why := "pass save: true to continue the log itself"
		if h.opts.NoSave {
			why = "this process saves nothing (--no-save)"
		}
		s.warning = fmt.Sprintf("resumed %s read-only, as session %s: its turns will not be saved (%s)", c.resumed, hd.ID, why)
	}
	s.budget = c.spec.Budget
	fail := func(err error) (*Session, error) {
		a.Close()
		return nil, wrap(CodeInternal, "", err)
	}
	switch {
	case c.spec.Name != nil && c.header != nil:
		if err := a.Rename(*c.spec.Name); err != nil {
			return fail(err)
		}
	case c.spec.Name != nil:
		a.SetName(*c.spec.Name)
	}
	if c.header != nil && log != nil && (c.model != c.logged[0] || c.effort != c.logged[1]) {
		if _, _, err := a.Set(&c.model, &c.effort); err != nil {
			return fail(err)
		}
	}
	h.logf(slog.LevelInfo, "session created", slog.String("session", hd.ID), slog.String("cwd", c.cwd),
		slog.String("model", c.model), slog.String("effort", c.effort), slog.String("path", s.path),
		slog.Bool("resumed", c.header != nil), slog.Int("tools", len(c.tools)), slog.String("sandbox", string(c.sandbox.Mode)))
	return s, nil
}

// newLog creates the log of a new saved session at file, else in dir ("" =
// e's layout), holding copies of history relinked into one chain.
func (h *Host) newLog(dir, file string, hd store.Header, history []Entry) (*store.Log, error) {
	if file != "" {
		return store.CreateWith(filepath.Dir(file), file, hd, h.codec())
	}
	if dir == "" {
		dir = store.SessionsDir(h.env.Home, hd.Cwd)
	}
	if len(history) > 0 {
		return store.ForkWith(dir, hd, history, h.codec())
	}
	return store.CreateWith(dir, "", hd, h.codec())
}

// codec is a new log's format: Behaviour.Codec, or nil for e's own.
func (h *Host) codec() store.Codec {
	if h.opts.Behaviour.Codec == nil {
		return nil
	}
	return h.opts.Behaviour.Codec()
}

// relinked copies history into one chain, as store.ForkIn writes it.
func relinked(history []Entry) []Entry {
	out := make([]Entry, len(history))
	prev := ""
	for i, e := range history {
		e.Parent = prev
		out[i], prev = e, e.ID
	}
	return out
}

// approver is ui's approvals, nil when it takes none (a nil UI included).
func approver(ui UI) Approver {
	a, _ := ui.(Approver)
	return a
}

// notice tells ui, a session's, about it; a session without one, the
// process's UI.
func (h *Host) notice(ui UI, n Notice) {
	if ui == nil {
		ui = h.ui
	}
	if ui != nil {
		ui.Notice(n)
	}
}

// agentClient is c's client tools for the engine; nil when there are none
// (a nil *clientTools in the interface would not be nil).
func (c *creation) agentClient() agent.ClientTools {
	if c.client == nil {
		return nil
	}
	return c.client
}

// approval returns the approval settings asked for, on top of cur.
func approval(cur agent.Approval, policy *string, timeout *time.Duration) (agent.Approval, error) {
	if policy != nil {
		p, err := agent.CheckPolicy(*policy)
		if err != nil {
			return cur, wrap(CodeInvalidParams, "approval", err)
		}
		cur.Policy = p
	}
	if timeout != nil {
		if *timeout < 0 {
			return cur, paramErr(CodeInvalidParams, "approval_timeout_ms", "%v is negative", *timeout)
		}
		cur.Timeout = *timeout
	}
	return cur, nil
}

// errClosed is the error of a session used after Close.
var errClosed = errors.New("is closed")

// keySet reports whether model id's provider can be used now (its key is
// set, or it needs none).
func keySet(cat *model.Catalog, id string) bool {
	for _, m := range cat.Models() {
		if m.ID == id {
			return m.Available != nil && *m.Available
		}
	}
	return false
}
