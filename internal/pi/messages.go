package pi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/e-agent/e/internal/agent"
	"github.com/e-agent/e/internal/model"
	"github.com/e-agent/e/internal/session"
)

// hideAttempt is the context_edit entry pi appends after a failed attempt
// it retries (id: the attempt's id with ".1"), taking the attempt's
// message (id) out of the model's context; the attempt stays in the log.
func hideAttempt(id string, ts time.Time) Entry {
	return Entry{Type: "context_edit", ID: id + ".1", ParentID: &id, Timestamp: ts.UTC().Format(isoMillis), TargetID: id,
		Replacement: json.RawMessage("null")}
}

// converter turns e's history into pi's shapes. It follows the settings
// entries so each assistant message names the model that answered.
type converter struct {
	// system makes the system message pi keeps before a session's first
	// user message (nil, or false: none); sysDone once it is placed.
	system  func(ts int64) (SystemMessage, bool)
	sysDone bool

	cat    func(id string) (model.Info, bool)
	info   model.Info
	effort string
	names  map[string]string // tool call id → tool name
}

func newConverter(lookup func(string) (model.Info, bool), h session.Header) *converter {
	c := &converter{cat: lookup, names: map[string]string{}, effort: h.Effort}
	c.info, _ = lookup(h.Model)
	return c
}

// messages converts one e message to pi messages: a tool message holds
// one result per call, pi has one message per result.
func (c *converter) messages(m model.Message, ts int64) []any {
	if sum, ok := agent.Summary(m); ok {
		return []any{CompactionSummaryMessage{Role: "compactionSummary", Summary: sum, Timestamp: ts}}
	}
	switch m.Role {
	case model.RoleUser:
		var imgs []Content
		for _, p := range m.Content {
			if p.Type == model.PartImage {
				imgs = append(imgs, Content{Type: "image", Data: p.Data, MimeType: p.MediaType})
			}
		}
		return []any{*userMessage(m.Text(), imgs, ts)}
	case model.RoleAssistant:
		a := c.assistant("stop", ts)
		for _, p := range m.Content {
			switch p.Type {
			case model.PartText:
				a.Content = append(a.Content, Content{Type: "text", Text: p.Text})
			case model.PartReasoning:
				a.Content = append(a.Content, Content{Type: "thinking", Text: p.Text, Signature: model.PlainSignature(p.Signature)})
			case model.PartToolCall:
				c.names[p.ID] = p.Name
				a.Content = append(a.Content, Content{Type: "toolCall", ID: p.ID, Name: p.Name, Arguments: p.Arguments})
				a.StopReason = "toolUse"
			}
		}
		return []any{a}
	case model.RoleTool:
		var out []any
		for _, p := range m.Content {
			if p.Type != model.PartToolResult {
				continue
			}
			text := p.Text
			if c.names[p.CallID] == "bash" {
				text = bashText(text)
			}
			out = append(out, ToolResultMessage{Role: "toolResult", ToolCallID: p.CallID, ToolName: c.names[p.CallID],
				Content: []Content{{Type: "text", Text: text}}, IsError: p.IsError, Timestamp: ts})
		}
		return out
	}
	return nil
}

// logged converts the message of log entry en as the history shows it:
// an answer with its model call's usage and duration, a tool result with
// how long its tool ran (the entry's tool runs).
func (c *converter) logged(en session.Entry, m model.Message) []any {
	out := c.messages(m, en.Time.UnixMilli())
	for i, msg := range out {
		switch msg := msg.(type) {
		case AssistantMessage:
			out[i] = c.finished(msg, en.Call)
		case ToolResultMessage:
			if j := slices.IndexFunc(en.Runs, func(r session.ToolRun) bool { return r.CallID == msg.ToolCallID }); j >= 0 {
				d := en.Runs[j].DurationMS
				msg.DurationMS, msg.Details = &d, bashDetails(en.Runs[j].Details)
				out[i] = msg
			}
		}
	}
	return out
}

func (c *converter) assistant(stop string, ts int64) AssistantMessage {
	return AssistantMessage{Role: "assistant", Content: []Content{}, API: piAPI(c.info.API), Provider: c.info.Provider,
		Model: c.info.Name, ThinkingLevel: levelOf(c.effort), Usage: NewUsage(model.Usage{}, nil), StopReason: stop, Timestamp: ts}
}

// abortedError is pi's errorMessage of an interrupted answer.
const abortedError = "Request was aborted"

// interrupted applies interrupted entry en to the messages converted so
// far, as pi records an interrupted answer: e logged the text it had
// streamed (last, the last message), which pi marks aborted; when nothing
// came (last is the user's message), pi keeps an empty aborted answer,
// returned as added. Either carries the duration, answer id and model of
// the model call it cut (the entry's call). Right after a failed attempt
// (afterAttempt: en's parent), the retry was cut before any output when
// en has a call (an empty aborted answer), and the wait before it was
// otherwise (nothing). An interruption of tools changes nothing.
func (c *converter) interrupted(en session.Entry, last any, afterAttempt bool) (changed any, added *AssistantMessage) {
	cut := func(m AssistantMessage) AssistantMessage {
		m.StopReason, m.ErrorMessage = "aborted", abortedError
		if en.Call != nil {
			d := en.Call.DurationMS
			m.DurationMS, m.ResponseID, m.ResponseModel = &d, en.Call.ResponseID, en.Call.ResponseModel
		}
		return m
	}
	empty := func() *AssistantMessage {
		a := cut(c.assistant("aborted", en.Time.UnixMilli()))
		return &a
	}
	if afterAttempt {
		if en.Call != nil {
			return nil, empty()
		}
		return nil, nil
	}
	switch m := last.(type) {
	case AssistantMessage:
		return cut(m), nil
	case UserMessage:
		return nil, empty()
	}
	return nil, nil
}

// failed is pi's error assistant message of a model call that failed: a
// retried attempt (what it streamed, if anything) or the error that ended
// a turn.
func (c *converter) failed(en session.Entry) AssistantMessage {
	a := c.assistant("error", en.Time.UnixMilli())
	var m model.Message
	if en.Message != nil && json.Unmarshal(en.Message, &m) == nil {
		for _, msg := range c.messages(m, 0) {
			if am, ok := msg.(AssistantMessage); ok {
				a.Content = am.Content
			}
		}
	}
	a.ErrorMessage = en.Error
	if call := en.Call; call != nil {
		a.Usage = callUsage(call) // pi's failed message has no reasoning count
		d := call.DurationMS
		a.DurationMS, a.ResponseID, a.ResponseModel = &d, call.ResponseID, call.ResponseModel
	}
	return a
}

// finished adds what pi records of an answer: its model call's usage and
// duration, and who priced it (an interrupted answer has no model call).
func (c *converter) finished(a AssistantMessage, call *session.ModelCall) AssistantMessage {
	if call != nil {
		a.Usage = withReasoning(callUsage(call), c.info.API, call.Usage.Reasoning)
		d, fromProvider := call.DurationMS, false
		a.DurationMS, a.Usage.Cost.TotalFromProvider = &d, &fromProvider
		a.ResponseID, a.RawStopReason, a.ResponseModel = call.ResponseID, call.FinishReason, call.ResponseModel
	}
	return a
}

// levelOf names e's effort as a pi thinking level.
func levelOf(effort string) string {
	if effort == "" {
		return "off"
	}
	return effort
}

// entries converts e's log entries, in append order, to pi's. An e entry
// that holds several pi messages becomes several entries: the first keeps
// its id, the others get "ID.N" and chain after it.
func (c *converter) entries(es []session.Entry) []Entry {
	var out []Entry
	p := c.chain()
	for _, en := range es {
		out = p.add(out, en)
	}
	return out
}

// piChain converts e's log entries to pi's one at a time, in append order
// (converter.entries, and the session files e writes: sessionfile.go).
type piChain struct {
	c        *converter
	last     map[string]string // e entry id → id of the last pi entry made from it
	attempts map[string]bool   // ids of attempt entries
	root     string            // the parentId of a root entry ("": null)
}

func (c *converter) chain() *piChain {
	return &piChain{c: c, last: map[string]string{}, attempts: map[string]bool{}}
}

// add appends to out, the pi entries converted so far, those of en; an
// interruption changes the last of out (the answer it cut short).
func (p *piChain) add(out []Entry, en session.Entry) []Entry {
	c, last := p.c, p.last
	parent := func() *string {
		if en.Parent == "" {
			if p.root == "" {
				return nil
			}
			r := p.root
			return &r
		}
		pid := en.Parent
		if l, ok := last[en.Parent]; ok {
			pid = l
		}
		return &pid
	}
	base := Entry{ID: en.ID, ParentID: parent(), Timestamp: en.Time.UTC().Format(isoMillis)}
	switch en.Type {
	case session.EntryMessage:
		var m model.Message
		if json.Unmarshal(en.Message, &m) != nil {
			return out
		}
		for i, msg := range c.logged(en, m) {
			if _, ok := msg.(UserMessage); ok && c.system != nil && !c.sysDone {
				// pi's system message comes before the first user message.
				c.sysDone = true
				if m, ok := c.system(en.Time.UnixMilli()); ok {
					sys := base
					sys.ID, sys.Type, sys.Message = en.ID+".system", "message", m
					out = append(out, sys)
					base.ParentID = &sys.ID
				}
			}
			e := base
			if i > 0 {
				prev := out[len(out)-1].ID
				e.ID, e.ParentID = fmt.Sprintf("%s.%d", en.ID, i), &prev
			}
			e.Type, e.Message = "message", msg
			out = append(out, e)
			last[en.ID] = e.ID
		}
		return out
	case session.EntrySettings:
		if info, ok := c.cat(en.Model); ok {
			c.info = info
		}
		c.effort = en.Effort
		e := base
		e.Type, e.Provider, e.ModelID = "model_change", c.info.Provider, c.info.Name
		t := base
		t.ID, t.ParentID, t.Type, t.ThinkingLevel = en.ID+".1", &e.ID, "thinking_level_change", levelOf(en.Effort)
		last[en.ID] = t.ID
		return append(out, e, t)
	case session.EntryCompaction:
		base.Type, base.Summary, base.FirstKeptEntryID = "compaction", en.Summary, en.Kept
		if en.Kept == "" {
			base.FirstKeptEntryID = en.ID // retains nothing: its own id (session-format.md)
		}
		tok := en.Tokens
		base.TokensBefore = &tok
		if c.system != nil { // pi's checkpoint: the compacted context's leading system message
			if m, ok := c.system(en.Time.UnixMilli()); ok {
				base.SystemMessage = &m
			}
		}
	case session.EntryName:
		name := en.Name
		base.Type, base.Name = "session_info", name
	case session.EntryShell:
		if en.Shell == nil {
			return out
		}
		base.Type, base.Message = "message", bashMessage(en)
	case session.EntryAttempt, session.EntryError:
		// pi keeps a failed call's error message; it hides a retried
		// attempt from the model's context with a context_edit after it.
		base.Type, base.Message = "message", c.failed(en)
		out = append(out, base)
		last[en.ID] = base.ID
		if en.Type == session.EntryAttempt {
			p.attempts[en.ID] = true
			edit := hideAttempt(en.ID, en.Time)
			out = append(out, edit)
			last[en.ID] = edit.ID
		}
		return out
	case session.EntryInterrupted:
		var lastMsg any
		if n := len(out); n > 0 && en.Parent != "" && out[n-1].ID == last[en.Parent] {
			lastMsg = out[n-1].Message
		}
		changed, added := c.interrupted(en, lastMsg, p.attempts[en.Parent])
		switch {
		case changed != nil:
			out[len(out)-1].Message = changed
		case added != nil:
			base.Type, base.Message = "message", *added
			last[en.ID] = base.ID
			return append(out, base)
		}
		if pid := parent(); pid != nil {
			last[en.ID] = *pid
		}
		return out
	default:
		// title has no pi counterpart; keep the chain intact.
		if pid := parent(); pid != nil {
			last[en.ID] = *pid
		}
		return out
	}
	last[en.ID] = base.ID
	return append(out, base)
}

// tree arranges entries by parentId; entries whose parent is missing are roots.
func tree(es []Entry) []TreeNode {
	ids := map[string]bool{}
	kids := map[string][]int{}
	var roots []int
	for i, e := range es {
		ids[e.ID] = true
		if e.ParentID == nil || !ids[*e.ParentID] {
			roots = append(roots, i)
			continue
		}
		kids[*e.ParentID] = append(kids[*e.ParentID], i)
	}
	var build func(i int) TreeNode
	build = func(i int) TreeNode {
		n := TreeNode{Entry: es[i], Children: []TreeNode{}}
		for _, k := range kids[es[i].ID] {
			n.Children = append(n.Children, build(k))
		}
		return n
	}
	out := []TreeNode{}
	for _, r := range roots {
		out = append(out, build(r))
	}
	return out
}

// bashStatus matches the status line that ends e's bash tool content
// (internal/tool's doc): the output comes before it.
var bashStatus = regexp.MustCompile(`(?:^|\n)\[(exit (\d+)|killed by SIG[A-Z0-9]+|stopped: the command was killed|timed out after (\d+) ms: the command was killed)\]$`)

// piNote matches the note that ends a cut output in pi's words
// (tool.Env.SpillOutput), which has no newline after it.
var piNote = regexp.MustCompile(`\n\n\[Showing [^\n]*\. Full output: [^\n]*\]$`)

// bashText words e's bash tool content as pi's bash tool does: the output
// ("(no output)" when there is none), then, after a blank line, why it
// failed: "Command exited with code N", "Command terminated without an
// exit code" (a signal), "Command aborted" (stopped), "Command timed out
// after S seconds". Other content (a refusal) is as e wrote it.
func bashText(content string) string {
	m := bashStatus.FindStringSubmatchIndex(content)
	if m == nil {
		return content
	}
	out, status := content[:m[0]], content[m[2]:m[3]]
	if m[0] > 0 && !piNote.MatchString(out) {
		out += "\n" // the output's last newline, which the match took
	}
	withOutput := func(s string) string {
		if out == "" {
			return s
		}
		return out + "\n\n" + s
	}
	switch {
	case status == "exit 0" && out == "":
		return "(no output)"
	case status == "exit 0":
		return out
	case m[4] >= 0:
		if out == "" {
			out = "(no output)"
		}
		return withOutput("Command exited with code " + content[m[4]:m[5]])
	case strings.HasPrefix(status, "killed"):
		if out == "" {
			out = "(no output)"
		}
		return withOutput("Command terminated without an exit code")
	case m[6] >= 0:
		ms, _ := strconv.ParseFloat(content[m[6]:m[7]], 64)
		return withOutput("Command timed out after " + strconv.FormatFloat(ms/1000, 'f', -1, 64) + " seconds")
	}
	return withOutput("Command aborted")
}

// exitCode is a shell run's exit status as the wire has it (nil: killed).
func exitCode(c *int) *int64 {
	if c == nil {
		return nil
	}
	n := int64(*c)
	return &n
}

// bashMessage is a user shell command's entry as pi's bashExecution message.
func bashMessage(en session.Entry) BashExecutionMessage {
	r := en.Shell
	return BashExecutionMessage{Role: "bashExecution", Command: r.Command, Output: r.Output, ExitCode: exitCode(r.ExitCode),
		Cancelled: r.Cancelled || r.TimedOut, Truncated: r.Truncated, FullOutputPath: r.FullOutputPath,
		ExcludeFromContext: r.Exclude, Timestamp: en.Time.UnixMilli()}
}

// visible returns the entries of branch whose messages make the agent's
// context, as agent.History picks them: after the last compaction, that
// compaction (its summary), the entries it kept and everything since.
func visible(branch []session.Entry) []session.Entry {
	last := -1
	for i, en := range branch {
		if en.Type == session.EntryCompaction {
			last = i
		}
	}
	if last < 0 {
		return branch
	}
	kept := len(branch[:last])
	if k := branch[last].Kept; k != "" {
		for i, en := range branch[:last] {
			if en.ID == k {
				kept = i
				break
			}
		}
	}
	return append(append([]session.Entry{branch[last]}, branch[kept:last]...), branch[last+1:]...)
}

// isoMillis is JavaScript's Date.toISOString layout, pi's timestamps.
const isoMillis = "2006-01-02T15:04:05.000Z"

// estimateMessages is pi's estimate of the tokens of msgs (its
// estimateMessagesTokens): each message's characters over 4, rounded up,
// counted as JavaScript counts a string's length (UTF-16 units). A system
// message counts its prompt and its tools as JSON, an image 4800
// characters, a tool call its name and arguments as JSON, a shell command
// its command and output, a compaction its summary.
func estimateMessages(msgs []any) int64 {
	var n int64
	for _, m := range msgs {
		var chars int
		switch m := m.(type) {
		case SystemMessage:
			chars = jsLen(m.Content) + jsLen(jsJSON(m.ToolsAdded))
		case UserMessage:
			chars = contentChars(m.Content)
		case AssistantMessage:
			for _, c := range m.Content {
				switch c.Type {
				case "text", "thinking":
					chars += jsLen(c.Text)
				case "toolCall":
					chars += jsLen(c.Name) + jsLen(jsJSON(c.Arguments))
				}
			}
		case ToolResultMessage:
			chars = contentChars(m.Content)
		case BashExecutionMessage:
			chars = jsLen(m.Command) + jsLen(m.Output)
		case CompactionSummaryMessage:
			chars = jsLen(m.Summary)
		}
		n += int64(chars+3) / 4
	}
	return n
}

// contentChars counts text blocks' characters and 4800 per image.
func contentChars(cs []Content) int {
	n := 0
	for _, c := range cs {
		switch c.Type {
		case "text":
			n += jsLen(c.Text)
		case "image":
			n += 4800
		}
	}
	return n
}

// jsLen is a string's JavaScript length: its UTF-16 code units.
func jsLen(s string) int {
	n := 0
	for _, r := range s {
		n++
		if r > 0xFFFF {
			n++
		}
	}
	return n
}

// jsJSON is v as JavaScript's JSON.stringify writes it: compact, with no
// HTML escaping.
func jsJSON(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return ""
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// providerError words a failed model call as pi's providers do (pi-ai's
// formatProviderError over its SDKs' errors): "STATUS: BODY", BODY the
// error of the JSON answer as JSON (an Anthropic answer, "type":"error",
// whole; otherwise OpenAI's "error" member), cut at 4000 characters as
// pi cuts it; an answer without such a body, or no answer, keeps e's
// words.
func providerError(me *model.Error) string {
	var body map[string]json.RawMessage
	if me.Status == 0 || json.Unmarshal([]byte(me.Body), &body) != nil {
		return me.Error()
	}
	raw := json.RawMessage(me.Body)
	if string(body["type"]) != `"error"` {
		raw = body["error"]
	}
	var b bytes.Buffer
	if len(raw) == 0 || raw[0] != '{' || json.Compact(&b, raw) != nil || b.String() == "{}" {
		return me.Error()
	}
	text := b.String()
	if n := jsLen(text); n > 4000 {
		u := utf16.Encode([]rune(text))
		text = string(utf16.Decode(u[:4000])) + fmt.Sprintf("... [truncated %d chars]", n-4000)
	}
	return fmt.Sprintf("%d: %s", me.Status, text)
}

// asked reports whether sess's history holds a user message (one that
// Messages lists), as a request's first turn asks before its system
// message: it decodes the messages only up to the first user message, the
// history's first, where Messages decodes a long session's every answer
// before each prompt.
func asked(sess *session.Session) bool {
	for _, en := range sess.Entries() {
		var m model.Message
		if en.Type == session.EntryMessage && json.Unmarshal(en.Message, &m) == nil && m.Role == model.RoleUser {
			return true
		}
	}
	return false
}
