package session

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/e-agent/e/internal/agent"
	"github.com/e-agent/e/internal/model"
	"github.com/e-agent/e/internal/regfile"
	"github.com/e-agent/e/internal/sandbox"
	"github.com/e-agent/e/internal/store"
)

// CompactResult describes a compaction.
type CompactResult = agent.CompactResult

// Session is one open conversation of a Host. Its methods are safe for
// concurrent use.
type Session struct {
	h      *Host
	a      *agent.Session
	header store.Header // as written in its log (or as it would be)
	path   string       // its log; "" when memory-only. Fixed for its life.
	mcp    []MCPServer  // the MCP servers it was created with (beside the settings'), for its forks
	// copyOf is the log a read-only resume copied (C7), whose turns this
	// session does not save; warning says so to its creator.
	copyOf, warning string
	budget          agent.Budget // each turn's unless its prompt sets its own (N1)
	ui              UI           // its connection's client (Spec.UI); nil: none
	front           any          // the front end's state of it (Spec.Front)

	mu       sync.Mutex
	turn     *Turn // the running prompt or compact
	detached bool  // closing: no turn starts any more
	closed   chan struct{}
	closeErr error

	follow followQueue // prompts waiting for the running turn to end (followup.go); under mu
}

func newSession(h *Host, a *agent.Session, hd store.Header, mcp []MCPServer, ui UI) *Session {
	return &Session{h: h, a: a, header: hd, path: a.Info().Path, mcp: mcp, ui: ui, closed: make(chan struct{})}
}

// Front returns the front end's state of the session given at its
// creation (Spec.Front); nil for a fork or when none was given.
func (s *Session) Front() any { return s.front }

// Info is a snapshot of a session.
type Info struct {
	ID, Cwd, Model, Effort string
	Path                   string // "" when memory-only
	Name, Title            string
	Approval               string // the approval policy
	Messages               int
	Running                bool
	// ReadOnly: a resumed log's read-only copy (C7), whose turns go to no
	// log; Warning says why, for the creator ("" otherwise).
	ReadOnly bool
	Warning  string
	Sandbox  sandbox.Policy // the policy in force (W5)
}

// ID returns the session id.
func (s *Session) ID() string { return s.a.ID() }

// Cwd returns the session's working directory.
func (s *Session) Cwd() string { return s.a.Cwd() }

// Header returns the session's log header (as it would be written for a
// memory-only session).
func (s *Session) Header() Header { return s.header }

// Path returns the session's log, "" when it is memory-only.
func (s *Session) Path() string { return s.path }

// Info returns a snapshot.
func (s *Session) Info() Info {
	in := s.a.Info()
	return Info{ID: s.ID(), Cwd: s.Cwd(), Model: in.Model, Effort: in.Effort, Path: s.path,
		Name: in.Name, Title: in.Title, Approval: s.a.Approval().Policy, Messages: in.Messages, Running: in.Running,
		ReadOnly: s.copyOf != "", Warning: s.warning, Sandbox: s.a.Sandbox()}
}

// Turn is one running prompt or compaction. Each has its own done
// channel, so waiting on one never waits on the next (nothing is reused
// across turns).
type Turn struct {
	done      chan struct{}
	shell     bool // a user's shell command, not a model turn
	stopped   bool // Stop was called; guarded by the session's mu
	result    agent.Result
	compacted CompactResult
	shellRun  ShellResult
	err       error
}

// Done is closed when the turn has ended: its last event delivered to the
// sink and its result ready.
func (t *Turn) Done() <-chan struct{} { return t.done }

// Result returns a prompt's result, once Done is closed. Its Session and
// Path are set (Path is nil for a memory-only session).
func (t *Turn) Result() agent.Result { return t.result }

// Compacted returns a compaction's result, once Done is closed.
func (t *Turn) Compacted() (CompactResult, error) { return t.compacted, t.err }

// Wait waits for the turn to end or ctx to be done.
func (t *Turn) Wait(ctx context.Context) error {
	select {
	case <-t.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Prompt starts a turn (M6) and returns at once. Events go to sink in
// order, from the turn's goroutine (serialised across a tool wave), all
// before Done is closed; sink must not block for long. images are paths
// relative to the session's cwd, checked before the turn starts (I1, I2).
// A second turn while one runs is refused with code turn_running (S5).
// The turn stops when ctx ends, on Stop, Interrupt, Close or Shutdown.
func (s *Session) Prompt(ctx context.Context, text string, images []string, sink func(agent.Event)) (*Turn, error) {
	return s.PromptWith(ctx, text, images, PromptOptions{}, sink)
}

// PromptOptions are what a prompt asks of its turn beyond its text.
type PromptOptions struct {
	// Budget replaces, limit by limit, the session's and the process's (N1).
	Budget agent.Budget
	// OutputSchema, when set, is the JSON Schema the turn's final answer
	// must be a value of (J1); one e's validator cannot run is refused
	// with code invalid_params.
	OutputSchema json.RawMessage
}

// PromptWith is Prompt with a budget and an output schema.
func (s *Session) PromptWith(ctx context.Context, text string, images []string, opts PromptOptions, sink func(agent.Event)) (*Turn, error) {
	to, err := s.turnOptions(opts)
	if err != nil {
		return nil, err
	}
	parts, err := s.loadImages(images)
	if err != nil {
		return nil, err
	}
	return s.prompt(ctx, text, parts, to, sink)
}

// turnOptions checks a prompt's options and sets its budget over the
// session's and the process's.
func (s *Session) turnOptions(opts PromptOptions) (agent.TurnOptions, error) {
	to := agent.TurnOptions{Budget: opts.Budget.Over(s.budget).Over(s.h.opts.Budget)}
	if len(opts.OutputSchema) > 0 && string(opts.OutputSchema) != "null" {
		o, err := agent.NewOutputSchema(opts.OutputSchema)
		if err != nil {
			return to, paramErr(CodeInvalidParams, "output_schema", "%w", err)
		}
		to.Output = o
	}
	if to.Budget.MaxCostUSD > 0 {
		id := s.a.Info().Model
		if info, err := s.h.engine.Catalog.Lookup(id); err == nil && info.Price == nil {
			return to, paramErr(CodeInvalidParams, "max_cost_usd", "model %s has no prices in the catalog, so its cost cannot be counted", id)
		}
	}
	return to, nil
}

// PromptParts is Prompt with images given as parts, already read and
// checked (agent.ImageData: ACP's base64 image blocks); a model without
// image input refuses them with code unsupported.
func (s *Session) PromptParts(ctx context.Context, text string, images []Part, sink func(agent.Event)) (*Turn, error) {
	if len(images) > 0 {
		if err := s.acceptsImages(); err != nil {
			return nil, err
		}
	}
	to, err := s.turnOptions(PromptOptions{})
	if err != nil {
		return nil, err
	}
	return s.prompt(ctx, text, images, to, sink)
}

func (s *Session) prompt(ctx context.Context, text string, parts []Part, opts agent.TurnOptions, sink func(agent.Event)) (*Turn, error) {
	return s.start(ctx, s.promptRun(text, parts, opts, sink))
}

// promptRun is the run of a prompt's turn (a follow-up's too).
func (s *Session) promptRun(text string, parts []Part, opts agent.TurnOptions, sink func(agent.Event)) func(context.Context, *Turn) {
	return func(ctx context.Context, t *Turn) {
		began := time.Now()
		if s.h.opts.LogContent {
			s.h.logf(slog.LevelInfo, "prompt", slog.String("session", s.ID()), slog.String("text", text))
		}
		res := s.a.PromptWith(ctx, text, parts, opts, sink)
		s.h.logTurn(s.ID(), began, res)
		id := s.ID()
		res.Session = &id
		p := s.a.Sandbox()
		res.Sandbox = &agent.SandboxPolicy{Mode: string(cmp.Or(p.Mode, sandbox.Off)), WritableRoots: append([]string{}, p.Roots...),
			Network: p.Reaches()}
		if s.path != "" {
			path := s.path
			res.Path = &path
		}
		t.result = res
	}
}

// Compact summarises the history now (M9); like Prompt, it returns at once.
func (s *Session) Compact(ctx context.Context, focus string, sink func(agent.Event)) (*Turn, error) {
	return s.compact(ctx, sink, func(ctx context.Context) (agent.CompactResult, error) {
		return s.a.Compact(ctx, focus, sink)
	})
}

// CompactOver compacts between turns when the last answer's context is
// over pi's threshold (agent.Session.CompactOver; Behaviour.ReserveTokens),
// and otherwise ends at once with no event; like Prompt, it returns at once.
func (s *Session) CompactOver(ctx context.Context, sink func(agent.Event)) (*Turn, error) {
	return s.compact(ctx, sink, func(ctx context.Context) (agent.CompactResult, error) {
		return s.a.CompactOver(ctx, sink)
	})
}

// CompactDue reports whether CompactOver would find the context over
// pi's threshold now (agent.Session.CompactDue).
func (s *Session) CompactDue() bool { return s.a.CompactDue() }

func (s *Session) compact(ctx context.Context, sink func(agent.Event), run func(context.Context) (agent.CompactResult, error)) (*Turn, error) {
	return s.start(ctx, func(ctx context.Context, t *Turn) {
		t.compacted, t.err = run(ctx)
		switch {
		case errors.Is(t.err, context.Canceled): // an interrupt, close or shutdown stopped it
			t.err = &Error{Code: CodeInterrupted, Err: interruptedError{t.err}}
		case t.err != nil:
			t.err = wrap(CodeInternal, "", t.err)
		}
	})
}

// interruptedError is a compaction stopped before it finished: its message
// says so (not "context canceled"), its chain keeps the cause.
type interruptedError struct{ cause error }

func (e interruptedError) Error() string {
	return "compaction interrupted; the history is unchanged"
}

func (e interruptedError) Unwrap() error { return e.cause }

func (s *Session) loadImages(paths []string) ([]model.Part, error) {
	if len(paths) == 0 {
		return nil, nil
	}
	parts, err := agent.LoadImages(s.Cwd(), paths)
	if err != nil {
		var ie *agent.ImageError
		if errors.As(err, &ie) {
			return nil, wrap(CodeInvalidParams, ie.Param(), ie.Err)
		}
		return nil, wrap(CodeInvalidParams, "images", err)
	}
	if err := s.acceptsImages(); err != nil {
		return nil, err
	}
	return parts, nil
}

func (s *Session) acceptsImages() error {
	if s.h.engine.Behaviour.ImagePlaceholder != "" {
		return nil // the model gets the placeholder instead (Behaviour.ImagePlaceholder)
	}
	if info, _ := s.h.engine.Catalog.Lookup(s.a.Info().Model); !info.ImageInput {
		return paramErr(CodeUnsupported, "images", "model %s does not accept images", info.ID)
	}
	return nil
}

// stoppedWait bounds how long new work waits for a stopped turn to end;
// one that takes longer is stuck, and the work fails as turn_running.
const stoppedWait = 5 * time.Second

// start runs one turn on a goroutine the host waits for.
func (s *Session) start(ctx context.Context, run func(context.Context, *Turn)) (*Turn, error) {
	return s.begin(ctx, false, run)
}

// begin runs a turn, or a shell command, on a goroutine the host waits for.
func (s *Session) begin(ctx context.Context, shell bool, run func(context.Context, *Turn)) (*Turn, error) {
	s.mu.Lock()
	if t := s.turn; t != nil && t.stopped {
		// Work asked for after an interrupt finds the session as the
		// interrupt left it: it waits for the stopped turn to end, which it
		// does promptly (M8), instead of failing as turn_running, so a
		// client need not wait for the interrupt's answer.
		s.mu.Unlock()
		wait := time.NewTimer(stoppedWait)
		select {
		case <-t.done:
		case <-ctx.Done():
		case <-wait.C:
		}
		wait.Stop()
		s.mu.Lock()
	}
	defer s.mu.Unlock()
	if s.turn != nil && s.turn.shell && !s.detached {
		return nil, s.errShellRunning()
	}
	return s.launchLocked(ctx, shell, nil, run)
}

// launchLocked starts a turn with s.mu held; after, when not nil, is
// what its goroutine waits for before run (the turn it follows).
func (s *Session) launchLocked(ctx context.Context, shell bool, after <-chan struct{}, run func(context.Context, *Turn)) (*Turn, error) {
	if s.detached {
		return nil, &Error{Code: CodeUnknownSession, Err: fmt.Errorf("session %s %w", s.ID(), errClosed)}
	}
	if !s.h.reserve() {
		return nil, &Error{Code: CodeInternal, Err: errors.New("the process is shutting down")}
	}
	if err := s.a.Begin(); err != nil {
		s.h.turns.Done()
		return nil, wrap(CodeInternal, "", err)
	}
	t := &Turn{done: make(chan struct{}), shell: shell}
	s.turn = t
	go func() {
		defer s.h.turns.Done()
		if after != nil {
			<-after
		}
		ctx, cancel := context.WithCancel(ctx)
		stop := context.AfterFunc(s.h.ctx, cancel)
		run(ctx, t)
		stop()
		cancel()
		s.mu.Lock()
		if s.turn == t {
			s.turn = nil
			s.nextFollowUpLocked(t.done)
		}
		s.mu.Unlock()
		close(t.done)
	}()
	return t, nil
}

// Running returns the running turn, nil when idle.
func (s *Session) Running() *Turn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.turn
}

// Stop cancels the running turn at once, without waiting, and returns it
// (nil when idle). Its result still comes through its Turn. The queued
// follow-ups are dropped (FollowUp).
func (s *Session) Stop() *Turn {
	s.mu.Lock()
	t := s.turn
	if t != nil {
		t.stopped = true
	}
	if s.detached {
		s.dropFollowUpsLocked("dropped: the session was closed")
	} else {
		s.dropFollowUpsLocked("dropped: the session was interrupted")
	}
	s.mu.Unlock()
	if t != nil {
		s.a.Stop()
	}
	return t
}

// Interrupt ends the running turn promptly (M8) and returns when that
// turn is done; it does nothing when idle. ctx bounds the wait.
func (s *Session) Interrupt(ctx context.Context) error {
	if t := s.Stop(); t != nil {
		return t.Wait(ctx)
	}
	return nil
}

// Steer queues text for the running turn (M7); code no_turn when idle or
// running a shell command.
func (s *Session) Steer(text string) error { return s.SteerParts(text, nil) }

// SteerParts is Steer with images as parts (like PromptParts); a model
// without image input refuses them with code unsupported.
func (s *Session) SteerParts(text string, images []Part) error {
	if t := s.Running(); t != nil && t.shell {
		return &Error{Code: CodeNoTurn, Err: fmt.Errorf("session %s runs a shell command, not a turn", s.ID())}
	}
	if len(images) > 0 {
		if err := s.acceptsImages(); err != nil {
			return err
		}
	}
	if err := s.a.SteerParts(text, images); err != nil {
		return wrap(CodeInternal, "", err)
	}
	return nil
}

// Set changes model and effort for the following turns (T1). Both are
// checked together, naming the parameter at fault; on error neither
// changes. Refused with turn_running while a turn runs.
func (s *Session) Set(modelID, effort *string) (string, string, error) {
	cat := s.h.engine.Catalog
	in := s.a.Info()
	m, ef := in.Model, in.Effort
	if modelID != nil {
		info, err := cat.Lookup(*modelID)
		if err != nil {
			return "", "", wrap(CodeInvalidParams, "model", err)
		}
		m, ef = info.ID, ""
	}
	if effort != nil {
		ef = *effort
	}
	if _, err := cat.CheckEffort(m, ef); err != nil {
		return "", "", wrap(CodeInvalidParams, "effort", err)
	}
	if _, err := cat.Provider(m); err != nil {
		return "", "", wrap(CodeInvalidParams, "model", err)
	}
	m, ef, err := s.a.Set(modelID, effort)
	if err != nil {
		return "", "", wrap(CodeInternal, "", err)
	}
	return m, ef, nil
}

// SetApproval changes the approval policy and the time each question
// waits, for the following calls; nil leaves one as it is. Tools allowed
// for the session stay allowed. It returns the policy now in force.
func (s *Session) SetApproval(policy *string, timeout *time.Duration) (string, error) {
	a, err := approval(s.a.Approval(), policy, timeout)
	if err != nil {
		return "", err
	}
	if err := s.a.SetApproval(a); err != nil {
		return "", wrap(CodeInvalidParams, "approval", err)
	}
	return a.Policy, nil
}

// Rename labels the session and records it in its history (C8).
func (s *Session) Rename(name string) error {
	if err := s.a.Rename(name); err != nil {
		return wrap(CodeInternal, "", err)
	}
	return nil
}

// Entries returns a copy of the history.
func (s *Session) Entries() []Entry { return s.a.Entries() }

// SetAutoCompact turns automatic compaction (S4) on or off for the
// session's following model calls.
func (s *Session) SetAutoCompact(on bool) { s.a.SetAutoCompact(on) }

// SetAutoRetry turns retries of failed model calls on or off.
func (s *Session) SetAutoRetry(on bool) { s.a.SetAutoRetry(on) }

// CancelRetryWait ends the wait of a running turn whose failed model call
// is about to be retried: with now the retry starts at once, else the turn
// ends with that failure. It reports whether a turn was waiting.
func (s *Session) CancelRetryWait(now bool) bool { return s.a.CancelRetryWait(now) }

// WithdrawSteers takes back the steers held for the running turn that it
// has not delivered yet, oldest first.
func (s *Session) WithdrawSteers() []string { return s.a.WithdrawSteers() }

// LastCompaction returns the newest compaction's summary and the id of the
// first entry it kept ("" when it keeps none); ok is false when the
// session has none.
func (s *Session) LastCompaction() (summary, firstKept string, ok bool) {
	es := s.a.Entries()
	for i := len(es) - 1; i >= 0; i-- {
		if es[i].Type == store.TypeCompaction {
			return es[i].Summary, es[i].Kept, true
		}
	}
	return "", "", false
}

// Message is one message of the history with its entry's id, parent and time.
type Message struct {
	ID, Parent string
	Time       time.Time
	Role       string
	Content    []Part
}

// Messages returns the history's messages, oldest first.
func (s *Session) Messages() []Message {
	msgs := []Message{}
	for _, en := range s.a.Entries() {
		if en.Type != store.TypeMessage {
			continue
		}
		var m model.Message
		if json.Unmarshal(en.Message, &m) != nil {
			continue
		}
		msgs = append(msgs, Message{ID: en.ID, Parent: en.Parent, Time: en.Time, Role: m.Role, Content: m.Content})
	}
	return msgs
}

// Fork copies the current branch into a new session, registered with the
// host (T2): saved when s is (beside s's log), with s's model, effort,
// tools, instructions, approval policy, name, budget and UI (its
// connection's), and MCP servers of its own, started like s's (ctx bounds
// their start). With at "" the fork has
// the whole branch; otherwise its history ends at entry at, and a branch
// without that entry is code invalid_params naming "at".
func (s *Session) Fork(ctx context.Context, at string) (*Session, error) {
	branch := store.Branch(s.a.Entries())
	if at == "" {
		return s.fork(ctx, branch)
	}
	i, err := s.entryIndex(branch, "at", at)
	if err != nil {
		return nil, err
	}
	return s.fork(ctx, branch[:i+1])
}

// ForkBefore is Fork with a history that ends just before entry id: pi's
// fork at a user message, which its client then edits and sends again.
func (s *Session) ForkBefore(ctx context.Context, id string) (*Session, error) {
	branch := store.Branch(s.a.Entries())
	i, err := s.entryIndex(branch, "entry", id)
	if err != nil {
		return nil, err
	}
	return s.fork(ctx, branch[:i])
}

// entryIndex finds entry id on branch; param names it in the error.
func (s *Session) entryIndex(branch []Entry, param, id string) (int, error) {
	i := slices.IndexFunc(branch, func(e Entry) bool { return e.ID == id })
	if i < 0 {
		return 0, paramErr(CodeInvalidParams, param, "session %s has no entry %q on its branch", s.ID(), id)
	}
	return i, nil
}

func (s *Session) fork(ctx context.Context, entries []Entry) (*Session, error) {
	in := s.a.Info()
	// A fork keeps its parent's sandbox (W2): it must be no way out of it.
	var tmp string
	if s.a.Sandbox().Sandboxed() {
		var err error
		if tmp, err = sandbox.TempDir(); err != nil {
			return nil, wrap(CodeInternal, "", err)
		}
	}
	servers, err := s.h.connectMCP(ctx, s.Cwd(), s.mcp, s.ui)
	if err != nil {
		if tmp != "" {
			os.RemoveAll(tmp)
		}
		return nil, err
	}
	h := store.Header{Type: store.TypeSession, Version: store.Version, ID: store.NewID(), Cwd: s.Cwd(),
		Created: time.Now().UTC(), Model: in.Model, Effort: in.Effort, Name: in.Name}
	var log *store.Log
	if s.path != "" {
		h.Parent = s.path
		if log, err = store.ForkWith(filepath.Dir(s.path), h, entries, s.h.codec()); err != nil {
			for _, c := range servers {
				c.Close()
			}
			if tmp != "" {
				os.RemoveAll(tmp)
			}
			return nil, wrap(CodeInternal, "", err)
		}
	}
	a := s.h.engine.NewSession(agent.Options{ID: h.ID, Cwd: s.Cwd(), Model: in.Model, Effort: in.Effort,
		Tools: s.a.Tools(), Log: log, Entries: relinked(entries), Name: in.Name, System: s.a.System(), Approval: s.a.Approval(),
		MCP: servers, Client: s.a.Client(), Sandbox: s.a.Sandbox(), TempDir: tmp, Approver: approver(s.ui)})
	fork := newSession(s.h, a, h, s.mcp, s.ui)
	fork.budget = s.budget
	s.h.register(fork)
	return fork, nil
}

// Export writes the current branch as a standalone HTML file. path ""
// is the default beside the log (or in the cwd); relative paths resolve
// against the session's cwd. It returns the path written and the title.
func (s *Session) Export(path string) (string, string, error) {
	in := s.a.Info()
	if path == "" {
		path = store.DefaultExportPath(s.path, s.Cwd(), s.ID())
	} else if !filepath.IsAbs(path) {
		path = filepath.Join(s.Cwd(), path)
	}
	title := in.Title
	if in.Name != "" {
		title = in.Name
	}
	if title == "" {
		title = "e session " + s.ID()
	}
	h := s.header
	h.Model, h.Effort = in.Model, in.Effort
	if err := store.ExportFile(path, title, h, store.Branch(s.a.Entries())); err != nil {
		if errors.Is(err, regfile.ErrNotRegular) { // a FIFO, device or directory named as the page (Y1)
			return "", "", wrap(CodeInvalidParams, "path", err)
		}
		return "", "", wrap(CodeInternal, "", err)
	}
	return path, title, nil
}

// Detach begins closing without waiting: the session leaves the host (its
// id is unknown from now on), refuses new turns and its running turn is
// cancelled. It returns that turn, nil when idle. Close finishes.
func (s *Session) Detach() *Turn {
	s.mu.Lock()
	s.detached = true
	s.mu.Unlock()
	s.h.unregister(s)
	return s.Stop()
}

// Close detaches the session, waits for its running turn to end, closes
// its log (releasing the lock, C6) and tells extensions. Later calls
// return the first call's error. ctx bounds the wait for the turn.
func (s *Session) Close(ctx context.Context) error {
	if t := s.Detach(); t != nil {
		if err := t.Wait(ctx); err != nil {
			return err
		}
	}
	s.mu.Lock()
	select {
	case <-s.closed:
		s.mu.Unlock()
		return s.closeErr
	default:
	}
	err := s.a.Close()
	if err != nil {
		s.closeErr = wrap(CodeInternal, "", err)
	}
	close(s.closed)
	s.mu.Unlock()
	s.h.notify("session.closed", map[string]any{"session": s.ID()})
	level := slog.LevelInfo
	if s.closeErr != nil {
		level = slog.LevelError
	}
	s.h.logf(level, "session closed", slog.String("session", s.ID()), slog.Any("error", s.closeErr))
	return s.closeErr
}

// WithReadHook returns ctx carrying h for the provider streams of the
// turns prompted with it (model.ReadHook): a front end that writes a
// turn's events can write those of one provider Read at once (e rpc's
// jsonl.Hold), without reaching the model layer itself.
func WithReadHook(ctx context.Context, h model.ReadHook) context.Context {
	return model.WithReadHook(ctx, h)
}
