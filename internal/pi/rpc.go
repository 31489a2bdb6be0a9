package pi

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"

	"github.com/tidwall/gjson"

	"github.com/e-agent/e/internal/agent"
	"github.com/e-agent/e/internal/jsonl"
	"github.com/e-agent/e/internal/lineserver"
	"github.com/e-agent/e/internal/model"
	"github.com/e-agent/e/internal/regfile"
	"github.com/e-agent/e/internal/session"
	"github.com/e-agent/e/schemas"
)

// Env is the process e --mode runs in.
type Env struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Cwd, Home      string // Home: E_HOME, for e's own settings, trust and extensions
	Getenv         func(string) string
	Version        string
}

// front is one e --mode rpc (or json) process: pi's commands in, pi's
// records out, over one session at a time.
type front struct {
	// codecs are the session files' codecs by session id (fileCodec).
	codecMu sync.Mutex
	codecs  map[string]*fileCodec
	// last is the current session, read without fr.mu by fileCodec, which
	// runs while a new session is made.
	last atomic.Pointer[session.Session]

	env   Env
	flags Flags
	cfg   *Config
	h     *session.Host
	b     *backend
	loop  *lineserver.Loop // stdin and stdout (e --mode rpc)
	// requests runs the commands off the loop (H1, H2).
	requests lineserver.Queues
	out      *jsonl.Writer // the loop's stdout
	// deltas holds the lines of the deltas one read of a provider's
	// stream brings, written together before the next read (writeDelta).
	deltas *jsonl.Hold
	// baseURLs are the providers' endpoints by name (get_state's model).
	baseURLs map[string]string
	// templates are pi's prompt templates: get_commands lists them, and a
	// prompt, steer or follow-up "/name args" expands to one.
	templates []Template
	ctx       context.Context
	stop      context.CancelFunc
	work      sync.WaitGroup // command goroutines and runs: each writes its lines before Done

	mu           sync.Mutex
	cur          *session.Session
	info         model.Info
	level        string
	steeringMode string
	followUpMode string
	steerHeld    []queued // passed to e, not yet delivered
	steerWait    []queued // one-at-a-time: not yet passed to e
	followUps    []queued
	pendingShell []session.ShellRun // bash commands recorded once the run or compaction ends
	autoCompact  bool
	autoRetry    bool
	running      bool
	abortReq     bool // abort asked for while the run is open: no follow-up starts
	// starting: a prompt's run has begun, for pi, but not yet in e (its
	// compaction before the run, then the run's start). abortStart is
	// an abort asked for meanwhile (pi's _agentRunAbortRequested): the
	// run is aborted as soon as it starts. preRun is closed once that
	// run started (or failed to).
	starting    bool
	abortStart  bool
	preRun      chan struct{}
	runDone     chan struct{}
	compacting  string        // the compaction going on: "", compactManual, compactBefore, compactAfter
	compactDone chan struct{} // closed once the compact command's compaction has answered
	// A compact command that stops a compact command's compaction: the
	// stopped one's answer (cancelled) waits for the second's
	// compaction_start, as pi's (its abort resumes the second compact in
	// the tick that ends the first).
	compactNext bool           // a compact waits for the running one to stop
	cancelReply func()         // the stopped compact's answer, until then
	failed      bool           // the last e turn ended in an error or aborted
	bashCancels map[int]func() // the running bash commands' stops
	bashNext    int
	tr          *Translator
	trMu        sync.Mutex

	dialogs lineserver.Calls[json.RawMessage] // extension_ui_requests waiting, ids "ui-N"
	notices atomic.Int64                      // notify requests, ids "notify-N"
}

// Main runs e --mode rpc or e --mode json with pi's flags and returns the
// exit status.
func Main(args []string, env Env) int {
	f, err := ParseFlags(args)
	if err != nil {
		fmt.Fprintf(env.Stderr, "e: %s (see e --mode rpc --help)\n", strings.TrimPrefix(err.Error(), "usage: "))
		return 2
	}
	for _, w := range f.Warnings {
		fmt.Fprintf(env.Stderr, "e: warning: %s\n", w)
	}
	if f.Help {
		fmt.Fprint(env.Stdout, help)
		return 0
	}
	if f.Version {
		fmt.Fprintf(env.Stdout, "e %s (pi dialect 1.6.0)\n", env.Version)
		return 0
	}
	fr, err := start(f, env)
	if err != nil {
		fmt.Fprintf(env.Stderr, "e --mode %s: %v\n", f.Mode, err)
		if errors.Is(err, ErrUsage) {
			return 2
		}
		return 1
	}
	if f.Mode == "json" {
		return fr.oneShot()
	}
	return fr.serve()
}

const help = `usage: e --mode rpc [pi options]      pi 1.6.0's RPC protocol on stdin/stdout
       e --mode json [pi options] PROMPT…  pi's JSON event stream for one-shot prompts

pi options e honours:
  --provider NAME, --model PATTERN[:thinking], --thinking LEVEL, --api-key KEY
  --no-session, --session PATH|ID, -c/--continue, --session-dir DIR, -n/--name NAME
  -t/--tools LIST, -xt/--exclude-tools LIST, -nt/--no-tools, -nbt/--no-builtin-tools
  -ne/--no-extensions, --system-prompt TEXT|FILE, --append-system-prompt TEXT|FILE
e's own:
  --sandbox off|workspace-write|read-only, --writable-root DIR (repeatable), --sandbox-network
                           confine bash and user commands (see e --help); $E_HOME/settings.json
                           sandbox, writable_roots, sandbox_network apply when no flag is given
  --flavor pi|prime (e's own: prime-agent's flavour; also e run under the name prime-agent)
Configuration: $PI_CODING_AGENT_DIR (default ~/.pi/agent): models.json, settings.json, sessions/.
`

func start(f Flags, env Env) (*front, error) {
	dir, err := AgentDir(env.Getenv)
	if err != nil {
		return nil, err
	}
	cfg, err := LoadConfig(dir)
	if err != nil {
		return nil, err
	}
	if f.Model != "" {
		if w := cfg.CustomModel(f.Provider, f.Model); w != "" {
			cfg.Warnings = append(cfg.Warnings, w)
		}
	}
	for _, w := range cfg.Warnings {
		fmt.Fprintf(env.Stderr, "e: warning: %s\n", w)
	}
	getenv := cfg.Getenv(env.Getenv)
	ctx, stop := context.WithCancel(context.Background())
	fr := &front{env: env, flags: f, cfg: cfg, ctx: ctx, stop: stop,
		bashCancels:  map[int]func(){},
		steeringMode: cmpOr(cfg.Settings.SteeringMode, "one-at-a-time"),
		followUpMode: cmpOr(cfg.Settings.FollowUpMode, "one-at-a-time"),
		autoCompact:  cfg.Settings.Compaction.Enabled == nil || *cfg.Settings.Compaction.Enabled,
		autoRetry:    cfg.Settings.Retry.Enabled == nil || *cfg.Settings.Retry.Enabled}
	fr.loop = lineserver.New("e --mode "+f.Mode, env.Stdin, env.Stdout, env.Stderr)
	fr.out = fr.loop.Out()
	fr.deltas = fr.out.NewHold()
	fail := func(err error) (*front, error) {
		stop()
		fr.out.Close()
		return nil, err
	}
	opts := session.Options{NoExtensions: f.NoExtensions, Providers: cfg.Providers, Version: env.Version,
		Behaviour: session.Behaviour{Behaviour: agent.Behaviour{ImagePlaceholder: imageOmitted, KeepRecentTokens: keepRecentTokens,
			ReserveTokens: reserveTokens, SummaryFileLists: true, SpillOutput: true, SetWhileRunning: true, ErrorText: providerError},
			KeyCheckAtPrompt: true, Codec: fr.fileCodec},
		AppendSystemPrompt: strings.Join(f.AppendPrompts, "\n\n"),
		Sandbox:            f.Sandbox, WritableRoots: f.WritableRoots, SandboxNetwork: f.SandboxNetwork}
	if n := cfg.Settings.Compaction.KeepRecentTokens; n != nil && *n > 0 {
		opts.Behaviour.KeepRecentTokens = *n
	}
	if n := cfg.Settings.Compaction.ReserveTokens; n != nil && *n > 0 {
		opts.Behaviour.ReserveTokens = *n
	}
	if n := cfg.Settings.Retry.MaxRetries; n != nil && *n >= 0 {
		opts.MaxAttempts = *n + 1
	}
	if ms := cfg.Settings.Retry.BaseDelayMS; ms != nil && *ms > 0 {
		// As pi's retryDelayMs: the base, doubled each retry, at most
		// maxAgentDelayMs (a minute when unset).
		opts.RetryBase, opts.RetryMax = millis(*ms), time.Minute
		if m := cfg.Settings.Retry.MaxAgentDelayMS; m != nil && *m > 0 {
			opts.RetryMax = millis(*m)
		}
	}
	if f.SystemPrompt != nil {
		opts.SystemPrompt = *f.SystemPrompt
	}
	if f.APIKey != "" {
		// A key given on the command line serves whichever provider the model needs.
		base := getenv
		getenv = func(k string) string {
			if strings.HasSuffix(k, "_API_KEY") || strings.HasPrefix(k, "E_PI_KEY_") {
				return f.APIKey
			}
			return base(k)
		}
	}
	fr.h, err = session.Start(ctx, opts, session.Env{Cwd: env.Cwd, Home: env.Home, Getenv: getenv}, ui{fr})
	if err != nil {
		return fail(err)
	}
	if !f.NoTemplates {
		// pi loads a project's templates only once the project is trusted:
		// e's trust list (e trust DIR) decides.
		fr.templates = LoadTemplates(cfg.Dir, env.Cwd, fr.h.Trusted(env.Cwd))
	}
	fr.baseURLs = map[string]string{}
	for _, p := range fr.h.Providers() {
		fr.baseURLs[p.Name] = p.BaseURL
	}
	tools, warnings := toolSelection(fr.h.Tools(), cfg.Settings.DefaultTools(), f)
	for _, w := range warnings {
		fmt.Fprintf(env.Stderr, "e: warning: %s\n", w)
	}
	fr.b = &backend{h: fr.h, ui: ui{fr}, tools: tools}
	if !f.NoSession {
		dir, flat := cfg.SessionsDir(f.SessionDir, env.Getenv)
		fr.b.sessionsDir, fr.b.flat = abs(env.Cwd, dir), flat
	}
	info, level, err := fr.startModel()
	if err != nil {
		return fail(fmt.Errorf("%w: %v", ErrUsage, err))
	}
	sp := spec{cwd: env.Cwd, model: info.ID, effort: Effort(info, level), name: f.Name}
	switch {
	case f.Session != "":
		path, err := fr.b.find(f.Session, env.Cwd)
		if err != nil {
			return fail(err)
		}
		// As pi's, a session file that does not exist yet is a new
		// session's, saved there.
		if isFile(path) {
			sp.resume = path
		} else {
			sp.file = path
		}
	case f.Continue:
		sp.resume = fr.b.latest(env.Cwd)
	}
	if sp.resume != "" && f.Model == "" {
		// As pi's, a session opened goes on with its own model, at the
		// level --thinking names, if any.
		sp.model = ""
	}
	m, err := fr.b.make(sp)
	if err != nil {
		return fail(err)
	}
	fr.use(m)
	switch {
	case sp.model != "":
		// The level chosen, as pi keeps it: e's effort of "minimal" is
		// low, which the session reads back as "low".
		fr.level = level
	case f.Thinking != "":
		fr.level = Clamp(fr.info, f.Thinking)
		effort := Effort(fr.info, fr.level)
		if _, _, err := m.Set(nil, &effort); err != nil {
			return fail(err)
		}
	}
	return fr, nil
}

// millis is ms milliseconds (a JSON number of pi's settings).
func millis(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }

// startModel resolves the model and thinking level of the first session.
func (fr *front) startModel() (model.Info, string, error) {
	var info model.Info
	level := ""
	var err error
	switch {
	case fr.flags.Model != "":
		info, level, err = ResolveModel(fr.h.Models(), fr.flags.Provider, fr.flags.Model, usable)
	case fr.cfg.Settings.DefaultModel != "":
		info, level, err = ResolveModel(fr.h.Models(), fr.cfg.Settings.DefaultProvider, fr.cfg.Settings.DefaultModel, usable)
	default:
		info, err = fr.h.Model(fr.h.DefaultModel())
	}
	if err != nil {
		return info, "", err
	}
	level = cmpOr(fr.flags.Thinking, cmpOr(level, fr.cfg.Settings.DefaultThinkingLevel))
	if level == "" {
		level = levelOf(info.DefaultEffort)
	}
	return info, Clamp(info, level), nil
}

// usable reports whether m's provider can be used now (its key is set):
// models.list entries carry it.
func usable(m model.Info) bool { return m.Available != nil && *m.Available }

// use makes s the current session.
func (fr *front) use(s *session.Session) {
	in := s.Info()
	info, _ := fr.h.Model(in.Model)
	s.SetAutoCompact(fr.autoCompact)
	s.SetAutoRetry(fr.autoRetry)
	fr.mu.Lock()
	fr.cur, fr.info, fr.level = s, info, Clamp(info, levelOf(in.Effort))
	fr.last.Store(s)
	// tr is read under trMu alone (translate), written under both.
	fr.trMu.Lock()
	fr.tr = &Translator{Info: info, ThinkingLevel: fr.level, MaxAttempts: fr.h.MaxAttempts(), Recorded: recorder{s, fr}}
	fr.trMu.Unlock()
	fr.mu.Unlock()
}

// recorder reads what the agent recorded in a session's history.
type recorder struct {
	s  *session.Session
	fr *front
}

// ContextTokens is pi's estimate of the context (its estimatedTokensAfter):
// the messages get_messages shows, system message included.
func (r recorder) ContextTokens() int64 { return estimateMessages(r.fr.contextOf(r.s)) }

func (r recorder) LastAssistant() (model.Message, bool) {
	ms := r.s.Messages()
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].Role == model.RoleAssistant {
			return model.Message{Role: ms[i].Role, Content: ms[i].Content}, true
		}
	}
	return model.Message{}, false
}

func (r recorder) LastCompaction() (string, string) {
	summary, kept, ok := r.s.LastCompaction()
	if !ok {
		return "", ""
	}
	if kept == "" { // it keeps none: its own id, as pi's firstKeptEntryId
		es := r.s.Entries()
		for i := len(es) - 1; i >= 0; i-- {
			if es[i].Type == session.EntryCompaction {
				kept = es[i].ID
				break
			}
		}
	}
	return summary, kept
}

// CompactedFiles returns the paths the newest compaction's summarised
// history read and modified, as pi's compaction details list them: the
// path argument of every read, write and edit call on the branch before
// the first kept entry; a file both read and modified is only modified.
func (r recorder) CompactedFiles() CompactionDetails {
	branch := session.Branch(r.s.Entries())
	end := len(branch)
	for i, en := range branch {
		if en.Type == session.EntryCompaction {
			end = i
		}
	}
	if end < len(branch) {
		if k := slices.IndexFunc(branch[:end], func(e session.Entry) bool { return e.ID == branch[end].Kept }); k >= 0 {
			end = k
		}
	}
	read, modified := agent.FileOps(branch[:end])
	return CompactionDetails{ReadFiles: read, ModifiedFiles: modified}
}

// write queues one record.
func (fr *front) write(v any) {
	b, ok := appendEvent(nil, v)
	if !ok {
		var err error
		if b, err = marshal(v); err != nil {
			panic(fmt.Sprintf("pi: marshal %T: %v", v, err))
		}
	}
	_ = fr.out.Write(context.Background(), b)
}

// serve reads commands until EOF or a signal (rpc.md: Shutdown). EOF is an
// orderly shutdown: the run in progress, its follow-ups and every command
// finish first, unless a signal comes or the client is gone (stdout's reader
// closed, or e's parent died: a client killed during a silent bash), which
// stop them at once as a gone stdout does. A signal stops them at once; a
// second one exits at once.
func (fr *front) serve() int {
	end := fr.loop.Run(fr.ctx, func(_ int, line []byte) bool {
		fr.handle(line)
		return false
	})
	// The commands read run first; one stuck is left behind after its
	// grace (H2), which counts in the teardown's after a signal.
	grace := lineserver.HandlerGrace
	if end.Reason == lineserver.Signalled || end.Reason == lineserver.Gone {
		fr.stopAll()
		grace = min(grace, end.Grace())
	}
	fr.requests.Close(grace)
	switch end.Reason {
	case lineserver.EOF:
		finished := make(chan struct{})
		go func() {
			fr.work.Wait()
			close(finished)
		}()
		stop := make(chan struct{})
		select {
		case <-finished:
		case sig := <-fr.loop.Signals():
			end = lineserver.Ending{Reason: lineserver.Signalled, Signal: sig, At: time.Now()}
		case why := <-fr.loop.WatchClient(stop):
			fmt.Fprintf(fr.env.Stderr, "e --mode rpc: the client is gone (%s); stopping\n", why)
			end = lineserver.Ending{Reason: lineserver.Gone, At: time.Now()}
		}
		close(stop)
	}
	if end.Reason == lineserver.Signalled || end.Reason == lineserver.Gone {
		done := make(chan int, 1)
		go func() {
			done <- lineserver.Within(end.Left(), end.Code(), func() int { fr.shutdown(); return fr.loop.Close(end.Code()) })
		}()
		var second <-chan os.Signal // nil: only a signal's teardown is cut short
		if end.Reason == lineserver.Signalled {
			second = fr.loop.Signals()
		}
		select {
		case code := <-done:
			return code
		case <-second:
			// A second signal exits at once: serve returns the first's
			// status, and e's main exits with it while the teardown runs.
			return end.Code()
		}
	}
	fr.shutdown()
	return fr.loop.Close(end.Code())
}

// shutdown stops the run and every command, closes the session and
// flushes the output.
func (fr *front) shutdown() {
	cur := fr.stopAll()
	fr.uiCancelAll()
	fr.work.Wait()
	if cur != nil {
		cur.Close(context.Background())
	}
	fr.stop()
	fr.h.Shutdown() // tool processes and extensions
	fr.out.Close()
}

// stopAll stops the run and every bash command and returns the current
// session.
func (fr *front) stopAll() *session.Session {
	fr.mu.Lock()
	cur := fr.cur
	cancels := slices.Collect(maps.Values(fr.bashCancels))
	fr.mu.Unlock()
	for _, cancel := range cancels {
		cancel()
	}
	if cur != nil {
		cur.Stop()
	}
	return cur
}

// noData marks a command whose response has no data field.
type noData struct{}

// nullData is a data field that is JSON null (cycle_model with one model).
type nullData struct{}

func (nullData) MarshalJSON() ([]byte, error) { return []byte("null"), nil }

func (fr *front) respond(id json.RawMessage, cmd string, data any, err error) {
	r := Response{Type: "response", Command: cmd, Success: err == nil}
	if len(id) > 0 { // a nil RawMessage in the interface would be written as null
		r.ID = id
	}
	switch {
	case err != nil:
		r.Error = err.Error()
	case data == noData{}:
	case data == nil:
		r.Data = nullData{}
	default:
		r.Data = data
	}
	fr.write(r)
}

// handle serves one line.
func (fr *front) handle(line []byte) {
	if len(bytes.TrimSpace(line)) == 0 {
		return
	}
	if !json.Valid(line) {
		var v any
		err := json.Unmarshal(line, &v)
		msg := "invalid JSON"
		if err != nil {
			msg = err.Error()
		}
		fr.respond(nil, "parse", nil, fmt.Errorf("Failed to parse command: %s", msg))
		return
	}
	// The id as it came, whatever its type: pi echoes any value.
	var id json.RawMessage
	if v := gjson.GetBytes(line, "id"); v.Exists() {
		id = json.RawMessage(v.Raw)
	}
	if gjson.GetBytes(line, "type").String() == "extension_ui_response" {
		fr.uiAnswer(line)
		return
	}
	typ, err := schemas.ValidatePiCommand(line)
	if err != nil {
		if typ == "" {
			typ = "parse"
		}
		if strings.HasPrefix(err.Error(), "unknown command type") {
			err = fr.unknownCommand(typ)
		}
		fr.respond(id, typ, nil, err)
		return
	}
	h := commands[typ]
	if h == nil { // a schema without a handler: a bug, said plainly
		fr.respond(id, typ, nil, fmt.Errorf("Unknown command: %s", typ))
		return
	}
	// Commands run off the loop, in order: the process has one session.
	// A query passes a command stuck opening a file (blocking, H1).
	c := &command{id: id, typ: typ, line: line}
	run := func() { h(fr, c) }
	var ok bool
	switch {
	case queries[typ]:
		ok = fr.requests.GoQuery(piKey, run)
	case stops[typ]:
		ok = fr.requests.Now(piKey, run)
	default:
		ok = fr.requests.Go(piKey, run)
	}
	if !ok {
		fr.respond(id, typ, nil, errors.New("the process is shutting down"))
	}
}

// piKey is the key of every command's queue: a pi process has one session.
const piKey = "session"

// blocking marks the start of the running command's open of a file the
// client named, which may never return (a FIFO): once it has lasted
// lineserver.StuckAfter, queries pass the command, seeing the state from
// before it (H1). Call what it returns when the open is done.
func (fr *front) blocking() func() { return fr.requests.Blocking(piKey) }

// command is one validated command line.
type command struct {
	id   json.RawMessage
	typ  string
	line []byte
}

// decode reads the command's line, which its schema accepted, into v: the
// generated struct of its type (CommandX).
func (c *command) decode(v any) error {
	if err := json.Unmarshal(c.line, v); err != nil {
		return fmt.Errorf("%s: %w", c.typ, err)
	}
	return nil
}

// answer adapts the handler of a command whose response is the data or
// error the handler returns, given the command decoded into P
// (dispatch_gen.go's commands).
func answer[P any](h func(*front, P) (any, error)) func(*front, *command) {
	return func(fr *front, c *command) {
		var p P
		if err := c.decode(&p); err != nil {
			fr.respond(c.id, c.typ, nil, err)
			return
		}
		data, err := h(fr, p)
		fr.respond(c.id, c.typ, data, err)
	}
}

// answerLater adapts the handler of a command that writes its response
// itself (x-e responds), at once or once what it started has ended.
func answerLater[P any](h func(*front, *command, P)) func(*front, *command) {
	return func(fr *front, c *command) {
		var p P
		if err := c.decode(&p); err != nil {
			fr.respond(c.id, c.typ, nil, err)
			return
		}
		h(fr, c, p)
	}
}

// async runs f in a goroutine that shutdown waits for.
func (fr *front) async(f func()) {
	fr.work.Add(1)
	go func() {
		defer fr.work.Done()
		f()
	}()
}

// getCommands lists the prompt templates (e has no extension commands or
// skills), as pi describes a template command.
func (fr *front) getCommands(CommandGetCommands) (any, error) {
	cmds := []ResponseGetCommandsDataCommandsItem{}
	for _, t := range fr.templates {
		cmds = append(cmds, ResponseGetCommandsDataCommandsItem{Name: t.Name, Description: t.Description, Source: "prompt",
			SourceInfo: &ResponseGetCommandsDataCommandsItemSourceInfo{Path: t.Path, Source: "auto", Scope: t.Scope,
				Origin: "top-level", BaseDir: t.BaseDir}})
	}
	return ResponseGetCommandsData{Commands: cmds}, nil
}

// images decodes the images of a command of type typ (nil: none).
func images(typ string, ims *[]ImageContent) ([]model.Part, []Content, error) {
	var parts []model.Part
	var blocks []Content
	for i, im := range ptrOr(ims) {
		data, err := base64.StdEncoding.DecodeString(im.Data)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: images[%d].data: not base64: %w", typ, i, err)
		}
		parts = append(parts, model.Part{Type: model.PartImage, MediaType: im.MimeType, Data: data})
		blocks = append(blocks, Content{Type: "image", Data: data, MimeType: im.MimeType})
	}
	return parts, blocks, nil
}

// queued is a steering or follow-up message with its images: parts for
// e, blocks for pi's events.
type queued struct {
	text   string
	parts  []model.Part
	blocks []Content
}

func texts(qs ...[]queued) []string {
	out := []string{}
	for _, q := range qs {
		for _, m := range q {
			out = append(out, m.text)
		}
	}
	return out
}

// imageOmitted stands for an image the model cannot take, as pi sends it.
const imageOmitted = "(image omitted: model does not support images)"

// keepRecentTokens is pi's default compaction.keepRecentTokens: how many
// tokens of the newest messages a compaction keeps.
const keepRecentTokens = 20000

// reserveTokens is pi's default compaction.reserveTokens: automatic
// compaction starts when the context is above the model's window less it.
const reserveTokens = 16384

// steerLocked passes m to the running turn; fr.mu is held.
func (fr *front) steerLocked(m queued) error {
	fr.trMu.Lock()
	defer fr.trMu.Unlock()
	return fr.passSteer(m)
}

// passSteer is steerLocked with fr.trMu held too.
func (fr *front) passSteer(m queued) error {
	if err := fr.cur.SteerParts(m.text, m.parts); err != nil {
		return err
	}
	fr.tr.Steering(m.text, m.blocks)
	return nil
}

func (fr *front) prompt(c *command, p CommandPrompt) {
	m, err := fr.message(p.Type, p.Message, p.Images)
	if err != nil {
		fr.respond(c.id, c.typ, nil, err)
		return
	}
	text, parts, blocks := m.text, m.parts, m.blocks
	fr.mu.Lock()
	running, sess := fr.running || fr.starting, fr.cur
	compacting := fr.compacting
	due := fr.claimCompactBefore()
	pre := fr.preRun
	fr.mu.Unlock()
	if due {
		// The prompt's response follows the compaction's events; only
		// then is the prompt async.
		fr.async(func() {
			fr.compactBefore(sess)
			fr.begin(c, text, parts, blocks)
			close(pre)
		})
		return
	}
	if compacting == compactManual {
		fr.respond(c.id, c.typ, nil, errors.New("Cannot submit a prompt while compaction is in progress. Wait for compaction to finish and retry."))
		return
	}
	// A prompt's compaction before its run is part of that run, for pi.
	if running {
		switch ptrOr(p.StreamingBehavior) {
		case "steer":
			_, err = fr.queueSteer(m)
		case "followUp":
			_, err = fr.queueFollowUp(m)
		default:
			err = errors.New("Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message.")
		}
		fr.respond(c.id, c.typ, ResponsePromptData{Disposition: "queued"}, err)
		return
	}
	fr.begin(c, text, parts, blocks)
}

// The compactions the front runs itself (fr.compacting).
const (
	compactManual = "manual" // the compact command
	compactBefore = "before" // a prompt's, before its run starts
	compactAfter  = "after"  // a run's, once it ended
)

// claimCompactBefore reports whether a run about to start must compact
// first, as pi checks in its _prepareRun: the context is already over the
// threshold (a run that ended aborted, auto compaction turned on since).
// It claims that compaction (fr.compacting) and the run, for pi
// (fr.starting, until startRun); fr.mu is held.
func (fr *front) claimCompactBefore() bool {
	if fr.running || fr.starting || fr.compacting != "" || !fr.cur.CompactDue() {
		return false
	}
	fr.compacting = compactBefore
	fr.starting, fr.abortStart, fr.preRun = true, false, make(chan struct{})
	return true
}

// compactBefore runs the compaction claimCompactBefore claimed, to its end.
func (fr *front) compactBefore(sess *session.Session) {
	fr.compactOver(sess)
	fr.mu.Lock()
	fr.compacting = ""
	fr.mu.Unlock()
}

// begin starts the run of prompt command c and answers it.
func (fr *front) begin(c *command, text string, parts []model.Part, blocks []Content) {
	if err := fr.startRun(text, parts, blocks, func() {
		fr.respond(c.id, c.typ, ResponsePromptData{Disposition: "started"}, nil)
	}); err != nil {
		fr.respond(c.id, c.typ, nil, err)
	}
}

// startRun begins a pi run with text; accepted is called once the session
// took it, before any of its events.
func (fr *front) startRun(text string, parts []model.Part, blocks []Content, accepted func()) error {
	fr.mu.Lock()
	defer fr.mu.Unlock()
	abort := fr.abortStart
	fr.starting, fr.abortStart = false, false
	if fr.running || fr.compacting != "" {
		return errors.New("Agent is already processing")
	}
	sess := fr.cur
	if err := keyMissing(fr.h, fr.info.ID); err != nil {
		return err
	}
	if err := fr.flushShell(); err != nil {
		return err
	}
	// The turn's events wait for the translator until the response is out.
	fr.trMu.Lock()
	defer fr.trMu.Unlock()
	fr.tr.Info, fr.tr.ThinkingLevel = fr.info, fr.level
	if !asked(sess) {
		fr.tr.BeginSystem(systemMessage(sess, fr.tr.ms()))
		fr.fileSystem(sess)
	}
	fr.tr.Begin(text, blocks)
	turn, err := sess.PromptParts(session.WithReadHook(fr.ctx, fr.deltas), text, parts, fr.sink)
	if err != nil {
		return err
	}
	fr.running, fr.abortReq = true, abort
	if abort {
		sess.Stop() // before the run's first model call, as pi aborts at agent_start
	}
	fr.runDone = make(chan struct{})
	for _, m := range fr.steerHeld { // steers queued before the run go in after the prompt
		fr.passSteer(m)
	}
	accepted()
	done := fr.runDone
	fr.async(func() { fr.run(sess, turn, done) })
	return nil
}

// run drives e turns until the run settles: the prompt, then each
// follow-up (pi delivers them when the agent would stop).
func (fr *front) run(sess *session.Session, turn *session.Turn, done chan struct{}) {
	for {
		<-turn.Done()
		res := turn.Result()
		fr.mu.Lock()
		fr.failed = res.Error != nil || res.Aborted
		var next []queued
		if !res.Aborted {
			next = fr.nextLocked()
		}
		if len(next) == 0 && !fr.failed && fr.compactAfterRun(sess) {
			// As pi's post-run loop: what was queued while the run ended
			// (during its compaction) goes on, in a new pi run.
			next = fr.nextLocked()
		}
		var err error
		if len(next) > 0 {
			fr.trMu.Lock()
			fr.tr.Info, fr.tr.ThinkingLevel = fr.info, fr.level
			fr.tr.Begin(next[0].text, next[0].blocks)
			turn, err = sess.PromptParts(session.WithReadHook(fr.ctx, fr.deltas), next[0].text, next[0].parts, fr.sink)
			if err == nil {
				for _, m := range next[1:] {
					fr.passSteer(m)
				}
				// pi takes the follow-ups of "all" out of the queue one message at a
				// time; the turn's events wait for trMu: none has gone yet.
				q := fr.queueLocked()
				q.FollowUp = append(texts(next[1:]), q.FollowUp...)
				fr.tr.After(fr.queueEvent(q))
			}
			fr.trMu.Unlock()
		}
		if len(next) == 0 || err != nil {
			fr.running = false
			fr.flushShell() // what fails stays pending for the next prompt
			fr.mu.Unlock()
			fr.translate((*Translator).Settle)
			close(done)
			return
		}
		fr.mu.Unlock()
	}
}

// nextLocked takes from the queues what the run goes on with when it
// would stop: steers it never used first, then follow-ups (one, or all in
// mode all); none once an abort was asked. fr.mu is held.
func (fr *front) nextLocked() []queued {
	if fr.abortReq || fr.ctx.Err() != nil {
		return nil
	}
	fr.followUps = append(append(fr.steerHeld, fr.steerWait...), fr.followUps...)
	fr.steerHeld, fr.steerWait = nil, nil
	n := min(1, len(fr.followUps))
	if fr.followUpMode == "all" {
		n = len(fr.followUps)
	}
	next := fr.followUps[:n:n]
	fr.followUps = fr.followUps[n:]
	return next
}

// compactAfterRun compacts, as pi does once a run has ended, when the
// last answer's context is over the threshold: agent_end first, then the
// compaction's events; agent_settled follows, or, as pi's, a new run with
// what was queued meanwhile. fr.mu is held, and released while the
// compaction runs (get_state then says isCompacting). It reports whether
// the run may go on: no abort stopped it.
func (fr *front) compactAfterRun(sess *session.Session) bool {
	fr.compacting = compactAfter
	fr.mu.Unlock()
	fr.translate((*Translator).EndRun)
	stopped := fr.compactOver(sess)
	fr.mu.Lock()
	fr.compacting = ""
	return !stopped
}

// compactOver runs sess's automatic compaction, when it is due, to its
// end, and reports whether an abort stopped it; fr.mu is not held.
func (fr *front) compactOver(sess *session.Session) bool {
	turn, err := sess.CompactOver(fr.ctx, fr.sink)
	if err != nil {
		return false
	}
	<-turn.Done()
	switch _, err := turn.Compacted(); {
	case errors.Is(err, context.Canceled) && fr.ctx.Err() == nil: // an abort stopped it
		fr.translate((*Translator).CompactionAborted)
		return true
	case err != nil:
		fr.sink(agent.Error{Message: "Auto-compaction failed: " + err.Error()})
	}
	return false
}

// sink receives the events of the current session's turns.
func (fr *front) sink(ev agent.Event) {
	if fr.writeDelta(ev) { // most of a turn's events: encoded without Feed
		return
	}
	switch ev := ev.(type) {
	case agent.Warning:
		fmt.Fprintf(fr.env.Stderr, "e: warning: %s\n", ev.Message)
	case agent.Steered:
		fr.mu.Lock()
		if i := slices.IndexFunc(fr.steerHeld, func(m queued) bool { return m.text == ev.Text }); i >= 0 {
			fr.steerHeld = slices.Delete(fr.steerHeld, i, i+1)
		}
		if len(fr.steerWait) > 0 && len(fr.steerHeld) == 0 {
			next := fr.steerWait[0]
			fr.steerWait = fr.steerWait[1:]
			if fr.steerLocked(next) == nil {
				fr.steerHeld = append(fr.steerHeld, next)
			}
		}
		q := fr.queueLocked()
		fr.mu.Unlock()
		fr.trMu.Lock()
		fr.tr.After(fr.queueEvent(q))
		fr.trMu.Unlock()
	}
	fr.translate(func(t *Translator) []Event { return t.Feed(ev) })
	if _, ok := ev.(agent.Compacting); ok {
		fr.cancelled()
	}
}

// translate writes, in order, the events f takes from the translator:
// f runs under trMu, the writes outside it.
func (fr *front) translate(f func(*Translator) []Event) {
	fr.trMu.Lock()
	evs := f(fr.tr)
	fr.trMu.Unlock()
	for _, ev := range evs {
		fr.write(ev)
	}
}

func (fr *front) queueLocked() QueueUpdate {
	return QueueUpdate{Type: "queue_update", Steering: texts(fr.steerHeld, fr.steerWait), FollowUp: texts(fr.followUps)}
}

// message reads the message and images of a steer, follow_up or prompt
// (typ).
func (fr *front) message(typ, text string, ims *[]ImageContent) (queued, error) {
	parts, blocks, err := images(typ, ims)
	return queued{text: Expand(text, fr.templates), parts: parts, blocks: blocks}, err
}

func (fr *front) steer(p CommandSteer) (any, error) {
	m, err := fr.message(p.Type, p.Message, p.Images)
	if err != nil {
		return nil, err
	}
	return fr.queueSteer(m)
}

// queueSteer passes m to the running turn, or holds it for the next.
func (fr *front) queueSteer(m queued) (any, error) {
	fr.mu.Lock()
	switch {
	case !fr.running:
		fr.steerHeld = append(fr.steerHeld, m) // delivered after the next prompt
	case fr.steeringMode == "one-at-a-time" && len(fr.steerHeld) > 0:
		fr.steerWait = append(fr.steerWait, m)
	default:
		if err := fr.steerLocked(m); err != nil {
			fr.followUps = append(fr.followUps, m) // the turn is ending: it goes next
		} else {
			fr.steerHeld = append(fr.steerHeld, m)
		}
	}
	q := fr.queueLocked()
	fr.mu.Unlock()
	fr.write(fr.queueEvent(q))
	return ResponseSteerData{Disposition: "queued"}, nil
}

func (fr *front) followUp(p CommandFollowUp) (any, error) {
	m, err := fr.message(p.Type, p.Message, p.Images)
	if err != nil {
		return nil, err
	}
	return fr.queueFollowUp(m)
}

// queueFollowUp queues m for when a run would stop.
func (fr *front) queueFollowUp(m queued) (any, error) {
	// As pi's, it always queues, also while idle or compacting: it goes
	// when a run would stop, this one's or the next prompt's.
	fr.mu.Lock()
	fr.followUps = append(fr.followUps, m)
	q := fr.queueLocked()
	fr.mu.Unlock()
	fr.write(fr.queueEvent(q))
	return ResponseFollowUpData{Disposition: "queued"}, nil
}

func (fr *front) clearQueue(CommandClearQueue) (any, error) {
	fr.mu.Lock()
	fr.cur.WithdrawSteers()
	steering := texts(fr.steerHeld, fr.steerWait)
	follow := texts(fr.followUps)
	fr.steerHeld, fr.steerWait, fr.followUps = nil, nil, nil
	q := fr.queueLocked()
	fr.mu.Unlock()
	fr.write(fr.queueEvent(q))
	return map[string][]string{"steering": steering, "followUp": follow}, nil
}

// abort interrupts the run and answers once it settled. During a
// prompt's compaction before its run, as pi's, it stops the compaction
// and the run as soon as it starts, and answers once that run settled;
// during a compact command, it stops it and answers once it has ended.
func (fr *front) abort(c *command, _ CommandAbort) {
	sess, settled := fr.stopRun()
	fr.mu.Lock()
	compacted := fr.compactDone
	fr.mu.Unlock()
	sess.Stop()
	fr.async(func() {
		settled()
		if compacted != nil {
			<-compacted // as pi's abort, which waits until the stopped compact has ended
		}
		fr.respond(c.id, c.typ, noData{}, nil)
	})
}

// stopRun marks the run that is open, or about to start (a prompt's
// compaction before it), to stop, and returns the current session and a
// wait until that run has settled, its last events written. The caller
// stops the session's turn.
func (fr *front) stopRun() (*session.Session, func()) {
	fr.mu.Lock()
	defer fr.mu.Unlock()
	fr.abortReq = fr.running
	var pre chan struct{}
	if fr.starting {
		fr.abortStart, pre = true, fr.preRun
	}
	return fr.cur, func() {
		if pre != nil {
			<-pre // the run starts aborted
		}
		// The run's done closes after its last events, also when running
		// is already false (its settling is being written).
		fr.mu.Lock()
		done := fr.runDone
		fr.mu.Unlock()
		if done != nil {
			<-done
		}
	}
}

// idle stops what the current session is doing (a run, a prompt's run
// about to start, a compact command) and waits until it has settled, its
// last events and response written, so that nothing of it comes after the
// session is replaced.
func (fr *front) idle() {
	sess, settled := fr.stopRun()
	fr.mu.Lock()
	compacted := fr.compactDone
	fr.mu.Unlock()
	sess.Interrupt(context.Background())
	if compacted != nil {
		<-compacted
	}
	settled()
}

func (fr *front) newSession(p CommandNewSession) (any, error) {
	fr.idle()
	fr.mu.Lock()
	old := fr.cur
	info := fr.info
	fr.mu.Unlock()
	// pi starts a new session at the default thinking level, not the current one.
	sp := spec{cwd: old.Cwd(), model: info.ID, effort: Effort(info, fr.defaultLevel(info)), parent: ptrOr(p.ParentSession)}
	if p.SessionPath != nil { // the prime-agent RPC guide's (not prime-agent's): the file to save it in
		sp.file = abs(old.Cwd(), *p.SessionPath)
		if _, err := os.Stat(sp.file); err == nil {
			return nil, fmt.Errorf("new_session: sessionPath: %s exists (switch_session opens a session file)", sp.file)
		}
	}
	end := fr.blocking()
	m, err := fr.b.make(sp)
	end()
	if err != nil {
		return nil, err
	}
	fr.replace(old, m)
	return ResponseCancelled{Cancelled: false}, nil
}

// defaultLevel is the thinking level a new session of model info starts at.
func (fr *front) defaultLevel(info model.Info) string {
	return Clamp(info, cmpOr(fr.cfg.Settings.DefaultThinkingLevel, levelOf(info.DefaultEffort)))
}

// settingsAt returns the model and effort in force at the end of branch:
// the header's, then each settings entry's (pi's last model_change and
// thinking_level_change of the branch).
func settingsAt(h session.Header, branch []session.Entry) (modelID, effort string) {
	modelID, effort = h.Model, h.Effort
	for _, e := range branch {
		if e.Type == session.EntrySettings {
			modelID, effort = e.Model, e.Effort
		}
	}
	return modelID, effort
}

// replace makes m current and closes old.
func (fr *front) replace(old, m *session.Session) {
	fr.use(m)
	fr.mu.Lock()
	fr.steerHeld, fr.steerWait, fr.followUps, fr.pendingShell = nil, nil, nil, nil
	fr.mu.Unlock()
	old.Close(context.Background())
}

func (fr *front) switchSession(p CommandSwitchSession) (any, error) {
	if err := fr.open(abs(fr.env.Cwd, p.SessionPath)); err != nil {
		return nil, err
	}
	return ResponseCancelled{Cancelled: false}, nil
}

// open makes the session file at path current, once what the current
// session is doing has stopped.
func (fr *front) open(path string) error {
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
		// Refused before the current session stops: a FIFO or device is
		// never a session file (Y1).
		return fmt.Errorf("session file %s: %s, %w", path, regfile.Kind(st.Mode()), regfile.ErrNotRegular)
	} else if errors.Is(err, fs.ErrNotExist) {
		// As pi's (its SessionManager opens a missing file as a new
		// session saved there), as --session PATH does.
		fr.idle()
		fr.mu.Lock()
		old, info := fr.cur, fr.info
		fr.mu.Unlock()
		end := fr.blocking()
		m, err := fr.b.make(spec{cwd: old.Cwd(), model: info.ID, effort: Effort(info, fr.defaultLevel(info)), file: path})
		end()
		if err != nil {
			return err
		}
		fr.replace(old, m)
		return nil
	} else if err != nil {
		return fmt.Errorf("session file %s: %w", path, err)
	}
	fr.mu.Lock()
	old, running := fr.cur, fr.running
	fr.mu.Unlock()
	same := old.Info().Path == path
	leaf := ""
	if same && running {
		leaf = lastID(old.Entries())
	}
	fr.idle()
	if same && (leaf == "" || lastID(old.Entries()) == leaf) {
		// pi opens it again: a new session, with empty queues.
		fr.mu.Lock()
		fr.steerHeld, fr.steerWait, fr.followUps = nil, nil, nil
		fr.mu.Unlock()
		old.WithdrawSteers()
		return nil
	}
	if same {
		// pi opens the file again as it was when the switch came: what
		// the run it stops wrote as it ended (the answer cut short) is
		// left on a branch of its own. The log is e's, locked by old.
		old.Close(context.Background())
	}
	end := fr.blocking()
	m, err := fr.b.make(spec{resume: path, leaf: leaf})
	end()
	if err != nil {
		return err
	}
	fr.replace(old, m)
	return nil
}

// lastID is the id of the last of entries, "" when there are none.
func lastID(entries []session.Entry) string {
	if len(entries) == 0 {
		return ""
	}
	return entries[len(entries)-1].ID
}

// forkAt starts a new session whose history is the current branch before
// entry id (all of it when id is ""). As pi's, it takes the name, model and
// thinking level in force at that point; a fork with no message left
// starts at the default level, as new_session does.
func (fr *front) forkAt(id string) (*session.Session, error) {
	fr.idle()
	fr.mu.Lock()
	old := fr.cur
	fr.mu.Unlock()
	branch := session.Branch(old.Entries())
	if id != "" {
		i := slices.IndexFunc(branch, func(e session.Entry) bool { return e.ID == id })
		if i < 0 {
			return nil, fmt.Errorf("Entry %s not found on the active branch", id)
		}
		branch = branch[:i]
	}
	in, h := old.Info(), old.Header()
	sp := spec{cwd: old.Cwd(), model: in.Model, entries: branch, parent: in.Path, name: session.Name(h, branch)}
	sp.effort = Effort(fr.info, fr.defaultLevel(fr.info))
	if slices.ContainsFunc(branch, func(e session.Entry) bool { return e.Type == session.EntryMessage }) {
		sp.model, sp.effort = settingsAt(h, branch)
		if _, err := fr.h.Model(sp.model); err != nil {
			sp.model, sp.effort = in.Model, Effort(fr.info, levelOf(sp.effort))
		}
	}
	m, err := fr.b.make(sp)
	if err != nil {
		return nil, err
	}
	fr.replace(old, m)
	return m, nil
}

func (fr *front) fork(p CommandFork) (any, error) {
	// the prime-agent RPC guide's parentSession (not prime-agent's): the session file to fork, opened first
	// when it is not the current one.
	if path := abs(fr.env.Cwd, ptrOr(p.ParentSession)); ptrOr(p.ParentSession) != "" && path != fr.session().Info().Path {
		if err := fr.open(path); err != nil {
			return nil, err
		}
	}
	if p.EntryID == nil { // the guide's fork of the whole branch: a clone
		if _, err := fr.clone(CommandClone{Type: "clone"}); err != nil {
			return nil, err
		}
		return map[string]any{"text": "", "cancelled": false}, nil
	}
	id := *p.EntryID
	text, ok := "", false
	for _, fm := range fr.userEntries() {
		if fm.EntryID == id {
			text, ok = fm.Text, true
		}
	}
	if !ok { // pi's fixed text, for an unknown entry and one that is not a user message
		return nil, errors.New("Invalid entry ID for forking")
	}
	if _, err := fr.forkAt(id); err != nil {
		return nil, err
	}
	// A map, not ResponseForkData: pi sends text even when it is "" (the
	// schema's text is optional, for a cancelled fork, and so omitted when empty).
	return map[string]any{"text": text, "cancelled": false}, nil
}

func (fr *front) clone(CommandClone) (any, error) {
	// pi writes a session's file with its first answer and cannot clone a
	// saved session before (one in memory it can).
	if fr.b.sessionsDir != "" && !slices.ContainsFunc(session.Branch(fr.session().Entries()), func(e session.Entry) bool {
		return e.Type == session.EntryMessage
	}) {
		return nil, errors.New("This session has not been saved yet. Send a message before cloning or forking it.")
	}
	if _, err := fr.forkAt(""); err != nil {
		return nil, err
	}
	return ResponseCancelled{Cancelled: false}, nil
}

func (fr *front) userEntries() []ResponseGetForkMessagesDataMessagesItem {
	out := []ResponseGetForkMessagesDataMessagesItem{}
	for _, e := range fr.converter().entries(session.Branch(fr.session().Entries())) {
		if u, ok := e.Message.(UserMessage); ok {
			text := ""
			if len(u.Content) > 0 {
				text = u.Content[0].Text
			}
			out = append(out, ResponseGetForkMessagesDataMessagesItem{EntryID: e.ID, Text: text})
		}
	}
	return out
}

func (fr *front) getForkMessages(CommandGetForkMessages) (any, error) {
	return ResponseGetForkMessagesData{Messages: fr.userEntries()}, nil
}

func (fr *front) session() *session.Session {
	fr.mu.Lock()
	defer fr.mu.Unlock()
	return fr.cur
}

func (fr *front) converter() *converter { return fr.converterOf(fr.session()) }

// converterOf is a converter of sess's history; fr.mu is not taken, so the
// translator may use it (recorder.ContextTokens).
func (fr *front) converterOf(sess *session.Session) *converter {
	h := sess.Header()
	c := newConverter(func(id string) (model.Info, bool) {
		info, err := fr.h.Model(id)
		return info, err == nil
	}, h)
	c.system = func(ts int64) (SystemMessage, bool) { return systemMessage(sess, ts), true }
	return c
}

// systemMessage is the system message pi persists at a session's first
// model call: e's system prompt and the tools it declares.
func systemMessage(sess *session.Session, ts int64) SystemMessage {
	// As pi's, a session without tools has no toolsAdded.
	m := SystemMessage{Role: "system", Content: sess.SystemPrompt(), Timestamp: ts}
	for _, d := range sess.ToolDefs() {
		m.ToolsAdded = append(m.ToolsAdded, ToolDecl{Name: d.Name, Description: d.Description, Parameters: d.Parameters})
	}
	return m
}

// entries is the session's history in pi's shapes, opening as a session
// pi made opens: a model_change and a thinking_level_change for the model
// and level it started with (their ids made from the session id, so they
// stay the same across calls), the history's roots under them.
func (fr *front) entries() []Entry {
	sess := fr.session()
	h := sess.Header()
	es := fr.converter().entries(sess.Entries())
	info, _ := fr.h.Model(h.Model)
	ts := h.Created.UTC().Format(isoMillis)
	mc := Entry{Type: "model_change", ID: h.ID + ".model", Timestamp: ts, Provider: info.Provider, ModelID: info.Name}
	tl := Entry{Type: "thinking_level_change", ID: h.ID + ".thinking", ParentID: &mc.ID, Timestamp: ts,
		ThinkingLevel: levelOf(h.Effort)}
	for i := range es {
		if es[i].ParentID == nil {
			es[i].ParentID = &tl.ID
		}
	}
	return append([]Entry{mc, tl}, es...)
}

func (fr *front) getEntries(p CommandGetEntries) (any, error) {
	all := fr.entries()
	var leaf *string
	if len(all) > 0 {
		leaf = &all[len(all)-1].ID
	}
	out := all
	if p.Since != nil {
		since := *p.Since
		i := slices.IndexFunc(all, func(e Entry) bool { return e.ID == since })
		if i < 0 {
			return nil, fmt.Errorf("Entry not found: %s", since)
		}
		out = all[i+1:]
	}
	return ResponseGetEntriesData{Entries: append([]Entry{}, out...), LeafID: leaf}, nil
}

func (fr *front) getTree(CommandGetTree) (any, error) {
	all := fr.entries()
	var leaf *string
	if len(all) > 0 {
		leaf = &all[len(all)-1].ID
	}
	return ResponseGetTreeData{Tree: tree(all), LeafID: leaf}, nil
}

// contextMessages converts the messages the next model call sees.
func (fr *front) contextMessages() []any { return fr.contextOf(fr.session()) }

// contextOf is contextMessages of sess, without fr.mu.
func (fr *front) contextOf(sess *session.Session) []any {
	conv := fr.converterOf(sess)
	out := []any{}
	branch := session.Branch(sess.Entries())
	// Each message names the model and level in force when it was made.
	type inForce struct {
		info   model.Info
		effort string
	}
	force := map[string]inForce{}
	for _, e := range branch {
		if e.Type == session.EntrySettings {
			conv.entries([]session.Entry{e})
		}
		force[e.ID] = inForce{conv.info, conv.effort}
	}
	attempt := map[string]bool{}
	for _, en := range visible(branch) {
		attempt[en.ID] = en.Type == session.EntryAttempt
		if f, ok := force[en.ID]; ok {
			conv.info, conv.effort = f.info, f.effort
		}
		ts := en.Time.UnixMilli()
		switch en.Type {
		case session.EntryCompaction:
			out = append(out, CompactionSummaryMessage{Role: "compactionSummary", Summary: en.Summary,
				TokensBefore: en.Tokens, Timestamp: ts})
		case session.EntryShell:
			if en.Shell != nil {
				out = append(out, bashMessage(en))
			}
		case session.EntryError: // an attempt that was retried is not in the context
			out = append(out, conv.failed(en))
		case session.EntryInterrupted:
			var lastMsg any
			if len(out) > 0 {
				lastMsg = out[len(out)-1]
			}
			switch changed, added := conv.interrupted(en, lastMsg, attempt[en.Parent]); {
			case changed != nil:
				out[len(out)-1] = changed
			case added != nil:
				out = append(out, *added)
			}
		case session.EntryMessage:
			var m model.Message
			if json.Unmarshal(en.Message, &m) != nil {
				continue
			}
			out = append(out, conv.logged(en, m)...)
		}
	}
	return withSystem(out, conv.system)
}

// withSystem places pi's system message in a context's messages: before
// the first user message, or first after a compaction (its checkpoint).
func withSystem(msgs []any, system func(ts int64) (SystemMessage, bool)) []any {
	for i, m := range msgs {
		var ts int64
		switch m := m.(type) {
		case UserMessage:
			ts = m.Timestamp
		case CompactionSummaryMessage:
			ts = m.Timestamp
		default:
			continue
		}
		if sys, ok := system(ts); ok {
			return slices.Insert(msgs, i, any(sys))
		}
		return msgs
	}
	return msgs
}

func (fr *front) getMessages(CommandGetMessages) (any, error) {
	return ResponseGetMessagesData{Messages: fr.contextMessages()}, nil
}

// jsTrim is JavaScript's String.prototype.trim: Unicode white space and
// line terminators, and U+FEFF, but not U+0085.
func jsTrim(s string) string {
	return strings.TrimFunc(s, func(r rune) bool { return r == '\uFEFF' || (r != '\u0085' && unicode.IsSpace(r)) })
}

func (fr *front) getLastAssistantText(CommandGetLastAssistantText) (any, error) {
	var out ResponseGetLastAssistantTextData // none: pi's text is undefined, so its data is {}
	msgs := fr.contextMessages()
	for i := len(msgs) - 1; i >= 0; i-- {
		a, ok := msgs[i].(AssistantMessage)
		if !ok {
			continue
		}
		var b strings.Builder
		for _, c := range a.Content {
			if c.Type == "text" {
				b.WriteString(c.Text)
			}
		}
		// As pi's getLastAssistantText: the last answer that ended normally
		// or has text (not an aborted, failed or tool-calling one without),
		// its text trimmed; blank is none.
		text := jsTrim(b.String())
		if a.StopReason != "stop" && text == "" {
			continue
		}
		if text != "" {
			out.Text = &text
		}
		break
	}
	return out, nil
}

// defaultMaxTokens is pi's maxTokens of a model that declares none.
const defaultMaxTokens = 16384

// piModel is a model object (rpc-commands.md: Model object): baseUrl is
// its provider's, maxTokens models.json's.
func (fr *front) piModel(info model.Info) Model {
	input := []string{"text"}
	if info.ImageInput {
		input = append(input, "image")
	}
	var cost ModelCost
	if p := info.Price; p != nil {
		cost = ModelCost{Input: p.Input, Output: p.Output, CacheRead: p.CacheRead, CacheWrite: p.CacheWrite5m}
	}
	maxTokens := defaultMaxTokens
	if n := fr.cfg.MaxTokens[info.ID]; n > 0 {
		maxTokens = n
	}
	return Model{ID: info.Name, Name: cmpOr(fr.cfg.Names[info.ID], info.Name), API: piAPI(info.API), Provider: info.Provider,
		BaseURL: fr.baseURLs[info.Provider], Reasoning: len(info.Efforts) > 0, Input: input,
		ContextWindow: int64(info.ContextWindow), MaxTokens: int64(maxTokens), Cost: cost}
}

func (fr *front) getState(CommandGetState) (any, error) {
	messages := len(fr.contextMessages()) // pi's: the agent's messages, bash commands included
	fr.mu.Lock()
	defer fr.mu.Unlock()
	in := fr.cur.Info()
	m := fr.piModel(fr.info)
	st := ResponseGetStateData{Model: &m, ThinkingLevel: fr.level, IsStreaming: fr.running || fr.starting,
		IsCompacting: fr.compacting != "", SteeringMode: fr.steeringMode, FollowUpMode: fr.followUpMode,
		SessionFile: in.Path, SessionID: fr.cur.ID(), SessionName: in.Name, AutoCompactionEnabled: fr.autoCompact,
		MessageCount: int64(messages)}
	q := fr.queueLocked()
	if fr.flags.Flavor == "prime" {
		st.SessionActions, st.Goal = new(sessionActions(q)), &GoalState{Status: "idle"}
	} else {
		st.PendingMessageCount = new(int64(len(q.Steering) + len(q.FollowUp)))
	}
	return st, nil
}

// available lists the models whose provider can be used now, as pi's
// model registry does. e's offline model is listed only while the session
// uses it or no other model is usable: pi has no such model, so with
// providers configured a client's get_available_models and cycle_model
// see the models pi's would (--model e/offline still selects it).
func (fr *front) available() []model.Info {
	fr.mu.Lock()
	cur := fr.info.ID
	fr.mu.Unlock()
	var out []model.Info
	var offline *model.Info
	for _, m := range fr.h.Models() {
		switch {
		case !usable(m):
		case m.ID == model.OfflineID && cur != model.OfflineID:
			offline = &m
		default:
			out = append(out, m)
		}
	}
	if len(out) == 0 && offline != nil {
		out = append(out, *offline)
	}
	return out
}

func (fr *front) getAvailableModels(CommandGetAvailableModels) (any, error) {
	ms := []Model{}
	for _, m := range fr.available() {
		ms = append(ms, fr.piModel(m))
	}
	return ResponseGetAvailableModelsData{Models: ms}, nil
}

// switchModel sets the session's model and the level clamped to it.
func (fr *front) switchModel(info model.Info, level string) error {
	level = Clamp(info, level)
	effort := Effort(info, level)
	if _, _, err := fr.session().Set(&info.ID, &effort); err != nil {
		return err
	}
	fr.mu.Lock()
	changed := level != fr.level
	fr.info, fr.level = info, level
	fr.mu.Unlock()
	if changed {
		fr.write(ThinkingLevelChanged{Type: "thinking_level_changed", Level: level})
	}
	return nil
}

// setModel tells a field given as "" from one left out: it counts as
// given (the error names the missing one).
func (fr *front) setModel(p CommandSetModel) (any, error) {
	var info model.Info
	var err error
	switch form := [3]bool{p.Provider != nil, p.ModelID != nil, p.Model != nil}; form {
	case [3]bool{true, true, false}, [3]bool{false, false, true}:
	case [3]bool{true, false, false}:
		return nil, errors.New("set_model: modelId: required")
	case [3]bool{false, true, false}:
		return nil, errors.New("set_model: provider: required")
	case [3]bool{false, false, false}:
		return nil, errors.New("set_model: provider and modelId (or the older model): required")
	default:
		return nil, errors.New("set_model: model: give either provider and modelId, or model")
	}
	if p.Model != nil {
		// The older form (pi 0.73.1, the prime-agent RPC guide): one pattern, as --model takes it.
		info, _, err = ResolveModel(fr.h.Models(), "", *p.Model, usable)
		if err != nil {
			return nil, fmt.Errorf("Model not found: %s", *p.Model)
		}
	} else if info, err = fr.h.Model(*p.Provider + "/" + *p.ModelID); err != nil {
		return nil, fmt.Errorf("Model not found: %s/%s", *p.Provider, *p.ModelID)
	}
	fr.mu.Lock()
	level := fr.level
	fr.mu.Unlock()
	if err := fr.switchModel(info, level); err != nil {
		return nil, err
	}
	return fr.piModel(info), nil
}

func (fr *front) cycleModel(CommandCycleModel) (any, error) {
	ms := fr.available()
	if len(ms) < 2 {
		return nil, nil
	}
	fr.mu.Lock()
	cur, level := fr.info.ID, fr.level
	fr.mu.Unlock()
	i := slices.IndexFunc(ms, func(m model.Info) bool { return m.ID == cur })
	next := ms[(i+1)%len(ms)]
	if err := fr.switchModel(next, level); err != nil {
		return nil, err
	}
	fr.mu.Lock()
	level = fr.level
	fr.mu.Unlock()
	return ResponseCycleModelData{Model: fr.piModel(next), ThinkingLevel: level, IsScoped: false}, nil
}

func (fr *front) setThinkingLevel(p CommandSetThinkingLevel) (any, error) {
	fr.mu.Lock()
	info := fr.info
	fr.mu.Unlock()
	return noData{}, fr.switchModel(info, p.Level)
}

func (fr *front) cycleThinkingLevel(CommandCycleThinkingLevel) (any, error) {
	fr.mu.Lock()
	info, level := fr.info, fr.level
	fr.mu.Unlock()
	levels := AvailableLevels(info)
	if len(levels) == 1 {
		return nil, nil
	}
	next := levels[(slices.Index(levels, level)+1)%len(levels)]
	if err := fr.switchModel(info, next); err != nil {
		return nil, err
	}
	return ResponseCycleThinkingLevelData{Level: next}, nil
}

func (fr *front) getAvailableThinkingLevels(CommandGetAvailableThinkingLevels) (any, error) {
	fr.mu.Lock()
	defer fr.mu.Unlock()
	return ResponseGetAvailableThinkingLevelsData{Levels: AvailableLevels(fr.info)}, nil
}

func (fr *front) setSteeringMode(p CommandSetSteeringMode) (any, error) {
	return fr.setMode(&fr.steeringMode, p.Mode)
}

func (fr *front) setFollowUpMode(p CommandSetFollowUpMode) (any, error) {
	return fr.setMode(&fr.followUpMode, p.Mode)
}

func (fr *front) setMode(field *string, mode QueueMode) (any, error) {
	fr.mu.Lock()
	*field = mode
	fr.mu.Unlock()
	return noData{}, nil
}

func (fr *front) setAutoCompaction(p CommandSetAutoCompaction) (any, error) {
	on := p.Enabled
	fr.mu.Lock()
	fr.autoCompact = on
	fr.cur.SetAutoCompact(on)
	fr.mu.Unlock()
	return noData{}, nil
}

func (fr *front) setAutoRetry(p CommandSetAutoRetry) (any, error) {
	on := p.Enabled
	fr.mu.Lock()
	fr.autoRetry = on
	fr.cur.SetAutoRetry(on)
	fr.mu.Unlock()
	return noData{}, nil
}

// abortRetry cancels the wait of a run that waits to retry a failed model
// call, as pi's: the run ends with that failure, not aborted, or, when
// something is queued (pi then continues the run), the retry starts at
// once. auto_retry_end goes out before the response, as pi's.
func (fr *front) abortRetry(c *command, _ CommandAbortRetry) {
	fr.mu.Lock()
	sess, queued := fr.cur, len(fr.steerHeld)+len(fr.steerWait)+len(fr.followUps) > 0
	fr.mu.Unlock()
	// Under trMu, so that the turn's next events come after these.
	fr.trMu.Lock()
	defer fr.trMu.Unlock()
	if fr.tr.retry > 0 && sess.CancelRetryWait(queued) {
		for _, ev := range fr.tr.RetryCancelled(queued) {
			fr.write(ev)
		}
	}
	fr.respond(c.id, c.typ, noData{}, nil)
}

func (fr *front) compact(c *command, p CommandCompact) {
	fr.mu.Lock()
	busy := fr.running || fr.starting || fr.compacting != ""
	fr.compactNext = fr.compacting == compactManual
	fr.mu.Unlock()
	if busy {
		// As pi's compact, which aborts first (its abort()): the run, a
		// prompt's run about to start or a compaction stops, and once it
		// has settled the compaction starts.
		fr.async(func() {
			fr.idle()
			fr.compactNow(c, p)
		})
		return
	}
	fr.compactNow(c, p)
}

// compactNow starts the compaction of a compact command, refused if the
// session is busy (a prompt that came meanwhile).
func (fr *front) compactNow(c *command, p CommandCompact) {
	fr.mu.Lock()
	fr.compactNext = false
	if fr.running || fr.starting || fr.compacting != "" {
		fr.mu.Unlock()
		fr.cancelled()
		fr.respond(c.id, c.typ, nil, errors.New("Agent is already processing: compact when idle"))
		return
	}
	sess := fr.cur
	turn, err := sess.Compact(fr.ctx, ptrOr(p.CustomInstructions), fr.sink)
	if err != nil {
		fr.mu.Unlock()
		fr.cancelled()
		fr.respond(c.id, c.typ, nil, err)
		return
	}
	fr.compacting = compactManual
	compacted := make(chan struct{})
	fr.compactDone = compacted
	info := fr.info
	fr.mu.Unlock()
	fr.async(func() {
		defer close(compacted)
		<-turn.Done()
		res, err := turn.Compacted()
		fr.mu.Lock()
		fr.compacting = ""
		fr.flushShell()
		next := fr.compactNext
		fr.mu.Unlock()
		fr.cancelled() // a compact this one stopped, whose compaction_start did not come
		if errors.Is(err, context.Canceled) && fr.ctx.Err() == nil {
			// An abort (or a compact after it) stopped it: as pi's, the
			// compaction ends aborted, with no error, and the command fails
			// with pi's fixed text (once the next compact's compaction
			// started, when a compact stopped it).
			fr.translate((*Translator).CompactionAborted)
			reply := func() { fr.respond(c.id, c.typ, nil, errors.New("Compaction cancelled")) }
			if !next {
				reply()
				return
			}
			fr.mu.Lock()
			fr.cancelReply = reply
			fr.mu.Unlock()
			return
		}
		if errors.Is(err, agent.ErrNothingToCompact) {
			// pi's fixed texts: the branch ends with a compaction, or is too small.
			err = errors.New("Nothing to compact (session too small)")
			if es := sess.Entries(); len(es) > 0 && es[len(es)-1].Type == session.EntryCompaction {
				err = errors.New("Already compacted")
			}
		}
		if err != nil {
			// pi ends the announced compaction with the error, then fails the command.
			fr.sink(agent.Error{Message: "Compaction failed: " + err.Error()})
			fr.respond(c.id, c.typ, nil, err)
			return
		}
		rec := recorder{sess, fr}
		summary, kept := rec.LastCompaction()
		u := withReasoning(pricedUsage(res.Usage, info.Price), info.API, res.Usage.Reasoning)
		fr.respond(c.id, c.typ, CompactionResult{Summary: summary, FirstKeptEntryID: kept, TokensBefore: res.TokensBefore,
			EstimatedTokensAfter: rec.ContextTokens(), Usage: &u, Details: rec.CompactedFiles()}, nil)
	})
}

// cancelled writes the answer of a compact that a compact stopped, if it
// waits (compactNext).
func (fr *front) cancelled() {
	fr.mu.Lock()
	reply := fr.cancelReply
	fr.cancelReply = nil
	fr.mu.Unlock()
	if reply != nil {
		reply()
	}
}

// bash runs a user shell command (rpc-commands.md: bash) on the session
// layer's RunShell, beside whatever runs, as pi's does: a prompt, a run, a
// compaction and other commands may go on meanwhile. When it ends it is
// recorded in the history as a shell entry (pi's bashExecution message,
// excluded output kept and marked); while a run or a compaction goes on,
// once that has ended.
func (fr *front) bash(c *command, p CommandBash) {
	spec := session.ShellSpec{Command: p.Command, Exclude: ptrOr(p.ExcludeFromContext)}
	var id ID
	if c.id != nil {
		id = c.id
	}
	fr.mu.Lock()
	ctx, cancel := context.WithCancel(fr.ctx)
	fr.bashNext++
	n := fr.bashNext
	fr.bashCancels[n] = cancel
	sess := fr.cur
	fr.mu.Unlock()
	fr.async(func() {
		defer cancel()
		// The updates stream all of the output; the result and the history
		// keep pi's part of it and name a file with the whole
		// (session.Behaviour.SpillOutput).
		r, err := sess.RunShell(ctx, spec, func(ev agent.Event) {
			if o, ok := ev.(agent.ShellOutput); ok {
				fr.write(BashExecutionUpdate{Type: "bash_execution_update", ID: id, Delta: o.Delta})
			}
		})
		fr.mu.Lock()
		delete(fr.bashCancels, n)
		fr.mu.Unlock()
		if err != nil {
			fr.respond(c.id, c.typ, nil, err)
			return
		}
		fr.recordShell(sess, r)
		// pi leaves exitCode out for a killed command.
		fr.respond(c.id, c.typ, ResponseBashData{Output: r.Output, ExitCode: exitCode(r.ExitCode), Cancelled: r.Cancelled || r.TimedOut,
			Truncated: r.Truncated, FullOutputPath: r.FullOutputPath}, nil)
	})
}

// recordShell records a finished command in the session it ran in: now,
// or, while a run or a compaction goes on there, once it has ended.
func (fr *front) recordShell(sess *session.Session, r session.ShellRun) {
	fr.mu.Lock()
	defer fr.mu.Unlock()
	if sess == fr.cur && (fr.running || fr.compacting != "") {
		fr.pendingShell = append(fr.pendingShell, r)
		return
	}
	if _, err := sess.AddShell(r); err != nil && sess == fr.cur {
		fr.pendingShell = append(fr.pendingShell, r)
	}
}

// flushShell records the commands that ended while the current session
// was busy; fr.mu is held.
func (fr *front) flushShell() error {
	for i, r := range fr.pendingShell {
		if _, err := fr.cur.AddShell(r); err != nil {
			fr.pendingShell = fr.pendingShell[i:]
			return err
		}
	}
	fr.pendingShell = nil
	return nil
}

// abortBash stops every running bash command, as pi's does.
func (fr *front) abortBash(CommandAbortBash) (any, error) {
	fr.mu.Lock()
	cancels := slices.Collect(maps.Values(fr.bashCancels))
	fr.mu.Unlock()
	for _, cancel := range cancels {
		cancel()
	}
	return noData{}, nil
}

// getSessionStats is get_session_stats over the whole session, as pi counts it:
// every entry of every branch, resumed and forked history included (its
// usage is what the log's model calls recorded); the context usage is the
// last answer's after the latest compaction of the active branch.
func (fr *front) getSessionStats(CommandGetSessionStats) (any, error) {
	sess := fr.session()
	es := sess.Entries()
	var users, assistants, calls, results, total int
	var u Usage
	conv := fr.converter()
	for _, pe := range conv.entries(es) {
		if pe.Type != "message" {
			continue
		}
		total++
		switch m := pe.Message.(type) {
		case UserMessage:
			users++
		case AssistantMessage:
			assistants++
			for _, c := range m.Content {
				if c.Type == "toolCall" {
					calls++
				}
			}
		case ToolResultMessage:
			results++
		}
	}
	for _, en := range es {
		if en.Call != nil {
			u = u.Add(callUsage(en.Call))
		}
	}
	fr.mu.Lock()
	window := fr.info.ContextWindow
	fr.mu.Unlock()
	st := ResponseGetSessionStatsData{SessionFile: sess.Path(), SessionID: sess.ID(), UserMessages: int64(users),
		AssistantMessages: int64(assistants), ToolCalls: int64(calls), ToolResults: int64(results), TotalMessages: int64(total),
		Tokens: ResponseGetSessionStatsDataTokens{Input: u.Input, Output: u.Output, CacheRead: u.CacheRead,
			CacheWrite: u.CacheWrite, Total: u.TotalTokens}, Cost: u.Cost.Total}
	if window > 0 {
		st.ContextUsage = &ResponseGetSessionStatsDataContextUsage{ContextWindow: int64(window)}
		if n, ok := contextTokens(session.Branch(es)); ok {
			pct := float64(n) * 100 / float64(window)
			st.ContextUsage.Tokens, st.ContextUsage.Percent = &n, &pct
		}
	}
	return st, nil
}

// callUsage is a recorded model call's usage, costed as recorded.
func callUsage(c *session.ModelCall) Usage {
	x := c.Usage
	u := NewUsage(model.Usage(x), nil)
	if c.CostUSD != nil {
		u.Cost.Total = *c.CostUSD
	}
	return u
}

// contextTokens is the size of the context at the last answer after the
// latest compaction (pi's estimate: that answer's tokens), 0 when unknown.
func contextTokens(branch []session.Entry) (int64, bool) {
	for i := len(branch) - 1; i >= 0; i-- {
		switch en := branch[i]; {
		case en.Type == session.EntryCompaction:
			return 0, false
		case en.Type == session.EntryMessage && en.Call != nil:
			return callUsage(en.Call).TotalTokens, true
		}
	}
	return 0, true
}

func (fr *front) exportHtml(p CommandExportHtml) (any, error) {
	path := ""
	if p.OutputPath != nil {
		path = *p.OutputPath
		if !filepath.IsAbs(path) { // pi resolves it against its own cwd
			path = filepath.Join(fr.env.Cwd, path)
		}
	}
	end := fr.blocking()
	path, _, err := fr.session().Export(path)
	end()
	if err != nil {
		return nil, err
	}
	return ResponseExportHtmlData{Path: path}, nil
}

func (fr *front) setSessionName(p CommandSetSessionName) (any, error) {
	name := jsTrim(p.Name) // as pi's, which trims it and refuses a blank one
	if name == "" {
		return nil, errors.New("Session name cannot be empty")
	}
	if err := fr.session().Rename(name); err != nil {
		return nil, err
	}
	fr.write(SessionInfoChanged{Type: "session_info_changed", Name: name})
	return noData{}, nil
}

// ui maps e's extension asks and notices onto pi's extension UI
// sub-protocol (rpc-extension-ui.md).
type ui struct{ fr *front }

// uiMethods names e's ask methods as pi's dialog methods.
var uiMethods = map[string]string{"ui.select": "select", "ui.confirm": "confirm", "ui.input": "input", "ui.editor": "editor"}

func (u ui) Ask(ctx context.Context, ext, method string, params json.RawMessage) (json.RawMessage, error) {
	fr := u.fr
	pm, ok := uiMethods[method]
	if !ok {
		return nil, session.ErrNoUI
	}
	p := gjson.ParseBytes(params)
	call := fr.dialogs.Open()
	id := fmt.Sprintf("ui-%d", call.N)
	const typ = "extension_ui_request"
	title := p.Get("title").String()
	var timeout *int64
	if t := p.Get("timeout_ms"); t.Exists() {
		n := t.Int()
		timeout = &n
	}
	switch pm {
	case "select":
		opts := []string{}
		for _, o := range p.Get("options").Array() {
			if o.IsObject() {
				opts = append(opts, o.Get("value").String())
			} else {
				opts = append(opts, o.String())
			}
		}
		fr.write(UIRequestSelect{Type: typ, ID: id, Method: pm, Title: title, Options: opts, Timeout: timeout})
	case "confirm":
		fr.write(UIRequestConfirm{Type: typ, ID: id, Method: pm, Title: title, Message: p.Get("message").String(), Timeout: timeout})
	case "input":
		fr.write(UIRequestInput{Type: typ, ID: id, Method: pm, Title: title, Placeholder: p.Get("placeholder").String(),
			Timeout: timeout})
	case "editor": // pi's editor has no timeout
		fr.write(UIRequestEditor{Type: typ, ID: id, Method: pm, Title: title, Prefill: p.Get("text").String()})
	}
	if ans, ok := call.Wait(ctx); ok {
		return uiResult(pm, gjson.ParseBytes(ans)), nil
	}
	return json.RawMessage(`{"cancelled":true}`), nil
}

// uiResult is what the extension gets for a's answer to dialog method pm:
// pi 1.6.0's value (select, input, editor), confirmed (confirm) or
// cancelled, or the prime-agent RPC guide's result (a string, a boolean for confirm,
// null for a cancel). As pi's, a dialog answered with no value is
// cancelled, and a confirm with neither is false.
func uiResult(pm string, a gjson.Result) json.RawMessage {
	cancelled := json.RawMessage(`{"cancelled":true}`)
	r := a.Get("result")
	switch {
	case a.Get("cancelled").Bool():
		return cancelled
	case pm == "confirm":
		yes := a.Get("confirmed").Bool()
		switch {
		case a.Get("confirmed").Exists():
		case r.IsBool():
			yes = r.Bool()
		case r.Exists(): // null
			return cancelled
		}
		return json.RawMessage(fmt.Sprintf(`{"confirmed":%t}`, yes))
	}
	v := a.Get("value")
	if !v.Exists() {
		v = r
	}
	if v.Type != gjson.String {
		return cancelled
	}
	b, _ := json.Marshal(map[string]string{"value": v.String()})
	return b
}

func (u ui) Notice(n session.Notice) {
	if n.Method == "" && n.Level == "error" {
		u.fr.write(ExtensionError{Type: "extension_error", ExtensionPath: n.Extension, Event: "extension", Error: n.Message})
		return
	}
	id := fmt.Sprintf("notify-%d", u.fr.notices.Add(1))
	u.fr.write(UIRequestNotify{Type: "extension_ui_request", ID: id, Method: "notify", Message: n.Message,
		NotifyType: cmpOr(n.Level, "info")})
}

func (fr *front) uiAnswer(line []byte) {
	if err := schemas.ValidatePiLine(line); err != nil {
		fr.respond(nil, "extension_ui_response", nil, err)
		return
	}
	// An answer to no dialog that waits (late, or never asked) is dropped, as pi's.
	id := gjson.GetBytes(line, "id").String()
	if n, err := strconv.ParseInt(strings.TrimPrefix(id, "ui-"), 10, 64); err == nil && strings.HasPrefix(id, "ui-") {
		_ = fr.dialogs.Answer(n, bytes.Clone(line))
	}
}

func (fr *front) uiCancelAll() { fr.dialogs.CancelAll(json.RawMessage(`{"cancelled":true}`)) }
