package pi

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/e-agent/e/internal/agent"
	"github.com/e-agent/e/internal/model"
	"github.com/e-agent/e/internal/session"
	"github.com/e-agent/e/schemas"
)

// summary renders events compactly: the type, and for message events the
// role or the assistantMessageEvent type.
func summary(t *testing.T, evs []Event) []string {
	t.Helper()
	var out []string
	for _, ev := range evs {
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		if err := schemas.ValidatePiLine(b); err != nil {
			t.Errorf("%s: %v", b, err)
		}
		var v struct {
			Type      string `json:"type"`
			WillRetry bool   `json:"willRetry"`
			Message   struct {
				Role       string `json:"role"`
				StopReason string `json:"stopReason"`
			} `json:"message"`
			AME struct {
				Type string `json:"type"`
			} `json:"assistantMessageEvent"`
		}
		json.Unmarshal(b, &v)
		s := v.Type
		switch {
		case v.WillRetry:
			s += ":willRetry"
		case v.AME.Type != "":
			s += ":" + v.AME.Type
		case v.Message.Role != "" && v.Message.StopReason != "":
			s += ":" + v.Message.Role + "/" + v.Message.StopReason
		case v.Message.Role != "":
			s += ":" + v.Message.Role
		}
		out = append(out, s)
	}
	return out
}

type recorded struct{ calls []model.Part }

func (r recorded) LastAssistant() (model.Message, bool) {
	return model.Message{Role: model.RoleAssistant, Content: r.calls}, true
}
func (recorded) LastCompaction() (string, string) { return "the summary", "e1" }
func (recorded) CompactedFiles() CompactionDetails {
	return CompactionDetails{ReadFiles: []string{"a.txt"}, ModifiedFiles: []string{}}
}
func (recorded) ContextTokens() int64 { return 42 }

// abortRetry stands for pi's abort_retry among a test's events: the
// front's RetryCancelled call.
type abortRetry struct{ now bool }

func (abortRetry) EventType() string { return "abort_retry" }

func TestTranslate(t *testing.T) {
	use := agent.UsageEvent{Usage: agent.NewUsage(model.Usage{Input: 10, Output: 2})}
	call := agent.ToolBatch{Calls: []agent.Call{{ID: 1, Name: "read", Arguments: json.RawMessage(`{"path":"a"}`)}}}
	tests := []struct {
		name   string
		api    string // "" is the offline model's
		events []agent.Event
		settle bool
		want   []string
	}{{
		name:   "text",
		events: []agent.Event{agent.TurnStart{}, &agent.Text{Delta: "hi "}, &agent.Text{Delta: "there"}, use, agent.TurnEnd{}},
		settle: true,
		want: []string{"agent_start", "turn_start", "message_start:user", "message_end:user",
			"message_start:assistant/pending", "message_update:text_start", "message_update:text_delta",
			"message_update:text_delta", "message_update:text_end", "message_end:assistant/stop",
			"turn_end:assistant/stop", "agent_end", "agent_settled"},
	}, {
		name: "thinking then text",
		events: []agent.Event{agent.TurnStart{}, &agent.Reasoning{Delta: "hm"}, &agent.Text{Delta: "ok"}, use,
			agent.TurnEnd{}},
		want: []string{"agent_start", "turn_start", "message_start:user", "message_end:user",
			"message_start:assistant/pending", "message_update:thinking_start", "message_update:thinking_delta",
			"message_update:thinking_end", "message_update:text_start", "message_update:text_delta",
			"message_update:text_end", "message_end:assistant/stop", "turn_end:assistant/stop"},
	}, {
		// pi's openai-completions ends its blocks once the answer is
		// over, in content order: the thinking block after the text began.
		name: "thinking then text, openai-completions",
		api:  model.APIOpenAIChat,
		events: []agent.Event{agent.TurnStart{}, &agent.Reasoning{Delta: "hm"}, &agent.Text{Delta: "ok"}, use,
			agent.TurnEnd{}},
		want: []string{"agent_start", "turn_start", "message_start:user", "message_end:user",
			"message_start:assistant/pending", "message_update:thinking_start", "message_update:thinking_delta",
			"message_update:text_start", "message_update:text_delta", "message_update:thinking_end",
			"message_update:text_end", "message_end:assistant/stop", "turn_end:assistant/stop"},
	}, {
		name: "thinking after text, openai-completions: a new block",
		api:  model.APIOpenAIChat,
		events: []agent.Event{agent.TurnStart{}, &agent.Text{Delta: "a"}, &agent.Reasoning{Delta: "hm"}, &agent.Text{Delta: "b"},
			&agent.Reasoning{Delta: "more"}, use, agent.TurnEnd{}},
		want: []string{"agent_start", "turn_start", "message_start:user", "message_end:user",
			"message_start:assistant/pending", "message_update:text_start", "message_update:text_delta",
			"message_update:thinking_start", "message_update:thinking_delta",
			"message_update:text_end", "message_update:thinking_end", "message_update:text_start", "message_update:text_delta",
			"message_update:thinking_start", "message_update:thinking_delta", "message_update:text_end", "message_update:thinking_end",
			"message_end:assistant/stop", "turn_end:assistant/stop"},
	}, {
		name:   "aborted, openai-completions: the blocks end with the message",
		api:    model.APIOpenAIChat,
		events: []agent.Event{agent.TurnStart{}, &agent.Reasoning{Delta: "hm"}, &agent.Text{Delta: "a"}, agent.TurnEnd{Aborted: true}},
		want: []string{"agent_start", "turn_start", "message_start:user", "message_end:user",
			"message_start:assistant/pending", "message_update:thinking_start", "message_update:thinking_delta",
			"message_update:text_start", "message_update:text_delta", "message_update:thinking_end", "message_update:text_end",
			"message_end:assistant/aborted", "turn_end:assistant/aborted"},
	}, {
		name: "tool call then answer",
		events: []agent.Event{agent.TurnStart{}, use, call, agent.ToolStart{ID: 1},
			agent.ToolOutput{ID: 1, Delta: "a"}, agent.ToolOutput{ID: 1, Delta: "b"},
			agent.ToolEnd{ID: 1, Outcome: "completed", Content: "ab"}, &agent.Text{Delta: "done"}, use, agent.TurnEnd{}},
		want: []string{"agent_start", "turn_start", "message_start:user", "message_end:user",
			"message_start:assistant/pending", "message_update:toolcall_start", "message_update:toolcall_delta",
			"message_update:toolcall_end", "message_end:assistant/toolUse",
			"tool_execution_start", "tool_execution_update", "tool_execution_update", "tool_execution_end",
			"message_start:toolResult", "message_end:toolResult", "turn_end:assistant/toolUse",
			"turn_start", "message_start:assistant/pending", "message_update:text_start", "message_update:text_delta",
			"message_update:text_end", "message_end:assistant/stop", "turn_end:assistant/stop"},
	}, {
		name: "steer starts a turn",
		events: []agent.Event{agent.TurnStart{}, &agent.Text{Delta: "a"}, use, agent.Steered{Text: "more"},
			&agent.Text{Delta: "b"}, use, agent.TurnEnd{}},
		want: []string{"agent_start", "turn_start", "message_start:user", "message_end:user",
			"message_start:assistant/pending", "message_update:text_start", "message_update:text_delta",
			"message_update:text_end", "message_end:assistant/stop", "turn_end:assistant/stop",
			"turn_start", "message_start:user", "message_end:user",
			"message_start:assistant/pending", "message_update:text_start", "message_update:text_delta",
			"message_update:text_end", "message_end:assistant/stop", "turn_end:assistant/stop"},
	}, {
		name: "retry then recover",
		events: []agent.Event{agent.TurnStart{}, &agent.Text{Delta: "x"}, agent.Discarded{Reason: "retry", Text: "x"},
			agent.Retry{Attempt: 2, DelayMS: 5, Reason: "overloaded", Logged: &session.Entry{Type: session.EntryAttempt, ID: "a1"}},
			agent.Recovered{Attempts: 2}, &agent.Text{Delta: "y"}, use, agent.TurnEnd{}},
		want: []string{"agent_start", "turn_start", "message_start:user", "message_end:user",
			"message_start:assistant/pending", "message_update:text_start", "message_update:text_delta",
			"message_update:text_end", "message_end:assistant/error", "turn_end:assistant/error",
			"agent_end:willRetry", "auto_retry_start", "entry_appended",
			"agent_start", "turn_start", "message_start:assistant/pending", "message_update:text_start",
			"message_update:text_delta", "message_update:text_end", "message_end:assistant/stop", "auto_retry_end",
			"turn_end:assistant/stop"},
	}, {
		name: "retries run out",
		events: []agent.Event{agent.TurnStart{}, agent.Retry{Attempt: 2, DelayMS: 5, Reason: "overloaded"},
			agent.Error{Message: "model: overloaded"}, agent.TurnEnd{}},
		settle: true,
		want: []string{"agent_start", "turn_start", "message_start:user", "message_end:user",
			"message_start:assistant/error", "message_end:assistant/error", "turn_end:assistant/error",
			"agent_end:willRetry", "auto_retry_start",
			"agent_start", "turn_start", "message_start:assistant/error", "message_end:assistant/error",
			"turn_end:assistant/error", "agent_end", "auto_retry_end", "agent_settled"},
	}, {
		name: "retry cancelled while waiting",
		events: []agent.Event{agent.TurnStart{}, agent.Retry{Attempt: 2, DelayMS: 5, Reason: "overloaded"},
			agent.TurnEnd{Aborted: true}},
		settle: true,
		want: []string{"agent_start", "turn_start", "message_start:user", "message_end:user",
			"message_start:assistant/error", "message_end:assistant/error", "turn_end:assistant/error",
			"agent_end:willRetry", "auto_retry_start", "auto_retry_end", "agent_settled"},
	}, {
		name: "abort_retry while waiting",
		events: []agent.Event{agent.TurnStart{}, agent.Retry{Attempt: 2, DelayMS: 5, Reason: "overloaded"},
			abortRetry{}, agent.Error{Message: "overloaded"}, agent.TurnEnd{}},
		settle: true,
		want: []string{"agent_start", "turn_start", "message_start:user", "message_end:user",
			"message_start:assistant/error", "message_end:assistant/error", "turn_end:assistant/error",
			"agent_end:willRetry", "auto_retry_start", "auto_retry_end", "agent_settled"},
	}, {
		name: "abort_retry while waiting, something queued: the run goes on, the steer first",
		events: []agent.Event{agent.TurnStart{}, agent.Retry{Attempt: 2, DelayMS: 5, Reason: "overloaded"},
			abortRetry{now: true}, agent.Steered{Text: "more"}, &agent.Text{Delta: "y"}, use, agent.TurnEnd{}},
		settle: true,
		want: []string{"agent_start", "turn_start", "message_start:user", "message_end:user",
			"message_start:assistant/error", "message_end:assistant/error", "turn_end:assistant/error",
			"agent_end:willRetry", "auto_retry_start", "auto_retry_end",
			"agent_start", "turn_start", "message_start:user", "message_end:user",
			"message_start:assistant/pending", "message_update:text_start",
			"message_update:text_delta", "message_update:text_end", "message_end:assistant/stop",
			"turn_end:assistant/stop", "agent_end", "agent_settled"},
	}, {
		name:   "model error",
		events: []agent.Event{agent.TurnStart{}, agent.Error{Message: "model: boom"}, agent.TurnEnd{}},
		settle: true,
		want: []string{"agent_start", "turn_start", "message_start:user", "message_end:user",
			"message_start:assistant/error", "message_end:assistant/error", "turn_end:assistant/error",
			"agent_end", "agent_settled"},
	}, {
		name:   "aborted",
		events: []agent.Event{agent.TurnStart{}, &agent.Text{Delta: "a"}, agent.TurnEnd{Aborted: true}},
		want: []string{"agent_start", "turn_start", "message_start:user", "message_end:user",
			"message_start:assistant/pending", "message_update:text_start", "message_update:text_delta",
			"message_update:text_end", "message_end:assistant/aborted", "turn_end:assistant/aborted"},
	}, {
		name: "auto compaction inside a turn",
		events: []agent.Event{agent.TurnStart{}, agent.Compacting{Reason: "auto", TokensBefore: 100}, use,
			agent.Compacted{TokensBefore: 100, TokensAfter: 10}, &agent.Text{Delta: "a"}, use, agent.TurnEnd{}},
		want: []string{"agent_start", "turn_start", "message_start:user", "message_end:user",
			"compaction_start", "compaction_end",
			"message_start:assistant/pending", "message_update:text_start", "message_update:text_delta",
			"message_update:text_end", "message_end:assistant/stop", "turn_end:assistant/stop"},
	}, {
		name:   "manual compaction",
		events: []agent.Event{agent.Compacting{Reason: "manual"}, use, agent.Compacted{}},
		want:   []string{"compaction_start", "compaction_end"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := tt.api
			if api == "" {
				api = model.APIOffline
			}
			tr := &Translator{Info: model.Info{Provider: "e", Name: "offline", API: api},
				Now: func() time.Time { return time.UnixMilli(1) }, Recorded: recorded{}}
			tr.Begin("hello", nil)
			var got []Event
			for _, ev := range tt.events {
				if a, ok := ev.(abortRetry); ok {
					got = append(got, tr.RetryCancelled(a.now)...)
					continue
				}
				got = append(got, tr.Feed(ev)...)
			}
			if tt.settle {
				got = append(got, tr.Settle()...)
			}
			if diff := cmp.Diff(tt.want, summary(t, got)); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

// TestTranslateDetails checks the fields pi clients read: accumulated tool
// output, the provider's call ids, the final text, agent_end's messages.
func TestTranslateDetails(t *testing.T) {
	tr := &Translator{Info: model.Info{Provider: "e", Name: "offline", API: model.APIOffline,
		Price: &model.Price{Input: 1e6}}, Recorded: recorded{calls: []model.Part{{Type: model.PartToolCall, ID: "toolu_1"}}}}
	tr.Begin("hi", nil)
	var got []Event
	for _, ev := range []agent.Event{agent.TurnStart{},
		agent.UsageEvent{Usage: agent.NewUsage(model.Usage{Input: 3})},
		agent.ToolBatch{Calls: []agent.Call{{ID: 1, Name: "bash", Arguments: json.RawMessage(`{"command":"ls"}`)}}},
		agent.ToolStart{ID: 1}, agent.ToolOutput{ID: 1, Delta: "a\n"}, agent.ToolOutput{ID: 1, Delta: "b\n"},
		agent.ToolEnd{ID: 1, Outcome: "failed", Content: "a\nb\n"},
		&agent.Text{Delta: "fine"}, agent.UsageEvent{}, agent.TurnEnd{}} {
		got = append(got, tr.Feed(ev)...)
	}
	got = append(got, tr.Settle()...)
	var lines []string
	for _, ev := range got {
		b, _ := json.Marshal(ev)
		lines = append(lines, string(b))
	}
	all := strings.Join(lines, "\n")
	for _, want := range []string{
		`"partialResult":{"content":[{"type":"text","text":"a\nb\n"}]`,
		`"type":"tool_execution_end","toolCallId":"toolu_1","toolName":"bash"`,
		`"isError":true`,
		`"cost":{"input":3,"output":0,"cacheRead":0,"cacheWrite":0,"total":3,"totalFromProvider":false}`,
		`{"type":"message_update","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"assistantMessageEvent":{"type":"text_end","contentIndex":0,"content":"fine"}}`,
	} {
		if !strings.Contains(all, want) {
			t.Errorf("missing %s in\n%s", want, all)
		}
	}
	end := got[len(got)-2].(AgentEnd)
	var roles []string
	for _, m := range end.Messages {
		b, _ := json.Marshal(m)
		var r struct{ Role string }
		json.Unmarshal(b, &r)
		roles = append(roles, r.Role)
	}
	if diff := cmp.Diff([]string{"user", "assistant", "toolResult", "assistant"}, roles); diff != "" {
		t.Errorf("agent_end messages (-want +got):\n%s", diff)
	}
}

// TestCompactionAborted checks the compaction_end of a compaction an abort
// stopped (Q5): aborted, with neither result nor errorMessage, as pi's;
// and nothing when no compaction goes on.
func TestCompactionAborted(t *testing.T) {
	tr := &Translator{Info: model.Info{Provider: "e", Name: "offline", API: model.APIOffline}, Recorded: recorded{}}
	if got := tr.CompactionAborted(); len(got) != 0 {
		t.Fatalf("idle: got %v, want nothing", got)
	}
	got := append(tr.Feed(agent.Compacting{Reason: "threshold"}), tr.CompactionAborted()...)
	want := []Event{CompactionStart{Type: "compaction_start", Reason: "threshold"},
		CompactionEnd{Type: "compaction_end", Reason: "threshold", Aborted: true}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	summary(t, got) // each line passes pi's schemas
	if got := tr.CompactionAborted(); len(got) != 0 {
		t.Errorf("after the end: got %v, want nothing", got)
	}
}

// TestCompactionEstimate checks that compaction_end's estimatedTokensAfter
// is pi's estimate of the context after it (Recorded.ContextTokens: the
// system prompt and tools included, Q7), not e's count of the kept
// messages.
func TestCompactionEstimate(t *testing.T) {
	tr := &Translator{Info: model.Info{Provider: "e", Name: "offline", API: model.APIOffline}, Recorded: recorded{}}
	evs := append(tr.Feed(agent.Compacting{Reason: "threshold"}), tr.Feed(agent.Compacted{TokensBefore: 900, TokensAfter: 13})...)
	end, ok := evs[len(evs)-1].(CompactionEnd)
	if !ok || end.Result == nil {
		t.Fatalf("last event %#v, want compaction_end with a result", evs[len(evs)-1])
	}
	if end.Result.EstimatedTokensAfter != 42 || end.Result.TokensBefore != 900 {
		t.Errorf("estimatedTokensAfter %d, tokensBefore %d; want 42 (Recorded.ContextTokens) and 900",
			end.Result.EstimatedTokensAfter, end.Result.TokensBefore)
	}
}

// TestTranslateEndUsage checks that the blocks of an openai-completions
// answer end with its usage (reasoning, who priced it), as pi's end them
// once the stream is over (Q3); the deltas before carry the pending
// message's zero usage.
func TestTranslateEndUsage(t *testing.T) {
	tr := &Translator{Info: model.Info{Provider: "p", Name: "m", API: model.APIOpenAIChat}, Recorded: recorded{}}
	tr.Begin("hi", nil)
	var updates []MessageUpdate
	for _, ev := range []agent.Event{agent.TurnStart{}, &agent.Reasoning{Delta: "hm"}, &agent.Text{Delta: "ok"},
		agent.UsageEvent{Usage: agent.NewUsage(model.Usage{Input: 10, Output: 3, Reasoning: 2})}, agent.TurnEnd{}} {
		for _, out := range tr.Feed(ev) {
			if u, ok := out.(MessageUpdate); ok {
				updates = append(updates, u)
			}
		}
	}
	fromProvider, two := false, int64(2)
	final := Usage{Input: 10, Output: 3, Reasoning: &two, TotalTokens: 13, Cost: Cost{TotalFromProvider: &fromProvider}}
	want := map[string]Usage{"thinking_start": {}, "thinking_delta": {}, "text_start": {}, "text_delta": {},
		"thinking_end": final, "text_end": final}
	got := map[string]Usage{}
	for _, u := range updates {
		got[u.AssistantMessageEvent.Type] = u.Usage
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("message_update usage by event (-want +got):\n%s", diff)
	}
}

// TestTranslateResponseModel checks that an answer naming a model other
// than the one asked for says so in responseModel (Q3), as pi's
// openai-completions provider sets it from the chunks: an answer's from its
// usage event, one an abort cut short from its turn's end.
func TestTranslateResponseModel(t *testing.T) {
	tests := []struct {
		name   string
		events []agent.Event
		want   string
	}{
		{name: "answered by another model", want: "m-2025",
			events: []agent.Event{agent.TurnStart{}, &agent.Text{Delta: "a"}, agent.UsageEvent{ResponseModel: "m-2025"}, agent.TurnEnd{}}},
		{name: "answered by the model asked for", want: "",
			events: []agent.Event{agent.TurnStart{}, &agent.Text{Delta: "a"}, agent.UsageEvent{}, agent.TurnEnd{}}},
		{name: "cut short", want: "fallback",
			events: []agent.Event{agent.TurnStart{}, &agent.Text{Delta: "a"}, agent.TurnEnd{Aborted: true, ResponseModel: "fallback"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := &Translator{Info: model.Info{Provider: "p", Name: "m", API: model.APIOpenAIChat}, Recorded: recorded{}}
			tr.Begin("hi", nil)
			var end *MessageEnd
			for _, ev := range tt.events {
				for _, out := range tr.Feed(ev) {
					if me, ok := out.(MessageEnd); ok {
						if _, ok := me.Message.(AssistantMessage); ok {
							end = &me
						}
					}
				}
			}
			if end == nil {
				t.Fatal("no assistant message_end")
			}
			if got := end.Message.(AssistantMessage).ResponseModel; got != tt.want {
				t.Errorf("responseModel %q, want %q", got, tt.want)
			}
		})
	}
}
