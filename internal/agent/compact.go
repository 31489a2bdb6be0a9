package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/e-agent/e/internal/model"
	"github.com/e-agent/e/internal/store"
	"github.com/tidwall/gjson"
)

// summaryPrompt asks the session's model for the summary that replaces
// the history. The offline model recognises it by its first word.
const summaryPrompt = "Summarize the conversation so far for a coding agent that will continue it: " +
	"the user's goals, decisions made, files touched, and what remains to do. Be concise."

// estimate is a cheap token estimate of a history: 4 characters a token.
func estimate(msgs []model.Message) int64 {
	var n int64
	for _, m := range msgs {
		for _, p := range m.Content {
			n += int64(len(p.Text)+len(p.Arguments)+len(p.Data)/3) / 4
		}
	}
	return n
}

// CompactResult describes a compaction.
type CompactResult struct {
	TokensBefore, TokensAfter int64
	SummaryChars              int
	Usage                     model.Usage
}

// autoCompact compacts inside a running turn when the next request would
// exceed the threshold of the model's context window (S4). It keeps the
// turn's own messages after the summary so the turn can continue.
func (t *turn) autoCompact(turnStart string) error {
	t.s.mu.Lock()
	off := t.s.noAutoCompact
	t.s.mu.Unlock()
	if off {
		return nil
	}
	_, err := t.compactTurn(turnStart, false)
	return err
}

// compactTurn compacts the history before the turn when it is over the
// threshold, or always with force (the provider said the request was too
// long). It reports whether it compacted.
func (t *turn) compactTurn(turnStart string, force bool) (bool, error) {
	if t.info.ContextWindow <= 0 && !force {
		return false, nil
	}
	th := t.s.eng.CompactThreshold
	if th <= 0 {
		th = 0.8
	}
	limit := th * float64(t.info.ContextWindow)
	if r := t.s.eng.Behaviour.ReserveTokens; r > 0 {
		limit = float64(int64(t.info.ContextWindow) - r)
	}
	t.s.mu.Lock()
	msgs := t.s.history(t.s.entries)
	var earlier []store.Entry // what a compaction could summarise: before this turn
	again := false            // this turn compacted already
	for i, en := range t.s.entries {
		if en.ID == turnStart {
			earlier = t.s.entries[:i:i]
		}
		again = again || en.Type == store.TypeCompaction && en.Kept == turnStart
	}
	t.s.mu.Unlock()
	before := estimate(msgs) + int64(len(t.systemPrompt())/4)
	t.s.mu.Lock()
	if n, ok := t.s.piContext(msgs); ok {
		before = n
	}
	t.s.mu.Unlock()
	if !force && float64(before) <= limit {
		return false, nil
	}
	// Once per turn: compacting again would only summarise the summary, at
	// the cost of a model call per step. A first turn has nothing earlier.
	t.s.mu.Lock()
	old := t.s.history(earlier)
	t.s.mu.Unlock()
	if again || len(old) == 0 || len(old) == 1 && isSummary(old[0]) {
		return false, nil
	}
	_, err := t.compact("auto", "", turnStart, before)
	return err == nil, err
}

// ErrNothingToCompact: a compaction that keeps the newest messages
// (Behaviour.KeepRecentTokens) found nothing older to summarise.
var ErrNothingToCompact = errors.New("agent: compaction: nothing to compact (session too small)")

// tooLong reports whether a model error says the request exceeded the
// model's context window, in the words the providers use.
func tooLong(err error) bool {
	var me *model.Error
	if !errors.As(err, &me) || me.Retryable {
		return false
	}
	s := strings.ToLower(me.Type + " " + me.Message)
	for _, w := range []string{"context_length_exceeded", "context length", "context window", "prompt is too long", "maximum context", "too many tokens"} {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

func isSummary(m model.Message) bool {
	return m.Role == model.RoleUser && len(m.Content) == 1 && m.Content[0].Type == model.PartText &&
		strings.HasPrefix(m.Content[0].Text, summaryHeader)
}

// turnPrefixPrompt asks for the summary of the start of a turn that a
// compaction cuts (pi's split turn): the kept rest of the turn follows it.
// It starts with the word the offline model recognises.
const turnPrefixPrompt = "Summarize these messages, the start of the current turn, for a coding agent that " +
	"will continue it from the later messages, which are kept: what the user asked for, what was done and " +
	"decided so far, and what is needed to go on. Only what these messages say."

// splitTurn marks where pi's summary of a cut turn's start begins.
const splitTurn = "\n\n---\n\n**Turn Context (split turn):**\n\n"

// compact summarises the history before keep (all of it when keep is "")
// and records a compaction entry. With pi's rule (KeepRecentTokens), a
// keep inside a turn splits it as pi does: the history before the turn and
// the turn's start are summarised apart, in one summary.
func (t *turn) compact(reason, focus, keep string, before int64) (CompactResult, error) {
	t.emit(Compacting{Reason: reason, TokensBefore: before})
	t.s.mu.Lock()
	old := t.s.entries
	for i, en := range t.s.entries {
		if keep != "" && en.ID == keep {
			old = t.s.entries[:i]
			break
		}
	}
	var prefix []model.Message
	history := old
	if j := t.s.turnStart(len(old)); j >= 0 && t.s.eng.Behaviour.KeepRecentTokens > 0 {
		history, prefix = old[:j], t.s.messages(j, len(old))
	}
	msgs := t.s.history(history)
	t.s.mu.Unlock()
	var sum string
	var usage model.Usage
	if len(prefix) == 0 || len(msgs) > 1 || len(msgs) == 1 && !isSummary(msgs[0]) {
		text, u, err := t.summarise(summaryPrompt, focus, msgs)
		if err != nil {
			return CompactResult{}, err
		}
		sum, usage = text, u
	} else if len(msgs) == 1 { // nothing new before the turn: the last summary stands
		sum, _ = Summary(msgs[0])
	} else {
		sum = "No prior history."
	}
	if len(prefix) > 0 {
		text, u, err := t.summarise(turnPrefixPrompt, focus, prefix)
		if err != nil {
			return CompactResult{}, err
		}
		sum, usage = sum+splitTurn+text, usage.Add(u)
	}
	if t.s.eng.Behaviour.SummaryFileLists {
		sum += fileLists(FileOps(old))
	}
	if err := t.s.append(store.Entry{Type: store.TypeCompaction, Summary: sum, Kept: keep, Tokens: before}); err != nil {
		return CompactResult{}, err
	}
	t.s.mu.Lock()
	after := estimate(t.s.history(t.s.entries))
	t.s.mu.Unlock()
	t.emit(Compacted{TokensBefore: before, TokensAfter: after, SummaryChars: len([]rune(sum))})
	return CompactResult{TokensBefore: before, TokensAfter: after, SummaryChars: len([]rune(sum)),
		Usage: usage}, nil
}

// summarise asks the model for a summary of msgs by instruction instr
// (with the user's focus).
func (t *turn) summarise(instr, focus string, msgs []model.Message) (string, model.Usage, error) {
	if focus != "" {
		instr += " Focus on: " + focus
	}
	msgs = append(msgs[:len(msgs):len(msgs)], model.Message{Role: model.RoleUser,
		Content: []model.Part{{Type: model.PartText, Text: instr}}})
	resp, _, err := t.stream(t.request(summaryPrompt, msgs, nil), false)
	if err != nil {
		var me *modelError
		if errors.As(err, &me) {
			me.details.Stage = "compaction"
		}
		return "", model.Usage{}, fmt.Errorf("agent: compaction: %w", err)
	}
	if t.s.eng.Behaviour.SummaryFileLists {
		return resp.Message.Text(), resp.Usage, nil // pi keeps the text as it came
	}
	return strings.TrimSpace(resp.Message.Text()), resp.Usage, nil
}

// turnStart returns the index of the entry that starts the turn entry k
// of s.entries lies in (a user message, or a shell command the model
// sees), when k does not start one itself and that entry comes after the
// last compaction; else -1. s.mu is held.
func (s *Session) turnStart(k int) int {
	s.parse()
	starts := func(i int) bool {
		if s.entries[i].Type == store.TypeShell {
			return s.visible(i)
		}
		return s.parsed[i].ok && s.parsed[i].m.Role == model.RoleUser
	}
	if k >= len(s.entries) || starts(k) {
		return -1
	}
	for i := k - 1; i >= 0 && s.entries[i].Type != store.TypeCompaction; i-- {
		if starts(i) {
			return i
		}
	}
	return -1
}

// messages returns what the model sees of entries i to k of s.entries,
// which hold no compaction (turnStart's range). s.mu is held.
func (s *Session) messages(i, k int) []model.Message {
	s.parse()
	return history(s.entries[i:k], func(n int) (model.Message, bool) { return s.parsed[i+n].m, s.parsed[i+n].ok })
}

// Compact summarises the whole history now (M9). The session must have
// been marked with Begin; events go to sink.
func (s *Session) Compact(ctx context.Context, focus string, sink func(Event)) (CompactResult, error) {
	return s.compactNow(ctx, "manual", focus, sink)
}

// CompactOver compacts between turns as pi 1.6.0 does after a run: when
// automatic compaction is on and the last answer's context (its prompt
// and output tokens as the provider counted them, since the last
// compaction) is above the model's window less ReserveTokens. It keeps
// the newest messages as Compact does with KeepRecentTokens, and does
// nothing, with no event, when it is not needed or nothing would be
// summarised. Its events say reason "auto".
func (s *Session) CompactOver(ctx context.Context, sink func(Event)) (CompactResult, error) {
	return s.compactNow(ctx, "auto", "", sink)
}

// CompactDue reports whether CompactOver would find the context over the
// threshold now (it may still have nothing to summarise), for a front end
// that compacts before a run as pi does.
func (s *Session) CompactDue() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dueLocked()
}

// dueLocked is CompactDue with s.mu held.
func (s *Session) dueLocked() bool {
	info, err := s.eng.Catalog.Lookup(s.modelID)
	_, last := s.lastContext()
	return err == nil && !s.noAutoCompact && info.ContextWindow > 0 && last > int64(info.ContextWindow)-s.eng.Behaviour.ReserveTokens
}

// piContext measures msgs, the history of s.entries, as pi 1.6.0 does
// when ReserveTokens sets pi's rule: the last answer's context as its
// call counted it, and the estimate of what came after it. ok is false
// without pi's rule or such an answer. s.mu is held.
func (s *Session) piContext(msgs []model.Message) (n int64, ok bool) {
	if s.eng.Behaviour.ReserveTokens <= 0 {
		return 0, false
	}
	i, used := s.lastContext()
	if i < 0 {
		return 0, false
	}
	return used + estimate(msgs) - estimate(s.history(s.entries[:i+1])), true
}

// lastContext returns the index of the newest answer since the last
// compaction and its context as its model call counted it (its prompt and
// output tokens); -1 and 0 when there is none.
func (s *Session) lastContext() (int, int64) {
	for i := len(s.entries) - 1; i >= 0; i-- {
		switch en := s.entries[i]; {
		case en.Type == store.TypeCompaction:
			return -1, 0
		case en.Type == store.TypeMessage && en.Call != nil:
			u := model.Usage(en.Call.Usage)
			return i, u.Prompt() + u.Output
		}
	}
	return -1, 0
}

func (s *Session) compactNow(ctx context.Context, reason, focus string, sink func(Event)) (CompactResult, error) {
	ctx = s.start(ctx)
	t := &turn{s: s, ctx: ctx, sink: sink}
	defer func() {
		// A steer accepted while compacting has no turn to enter.
		for _, text := range s.finish() {
			t.emit(Discarded{Reason: "steer", Text: text})
		}
	}()
	s.mu.Lock()
	modelID, effort := s.runModel, s.runEffort
	msgs := s.history(s.entries)
	due := s.dueLocked()
	before := estimate(msgs)
	if n, ok := s.piContext(msgs); ok { // compaction_end's tokensBefore, as pi counts it
		before = n
	}
	s.mu.Unlock()
	info, err := s.eng.Catalog.Lookup(modelID)
	if err != nil {
		return CompactResult{}, err
	}
	if reason == "auto" && !due {
		return CompactResult{}, nil
	}
	prov, err := s.eng.Catalog.Provider(modelID)
	if err != nil {
		return CompactResult{}, err
	}
	t.info, t.prov, t.effort = info, prov, effort
	keep := ""
	if n := s.eng.Behaviour.KeepRecentTokens; n > 0 {
		s.mu.Lock()
		keep = s.recentCut(n)
		s.mu.Unlock()
		if keep == "" && reason == "auto" {
			return CompactResult{}, nil // pi's automatic compaction, too, has nothing to do
		}
		if keep == "" {
			// pi's words; it too announces the compaction that then fails.
			t.emit(Compacting{Reason: reason, TokensBefore: estimate(msgs)})
			return CompactResult{}, ErrNothingToCompact
		}
	}
	res, err := t.compact(reason, focus, keep, before)
	if err == nil {
		t.syncLog()
	}
	return res, err
}

// recentCut returns the id of the first entry a compaction keeps when it
// keeps about keep tokens of the newest messages, chosen as pi 1.6.0
// chooses its cut point: walking back from the newest entry after the last
// compaction and adding each entry's tokens (pi's estimate, below), at the
// first cut point (a user or assistant message or a shell command the
// model sees, never tool results, which must follow their call) at or
// after the entry where the sum reaches keep, else the last cut point;
// then back over the entries just before it that the model does not see
// (settings, names). A cut inside a turn keeps the turn's tail; pi then
// summarises the turn's head apart, e in the one summary. "" when there
// is no cut point or nothing before it to summarise (a history smaller
// than keep). s.mu is held.
func (s *Session) recentCut(keep int64) string {
	s.parse()
	start := 0
	for i, en := range s.entries {
		if en.Type == store.TypeCompaction {
			start = i + 1
		}
	}
	var cuts []int
	for i := start; i < len(s.entries); i++ {
		if s.cutPoint(i) {
			cuts = append(cuts, i)
		}
	}
	if len(cuts) == 0 {
		return ""
	}
	cut := cuts[0]
	var sum int64
	for i := len(s.entries) - 1; i >= start; i-- {
		n := s.piTokens(i)
		if n == 0 {
			continue
		}
		if sum += n; sum >= keep {
			cut = cuts[len(cuts)-1]
			if j := slices.IndexFunc(cuts, func(c int) bool { return c >= i }); j >= 0 {
				cut = cuts[j]
			}
			break
		}
	}
	for cut > start && !s.visible(cut-1) && s.entries[cut-1].Type != store.TypeCompaction {
		cut--
	}
	if len(s.history(s.entries[:cut])) == 0 {
		return ""
	}
	return s.entries[cut].ID
}

// visible reports whether the model sees anything of entry i of s.entries.
func (s *Session) visible(i int) bool {
	en := s.entries[i]
	return s.parsed[i].ok || en.Type == store.TypeShell && en.Shell != nil && !en.Shell.Exclude
}

// cutPoint reports whether entry i of s.entries may start what a
// compaction keeps: a user or assistant message, or a shell command the
// model sees.
func (s *Session) cutPoint(i int) bool {
	if s.entries[i].Type == store.TypeShell {
		return s.visible(i)
	}
	r := s.parsed[i].m.Role
	return s.parsed[i].ok && (r == model.RoleUser || r == model.RoleAssistant)
}

// piTokens is pi's token estimate of what the model sees of entry i of
// s.entries: its characters over 4, rounded up (text, reasoning, a tool
// call's name and arguments, 4800 characters an image; a shell command's
// command and output).
func (s *Session) piTokens(i int) int64 {
	en := s.entries[i]
	var chars int
	switch {
	case en.Type == store.TypeShell && en.Shell != nil && !en.Shell.Exclude:
		chars = len(en.Shell.Command) + len(en.Shell.Output)
	case s.parsed[i].ok:
		for _, p := range s.parsed[i].m.Content {
			switch p.Type {
			case model.PartImage:
				chars += 4800
			case model.PartToolCall:
				chars += len(p.Name) + len(p.Arguments)
			default:
				chars += len(p.Text)
			}
		}
	}
	return int64(chars+3) / 4
}

// FileOps lists the files that the assistant messages of entries read
// and modified, as pi's compaction details do: the path argument of every
// read call, and of every write and edit call, each list sorted; a file
// both read and modified is only modified.
func FileOps(entries []store.Entry) (read, modified []string) {
	r, w := map[string]bool{}, map[string]bool{}
	for _, en := range entries {
		var m model.Message
		if en.Type != store.TypeMessage || json.Unmarshal(en.Message, &m) != nil || m.Role != model.RoleAssistant {
			continue
		}
		for _, p := range m.ToolCalls() {
			path := gjson.GetBytes(p.Arguments, "path").Str // "" unless a string
			if path == "" || !gjson.ValidBytes(p.Arguments) {
				continue
			}
			switch p.Name {
			case "read":
				r[path] = true
			case "write", "edit":
				w[path] = true
			}
		}
	}
	read, modified = []string{}, slices.Sorted(maps.Keys(w))
	for _, f := range slices.Sorted(maps.Keys(r)) {
		if !w[f] {
			read = append(read, f)
		}
	}
	if modified == nil {
		modified = []string{}
	}
	return read, modified
}

// fileLists is what pi appends to a compaction's summary (its
// formatFileOperations): a <read-files> and a <modified-files> section,
// each when it names a file.
func fileLists(read, modified []string) string {
	var sections []string
	if len(read) > 0 {
		sections = append(sections, "<read-files>\n"+strings.Join(read, "\n")+"\n</read-files>")
	}
	if len(modified) > 0 {
		sections = append(sections, "<modified-files>\n"+strings.Join(modified, "\n")+"\n</modified-files>")
	}
	if len(sections) == 0 {
		return ""
	}
	return "\n\n" + strings.Join(sections, "\n\n")
}
