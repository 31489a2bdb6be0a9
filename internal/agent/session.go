package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/e-agent/e/internal/mcp"
	"github.com/e-agent/e/internal/model"
	"github.com/e-agent/e/internal/prefault"
	"github.com/e-agent/e/internal/sandbox"
	"github.com/e-agent/e/internal/store"
	"github.com/e-agent/e/internal/tool"
)

// Extensions is what the agent needs of the extension host.
type Extensions interface {
	Tools() []model.ToolDef
	CallTool(ctx context.Context, session, name string, args json.RawMessage) (content string, failed bool)
	Gate(ctx context.Context, session, name string, args json.RawMessage) (allow bool, reason string)
	Notify(event string, data any)
}

// Engine holds what every session of a process shares.
type Engine struct {
	Catalog         *model.Catalog
	Procs           *tool.Procs
	Ext             Extensions // nil: none
	ToolConcurrency int        // wave size (L2); 0 means 8
	// CompactThreshold is the fraction of the model's context window above
	// which a turn compacts before its next model call (S4); 0 means 0.8.
	CompactThreshold float64
	// RetryBase scales retry delays when the provider gives no retry-after
	// (RetryBase, then twice that, …, up to RetryMax when it is set); 0
	// keeps model.Backoff's delays.
	RetryBase   time.Duration
	RetryMax    time.Duration
	MaxAttempts int // attempts per model call, retries included; 0 means 5
	// DefaultWarning is said on the first turn of a session that runs on
	// the fallback model (for example "no model provider configured …").
	DefaultWarning string
	DefaultModel   string
	// SystemPrompt replaces e's own text at the head of the system prompt
	// ("" keeps it); AppendSystemPrompt is added at its end.
	SystemPrompt, AppendSystemPrompt string
	// Behaviour holds the choices a front end makes for its dialect (pi's
	// today: internal/pi fills it); the zero value is e's own.
	Behaviour Behaviour
	Observer  Observer // nil: no operator log
}

// Behaviour is how sessions act where dialects differ. Each field says
// what it changes; its zero value keeps e's own behaviour (e rpc, e -p,
// e acp), and the pi dialect (e --mode rpc) sets them all today.
type Behaviour struct {
	// ImagePlaceholder, when set, lets a model without image input take
	// images: the history keeps them, and each model call sends this text
	// for each one instead (pi's dialect); unset, such images are refused.
	ImagePlaceholder string
	// KeepRecentTokens, when above 0, makes a manual compaction keep the
	// newest messages worth about that many tokens after its summary,
	// cut where pi cuts (pi's compaction.keepRecentTokens); 0 summarises
	// the whole history.
	KeepRecentTokens int64
	// ReserveTokens, when above 0, sets automatic compaction's threshold
	// as pi sets it (its compaction.reserveTokens): a context above the
	// model's window less ReserveTokens, in place of CompactThreshold.
	ReserveTokens int64
	// SummaryFileLists makes a compaction's summary the model's text as it
	// wrote it (not trimmed), ending with the lists of the files the
	// summarised history read and modified (FileOps), so the model keeps
	// knowing them (pi's dialect).
	SummaryFileLists bool
	// SpillOutput makes bash, the model's tool and a user's command, keep
	// the last 2000 lines or 50 KB of a long output in place of the last
	// 64 KiB, with the whole of it in a temp file that the result names
	// (pi's dialect; tool.Env.SpillOutput).
	SpillOutput bool
	// SetWhileRunning lets Set change the model or effort while a turn
	// runs: the change is recorded at once and applies from the next turn
	// (pi's set_model and set_thinking_level); else Set is refused then
	// (ErrBusy: e rpc's session.set).
	SetWhileRunning bool
	// ErrorText, when set, words a failed model call in the turn's error,
	// its retries' reasons and the log (pi's dialect words it as pi's
	// providers do); nil: the error's own text. error_details keep it.
	ErrorText func(*model.Error) string
}

// Options describe a new session.
type Options struct {
	ID     string
	Cwd    string
	Model  string // catalog id
	Effort string
	// Tools are the names offered to the model, already narrowed by the
	// process and the session (C3, C4). nil offers nothing.
	Tools []string
	// ExtTools adds the extensions' tools to Tools at the session's first
	// use of its tool list: it was made before their handshakes ended (H3).
	ExtTools bool
	Log      *store.Log    // nil: memory-only
	Entries  []store.Entry // history to start from (resume, fork); the session keeps the slice and appends to it
	Name     string
	System   string // instructions (trusted AGENTS.md)
	// MCP are the session's MCP servers: their tools are offered beside the
	// built-in ones whenever the session offers tools. The session owns
	// them: Close closes them.
	MCP []*mcp.Client
	// Approval is the approval policy (ApproveNever, ApproveWrites,
	// ApproveAll; "" means never) and the time a question waits.
	Approval Approval
	// Approver asks the session's client before the calls its approval
	// policy names; nil: such calls are denied at once (e -p). It is the
	// session's, not the engine's: each session's questions go to the
	// connection that owns it.
	Approver Approver
	// Warnings are said on the session's first turn, e.g. what resuming
	// its log repaired or skipped.
	Warnings []string
	// Client runs the tools the session's client provides; nil: none.
	Client ClientTools
	// Sandbox confines the commands the session runs (the bash tool,
	// RunShell) and its file tools' writes (W1, W3). TempDir is its
	// private temp dir (their TMPDIR); the session owns it: Close removes it.
	Sandbox sandbox.Policy
	TempDir string
}

// Session is one conversation. Its methods are safe for concurrent use.
type Session struct {
	eng *Engine
	id  string
	cwd string

	sandbox sandbox.Policy
	tempDir string

	mu       sync.Mutex
	modelID  string
	effort   string
	tools    []string
	extTools bool // the extensions' tools join tools at first use (Options.ExtTools)
	name     string
	title    string
	system   string
	env      string // the system prompt's environment, fixed at the first model call
	log      *store.Log
	entries  []store.Entry
	parsed   []parsed // the decoded message of each of entries, as far as history has gone
	nextCall int
	warned   bool
	approval Approval
	mcp      []*mcp.Client
	client   ClientTools // fixed for the session's life
	approver Approver    // fixed for the session's life
	// alwaysAllowed holds the tools the client allowed for the session.
	alwaysAllowed map[string]bool
	pending       []string // warnings for the first turn

	running bool
	cancel  context.CancelFunc // of the running turn
	// preempted records an Interrupt that came after Begin but before the
	// turn bound its context: start cancels at once, so it is not lost.
	preempted bool
	steers    []steer
	// stopSleep stops a running sleep tool call when a steer arrives.
	stopSleep map[int]context.CancelFunc
	done      chan struct{} // closed when the running turn ends
	// runModel and runEffort are the model and effort as Begin found them:
	// the run keeps them though Behaviour.SetWhileRunning lets Set change the
	// session's before the run's goroutine reads them.
	runModel, runEffort string

	noAutoCompact bool // SetAutoCompact(false)
	noRetry       bool // SetAutoRetry(false)
	// retryWait is set while the running turn waits to retry a failed
	// model call: CancelRetryWait sends it whether to retry at once.
	retryWait chan bool
}

// ErrBusy is returned when a session already runs a turn (S5).
var ErrBusy = errors.New("is running a turn: steer or interrupt it")

// ErrIdle is returned by Steer when no turn runs.
var ErrIdle = errors.New("has no running turn")

// NewSession returns a session. It takes ownership of opts.Log.
func (e *Engine) NewSession(opts Options) *Session {
	s := &Session{
		eng: e, id: opts.ID, cwd: opts.Cwd, modelID: opts.Model, effort: opts.Effort,
		tools: opts.Tools, extTools: opts.ExtTools && e.Ext != nil, name: opts.Name, system: opts.System, log: opts.Log,
		entries: opts.Entries,
		pending: opts.Warnings, approval: opts.Approval, mcp: opts.MCP, client: opts.Client, approver: opts.Approver,
		sandbox: opts.Sandbox, tempDir: opts.TempDir,
	}
	if s.approval.Policy == "" {
		s.approval.Policy = ApproveNever
	}
	for _, en := range s.entries {
		if en.Type == store.TypeTitle {
			s.title = en.Name
		}
		if en.Type == store.TypeName {
			s.name = en.Name
		}
	}
	s.nextCall = s.maxCallID() + 1
	return s
}

// maxCallID counts the tool calls of the history: event ids continue after
// them, so they stay unique within a resumed session. A message whose JSON
// names no tool call (nor escapes a character, which could spell one) is
// not decoded: decoding every message of a 100,000-entry log took most of
// its resume. The first model call decodes those its history holds.
func (s *Session) maxCallID() int {
	n := 0
	msgs := history(s.entries, func(i int) (model.Message, bool) {
		en := s.entries[i]
		if en.Type == store.TypeMessage && !bytes.Contains(en.Message, []byte(`"`+model.PartToolCall+`"`)) &&
			!bytes.Contains(en.Message, []byte(`\u`)) {
			return model.Message{}, true
		}
		return decode(en)
	})
	for _, m := range msgs {
		n += len(m.ToolCalls())
	}
	return n
}

// ID returns the session id.
func (s *Session) ID() string { return s.id }

// Cwd returns the session's working directory.
func (s *Session) Cwd() string { return s.cwd }

// Info is a snapshot of a session.
type Info struct {
	Model, Effort, Name, Title, Path string
	Messages                         int
	Running                          bool
}

// Info returns a snapshot.
func (s *Session) Info() Info {
	s.mu.Lock()
	defer s.mu.Unlock()
	in := Info{Model: s.modelID, Effort: s.effort, Name: s.name, Title: s.title, Running: s.running}
	if s.log != nil {
		in.Path = s.log.Path()
	}
	for _, en := range s.entries {
		if en.Type == store.TypeMessage {
			in.Messages++
		}
	}
	return in
}

// Sandbox returns the policy confining the session's commands.
func (s *Session) Sandbox() sandbox.Policy { return s.sandbox }

// toolEnv is what the session's commands and tools run against.
func (s *Session) toolEnv() tool.Env {
	return tool.Env{Cwd: s.cwd, Procs: s.eng.Procs, SpillOutput: s.eng.Behaviour.SpillOutput, Sandbox: s.sandbox, TempDir: s.tempDir}
}

// Entries returns a copy of the history.
func (s *Session) Entries() []store.Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]store.Entry(nil), s.entries...)
}

// Tools returns the tool names offered to the model.
func (s *Session) Tools() []string {
	s.mu.Lock()
	ext := s.extTools
	s.mu.Unlock()
	var defs []model.ToolDef
	if ext {
		defs = s.eng.Ext.Tools() // waits for the handshakes: not under mu
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.extTools && ext {
		for _, d := range defs {
			if !slices.Contains(s.tools, d.Name) {
				s.tools = append(s.tools, d.Name)
			}
		}
		s.extTools = false
	}
	return slices.Clone(s.tools)
}

// System returns the session's instructions.
func (s *Session) System() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.system
}

// SetName labels a new session (C8); the log header already carries it.
func (s *Session) SetName(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.name = name
}

// Rename labels the session and records the change in its history.
func (s *Session) Rename(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.appendLocked(store.Entry{Type: store.TypeName, Name: name}); err != nil {
		return err
	}
	s.name = name
	return nil
}

// Set changes model and effort for the following turns (T1). Both are
// validated together; on error neither changes.
func (s *Session) Set(modelID, effort *string) (string, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running && !s.eng.Behaviour.SetWhileRunning {
		return "", "", fmt.Errorf("session %s %w", s.id, ErrBusy)
	}
	m, ef := s.modelID, s.effort
	if modelID != nil {
		m = *modelID
		if effort == nil {
			ef = "" // the new model's default
		}
	}
	if effort != nil {
		ef = *effort
	}
	info, err := s.eng.Catalog.Lookup(m)
	if err != nil {
		return "", "", err
	}
	m = info.ID // a bare name ("offline") is recorded and reported as the full id
	ef, err = s.eng.Catalog.CheckEffort(m, ef)
	if err != nil {
		return "", "", err
	}
	if err := s.appendLocked(store.Entry{Type: store.TypeSettings, Model: m, Effort: ef}); err != nil {
		return "", "", err
	}
	s.modelID, s.effort = m, ef
	return m, ef, nil
}

// Steer queues text for the running turn (M7). It stops a running sleep.
func (s *Session) Steer(text string) error { return s.SteerParts(text, nil) }

// SteerParts is Steer with images, checked by the caller, after the text.
func (s *Session) SteerParts(text string, images []model.Part) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.running {
		return fmt.Errorf("session %s %w", s.id, ErrIdle)
	}
	s.steers = append(s.steers, steer{text, images})
	for _, stop := range s.stopSleep {
		stop()
	}
	return nil
}

// WithdrawSteers takes back the steers held for the running turn that it
// has not delivered yet, oldest first.
func (s *Session) WithdrawSteers() []string {
	return steerTexts(s.takeSteers())
}

// steer is one held steering message.
type steer struct {
	text   string
	images []model.Part
}

func steerTexts(st []steer) []string {
	var out []string
	for _, x := range st {
		out = append(out, x.text)
	}
	return out
}

// SetAutoCompact turns automatic compaction (S4) on or off for the
// session's following model calls; a provider's context-overflow error
// still compacts.
func (s *Session) SetAutoCompact(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noAutoCompact = !on
}

// SetAutoRetry turns retries of failed model calls on or off.
func (s *Session) SetAutoRetry(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noRetry = !on
}

// CancelRetryWait ends the wait of a turn whose model call failed and is
// about to be retried (pi's abort_retry): with now the turn goes on at once
// with a new model call, as pi's run goes on with what is queued (the
// steers delivered first, its attempts counted from 1 again), else the turn
// ends with that failure (retry_decision "cancelled"), which its attempt
// entry already records. It reports whether a turn was waiting.
func (s *Session) CancelRetryWait(now bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.retryWait == nil {
		return false
	}
	s.retryWait <- now
	s.retryWait = nil
	return true
}

// Interrupt ends the running turn promptly (M8); it does nothing when idle.
// It returns once the turn has ended.
func (s *Session) Interrupt() {
	if done := s.Stop(); done != nil {
		<-done
	}
}

// Stop cancels the running turn without waiting for it. It returns a
// channel closed when that turn has ended, or nil when idle.
func (s *Session) Stop() <-chan struct{} {
	s.mu.Lock()
	cancel, done, running := s.cancel, s.done, s.running
	if running && cancel == nil {
		s.preempted = true
	}
	s.mu.Unlock()
	if !running {
		return nil
	}
	if cancel != nil {
		cancel()
	}
	return done
}

// Close interrupts a running turn and closes the log.
func (s *Session) Close() error {
	s.Interrupt()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.mcp {
		c.Close()
	}
	s.mcp = nil
	if s.tempDir != "" {
		_ = os.RemoveAll(s.tempDir) // what a killed command left there is not the user's work
		s.tempDir = ""
	}
	if s.log == nil {
		return nil
	}
	err := s.log.Close()
	s.log = nil
	return err
}

// Begin marks the session running, so a second prompt is refused at once
// (S5) even before the turn's goroutine starts. Every successful Begin must
// be followed by exactly one Prompt, Compact or Shell call, which ends the run.
func (s *Session) Begin() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running {
		return fmt.Errorf("session %s %w", s.id, ErrBusy)
	}
	s.running = true
	s.runModel, s.runEffort = s.modelID, s.effort
	s.done = make(chan struct{})
	s.steers = nil
	s.preempted = false
	return nil
}

// start binds the running turn's cancel function.
func (s *Session) start(ctx context.Context) context.Context {
	ctx, cancel := context.WithCancel(ctx)
	s.mu.Lock()
	s.cancel = cancel
	if s.preempted {
		cancel()
	}
	s.mu.Unlock()
	return ctx
}

func (s *Session) finish() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cancel()
	left := steerTexts(s.steers)
	s.steers, s.cancel, s.running = nil, nil, false
	close(s.done)
	return left
}

func (s *Session) takeSteers() []steer {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.steers
	s.steers = nil
	return t
}

// appendLocked records entries in memory and, for saved sessions, in the log.
func (s *Session) appendLocked(entries ...store.Entry) error {
	for i := range entries {
		if entries[i].ID == "" {
			entries[i].ID = store.NewEntryID()
		}
		if entries[i].Parent == "" && len(s.entries) > 0 {
			entries[i].Parent = s.entries[len(s.entries)-1].ID
		}
		if entries[i].Time.IsZero() {
			entries[i].Time = time.Now().UTC()
		}
		if s.log != nil {
			if err := s.log.Append(entries[i]); err != nil {
				return err
			}
		}
		s.entries = append(s.entries, entries[i])
	}
	return nil
}

func (s *Session) append(entries ...store.Entry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.appendLocked(entries...)
}

func (s *Session) appendMessage(m model.Message) error {
	_, err := s.appendEntry(m, store.Entry{})
	return err
}

// appendEntry records m in e, which may carry the message's metadata. It
// returns m's text as the entry encodes it when m is one text part (see
// model.Message.AppendJSONText), a view of the entry, which is never
// changed.
func (s *Session) appendEntry(m model.Message, e store.Entry) ([]byte, error) {
	if m.Content == nil {
		m.Content = []model.Part{} // the persisted shape has an array, never null
	}
	size := 64 // grown once: a long answer would copy itself a dozen times
	for _, p := range m.Content {
		size += 64 + len(p.Text) + len(p.Signature) + len(p.Data)*4/3 + len(p.Arguments)
	}
	buf := make([]byte, 0, size)
	prefault.Write(buf)
	b, text, err := m.AppendJSONText(buf)
	if err != nil {
		return nil, err
	}
	e.Type, e.Message = store.TypeMessage, b
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.appendLocked(e); err != nil {
		return nil, err
	}
	s.seed(m)
	return text, nil
}

// seed records m as the decoded message of the entry just appended, when
// decoding the entry gives m back exactly: the next model call then does
// not decode what the turn has in hand (a long answer's megabytes take
// tens of milliseconds to decode). s.mu is held.
func (s *Session) seed(m model.Message) {
	n := len(s.entries) - 1
	if !roundTrips(m) {
		return
	}
	s.parseTo(n) // entries before it (a title, settings) are decoded by then anyway
	if len(s.parsed) == n {
		s.parsed = append(s.parsed, parsed{model.Message{Role: m.Role, Content: slices.Clone(m.Content)}, true})
	}
}

// roundTrips reports whether a message entry encoding m decodes to m:
// it holds no invalid UTF-8 (decoded as U+FFFD), no tool arguments
// (decoded compacted) and no image data (empty decodes as nil).
func roundTrips(m model.Message) bool {
	if m.Content == nil || !utf8.ValidString(m.Role) {
		return false
	}
	for _, p := range m.Content {
		if p.Arguments != nil || p.Data != nil {
			return false
		}
		for _, s := range []string{p.Type, p.Text, p.Signature, p.MediaType, p.ID, p.Name, p.CallID} {
			if !utf8.ValidString(s) {
				return false
			}
		}
	}
	return true
}

// History returns the messages a model call sees: after the last
// compaction, its summary, the messages it kept, and everything since.
// A user's shell command is a user message, unless it was excluded.
func History(entries []store.Entry) []model.Message {
	return history(entries, func(i int) (model.Message, bool) { return decode(entries[i]) })
}

// parsed is an entry's message, decoded once.
type parsed struct {
	m  model.Message
	ok bool // a message entry whose message decodes
}

func decode(en store.Entry) (model.Message, bool) {
	var m model.Message
	if en.Type != store.TypeMessage || json.Unmarshal(en.Message, &m) != nil {
		return model.Message{}, false
	}
	return m, true
}

// history is History of entries, a prefix of s.entries, with each message
// decoded once for the session's life rather than at every model call: a
// long session would pay a parse of its whole history per call. s.mu is
// held. The messages share their parts with s: callers only read them.
func (s *Session) history(entries []store.Entry) []model.Message {
	s.parse()
	return history(entries, func(i int) (model.Message, bool) { return s.parsed[i].m, s.parsed[i].ok })
}

// parse decodes the messages of s.entries not decoded yet into s.parsed.
func (s *Session) parse() { s.parseTo(len(s.entries)) }

// parseTo decodes the messages of s.entries[:n] not decoded yet.
func (s *Session) parseTo(n int) {
	for _, en := range s.entries[len(s.parsed):n] {
		m, ok := decode(en)
		s.parsed = append(s.parsed, parsed{m, ok})
	}
}

// history is History with message i of entries given by msg.
func history(entries []store.Entry, msg func(i int) (model.Message, bool)) []model.Message {
	last := -1
	for i, en := range entries {
		if en.Type == store.TypeCompaction {
			last = i
		}
	}
	out := make([]model.Message, 0, len(entries)+1)
	add := func(i int) {
		en := entries[i]
		if en.Type == store.TypeShell && en.Shell != nil && !en.Shell.Exclude {
			out = append(out, shellMessage(en.Shell))
		}
		if m, ok := msg(i); ok {
			out = append(out, m)
		}
	}
	if last < 0 {
		for i := range entries {
			add(i)
		}
		return out
	}
	c := entries[last]
	out = append(out, summaryMessage(c.Summary))
	if c.Kept != "" {
		keep := false
		for i, en := range entries[:last] {
			if en.ID == c.Kept {
				keep = true
			}
			if keep {
				add(i)
			}
		}
	}
	for i := last + 1; i < len(entries); i++ {
		add(i)
	}
	return out
}

// Summary returns the summary a message of History stands for, when it is
// the one that replaces compacted history.
func Summary(m model.Message) (string, bool) {
	if !isSummary(m) {
		return "", false
	}
	return strings.TrimPrefix(m.Content[0].Text, summaryHeader), true
}

// summaryHeader starts the message that stands for compacted history.
const summaryHeader = "[Summary of the earlier conversation]\n"

func summaryMessage(summary string) model.Message {
	return model.Message{Role: model.RoleUser, Content: []model.Part{{Type: model.PartText,
		Text: summaryHeader + summary}}}
}
