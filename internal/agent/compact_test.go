package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/e-agent/e/internal/model"
	"github.com/e-agent/e/internal/store"
)

const summaryPrefix = "[Summary of the earlier conversation]\n"

// twoTurns is a session of eng with the turns "/text one" and "/text
// two" behind it, begun for the next operation (a compaction).
func twoTurns(t *testing.T, eng *Engine) *Session {
	t.Helper()
	s := testSession(t, eng, nil)
	prompt(t, s, "/text one")
	prompt(t, s, "/text two")
	if err := s.Begin(); err != nil {
		t.Fatal(err)
	}
	return s
}

// M9: Session.Compact emits compacting then compacted, and the history
// then starts with the summary.
func TestCompactManual(t *testing.T) {
	s := twoTurns(t, testEngine(t))
	rec := &recorder{}
	res, err := s.Compact(t.Context(), "the numbers", rec.sink)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"compacting", "usage", "compacted"}, rec.types()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	ing := ofType[Compacting](rec)[0]
	if ing.Reason != "manual" || ing.TokensBefore != res.TokensBefore || res.TokensBefore <= 0 {
		t.Errorf("compacting %+v, result before %d; want manual with the result's positive tokens_before", ing, res.TokensBefore)
	}
	if diff := cmp.Diff(Compacted{TokensBefore: res.TokensBefore, TokensAfter: res.TokensAfter,
		SummaryChars: res.SummaryChars}, ofType[Compacted](rec)[0]); diff != "" {
		t.Errorf("compacted (-want +got):\n%s", diff)
	}
	if res.Usage == (model.Usage{}) || NewUsage(res.Usage) != ofType[UsageEvent](rec)[0].Usage {
		t.Errorf("result usage %+v, want the compaction call's usage event", res.Usage)
	}
	msgs := History(s.Entries())
	if len(msgs) != 1 || msgs[0].Role != model.RoleUser || !strings.HasPrefix(msgs[0].Text(), summaryPrefix) {
		t.Fatalf("history after compaction = %+v, want only the summary", msgs)
	}
	// The offline summary names the messages it saw: 4 and the instruction,
	// and the focus travels with the instruction.
	sum := strings.TrimPrefix(msgs[0].Text(), summaryPrefix)
	if !strings.HasPrefix(sum, "Summary of 5 messages: /text one /text two Summarize") {
		t.Errorf("summary %q, want one of the 5 messages", sum)
	}
	if res.SummaryChars != len([]rune(sum)) || res.TokensAfter != estimate(msgs) {
		t.Errorf("summary_chars %d (summary has %d), tokens_after %d (history estimate %d)", res.SummaryChars,
			len([]rune(sum)), res.TokensAfter, estimate(msgs))
	}
	if s.Info().Running {
		t.Error("still running after Compact")
	}
	// The next turn works on the compacted history.
	r, _ := prompt(t, s, "/text three")
	if r.Error != nil || r.FinalOutput != "three" {
		t.Errorf("next turn: error %v, final %q", r.Error, r.FinalOutput)
	}
	if got := len(History(s.Entries())); got != 3 {
		t.Errorf("history has %d messages, want summary, prompt, answer", got)
	}
}

// S4, U1: a turn whose history exceeds the threshold compacts before its
// next model call, keeps its own messages after the summary, carries on,
// ends normally and counts the compaction's usage.
func TestAutoCompaction(t *testing.T) {
	tests := []struct {
		name   string
		before []string // earlier turns
		prompt string
	}{
		{
			name:   "at the start of a turn",
			before: []string{"/long 4000"},
			prompt: "/tool read {\"path\":\"missing.txt\"}\n/then\n/text after",
		},
		{
			// Two steps after the compaction: the second must not compact
			// again, since only the summary precedes the turn.
			name:   "once per turn",
			before: []string{"/long 4000"},
			prompt: "/tool read {\"path\":\"missing.txt\"}\n/then\n/tool read {\"path\":\"missing.txt\"}\n/then\n/text after",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eng := testEngine(t)
			// 0.02 of the offline model's 200000 tokens: 4000 tokens, about
			// 16000 characters; /long 4000 streams about 23000.
			eng.CompactThreshold = 0.02
			s := testSession(t, eng, nil)
			for _, p := range tt.before {
				r, rec := prompt(t, s, p)
				if r.Error != nil || len(ofType[Compacting](rec)) != 0 {
					t.Fatalf("earlier turn: error %v, events %v", r.Error, rec.types())
				}
			}
			res, rec := prompt(t, s, tt.prompt)
			if res.Error != nil || res.Aborted {
				t.Fatalf("error %v, aborted %v", res.Error, res.Aborted)
			}
			checkTurnEnd(t, rec, false)
			ing := ofType[Compacting](rec)
			if len(ing) != 1 || ing[0].Reason != "auto" || ing[0].TokensBefore <= 4000 {
				t.Errorf("compacting = %+v, want one, auto, over 4000 tokens", ing)
			}
			if got := len(ofType[Compacted](rec)); got != 1 {
				t.Errorf("%d compacted events, want 1", got)
			}
			if res.FinalOutput != "after" {
				t.Errorf("final_output %q, want the turn to continue to its last segment", res.FinalOutput)
			}
			// U1: the result sums every call, compaction included.
			var sum model.Usage
			calls := ofType[UsageEvent](rec)
			for _, u := range calls {
				sum = sum.Add(u.Usage.Usage)
			}
			if len(calls) != len(ofType[ToolBatch](rec))+2 || NewUsage(sum) != res.Usage {
				t.Errorf("%d usage events summing %+v, result %+v; want one per answer and one compaction, equal to the result",
					len(calls), sum, res.Usage)
			}
			// The history starts with the summary and keeps the turn's prompt.
			msgs := History(s.Entries())
			if !strings.HasPrefix(msgs[0].Text(), summaryPrefix) {
				t.Errorf("history starts with %q, want the summary", msgs[0].Text())
			}
			if msgs[1].Role != model.RoleUser || msgs[1].Text() != tt.prompt {
				t.Errorf("second message is %s %.60q, want the turn's prompt", msgs[1].Role, msgs[1].Text())
			}
			var compaction store.Entry
			for _, en := range s.Entries() {
				if en.Type == store.TypeCompaction {
					compaction = en
				}
			}
			if compaction.Kept == "" || compaction.Tokens != ing[0].TokensBefore {
				t.Errorf("compaction entry %+v, want kept set and tokens_before %d", compaction, ing[0].TokensBefore)
			}
			checkHistory(t, s)
		})
	}
}

// S4: a first turn has no earlier history to summarise: however large it
// grows, it is not compacted (summarising nothing would gain nothing).
func TestAutoCompactionNothingEarlier(t *testing.T) {
	eng := testEngine(t)
	eng.CompactThreshold = 0.02
	s := testSession(t, eng, nil)
	res, rec := prompt(t, s, "/long 4000\n/tool read {\"path\":\"missing.txt\"}\n/then\n/text after")
	if res.Error != nil || res.FinalOutput != "after" {
		t.Fatalf("error %v, final %q", res.Error, res.FinalOutput)
	}
	if n := len(ofType[Compacting](rec)); n != 0 {
		t.Errorf("%d compactions of a first turn, want 0", n)
	}
}

func TestHistory(t *testing.T) {
	msg := func(id, role, text string) store.Entry {
		m := model.Message{Role: role, Content: []model.Part{{Type: model.PartText, Text: text}}}
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return store.Entry{Type: store.TypeMessage, ID: id, Message: b}
	}
	base := []store.Entry{
		msg("1", "user", "a"),
		{Type: store.TypeTitle, ID: "t", Name: "a"},
		msg("2", "assistant", "b"),
		{Type: store.TypeSettings, ID: "s", Model: model.OfflineID},
		msg("3", "user", "c"),
		msg("4", "assistant", "d"),
	}
	with := func(extra ...store.Entry) []store.Entry { return append(append([]store.Entry(nil), base...), extra...) }
	tests := []struct {
		name    string
		entries []store.Entry
		want    []string // role: text
	}{
		{name: "empty", entries: nil, want: nil},
		{name: "no compaction", entries: base, want: []string{"user: a", "assistant: b", "user: c", "assistant: d"}},
		{
			name:    "compaction without kept",
			entries: with(store.Entry{Type: store.TypeCompaction, ID: "c", Summary: "S"}, msg("5", "user", "e")),
			want:    []string{"user: " + summaryPrefix + "S", "user: e"},
		},
		{
			name:    "compaction keeps from kept",
			entries: with(store.Entry{Type: store.TypeCompaction, ID: "c", Summary: "S", Kept: "3"}, msg("5", "user", "e")),
			want:    []string{"user: " + summaryPrefix + "S", "user: c", "assistant: d", "user: e"},
		},
		{
			name: "the last compaction wins",
			entries: with(store.Entry{Type: store.TypeCompaction, ID: "c", Summary: "S1", Kept: "3"},
				msg("5", "user", "e"),
				store.Entry{Type: store.TypeCompaction, ID: "c2", Summary: "S2"},
				msg("6", "user", "f")),
			want: []string{"user: " + summaryPrefix + "S2", "user: f"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, m := range History(tt.entries) {
				got = append(got, m.Role+": "+m.Text())
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("History (-want +got):\n%s", diff)
			}
		})
	}
}

// M7, M9: a steer accepted while a compaction runs has no turn to enter:
// it is reported as discarded, never silently dropped.
func TestSteerDuringCompactDiscarded(t *testing.T) {
	s := testSession(t, testEngine(t), nil)
	if r, _ := prompt(t, s, "/text one"); r.Error != nil {
		t.Fatal(*r.Error)
	}
	if err := s.Begin(); err != nil {
		t.Fatal(err)
	}
	if err := s.Steer("too late"); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	if _, err := s.Compact(context.Background(), "", rec.sink); err != nil {
		t.Fatal(err)
	}
	d := ofType[Discarded](rec)
	if len(d) != 1 || d[0].Reason != "steer" || d[0].Text != "too late" {
		t.Errorf("discarded events %+v, want the steer", d)
	}
}

// Q4: with Behaviour.KeepRecentTokens (pi's compaction.keepRecentTokens), a
// manual compaction keeps the newest messages worth that many tokens, cut
// at a user or assistant message as pi cuts, and fails when the history
// is smaller than that.
func TestCompactKeepRecent(t *testing.T) {
	for _, tc := range []struct {
		name    string
		keep    int64
		want    []string // the history after: roles, "summary" for the summary
		wantErr string
	}{
		// "/text two" is 3 tokens (9 characters), its answer "two" 1.
		{name: "last answer", keep: 1, want: []string{"summary", "assistant"}},
		{name: "reaching the last prompt", keep: 2, want: []string{"summary", "user", "assistant"}},
		{name: "whole last turn", keep: 4, want: []string{"summary", "user", "assistant"}},
		{name: "history too small", keep: 1000, want: []string{"user", "assistant", "user", "assistant"},
			wantErr: "agent: compaction: nothing to compact (session too small)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eng := testEngine(t)
			eng.Behaviour.KeepRecentTokens = tc.keep
			s := twoTurns(t, eng)
			rec := &recorder{}
			_, err := s.Compact(t.Context(), "", rec.sink)
			if gotErr := fmt.Sprint(err); tc.wantErr != "" && gotErr != tc.wantErr || tc.wantErr == "" && err != nil {
				t.Fatalf("Compact error %v, want %q", err, tc.wantErr)
			}
			got := historyRoles(s)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("history after compaction (-want +got):\n%s", diff)
			}
			if rec.types()[0] != "compacting" {
				t.Errorf("events %v, want compacting first", rec.types())
			}
		})
	}
}

func TestCompactOver(t *testing.T) {
	// The offline model's window is 200000; the last answer's context is
	// its /usage: 20000 in + 5 out.
	for _, tc := range []struct {
		name    string
		reserve int64
		keep    int64
		off     bool
		due     bool     // CompactDue before
		want    []string // the history after: roles, "summary" for the summary
	}{
		{name: "over the threshold", reserve: 190000, keep: 1, due: true, want: []string{"summary", "assistant"}},
		{name: "under it", reserve: 1000, keep: 1, want: []string{"user", "assistant", "user", "assistant"}},
		{name: "automatic compaction off", reserve: 190000, keep: 1, off: true,
			want: []string{"user", "assistant", "user", "assistant"}},
		{name: "nothing to summarise", reserve: 190000, keep: 100000, due: true, want: []string{"user", "assistant", "user", "assistant"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eng := testEngine(t)
			eng.Behaviour.KeepRecentTokens, eng.Behaviour.ReserveTokens = tc.keep, tc.reserve
			s := testSession(t, eng, nil)
			prompt(t, s, "/text one")
			prompt(t, s, "/text two\n/usage 20000 5 0 0 0")
			s.SetAutoCompact(!tc.off)
			if got := s.CompactDue(); got != tc.due {
				t.Errorf("CompactDue = %v, want %v", got, tc.due)
			}
			if err := s.Begin(); err != nil {
				t.Fatal(err)
			}
			rec := &recorder{}
			res, err := s.CompactOver(t.Context(), rec.sink)
			if err != nil {
				t.Fatalf("CompactOver: %v", err)
			}
			got := historyRoles(s)
			// Its tokens before are the context as pi counts it: the last
			// answer's, as its call counted it (nothing came after it).
			if len(got) == 2 && res.TokensBefore != 20005 {
				t.Errorf("TokensBefore = %d, want 20005", res.TokensBefore)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("history after (-want +got):\n%s", diff)
			}
			if compacted := len(got) == 2; compacted != (len(rec.types()) > 0 && rec.types()[0] == "compacting") {
				t.Errorf("events %v for history %v", rec.types(), got)
			}
			if tc.due && len(got) == 2 && s.CompactDue() {
				t.Errorf("CompactDue after the compaction = true, want false")
			}
		})
	}
}

func TestCompactInTurnPiMeasure(t *testing.T) {
	// With ReserveTokens, a turn measures its context as pi does: the last
	// answer's context as its call counted it (20005 here) and an estimate
	// of what followed; e's own estimate of this history is far smaller.
	for _, tc := range []struct {
		name    string
		reserve int64
		want    []string
	}{
		{name: "pi's measure, over window less reserve", reserve: 190000, want: []string{"summary", "user", "assistant"}},
		{name: "e's estimate, under the fraction", reserve: 0, want: []string{"user", "assistant", "user", "assistant"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eng := testEngine(t)
			eng.Behaviour.ReserveTokens = tc.reserve
			s := testSession(t, eng, nil)
			prompt(t, s, "/text one\n/usage 20000 5 0 0 0")
			prompt(t, s, "/text two")
			got := historyRoles(s)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("history (-want +got):\n%s", diff)
			}
		})
	}
}

// historyRoles is s's history as roles, "summary" for a compaction summary.
func historyRoles(s *Session) []string {
	var got []string
	for _, m := range History(s.Entries()) {
		if _, ok := Summary(m); ok {
			got = append(got, "summary")
		} else {
			got = append(got, m.Role)
		}
	}
	return got
}

// TestFileOps checks the file lists of pi's compaction details and
// summary (FileOps, fileLists): read, write and edit calls' paths, sorted,
// a file both read and modified only modified, an escaped path unescaped;
// other tools, calls without a string path and other roles' messages are
// left out.
func TestFileOps(t *testing.T) {
	call := func(name, args string) model.Part {
		return model.Part{Type: model.PartToolCall, ID: "c", Name: name, Arguments: json.RawMessage(args)}
	}
	msg := func(role string, parts ...model.Part) store.Entry {
		b, _ := json.Marshal(model.Message{Role: role, Content: parts})
		return store.Entry{Type: store.TypeMessage, Message: b}
	}
	entries := []store.Entry{
		msg(model.RoleAssistant, call("read", `{"path":"z.go"}`), call("read", `{"path":"b.go"}`), call("bash", `{"command":"ls"}`)),
		msg(model.RoleUser, model.Part{Type: model.PartText, Text: `read {"path":"u.go"}`}),
		msg(model.RoleAssistant, call("edit", `{"path":"b.go","old":"x","new":"y"}`), call("write", `{"path":"a.go","content":""}`),
			call("read", `{}`), call("read", `{"path":7}`), call("read", `{"path":"d\u00e9j\u00e0.go"}`)),
		{Type: store.TypeCompaction, Summary: "s"},
	}
	read, modified := FileOps(entries)
	if diff := cmp.Diff([]string{"déjà.go", "z.go"}, read); diff != "" {
		t.Errorf("read (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"a.go", "b.go"}, modified); diff != "" {
		t.Errorf("modified (-want +got):\n%s", diff)
	}
	for _, tt := range []struct {
		name           string
		read, modified []string
		want           string
	}{
		{name: "none", want: ""},
		{name: "read only", read: []string{"a", "b"}, want: "\n\n<read-files>\na\nb\n</read-files>"},
		{name: "modified only", modified: []string{"c"}, want: "\n\n<modified-files>\nc\n</modified-files>"},
		{name: "both", read: []string{"a"}, modified: []string{"c"},
			want: "\n\n<read-files>\na\n</read-files>\n\n<modified-files>\nc\n</modified-files>"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := fileLists(tt.read, tt.modified); got != tt.want {
				t.Errorf("fileLists = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestCompactSummaryFileLists checks Behaviour.SummaryFileLists (pi's dialect): the
// summary ends with the lists of the files the summarised history read,
// and a session without it keeps the model's summary as it came.
func TestCompactSummaryFileLists(t *testing.T) {
	for _, on := range []bool{true, false} {
		t.Run(fmt.Sprint(on), func(t *testing.T) {
			eng := testEngine(t)
			eng.Behaviour.SummaryFileLists = on
			s := testSession(t, eng, nil)
			if err := os.WriteFile(filepath.Join(s.Cwd(), "a.txt"), []byte("alpha\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			prompt(t, s, `/tool read {"path":"a.txt"}`)
			if err := s.Begin(); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Compact(t.Context(), "", (&recorder{}).sink); err != nil {
				t.Fatal(err)
			}
			sum := History(s.Entries())[0].Text()
			lists := "\n\n<read-files>\na.txt\n</read-files>"
			if got := strings.HasSuffix(sum, lists); got != on {
				t.Errorf("summary %q ends with the read files: %v, want %v", sum, got, on)
			}
		})
	}
}

// Q4: with pi's rule (KeepRecentTokens), a compaction that cuts inside a
// turn summarises as pi's does: the history before the turn and the
// turn's start apart, one summary of both (pi's "Turn Context (split
// turn)" part after the history's), the usage of both calls; a cut at a
// turn's start makes one summary.
func TestCompactSplitTurn(t *testing.T) {
	for _, tc := range []struct {
		name   string
		keep   int64
		turn   string // the summary of the turn's start, "" for none
		usages int
	}{
		{name: "inside the last turn", keep: 1, usages: 2, turn: "Summary of 2 messages: /text two " + turnPrefixPrompt[:40]},
		{name: "at the last turn's start", keep: 2, usages: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eng := testEngine(t)
			eng.Behaviour.KeepRecentTokens = tc.keep
			s := twoTurns(t, eng)
			rec := &recorder{}
			res, err := s.Compact(t.Context(), "", rec.sink)
			if err != nil {
				t.Fatal(err)
			}
			// The offline summary names the messages it saw, the
			// instruction last: turn one's two, then the turn's start.
			sum, _ := Summary(History(s.Entries())[0])
			history, turn, split := strings.Cut(sum, splitTurn)
			if !strings.HasPrefix(history, "Summary of 3 messages: /text one "+summaryPrompt[:40]) || split != (tc.turn != "") ||
				!strings.HasPrefix(turn, tc.turn) {
				t.Errorf("summary %q, want turn one's then, after %q, %q", sum, splitTurn, tc.turn)
			}
			var total model.Usage
			for _, u := range ofType[UsageEvent](rec) {
				total = total.Add(model.Usage(u.Usage.Usage))
			}
			if n := len(ofType[UsageEvent](rec)); n != tc.usages || res.Usage != total {
				t.Errorf("%d usage events summing to %+v, result usage %+v; want %d and their sum", n, total, res.Usage, tc.usages)
			}
		})
	}
}

// TestCompactSummaryFileListsText: with Behaviour.SummaryFileLists the summary is the
// model's text as it came, white space around it included, as pi's
// compaction keeps it; e's own trims it.
func TestCompactSummaryFileListsText(t *testing.T) {
	const text = "  The summary.\n\n"
	for _, tc := range []struct {
		pi   bool
		want string
	}{{true, text}, {false, "The summary."}} {
		t.Run(fmt.Sprint(tc.pi), func(t *testing.T) {
			srv := chatServer(t, reply{text: "hi"}, reply{text: text})
			cat, err := model.NewCatalog(model.Config{Getenv: func(string) string { return "" }, HTTPClient: srv.Client(),
				Providers: map[string]model.ProviderConfig{"local": {API: model.APIOpenAIChat, BaseURL: srv.URL,
					Models: []model.ModelConfig{{ID: "m"}}}}})
			if err != nil {
				t.Fatal(err)
			}
			eng := testEngine(t)
			eng.Catalog, eng.Behaviour.SummaryFileLists = cat, tc.pi
			s := testSession(t, eng, func(o *Options) { o.Model, o.Effort, o.Tools = "local/m", "", nil })
			prompt(t, s, "hello")
			if err := s.Begin(); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Compact(t.Context(), "", (&recorder{}).sink); err != nil {
				t.Fatal(err)
			}
			if got, _ := Summary(History(s.Entries())[0]); got != tc.want {
				t.Errorf("summary %q, want %q", got, tc.want)
			}
		})
	}
}
