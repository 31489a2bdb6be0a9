package pi

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/e-agent/e/internal/agent"
	"github.com/e-agent/e/internal/model"
)

// Recorded is what a Translator may ask of the session it translates: what
// the agent recorded, which its events do not carry.
type Recorded interface {
	// LastAssistant returns the newest assistant message of the history:
	// its tool calls carry the provider's call ids.
	LastAssistant() (model.Message, bool)
	// LastCompaction returns the newest compaction's summary and the id of
	// the first entry it kept.
	LastCompaction() (summary, firstKept string)
	// CompactedFiles lists the files the newest compaction's summarised
	// history read and modified.
	CompactedFiles() CompactionDetails
	// ContextTokens is pi's estimate of the context's tokens now
	// (estimateMessages of its messages).
	ContextTokens() int64
}

// Translator turns the events of e's turns into pi's events. One pi run
// (agent_start … agent_settled) spans one or more e turns: a prompt and
// the follow-ups delivered after it. A pi turn is one assistant message
// and the tool results it asked for; e's turn holds as many model calls
// as it needs, so the pi turns are cut at each model call.
//
// A Translator is not safe for concurrent use; the events of one session
// arrive in order from one goroutine at a time.
type Translator struct {
	Info          model.Info // the model answering: names and price
	ThinkingLevel string
	MaxAttempts   int              // auto_retry_start's maxAttempts
	Now           func() time.Time // nil: time.Now
	Recorded      Recorded         // nil: tool call ids are made up

	user         *UserMessage // announced by Begin, emitted at e's turn_start
	inRun        bool
	turnOpen     bool
	turnDone     bool // the open pi turn has its assistant message and every tool result
	asst         *AssistantMessage
	asstStart    time.Time      // when asst started
	compactUsage *Usage         // the running compaction's summary call
	after        Event          // goes out right after the next turn_start (After)
	system       *SystemMessage // goes out before the next turn's user message (BeginSystem)
	blocks       []*block       // the assistant message's open text and thinking blocks, in content order
	awaitBatch   bool           // the assistant message is complete but may still get tool calls
	calls        map[int]*call
	open         int // tool calls without their tool_execution_end
	toolResults  []ToolResultMessage
	runMessages  []any
	retry        int // the attempt being retried, 0 when none
	recovered    int // a retry succeeded: auto_retry_end follows its message_end
	finalError   string
	retryEnds    bool   // abort_retry cancelled the retry: the turn's error is not another message
	settling     bool   // the run ended for a retry (agent_end willRetry): agent_settled is still due
	aborted      bool   // of the last e turn
	cutID        string // the response id of the answer the last e turn's interruption cut short
	cutModel     string // and the model it named (pi's responseModel), when not the one asked for
	compacting   string
	steers       map[string][]Content // a steer's images, by its text
}

// Steering announces a steer with images handed to e: its Steered event
// (which names only the text) becomes a user message that holds them.
func (t *Translator) Steering(text string, images []Content) {
	if len(images) == 0 {
		return
	}
	if t.steers == nil {
		t.steers = map[string][]Content{}
	}
	t.steers[text] = images
}

// block is an open text or thinking block of the assistant message.
type block struct {
	kind  string // "text" or "thinking"
	index int    // in the message's content
	text  strings.Builder
}

type call struct {
	id, name string
	args     json.RawMessage
	out      strings.Builder
	started  time.Time
}

func (t *Translator) now() time.Time {
	if t.Now != nil {
		return t.Now()
	}
	return time.Now()
}

func (t *Translator) ms() int64 { return t.now().UnixMilli() }

// Running reports whether a pi run is open (agent_start without agent_settled).
func (t *Translator) Running() bool { return t.inRun }

// Begin announces the user message of the next e turn; it is emitted when
// that turn starts.
func (t *Translator) Begin(text string, images []Content) {
	t.user = userMessage(text, images, t.ms())
}

// BeginSystem announces the system message pi sends before the user
// message of a session's first request.
func (t *Translator) BeginSystem(m SystemMessage) { t.system = &m }

func userMessage(text string, images []Content, ts int64) *UserMessage {
	// pi 1.6.0 writes a user message's content as blocks, text first.
	return &UserMessage{Role: "user", Content: append([]Content{{Type: "text", Text: text}}, images...), Timestamp: ts}
}

// Settle ends the run: agent_end with its messages (unless a retry already
// ended it), the outcome of retries that ran out or were cancelled, and
// agent_settled (pi emits auto_retry_end after the last agent_end).
func (t *Translator) Settle() []Event {
	if !t.inRun && !t.settling {
		return nil
	}
	out := t.EndRun()
	if t.retry > 0 {
		final := cmpOr(t.finalError, "Retry cancelled")
		out = append(out, AutoRetryEnd{Type: "auto_retry_end", Success: false, Attempt: int64(t.retry), FinalError: final})
	}
	t.settling, t.retry, t.finalError = false, 0, ""
	return append(out, AgentSettled{Type: "agent_settled", Aborted: t.aborted})
}

// RetryCancelled is pi's abort_retry while a retry waits, which cancels the
// wait (auto_retry_end "Retry cancelled"): with now the run goes on at once
// (pi continues it, as something is queued) as a new pi run, the steers
// first, then a new model call (e's turn makes one), else the run ends with
// the failed attempt, which is already out.
func (t *Translator) RetryCancelled(now bool) []Event {
	if t.retry == 0 {
		return nil
	}
	ev := AutoRetryEnd{Type: "auto_retry_end", Success: false, Attempt: int64(t.retry), FinalError: "Retry cancelled"}
	t.retry, t.retryEnds = 0, !now
	return []Event{ev}
}

// CompactionAborted ends the compaction going on as one an abort stopped
// (pi's compaction_end with aborted and no error); the run it belongs to,
// if any, settles aborted, as pi's (the next turn's start resets it).
func (t *Translator) CompactionAborted() []Event {
	if t.compacting == "" {
		return nil
	}
	ev := CompactionEnd{Type: "compaction_end", Reason: t.compacting, Aborted: true}
	t.compacting, t.aborted = "", true
	return []Event{ev}
}

// EndRun ends the open pi run (agent_end) before what pi does after it
// and before agent_settled (Settle): an automatic compaction.
func (t *Translator) EndRun() []Event {
	if !t.inRun {
		return nil
	}
	msgs := t.runMessages
	if msgs == nil {
		msgs = []any{}
	}
	t.inRun, t.settling, t.runMessages = false, true, nil
	return []Event{AgentEnd{Type: "agent_end", Messages: msgs, WillRetry: false}}
}

// openRun starts a pi run: the first of a prompt, or the one pi starts
// again after a failed attempt's agent_end.
func (t *Translator) openRun() []Event {
	if t.inRun {
		return nil
	}
	t.inRun, t.settling = true, false
	return []Event{AgentStart{Type: "agent_start"}}
}

// Feed translates one event of e's turn; eventFates says why the types it
// has no case for send nothing.
func (t *Translator) Feed(ev agent.Event) []Event {
	var out []Event
	emit := func(evs ...Event) { out = append(out, evs...) }
	switch ev := ev.(type) {
	case agent.TurnStart:
		t.aborted = false
		emit(t.openRun()...)
		emit(t.closeTurn()...)
		emit(t.openTurn()...)
		if t.system != nil { // a session's first request: pi's system message first
			emit(t.message(*t.system)...)
			t.system = nil
		}
		if t.user != nil {
			emit(t.message(*t.user)...)
			t.user = nil
		}
	case agent.Steered:
		emit(t.nextCall()...)
		emit(t.flushAfter()...) // no new pi turn: before the message
		images := t.steers[ev.Text]
		delete(t.steers, ev.Text)
		emit(t.message(*userMessage(ev.Text, images, t.ms()))...)
	case *agent.Text:
		emit(t.delta("text", ev.Delta)...)
	case *agent.Reasoning:
		emit(t.delta("thinking", ev.Delta)...)
	case agent.UsageEvent:
		if t.compacting != "" { // the summary's model call: no assistant message
			u := withReasoning(pricedUsage(ev.Usage.Usage, t.Info.Price), t.Info.API, ev.Usage.Reasoning)
			if t.compactUsage != nil { // a split turn's second summary
				u = combineUsage(*t.compactUsage, u)
			}
			t.compactUsage = &u
			break
		}
		emit(t.startAssistant()...)
		if !t.blocksToEnd() {
			emit(t.closeBlocks()...)
		}
		t.asst.Usage = withReasoning(NewUsage(ev.Usage.Usage, t.Info.Price), t.Info.API, ev.Usage.Reasoning)
		fromProvider := false // an answer's usage says who priced it
		t.asst.Usage.Cost.TotalFromProvider = &fromProvider
		t.asst.ResponseID, t.asst.RawStopReason, t.asst.ResponseModel = ev.ResponseID, ev.FinishReason, ev.ResponseModel
		if t.blocksToEnd() {
			emit(t.closeBlocks()...) // with the answer's usage, as pi's
		}
		sigs := ev.Signatures
		for i := range t.asst.Content {
			if t.asst.Content[i].Type == "thinking" && len(sigs) > 0 {
				t.asst.Content[i].Signature, sigs = model.PlainSignature(sigs[0]), sigs[1:]
			}
		}
		t.awaitBatch = true
	case agent.ToolBatch:
		emit(t.toolCalls(ev.Calls)...)
	case agent.ToolStart:
		if c := t.calls[ev.ID]; c != nil {
			c.started = t.now()
			emit(ToolExecutionStart{Type: "tool_execution_start", ToolCallID: c.id, ToolName: c.name, Args: c.args})
			if c.name == "bash" { // pi's bash tool reports an empty result as it starts
				emit(ToolExecutionUpdate{Type: "tool_execution_update", ToolCallID: c.id, ToolName: c.name, Args: c.args,
					PartialResult: ToolResult{Content: []Content{}}})
			}
		}
	case agent.ToolOutput:
		if c := t.calls[ev.ID]; c != nil {
			// bash's output as pi's bash tool reports it (its kept tail,
			// the details once cut), else the output so far.
			var res ToolResult
			if ev.Snapshot != nil {
				res.Content = []Content{{Type: "text", Text: ev.Snapshot.Content}}
				if d := bashDetails(ev.Snapshot.Details); d != nil {
					res.Details = d
				}
			} else {
				c.out.WriteString(ev.Delta)
				res.Content = []Content{{Type: "text", Text: c.out.String()}}
			}
			if res.Details == nil {
				res.Details = map[string]any{}
			}
			emit(ToolExecutionUpdate{Type: "tool_execution_update", ToolCallID: c.id, ToolName: c.name, Args: c.args,
				PartialResult: res})
		}
	case agent.ToolEnd:
		emit(t.toolEnd(ev)...)
	case agent.Compacting:
		t.compacting = "manual"
		if ev.Reason != "manual" {
			t.compacting = "threshold"
		}
		emit(CompactionStart{Type: "compaction_start", Reason: t.compacting})
	case agent.Compacted:
		res := &CompactionResult{TokensBefore: ev.TokensBefore, EstimatedTokensAfter: ev.TokensAfter, Usage: t.compactUsage,
			Details: CompactionDetails{ReadFiles: []string{}, ModifiedFiles: []string{}}}
		t.compactUsage = nil
		if t.Recorded != nil {
			res.Summary, res.FirstKeptEntryID = t.Recorded.LastCompaction()
			res.Details = t.Recorded.CompactedFiles()
			res.EstimatedTokensAfter = t.Recorded.ContextTokens()
		}
		emit(CompactionEnd{Type: "compaction_end", Reason: t.compacting, Result: res})
		t.compacting = ""
	case agent.Retry:
		if t.compacting != "" {
			break
		}
		// pi ends the failed attempt's run (agent_end with willRetry), then
		// announces the retry and starts a new run for it.
		emit(t.failCall(ev.Reason)...)
		if t.inRun {
			emit(AgentEnd{Type: "agent_end", Messages: t.runMessages, WillRetry: true})
			t.inRun, t.settling, t.runMessages = false, true, []any{}
		}
		t.retry, t.recovered = ev.Attempt-1, 0
		emit(AutoRetryStart{Type: "auto_retry_start", Attempt: int64(t.retry), MaxAttempts: int64(t.maxRetries()), DelayMS: ev.DelayMS,
			ErrorMessage: ev.Reason})
		if ev.Logged != nil { // pi then hides the attempt from the context, as get_entries shows
			emit(EntryAppended{Type: "entry_appended", Entry: hideAttempt(ev.Logged.ID, ev.Logged.Time)})
		}
	case agent.Recovered:
		// e knows at the first byte; pi says so after the answer's message_end.
		t.recovered, t.retry = ev.Attempts-1, 0
	case agent.Error:
		if t.retryEnds { // the failure is out already, as its retry's wait was cancelled
			t.retryEnds = false
			break
		}
		if t.retry > 0 {
			t.finalError = ev.Message // auto_retry_end comes after agent_end (Settle)
		}
		if t.compacting != "" {
			emit(CompactionEnd{Type: "compaction_end", Reason: t.compacting, ErrorMessage: ev.Message})
			t.compacting = ""
			if !t.inRun {
				break // a compaction after the run (EndRun): the run itself went well
			}
		}
		if t.inRun || t.settling {
			emit(t.failCall(ev.Message)...)
		}
	case agent.TurnEnd:
		t.aborted = ev.Aborted
		if t.compacting != "" {
			emit(CompactionEnd{Type: "compaction_end", Reason: t.compacting, Aborted: ev.Aborted})
			t.compacting = ""
		}
		t.cutID, t.cutModel = ev.ResponseID, ev.ResponseModel
		switch {
		case t.asst != nil && ev.Aborted:
			emit(t.endAssistant("aborted", abortedError)...)
		case t.asst != nil:
			emit(t.endAssistant("stop", "")...)
		case ev.Aborted && t.awaitsAnswer():
			emit(t.endCall("aborted", abortedError)...) // interrupted before any output: pi records an empty answer
		}
		emit(t.closeTurn()...)
	}
	return out
}

func (t *Translator) maxRetries() int {
	if t.MaxAttempts > 1 {
		return t.MaxAttempts - 1
	}
	return 4
}

func (t *Translator) openTurn() []Event {
	if t.turnOpen {
		return nil
	}
	t.turnOpen, t.turnDone, t.toolResults = true, false, nil
	return append(append(t.openRun(), TurnStart{Type: "turn_start"}), t.flushAfter()...)
}

// After holds ev (the queue_update of a delivered steer or follow-up) for
// where pi sends it: right after the turn_start of the turn that delivers
// it, before that turn's user message.
func (t *Translator) After(ev Event) { t.after = ev }

func (t *Translator) flushAfter() []Event {
	if t.after == nil {
		return nil
	}
	ev := t.after
	t.after = nil
	return []Event{ev}
}

// closeTurn ends the open pi turn with its assistant message (the last
// one, or an empty one when the turn had none) and its tool results.
func (t *Translator) closeTurn() []Event {
	if !t.turnOpen {
		return nil
	}
	var out []Event
	if t.asst != nil {
		out = append(out, t.endAssistant("stop", "")...)
	}
	var last any = t.newAssistant("stop")
	for i := len(t.runMessages) - 1; i >= 0; i-- {
		if m, ok := t.runMessages[i].(AssistantMessage); ok {
			last = m
			break
		}
	}
	results := t.toolResults
	if results == nil {
		results = []ToolResultMessage{}
	}
	t.turnOpen, t.turnDone, t.toolResults = false, false, nil
	return append(out, TurnEnd{Type: "turn_end", Message: last, ToolResults: results})
}

// nextCall prepares for the next model call: the previous pi turn ends
// once it is complete.
func (t *Translator) nextCall() []Event {
	var out []Event
	if t.asst != nil && t.awaitBatch {
		out = append(out, t.endAssistant("stop", "")...)
	}
	if t.turnDone {
		out = append(out, t.closeTurn()...)
	}
	return append(out, t.openTurn()...)
}

func (t *Translator) newAssistant(stop string) AssistantMessage {
	return AssistantMessage{Role: "assistant", Content: []Content{}, API: piAPI(t.Info.API), Provider: t.Info.Provider,
		Model: t.Info.Name, Usage: NewUsage(model.Usage{}, t.Info.Price), StopReason: stop, Timestamp: t.ms()}
}

func (t *Translator) startAssistant() []Event {
	if t.asst != nil && !t.awaitBatch {
		return nil
	}
	out := t.nextCall()
	m := t.newAssistant("pending")
	t.asst, t.asstStart = &m, t.now()
	return append(out, MessageStart{Type: "message_start", Message: m})
}

func (t *Translator) update(ev AssistantEvent) Event {
	return MessageUpdate{Type: "message_update", Usage: t.asst.Usage, AssistantMessageEvent: ev}
}

// blocksToEnd reports whether the answer's text and thinking blocks stay
// open until it ends, as pi's openai-completions provider keeps them: it
// ends them all once the stream is over (its usage known), in content
// order, where its other providers end a block when the API does (e: when
// the next one starts).
func (t *Translator) blocksToEnd() bool { return t.Info.API == model.APIOpenAIChat }

func (t *Translator) delta(kind, text string) []Event {
	out := t.startAssistant()
	var b *block
	if n := len(t.blocks); n > 0 && t.blocks[n-1].kind == kind {
		b = t.blocks[n-1]
	} else {
		// A block of a kind already open (reasoning after text) ends those
		// open, as e's message then has a new part.
		if !t.blocksToEnd() || slices.ContainsFunc(t.blocks, func(o *block) bool { return o.kind == kind }) {
			out = append(out, t.closeBlocks()...)
		}
		t.asst.Content = append(t.asst.Content, Content{Type: kind})
		b = &block{kind: kind, index: len(t.asst.Content) - 1}
		t.blocks = append(t.blocks, b)
		out = append(out, t.update(AssistantEvent{Type: kind + "_start", ContentIndex: b.index}))
	}
	b.text.WriteString(text)
	return append(out, t.update(AssistantEvent{Type: kind + "_delta", ContentIndex: b.index, Text: text}))
}

// closeBlocks ends the open blocks, in content order.
func (t *Translator) closeBlocks() []Event {
	var out []Event
	for _, b := range t.blocks {
		text := b.text.String()
		t.asst.Content[b.index].Text = text
		out = append(out, t.update(AssistantEvent{Type: b.kind + "_end", ContentIndex: b.index, Text: text}))
	}
	t.blocks = nil
	return out
}

// endAssistant completes the open assistant message.
func (t *Translator) endAssistant(stop, errMsg string) []Event {
	out := t.closeBlocks()
	m := *t.asst
	m.StopReason, m.ErrorMessage = stop, errMsg
	if stop == "aborted" {
		m.ResponseID, m.ResponseModel = t.cutID, t.cutModel // pi keeps those of the stream's first chunk
	}
	// pi adds these once the message is done; an answer's usage (not a
	// failed or interrupted call's) says who priced it.
	d := t.now().Sub(t.asstStart).Milliseconds()
	m.ThinkingLevel, m.DurationMS = t.ThinkingLevel, &d
	if stop != "error" && stop != "aborted" {
		fromProvider := false
		m.Usage.Cost.TotalFromProvider = &fromProvider
	}
	t.asst, t.awaitBatch = nil, false
	t.runMessages = append(t.runMessages, m)
	if t.open == 0 {
		t.turnDone = true
	}
	out = append(out, MessageEnd{Type: "message_end", Message: m})
	if t.recovered > 0 && stop != "error" {
		out = append(out, AutoRetryEnd{Type: "auto_retry_end", Success: true, Attempt: int64(t.recovered)})
		t.recovered = 0
	}
	return out
}

// failCall ends the current model call as failed: its assistant message
// (an empty one when nothing streamed) says why.
func (t *Translator) failCall(msg string) []Event {
	out := t.endCall("error", msg)
	return append(out, t.closeTurn()...)
}

// endCall ends the current model call's assistant message with stop. A
// call that ended before any output is announced, as pi does, by a
// message_start that already holds the final message.
func (t *Translator) endCall(stop, msg string) []Event {
	fresh := t.asst == nil || t.awaitBatch
	out := t.startAssistant()
	end := t.endAssistant(stop, msg)
	if fresh {
		for _, ev := range end {
			if me, ok := ev.(MessageEnd); ok {
				out[len(out)-1] = MessageStart{Type: "message_start", Message: me.Message}
			}
		}
	}
	return append(out, end...)
}

// awaitsAnswer reports whether the run's last message is a user message
// that no answer followed yet.
func (t *Translator) awaitsAnswer() bool {
	if len(t.runMessages) == 0 {
		return false
	}
	_, ok := t.runMessages[len(t.runMessages)-1].(UserMessage)
	return ok
}

// toolCalls adds the batch's calls to the assistant message and ends it.
func (t *Translator) toolCalls(calls []agent.Call) []Event {
	var out []Event
	if t.asst == nil {
		out = t.startAssistant()
	}
	t.awaitBatch = false
	out = append(out, t.closeBlocks()...)
	var ids []string
	if t.Recorded != nil {
		if m, ok := t.Recorded.LastAssistant(); ok {
			for _, p := range m.ToolCalls() {
				ids = append(ids, p.ID)
			}
		}
	}
	if t.calls == nil {
		t.calls = map[int]*call{}
	}
	for i, c := range calls {
		id := fmt.Sprintf("call_%d", c.ID)
		if len(ids) == len(calls) && ids[i] != "" {
			id = ids[i]
		}
		args := c.Arguments
		if len(args) == 0 || args[0] != '{' {
			args = json.RawMessage("{}")
		}
		t.calls[c.ID] = &call{id: id, name: c.Name, args: args}
		tc := Content{Type: "toolCall", ID: id, Name: c.Name, Arguments: args}
		t.asst.Content = append(t.asst.Content, tc)
		idx := len(t.asst.Content) - 1
		delta := string(args)
		out = append(out, t.update(AssistantEvent{Type: "toolcall_start", ContentIndex: idx, ID: id, ToolName: c.Name}),
			t.update(AssistantEvent{Type: "toolcall_delta", ContentIndex: idx, Text: delta}),
			t.update(AssistantEvent{Type: "toolcall_end", ContentIndex: idx, ToolCall: tc}))
	}
	t.open += len(calls)
	return append(out, t.endAssistant("toolUse", "")...)
}

func (t *Translator) toolEnd(ev agent.ToolEnd) []Event {
	c := t.calls[ev.ID]
	if c == nil {
		return nil
	}
	var out []Event
	var dur *int64
	if c.started.IsZero() { // refused before it ran: pi still announces it
		out = append(out, ToolExecutionStart{Type: "tool_execution_start", ToolCallID: c.id, ToolName: c.name, Args: c.args})
	} else {
		d := t.now().Sub(c.started).Milliseconds()
		dur = &d
	}
	failed := ev.Outcome != "completed"
	text := ev.Content
	if c.name == "bash" {
		text = bashText(text)
	}
	content := []Content{{Type: "text", Text: text}}
	details := bashDetails(ev.Details)
	res := ToolResult{Content: content}
	if details != nil {
		res.Details = details
	}
	switch {
	case c.name == "read" && !failed:
		res.StructuredContent = ev.Content
	case c.name == "bash" && ev.Shell != nil && ev.Shell.ExitCode != nil:
		// pi rounds the wall time to tenths of a second.
		var wall float64
		if dur != nil {
			wall = math.Round(float64(*dur)/100) / 10
		}
		res.StructuredContent = BashStructured{Output: ev.Shell.Output, Truncated: ev.Shell.Truncated,
			FullOutputPath: ev.Shell.FullOutputPath, ExitCode: int64(*ev.Shell.ExitCode), WallTimeSeconds: wall}
	}
	out = append(out, ToolExecutionEnd{Type: "tool_execution_end", ToolCallID: c.id, ToolName: c.name,
		Result: res, IsError: failed, DurationMS: dur})
	m := ToolResultMessage{Role: "toolResult", ToolCallID: c.id, ToolName: c.name, Content: content,
		Details: details, IsError: failed, Timestamp: t.ms(), DurationMS: dur}
	t.toolResults = append(t.toolResults, m)
	delete(t.calls, ev.ID)
	t.open--
	if t.open == 0 {
		t.turnDone = true
	}
	return append(out, t.message(m)...)
}

// message emits a whole message (user, tool result) and records it in the run.
func (t *Translator) message(m any) []Event {
	t.runMessages = append(t.runMessages, m)
	return []Event{MessageStart{Type: "message_start", Message: m}, MessageEnd{Type: "message_end", Message: m}}
}

// piAPI names e's provider APIs as pi does.
func piAPI(api string) string {
	switch api {
	case model.APIOpenAIChat:
		return "openai-completions"
	case model.APIOpenAIResponses:
		return "openai-responses"
	case model.APIAnthropic:
		return "anthropic-messages"
	}
	return "e-" + api
}

// bashDetails reads pi's bash details of a cut output (tool.Result.Details),
// nil when there are none.
func bashDetails(raw json.RawMessage) *BashDetails {
	var d BashDetails
	if len(raw) == 0 || json.Unmarshal(raw, &d) != nil || !d.Truncation.Truncated {
		return nil
	}
	return &d
}
