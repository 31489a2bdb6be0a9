package pi

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/e-agent/e/internal/model"
	"github.com/e-agent/e/internal/session"
)

// TestEntries checks pi's shapes of e entries that have no message: a
// user's shell command is a bashExecution message (kept when excluded),
// and timestamps have JavaScript's millisecond ISO form.
func TestEntries(t *testing.T) {
	at := time.Date(2026, 12, 1, 12, 0, 0, 123456789, time.UTC)
	exit := 0
	conv := newConverter(func(string) (model.Info, bool) { return model.Info{}, false }, session.Header{})
	got := conv.entries([]session.Entry{{Type: session.EntryShell, ID: "s1", Time: at,
		Shell: &session.ShellRun{Command: "echo x", Output: "x\n", ExitCode: &exit, Exclude: true}}})
	want := []Entry{{Type: "message", ID: "s1", Timestamp: "2026-12-01T12:00:00.123Z",
		Message: BashExecutionMessage{Role: "bashExecution", Command: "echo x", Output: "x\n", ExitCode: new(int64),
			ExcludeFromContext: true, Timestamp: at.UnixMilli()}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("entries (-want +got):\n%s", diff)
	}
}

// TestFailedAttemptEntries checks pi's shapes of a retried model call: the
// failed attempt is an error message entry (what it streamed, its error,
// duration, answer id and model) followed by the context_edit that hides it, with
// the id entry_appended announced (hideAttempt); the answer chains after
// the edit. get_messages leaves both out (contextMessages, via visible).
// An interruption then cuts the retry before any output: an empty aborted
// answer with the cut call's duration, id and model.
func TestFailedAttemptEntries(t *testing.T) {
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	ms := at.UnixMilli()
	info := model.Info{ID: "p/m", Provider: "p", Name: "m", API: model.APIOpenAIChat}
	conv := newConverter(func(string) (model.Info, bool) { return info, true }, session.Header{Model: "p/m", Effort: "high"})
	got := conv.entries([]session.Entry{
		{Type: session.EntryMessage, ID: "u", Time: at, Message: []byte(`{"role":"user","content":[{"type":"text","text":"hi"}]}`)},
		{Type: session.EntryAttempt, ID: "a", Parent: "u", Time: at, Error: "model: p: HTTP 503: busy",
			Message: []byte(`{"role":"assistant","content":[{"type":"text","text":"par"}]}`),
			Call:    &session.ModelCall{Model: "p/m", Attempts: 1, DurationMS: 7, ResponseID: "r1", ResponseModel: "m-2025"}},
		{Type: session.EntryInterrupted, ID: "i", Parent: "a", Time: at,
			Call: &session.ModelCall{Model: "p/m", Attempts: 2, DurationMS: 9, ResponseID: "r2", ResponseModel: "fallback"}},
	})
	seven, nine := int64(7), int64(9)
	u, a, edit := "u", "a", "a.1"
	usage := NewUsage(model.Usage{}, nil)
	want := []Entry{
		{Type: "message", ID: "u", Timestamp: "2026-12-01T12:00:00.000Z", Message: *userMessage("hi", nil, ms)},
		{Type: "message", ID: "a", ParentID: &u, Timestamp: "2026-12-01T12:00:00.000Z", Message: AssistantMessage{Role: "assistant",
			Content: []Content{{Type: "text", Text: "par"}}, API: "openai-completions", Provider: "p", Model: "m", ThinkingLevel: "high",
			Usage: usage, StopReason: "error", ErrorMessage: "model: p: HTTP 503: busy", Timestamp: ms, DurationMS: &seven, ResponseID: "r1",
			ResponseModel: "m-2025"}},
		{Type: "context_edit", ID: "a.1", ParentID: &a, Timestamp: "2026-12-01T12:00:00.000Z", TargetID: "a", Replacement: json.RawMessage("null")},
		{Type: "message", ID: "i", ParentID: &edit, Timestamp: "2026-12-01T12:00:00.000Z", Message: AssistantMessage{Role: "assistant",
			Content: []Content{}, API: "openai-completions", Provider: "p", Model: "m", ThinkingLevel: "high",
			Usage: NewUsage(model.Usage{}, nil), StopReason: "aborted", ErrorMessage: abortedError, Timestamp: ms, DurationMS: &nine, ResponseID: "r2",
			ResponseModel: "fallback"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("entries (-want +got):\n%s", diff)
	}
	if live := hideAttempt("a", at); !cmp.Equal(live, want[2]) {
		t.Errorf("entry_appended's entry %+v, want get_entries' %+v", live, want[2])
	}
	// Interrupted while waiting to retry: no answer was cut.
	waited := newConverter(func(string) (model.Info, bool) { return info, true }, session.Header{Model: "p/m"}).entries([]session.Entry{
		{Type: session.EntryMessage, ID: "u", Time: at, Message: []byte(`{"role":"user","content":[{"type":"text","text":"hi"}]}`)},
		{Type: session.EntryAttempt, ID: "a", Parent: "u", Time: at, Error: "busy", Call: &session.ModelCall{Attempts: 1}},
		{Type: session.EntryInterrupted, ID: "i", Parent: "a", Time: at},
	})
	if n := len(waited); n != 3 || waited[n-1].Type != "context_edit" {
		t.Errorf("an interruption of the wait before a retry gives %+v, want nothing after the context_edit", waited)
	}
}

// TestBashText checks that e's bash tool content reads as pi's bash tool
// words it (its dist/core/tools/bash.js): the bare output, then why it
// failed after a blank line.
func TestBashText(t *testing.T) {
	for _, tt := range []struct{ name, content, want string }{
		{name: "exit 0", content: "one\ntwo\n[exit 0]", want: "one\ntwo\n"},
		{name: "exit 0, no output", content: "[exit 0]", want: "(no output)"},
		{name: "exit 3", content: "bad\n[exit 3]", want: "bad\n\n\nCommand exited with code 3"},
		{name: "exit 3, no output", content: "[exit 3]", want: "(no output)\n\nCommand exited with code 3"},
		{name: "signal", content: "[killed by SIGKILL]", want: "(no output)\n\nCommand terminated without an exit code"},
		{name: "stopped", content: "ready\n[stopped: the command was killed]", want: "ready\n\n\nCommand aborted"},
		{name: "stopped, no output", content: "[stopped: the command was killed]", want: "Command aborted"},
		{name: "timed out", content: "started\n[timed out after 1500 ms: the command was killed]", want: "started\n\n\nCommand timed out after 1.5 seconds"},
		{name: "refused", content: "bash: no process tracker (Env.Procs is nil)", want: "bash: no process tracker (Env.Procs is nil)"},
		{name: "a bracket that is no status", content: "x\n[exit code]", want: "x\n[exit code]"},
		{name: "cut as pi", content: "9\n10\n\n[Showing lines 2-10 of 10. Full output: /t/pi-bash-1.log]\n[exit 0]",
			want: "9\n10\n\n[Showing lines 2-10 of 10. Full output: /t/pi-bash-1.log]"},
		{name: "cut as pi, exit 3", content: "9\n\n[Showing lines 2-9 of 9. Full output: /f]\n[exit 3]",
			want: "9\n\n[Showing lines 2-9 of 9. Full output: /f]\n\nCommand exited with code 3"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := bashText(tt.content); got != tt.want {
				t.Errorf("bashText(%q) = %q, want %q", tt.content, got, tt.want)
			}
		})
	}
}

// TestEstimateMessages checks pi's token estimate of a context (its
// estimateMessagesTokens, compaction_end's estimatedTokensAfter, Q7): each
// message's characters over 4, rounded up, the system message's tools as
// JSON included, strings counted in UTF-16 units.
func TestEstimateMessages(t *testing.T) {
	tests := []struct {
		name string
		msg  any
		want int64
	}{
		{"system prompt and tools", SystemMessage{Role: "system", Content: "abcd",
			ToolsAdded: []ToolDecl{{Name: "r", Description: "<d>", Parameters: []byte(`{ "type": "object" }`)}}},
			// 4 + len(`[{"name":"r","description":"<d>","parameters":{"type":"object"}}]`) = 4 + 65
			(4 + 65 + 3) / 4},
		{"user text and image", UserMessage{Role: "user", Content: []Content{{Type: "text", Text: "hello"}, {Type: "image"}}}, (5 + 4800 + 3) / 4},
		{"assistant text, thinking, tool call", AssistantMessage{Role: "assistant", Content: []Content{{Type: "text", Text: "ab"},
			{Type: "thinking", Text: "cd"}, {Type: "toolCall", Name: "read", Arguments: []byte(`{"path": "a"}`)}}}, (2 + 2 + 4 + 12 + 3) / 4},
		{"astral rune is two units", ToolResultMessage{Role: "toolResult", Content: []Content{{Type: "text", Text: "😀"}}}, 1},
		{"bash command and output", BashExecutionMessage{Role: "bashExecution", Command: "ls", Output: "a\nb\n"}, 2},
		{"compaction summary", CompactionSummaryMessage{Role: "compactionSummary", Summary: "123456789"}, 3},
	}
	var total int64
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := estimateMessages([]any{tt.msg}); got != tt.want {
				t.Errorf("estimateMessages = %d, want %d", got, tt.want)
			}
		})
		total += tt.want
	}
	all := make([]any, len(tests))
	for i, tt := range tests {
		all[i] = tt.msg
	}
	if got := estimateMessages(all); got != total {
		t.Errorf("estimateMessages of all = %d, want the sum %d (each message rounds up on its own)", got, total)
	}
}

// TestProviderError checks pi's wording of a failed model call (pi-ai's
// formatProviderError, Q3): "STATUS: " and the answer's error as compact
// JSON, OpenAI's "error" member or an Anthropic answer whole; e's words
// without a status or a JSON error.
func TestProviderError(t *testing.T) {
	long := strings.Repeat("x", 4100)
	tests := []struct {
		name string
		err  model.Error
		want string
	}{
		{"openai error member", model.Error{Provider: "p", Status: 503, Message: "overloaded",
			Body: `{"error": {"message": "overloaded", "type": "overloaded_error"}}`},
			`503: {"message":"overloaded","type":"overloaded_error"}`},
		{"anthropic answer whole", model.Error{Provider: "p", Status: 529, Message: "overloaded",
			Body: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`},
			`529: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`},
		{"no status", model.Error{Provider: "p", Stage: "connect", Message: "connection refused"}, "model: p: connection refused"},
		{"not JSON", model.Error{Provider: "p", Status: 502, Message: "bad gateway", Body: "<html>"}, "model: p: HTTP 502: bad gateway"},
		{"empty error member", model.Error{Provider: "p", Status: 500, Message: "x", Body: `{"error":{}}`}, "model: p: HTTP 500: x"},
		{"cut at 4000", model.Error{Provider: "p", Status: 400, Body: `{"error":{"m":"` + long + `"}}`},
			"400: " + (`{"m":"` + long)[:4000] + "... [truncated 108 chars]"}, // {"m":"…"} is 4108
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := providerError(&tt.err); got != tt.want {
				t.Errorf("providerError = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestAsked checks that asked says what the session's Messages say: no
// user message in a new session, one once a prompt ran.
func TestAsked(t *testing.T) {
	fr := newFront(t)
	sess := fr.session()
	listed := func() bool {
		return slices.ContainsFunc(sess.Messages(), func(m session.Message) bool { return m.Role == model.RoleUser })
	}
	if asked(sess) || listed() {
		t.Fatalf("a new session: asked %v, Messages list a user message: %v", asked(sess), listed())
	}
	for range 2 {
		if err := fr.startRun("/text answer", nil, nil, func() {}); err != nil {
			t.Fatal(err)
		}
		<-fr.runDone
		if !asked(sess) || !listed() {
			t.Fatalf("after a prompt: asked %v, Messages list a user message: %v", asked(sess), listed())
		}
	}
}
