package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/e-agent/e/internal/mcp"
	"github.com/e-agent/e/internal/model"
	"github.com/e-agent/e/internal/store"
	"github.com/e-agent/e/internal/tool"
	"github.com/e-agent/e/internal/trace"
)

// maxSteps bounds the model calls of one turn, so a model that never stops
// asking for tools cannot run forever.
const maxSteps = 200

// turn is the state of one running turn.
type turn struct {
	s      *Session
	ctx    context.Context
	sink   func(Event)
	info   model.Info
	prov   model.Provider
	model  string // the model and effort the run began with (Session.Begin)
	effort string

	res          Result
	usage        model.Usage
	output       []string // the text of each model call, which Output joins
	lastText     string
	lastTextJSON []byte     // lastText encoded, a view of its entry; nil if the entry has it otherwise
	sinkMu       sync.Mutex // tool waves emit from several goroutines
	toolDefs     []model.ToolDef
	offered      map[string]bool
	extension    map[string]bool
	client       map[string]bool    // the client's tools (Options.Client)
	mcp          map[string]mcpTool // e's name → the server and its name there
	lastCall     store.ModelCall    // the last successful model call, for its message's entry
	cut          *store.ModelCall   // the model call an interruption cut short, for its interrupted entry
	failedCall   *store.ModelCall   // the model call that failed the turn, for its error entry
	prompted     bool               // the prompt is in the history
	system       string             // the system prompt, once built
	// text and reasoning are the one Text and Reasoning event of the
	// turn, set anew for each delta (see Event): an Event holding a struct
	// value boxes it, one allocation per streamed delta, and even a slab of
	// them is memory touched afresh, which a long answer's first turn pays
	// for in page faults.
	text      Text
	reasoning Reasoning

	opts       TurnOptions
	began      time.Time
	calls      int64           // model calls answered, compaction's included (max_model_calls)
	corrected  bool            // the corrective call for an invalid answer was made (J2)
	structured json.RawMessage // the final answer as a value of the output schema
	schemaText bool            // the provider refused the output schema's field: it goes in words
	schemaTool bool            // the Anthropic model refused it: the answer comes as a forced tool call
}

func (t *turn) emit(ev Event) {
	t.sinkMu.Lock()
	t.sink(ev)
	t.sinkMu.Unlock()
}

func (t *turn) warn(msg string) {
	t.res.Warnings = append(t.res.Warnings, msg)
	t.emit(Warning{Message: msg})
}

// Prompt runs one turn (M6). The session must have been marked with Begin.
// Events go to sink in order, from the calling goroutine or, during a tool
// wave, serialised across goroutines; sink must not block for long. The
// returned Result describes the completed run, whatever happened.
func (s *Session) Prompt(ctx context.Context, prompt string, images []model.Part, sink func(Event)) Result {
	return s.PromptWith(ctx, prompt, images, TurnOptions{}, sink)
}

// PromptWith is Prompt with a budget and an output schema (N1, J1).
func (s *Session) PromptWith(ctx context.Context, prompt string, images []model.Part, opts TurnOptions, sink func(Event)) Result {
	ctx = s.start(ctx)
	ctx, span := trace.StartTurn(ctx, s.id)
	t := &turn{s: s, ctx: ctx, sink: sink, opts: opts, began: time.Now()}
	if ms := opts.Budget.MaxDurationMS; ms > 0 {
		// Out of time, the turn stops as by an interrupt: a model call or
		// tools running are cut short.
		var cancel context.CancelCauseFunc
		t.ctx, cancel = context.WithCancelCause(ctx)
		timer := time.AfterFunc(time.Duration(ms)*time.Millisecond, func() { cancel(errDurationBudget) })
		defer timer.Stop()
		defer cancel(nil)
	}
	t.res.Warnings = []string{}
	t.emit(TurnStart{})
	if s.eng.Ext != nil {
		s.eng.Ext.Notify("turn.start", map[string]any{"session": s.id})
	}
	aborted, err := t.run(prompt, images)
	if aborted && ctx.Err() == nil && context.Cause(t.ctx) == errDurationBudget {
		aborted, err = false, t.durationStop()
	}
	stop := StopCompleted
	var se *StoppedError
	switch {
	case errors.As(err, &se):
		stop = se.Reason
	case err != nil:
		stop = StopError
	case aborted:
		stop = StopInterrupted
	}
	left := s.finish()
	for _, text := range left {
		t.emit(Discarded{Reason: "steer", Text: text})
	}
	var me *modelError
	isModel := errors.As(err, &me)
	if err != nil {
		msg := err.Error()
		t.res.Error = &msg
		t.emit(Error{Message: msg})
		if isModel {
			d := me.details
			t.res.ErrorDetails = &d
			t.emit(ErrorDetailsEvent{Details: d})
			if path := t.logPath(); path != "" {
				// A sidecar failure must not hide the turn's own error.
				_ = store.AppendError(path, d)
			}
		}
	}
	if err != nil && t.prompted && !(isModel && me.recorded) {
		// The log shows where the turn failed (an export shows it there);
		// a prompt refused before it was recorded leaves nothing.
		_ = s.append(store.Entry{Type: store.TypeError, Error: err.Error(), Call: t.failedCall})
	}
	t.res.Aborted = aborted
	t.res.StopReason = stop
	if stop == StopCompleted {
		t.res.StructuredOutput = t.structured
	}
	t.syncLog()
	end := TurnEnd{Aborted: aborted, StopReason: stop}
	if t.cut != nil {
		end.ResponseID, end.ResponseModel = t.cut.ResponseID, t.cut.ResponseModel
	}
	t.emit(end)
	if s.eng.Ext != nil {
		s.eng.Ext.Notify("turn.end", map[string]any{"session": s.id, "aborted": aborted})
	}
	res := t.result()
	span.EndTurn(res.Model, aborted, res.Error, t.usage.Input, t.usage.Output)
	return res
}

func (t *turn) logPath() string {
	t.s.mu.Lock()
	defer t.s.mu.Unlock()
	if t.s.log == nil {
		return ""
	}
	return t.s.log.Path()
}

func (t *turn) syncLog() {
	t.s.mu.Lock()
	defer t.s.mu.Unlock()
	if t.s.log != nil {
		if err := t.s.log.Sync(); err != nil {
			t.res.Warnings = append(t.res.Warnings, err.Error())
		}
	}
}

func (t *turn) result() Result {
	r := t.res
	r.Model, r.Effort = t.model, t.effort
	if t.info.ID != "" {
		r.Model = t.info.ID
	}
	r.Output = strings.Join(t.output, "")
	r.FinalOutput, r.FinalOutputJSON = t.lastText, t.lastTextJSON
	r.Usage = NewUsage(t.usage)
	r.CostUSD = t.info.Cost(t.usage)
	return r
}

// run is the turn loop. It reports whether the turn was interrupted, and
// the error that ended it.
func (t *turn) run(prompt string, images []model.Part) (aborted bool, err error) {
	s := t.s
	s.mu.Lock()
	t.model, t.effort = s.runModel, s.runEffort
	warned, pending := s.warned, s.pending
	s.warned, s.pending = true, nil
	needTitle := s.title == ""
	s.mu.Unlock()
	modelID := t.model

	info, err := s.eng.Catalog.Lookup(modelID)
	if err != nil {
		return false, err
	}
	t.info = info
	if !warned && s.eng.DefaultWarning != "" && modelID == s.eng.DefaultModel {
		t.warn(s.eng.DefaultWarning)
	}
	for _, w := range pending {
		t.warn(w)
	}
	if len(images) > 0 && !info.ImageInput && s.eng.Behaviour.ImagePlaceholder == "" {
		return false, fmt.Errorf("agent: model %s does not accept images", modelID)
	}
	prov, err := s.eng.Catalog.Provider(modelID)
	if err != nil {
		return false, err
	}
	t.prov = prov
	t.offerTools(info)

	user := model.Message{Role: model.RoleUser, Content: append([]model.Part{{Type: model.PartText, Text: prompt}}, images...)}
	if err := s.appendMessage(user); err != nil {
		return false, err
	}
	t.prompted = true
	// The prompt is the first entry an automatic compaction keeps; the
	// title entry below must not take its place, or the prompt is lost.
	turnStart := s.lastEntryID()
	if needTitle {
		title := Title(prompt)
		s.mu.Lock()
		s.title = title
		err := s.appendLocked(store.Entry{Type: store.TypeTitle, Name: title})
		s.mu.Unlock()
		if err != nil {
			return false, err
		}
		t.emit(SessionName{Name: title})
	}

	for step := 0; ; step++ {
		if t.ctx.Err() != nil {
			return t.interrupted("")
		}
		if step == maxSteps {
			return false, fmt.Errorf("agent: the model asked for tools %d times in one turn; stopping", maxSteps)
		}
		if se := t.overBudget(); se != nil {
			return false, se
		}
		t.deliverSteers()
		if err := t.autoCompact(turnStart); err != nil {
			if t.ctx.Err() != nil {
				return t.interrupted("")
			}
			return false, err
		}
		if se := t.overBudget(); se != nil { // the compaction's call reached it
			return false, se
		}
		resp, partial, err := t.call()
		if errors.Is(err, errCallAgain) {
			continue
		}
		if partial != "" {
			t.output = append(t.output, partial) // what the user saw of a failed answer
		}
		if err != nil {
			if t.ctx.Err() != nil {
				return t.interrupted(partial)
			}
			// The provider counted more than the estimate did: compact
			// what came before the turn and continue it (S4).
			if tooLong(err) {
				if ok, cerr := t.compactTurn(turnStart, true); cerr == nil && ok {
					continue
				}
			}
			return false, err
		}
		call := t.lastCall
		textJSON, err := s.appendEntry(resp.Message, store.Entry{Call: &call})
		if err != nil {
			return false, err
		}
		text := resp.Message.Text()
		if text != "" {
			t.output = append(t.output, text)
		}
		if text != "" || len(resp.Message.ToolCalls()) == 0 {
			t.lastText, t.lastTextJSON = text, textJSON
		}
		calls := resp.Message.ToolCalls()
		if len(calls) == 0 {
			if s.hasSteers() {
				continue // a steer that came during the answer continues the turn
			}
			if t.opts.Output == nil {
				return false, nil
			}
			v, verr := t.opts.Output.check(text)
			if verr == nil {
				t.structured = v
				return false, nil
			}
			if t.corrected {
				return false, &StoppedError{StopInvalidOutput, "invalid output: " + verr.Error()}
			}
			t.corrected = true
			if err := s.appendMessage(t.opts.Output.correction(verr)); err != nil {
				return false, err
			}
			continue
		}
		// The answer is in; a budget it reached stops the turn before its
		// tools run, each ending "not run" so that the history stays valid.
		stop := t.overBudget()
		if interrupted := t.runTools(calls, stop); interrupted {
			return true, nil
		}
		if stop != nil {
			return false, stop
		}
	}
}

func (s *Session) lastEntryID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.entries) == 0 {
		return ""
	}
	return s.entries[len(s.entries)-1].ID
}

func (s *Session) hasSteers() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.steers) > 0
}

func (t *turn) deliverSteers() {
	for _, st := range t.s.takeSteers() {
		m := model.Message{Role: model.RoleUser, Content: append([]model.Part{{Type: model.PartText, Text: st.text}}, st.images...)}
		if err := t.s.appendMessage(m); err != nil {
			t.warn(err.Error())
			continue
		}
		t.emit(Steered{Text: st.text})
	}
}

// interrupted records an interruption outside a tool wave: the text an
// interrupted answer had streamed, so the history shows what the user saw,
// and the interrupted entry, whether or not any text came.
func (t *turn) interrupted(partial string) (aborted bool, err error) {
	if partial != "" {
		m := model.Message{Role: model.RoleAssistant, Content: []model.Part{{Type: model.PartText, Text: partial}}}
		if err := t.s.appendMessage(m); err != nil {
			t.warn(err.Error())
		}
		t.lastText, t.lastTextJSON = partial, nil
	}
	_ = t.s.append(store.Entry{Type: store.TypeInterrupted, Call: t.cut})
	return true, nil
}

// offerTools decides the tool definitions of this turn's model calls.
func (t *turn) offerTools(info model.Info) {
	t.offered = map[string]bool{}
	t.extension = map[string]bool{}
	t.mcp = map[string]mcpTool{}
	names := t.s.Tools()
	t.s.mu.Lock()
	servers := t.s.mcp
	t.s.mu.Unlock()
	if !info.Tools {
		return
	}
	defer t.offerClient()
	allowed := map[string]bool{}
	for _, n := range names {
		allowed[n] = true
	}
	for _, spec := range tool.Builtins() {
		if allowed[spec.Name] {
			t.offered[spec.Name] = true
			t.toolDefs = append(t.toolDefs, model.ToolDef{Name: spec.Name, Description: spec.Description, Parameters: spec.Parameters})
		}
	}
	if t.s.eng.Ext != nil {
		for _, def := range t.s.eng.Ext.Tools() {
			if allowed[def.Name] && !t.offered[def.Name] {
				t.offered[def.Name] = true
				t.extension[def.Name] = true
				t.toolDefs = append(t.toolDefs, def)
			}
		}
	}
	if len(names) == 0 {
		return // no tools in this session: MCP ones neither (C3, L1)
	}
	for _, c := range servers {
		for _, tl := range c.Tools() {
			if !t.offered[tl.Name] {
				t.offered[tl.Name] = true
				t.extension[tl.Name] = true // its description is its guide
				t.mcp[tl.Name] = mcpTool{c, tl.Remote}
				t.toolDefs = append(t.toolDefs, model.ToolDef{Name: tl.Name, Description: tl.Description, Parameters: tl.Parameters})
			}
		}
	}
}

// mcpTool is an offered tool of an MCP server.
type mcpTool struct {
	client *mcp.Client
	remote string
}

func (t *turn) request(system string, msgs []model.Message, tools []model.ToolDef) *model.Request {
	if p := t.s.eng.Behaviour.ImagePlaceholder; p != "" && !t.info.ImageInput {
		msgs = withoutImages(msgs, p)
	}
	return &model.Request{Model: t.info.Name, System: system, Messages: msgs, Tools: tools, Effort: t.effort}
}

// withOutput asks req's answer to be a value of the turn's output schema:
// in the API's own field, or in words when the endpoint refused that.
func (t *turn) withOutput(req *model.Request) *model.Request {
	if o := t.opts.Output; o != nil {
		switch {
		case t.schemaText:
			req.System += "\n\n" + o.instruction()
		case t.schemaTool:
			req.OutputSchema, req.OutputTool = o.Raw, true
		default:
			req.OutputSchema = o.Raw
		}
	}
	return req
}

// withoutImages returns msgs with each image replaced by placeholder,
// added on a line of its own to the message's first text. Messages it
// changes are copies: msgs is the session's history.
func withoutImages(msgs []model.Message, placeholder string) []model.Message {
	var out []model.Message // nil until a message changes
	for i, m := range msgs {
		n := 0
		for _, p := range m.Content {
			if p.Type == model.PartImage {
				n++
			}
		}
		if n == 0 {
			if out != nil {
				out = append(out, m)
			}
			continue
		}
		if out == nil {
			out = append(make([]model.Message, 0, len(msgs)), msgs[:i]...)
		}
		extra := strings.Repeat("\n"+placeholder, n)
		var parts []model.Part
		added := false
		for _, p := range m.Content {
			switch {
			case p.Type == model.PartImage:
				continue
			case p.Type == model.PartText && !added:
				p.Text += extra
				added = true
			}
			parts = append(parts, p)
		}
		if !added {
			parts = append(parts, model.Part{Type: model.PartText, Text: extra[1:]})
		}
		m.Content = parts
		out = append(out, m)
	}
	if out == nil {
		return msgs
	}
	return out
}

// systemPrompt returns the turn's system prompt, built on first use.
func (t *turn) systemPrompt() string {
	if t.system != "" {
		return t.system
	}
	names := make([]string, len(t.toolDefs))
	for i, d := range t.toolDefs {
		names[i] = d.Name
	}
	t.system = t.s.prompt(t.effort, names, t.extension)
	return t.system
}

// prompt builds the system prompt of a model call at effort offering the
// named tools (extension: those that are an extension's or MCP's).
func (s *Session) prompt(effort string, names []string, extension map[string]bool) string {
	s.mu.Lock()
	env, cwd := s.env, s.cwd
	s.mu.Unlock()
	if env == "" {
		env = promptEnv(cwd, time.Now())
		s.mu.Lock()
		if s.env == "" {
			s.env = env
		}
		env = s.env
		s.mu.Unlock()
	}
	s.mu.Lock()
	instructions := s.system
	s.mu.Unlock()
	return buildPrompt(s.eng.SystemPrompt, s.eng.AppendSystemPrompt, env, effort, instructions, names, extension)
}

// SystemPrompt returns the system prompt the session's next model call
// sends, as far as it is known before the call: with the session's tools
// but not the MCP tools a turn discovers.
func (s *Session) SystemPrompt() string {
	names := s.Tools()
	s.mu.Lock()
	effort := s.effort
	s.mu.Unlock()
	extension := map[string]bool{}
	for _, n := range names {
		if _, ok := tool.Lookup(n); !ok {
			extension[n] = true
		}
	}
	return s.prompt(effort, names, extension)
}

// call makes one model call with retries. It returns the text streamed by
// the failed attempt when it fails.
func (t *turn) call() (*model.Response, string, error) {
	t.s.mu.Lock()
	msgs := t.s.history(t.s.entries)
	t.s.mu.Unlock()
	resp, partial, err := t.stream(t.withOutput(t.request(t.systemPrompt(), msgs, t.toolDefs)), true)
	if err != nil && t.opts.Output != nil && !t.schemaText && !t.schemaTool && refusedOutputField(err, t.info.API) {
		// A model or endpoint without structured output: ask again, an
		// Anthropic model for a forced tool call, others with the schema
		// in words; e validates the answer anyway.
		how := "in the system prompt"
		if t.info.API == model.APIAnthropic {
			t.schemaTool, how = true, "as a forced tool call"
		} else {
			t.schemaText = true
		}
		t.warn(fmt.Sprintf("model %s refused the output schema as a request field; asking for the answer %s instead", t.info.ID, how))
		return t.stream(t.withOutput(t.request(t.systemPrompt(), msgs, t.toolDefs)), true)
	}
	return resp, partial, err
}

// stream runs req with the retry policy; with show set its deltas become
// text and reasoning events.
func (t *turn) stream(req *model.Request, show bool) (*model.Response, string, error) {
	maxAttempts := t.s.eng.MaxAttempts
	if maxAttempts == 0 {
		maxAttempts = 5
	}
	t.s.mu.Lock()
	if t.s.noRetry {
		maxAttempts = 1
	}
	t.s.mu.Unlock()
	began := time.Now()
	for attempt := 0; ; attempt++ {
		req.Attempt = attempt
		start, first := time.Now(), time.Time{}
		resp, err := t.prov.Stream(t.ctx, req, func(d model.Delta) {
			if first.IsZero() {
				first = time.Now()
			}
			if !show {
				return
			}
			// Straight to the sink, without emit's lock: the provider
			// calls this from the turn's goroutine, and no tool runs
			// during a model call, so no other goroutine emits; the lock
			// (an atomic pair per delta) was an eighth of a long answer's
			// streaming.
			switch d.Kind {
			case model.DeltaText:
				t.text.Delta = d.Text
				t.sink(&t.text)
			case model.DeltaReasoning:
				t.reasoning.Delta = d.Text
				t.sink(&t.reasoning)
			}
		})
		if err == nil {
			if attempt > 0 {
				t.emit(Recovered{Attempts: attempt + 1})
			}
			t.usage = t.usage.Add(resp.Usage)
			t.calls++
			rec := t.callRecord(show, "ok", attempt+1, began, start, first)
			rec.Usage, rec.CostUSD, rec.RequestID, rec.StopReason = resp.Usage, t.info.Cost(resp.Usage), resp.RequestID, resp.StopReason
			t.lastCall = store.ModelCall{Model: t.info.ID, Attempts: attempt + 1, DurationMS: rec.Duration.Milliseconds(),
				FirstByteMS: rec.FirstByte.Milliseconds(), Usage: store.Usage(resp.Usage), CostUSD: rec.CostUSD,
				ResponseID: resp.ResponseID, FinishReason: resp.FinishReason, ResponseModel: resp.ResponseModel}
			t.observeCall(rec, began)
			t.emit(UsageEvent{Usage: NewUsage(resp.Usage), ResponseID: resp.ResponseID, FinishReason: resp.FinishReason,
				ResponseModel: resp.ResponseModel, Signatures: signatures(resp.Message)})
			return resp, "", nil
		}
		// What this attempt streamed, from its provider (Provider): the
		// turn keeps no copy of the deltas.
		var partial string
		if resp != nil {
			partial = resp.Message.Text()
		}
		if t.ctx.Err() != nil {
			t.observeCall(t.callRecord(show, "cancelled", attempt+1, began, start, first), began)
			if show {
				t.cut = t.attemptCall(attempt, began, start, first, resp)
			}
			return nil, partial, t.ctx.Err()
		}
		var me *model.Error
		if !errors.As(err, &me) {
			me = &model.Error{Provider: t.info.Provider, Stage: "request", Message: err.Error(), Err: err}
		}
		// Every provider-given string is redacted again, on its way to stdout
		// (events, error_details) as much as to files: the adapter knows the
		// key it sent, Redact every *_API_KEY of the environment.
		redacted := *me
		me = &redacted
		me.RequestID, me.Type, me.Message, me.Body = store.Redact(me.RequestID), store.Redact(me.Type), store.Redact(me.Message), store.Redact(me.Body)
		if me.Model == "" {
			me.Model = t.info.ID
		}
		decision := "not_retryable"
		if me.Retryable {
			decision = "exhausted"
		}
		if !me.Retryable || attempt+1 >= maxAttempts {
			if show {
				t.failedCall = t.attemptCall(attempt, began, start, first, resp)
			}
			rec := t.callRecord(show, "error", attempt+1, began, start, first)
			rec.HTTPStatus, rec.RequestID, rec.Error = me.Status, me.RequestID, me.Error()
			t.observeCall(rec, began)
			return nil, partial, &modelError{err: me, text: t.errText(me), details: details(me, decision, attempt+1)}
		}
		if partial != "" {
			// The failed attempt's words are not in the output.
			t.emit(Discarded{Reason: "retry", Text: partial})
		}
		delay := model.Backoff(attempt+1, me)
		if !me.RetryAfterGiven && t.s.eng.RetryBase > 0 {
			delay = t.s.eng.RetryBase << attempt
			if m := t.s.eng.RetryMax; m > 0 && (delay > m || delay <= 0) {
				delay = m
			}
		}
		retry := Retry{Attempt: attempt + 2, DelayMS: delay.Milliseconds(), Reason: t.errText(me)}
		if show {
			retry.Logged = t.recordAttempt(t.attemptCall(attempt, start, start, first, resp), retry.Reason, resp)
		}
		var wait chan bool // the turn's own calls' waits may be cancelled (CancelRetryWait), from the retry event on
		if show {
			wait = make(chan bool, 1)
			t.s.mu.Lock()
			t.s.retryWait = wait
			t.s.mu.Unlock()
		}
		t.emit(retry)
		if o := t.s.eng.Observer; o != nil {
			o.ModelRetry(ModelRetryRecord{Session: t.s.id, Model: t.info.ID, Attempt: attempt + 2, Delay: delay, Reason: me.Error(),
				HTTPStatus: me.Status, RequestID: me.RequestID})
		}
		switch asked, now := t.waitRetry(delay, wait); {
		case asked && now:
			return nil, "", errCallAgain
		case asked:
			return nil, partial, &modelError{err: me, text: retry.Reason, details: details(me, "cancelled", attempt+1), recorded: retry.Logged != nil}
		case t.ctx.Err() != nil:
			return nil, "", t.ctx.Err()
		}
	}
}

// errCallAgain is stream's answer when CancelRetryWait asked for the call
// at once: the turn makes a new one (run's loop), not a retry of this one.
var errCallAgain = errors.New("agent: call again")

// waitRetry waits delay before a retry, until the turn's context ends or
// CancelRetryWait answers wait (nil: no one can); it reports whether that
// answered, and whether with "at once".
func (t *turn) waitRetry(delay time.Duration, wait chan bool) (asked, now bool) {
	timer := time.NewTimer(delay)
	defer timer.Stop()
	select {
	case <-t.ctx.Done():
	case <-timer.C:
	case now = <-wait:
		asked = true
	}
	if wait != nil {
		t.s.mu.Lock()
		if t.s.retryWait == wait {
			t.s.retryWait = nil
		} else if !asked { // answered as the wait ended: honour it
			now, asked = <-wait, true
		}
		t.s.mu.Unlock()
	}
	return asked, now
}

// attemptCall describes the turn's model call that failed or was cut
// short at attempt (from 0): timed from began, its last attempt started
// at start and streamed first at first; resp is what it streamed.
func (t *turn) attemptCall(attempt int, began, start, first time.Time, resp *model.Response) *store.ModelCall {
	c := &store.ModelCall{Model: t.info.ID, Attempts: attempt + 1, DurationMS: time.Since(began).Milliseconds()}
	if !first.IsZero() {
		c.FirstByteMS = first.Sub(start).Milliseconds()
	}
	if resp != nil {
		c.Usage, c.ResponseID, c.ResponseModel = store.Usage(resp.Usage), resp.ResponseID, resp.ResponseModel
	}
	return c
}

// recordAttempt logs a failed attempt that is about to be retried, with
// what it streamed, and returns its entry (nil when it could not be
// written: the turn goes on, as without a log).
func (t *turn) recordAttempt(call *store.ModelCall, reason string, resp *model.Response) *store.Entry {
	en := store.Entry{Type: store.TypeAttempt, Call: call, Error: reason}
	if resp != nil && len(resp.Message.Content) > 0 {
		m := resp.Message
		m.Role = model.RoleAssistant
		b, err := json.Marshal(m)
		if err == nil {
			en.Message = b
		}
	}
	es := []store.Entry{en}
	t.s.mu.Lock()
	err := t.s.appendLocked(es...)
	t.s.mu.Unlock()
	if err != nil {
		t.warn(err.Error())
		return nil
	}
	return &es[0]
}

// callRecord starts the observer's record of a model call: began is the
// first attempt's start, start and first the last attempt's start and
// first delta.
// observeCall tells the operator log (Engine.Observer) and the trace about
// a model call that began at began.
func (t *turn) observeCall(rec ModelCallRecord, began time.Time) {
	if o := t.s.eng.Observer; o != nil {
		o.ModelCall(rec)
	}
	trace.RecordModelCall(t.ctx, trace.ModelCall{Provider: rec.Provider, Model: rec.Model, Status: rec.Status, Error: rec.Error,
		RequestID: rec.RequestID, StopReason: rec.StopReason, HTTPStatus: rec.HTTPStatus, Attempts: rec.Attempts,
		InputTokens: rec.Usage.Input, OutputTokens: rec.Usage.Output, CacheReadTokens: rec.Usage.CacheRead, Start: began})
}

func (t *turn) callRecord(show bool, status string, attempts int, began, start, first time.Time) ModelCallRecord {
	r := ModelCallRecord{Session: t.s.id, Purpose: "turn", Provider: t.info.Provider, Model: t.info.ID, Status: status,
		Attempts: attempts, Duration: time.Since(began)}
	if !show {
		r.Purpose = "compaction"
	}
	if !first.IsZero() {
		r.FirstByte = first.Sub(start)
	}
	return r
}

// modelError is a terminal model failure with its details (U2) and its
// text (errText).
type modelError struct {
	err     *model.Error
	text    string
	details ErrorDetails
	// recorded: the failure is in the log already (the attempt entry of a
	// retry that was cancelled), so the turn adds no error entry.
	recorded bool
}

func (e *modelError) Error() string { return e.text }

// errText words the failed model call me (Behaviour.ErrorText).
func (t *turn) errText(me *model.Error) string {
	if f := t.s.eng.Behaviour.ErrorText; f != nil {
		return f(me)
	}
	return me.Error()
}
func (e *modelError) Unwrap() error { return e.err }

func details(me *model.Error, decision string, attempts int) ErrorDetails {
	d := ErrorDetails{
		Stage: "model", Provider: me.Provider, Model: me.Model, RequestID: me.RequestID,
		ErrorType: me.Type, Retryable: me.Retryable, Decision: decision, Attempts: attempts,
		Message: me.Error(), Diagnostic: truncate(me.Body, 4096),
		Time: time.Now().UTC().Format(time.RFC3339),
	}
	if me.Status != 0 {
		st := me.Status
		d.Status = &st
	}
	return d
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Title derives a session title from its first prompt: the first line,
// at most 60 characters.
func Title(prompt string) string {
	line := strings.TrimSpace(prompt)
	if i := strings.IndexByte(line, '\n'); i >= 0 {
		line = strings.TrimSpace(line[:i])
	}
	if utf8.RuneCountInString(line) > 60 {
		r := []rune(line)
		line = string(r[:60]) + "…"
	}
	if line == "" {
		line = "untitled"
	}
	return line
}

// jsonOr returns raw when it is a JSON value, else the JSON string of raw.
func jsonOr(raw json.RawMessage) json.RawMessage {
	if json.Valid(raw) {
		return raw
	}
	b, _ := json.Marshal(string(raw))
	return b
}

// signatures lists the signatures of m's reasoning parts that have text
// (those the reasoning events streamed), in order; nil when it has none.
func signatures(m model.Message) []string {
	var sigs []string
	for _, p := range m.Content {
		if p.Type == model.PartReasoning && p.Text != "" {
			sigs = append(sigs, p.Signature)
		}
	}
	return sigs
}
