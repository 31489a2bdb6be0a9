package model

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestAnthropicStream(t *testing.T) { // U1: cache reads and 5m/1h writes apart from input
	runStreamCases(t, "anthropic", NewAnthropic, []streamCase{
		{file: "text.http",
			deltas: []Delta{{Kind: DeltaText, Text: "Hello"}, {Kind: DeltaText, Text: ", world."}},
			want: &Response{
				Message:    Message{Role: RoleAssistant, Content: []Part{{Type: PartText, Text: "Hello, world."}}},
				Usage:      Usage{Input: 25, Output: 7, CacheRead: 12000, CacheWrite5m: 1000, CacheWrite1h: 2000},
				StopReason: StopEnd, RequestID: "req_011CAnthropicText", ResponseID: "msg_01Text", FinishReason: "end_turn",
				ResponseModel: "claude-sonnet-4-5-20250929"}},
		{file: "text.http", model: "claude-sonnet-4-5-20250929", // the model asked for answered: no response model
			deltas: []Delta{{Kind: DeltaText, Text: "Hello"}, {Kind: DeltaText, Text: ", world."}},
			want: &Response{
				Message:    Message{Role: RoleAssistant, Content: []Part{{Type: PartText, Text: "Hello, world."}}},
				Usage:      Usage{Input: 25, Output: 7, CacheRead: 12000, CacheWrite5m: 1000, CacheWrite1h: 2000},
				StopReason: StopEnd, RequestID: "req_011CAnthropicText", ResponseID: "msg_01Text", FinishReason: "end_turn"}},
		{file: "reasoning.http",
			deltas: []Delta{{Kind: DeltaReasoning, Text: "Let me work"}, {Kind: DeltaReasoning, Text: " this out."},
				{Kind: DeltaText, Text: "42."}},
			want: &Response{
				Message: Message{Role: RoleAssistant, Content: []Part{
					{Type: PartReasoning, Text: "Let me work this out.", Signature: "anthropic:EqQBCkgIARABGAIiQSig=="},
					{Type: PartReasoning, Signature: "anthropic-redacted:EmwKAhgBEgy3va3pzix/LafPsn4a"},
					{Type: PartText, Text: "42."}}},
				Usage:      Usage{Input: 40, Output: 300, Reasoning: 280},
				StopReason: StopMaxToken, RequestID: "req_011CAnthropicThink", ResponseID: "msg_01Think", FinishReason: "max_tokens",
				ResponseModel: "claude-sonnet-4-5-20250929"}},
		{file: "tools.http",
			deltas: append([]Delta{{Kind: DeltaText, Text: "Looking."}}, anthropicCallDeltas()...),
			want: &Response{
				Message: Message{Role: RoleAssistant, Content: append([]Part{{Type: PartText, Text: "Looking."}},
					anthropicCalls()...)},
				// No cache_creation breakdown: all writes count as 5-minute.
				Usage:      Usage{Input: 10, Output: 61, CacheWrite5m: 1500},
				StopReason: StopToolUse, RequestID: "req_011CAnthropicTools", ResponseID: "msg_01Tools", FinishReason: "tool_use",
				ResponseModel: "claude-sonnet-4-5-20250929"}},
	})
}

// anthropicCalls are twoCalls with Anthropic's tool_use ids.
func anthropicCalls() []Part {
	calls := append([]Part(nil), twoCalls...)
	calls[0].ID, calls[1].ID = "toolu_01A", "toolu_01B"
	return calls
}

// anthropicCallDeltas are twoCallDeltas with Anthropic's tool_use ids.
func anthropicCallDeltas() []Delta {
	deltas := append([]Delta(nil), twoCallDeltas...)
	deltas[0].ID, deltas[3].ID = "toolu_01A", "toolu_01B"
	return deltas
}

func TestAnthropicRequest(t *testing.T) {
	f := newFake(t, "anthropic", "text.http", holdNone)
	if _, _, err := collect(t.Context(), NewAnthropic(f.settings()), richRequest()); err != nil {
		t.Fatal(err)
	}
	got := f.request(t)
	if got.Path != "/v1/messages" {
		t.Errorf("path = %q, want /v1/messages", got.Path)
	}
	for k, want := range map[string]string{"x-api-key": testKey, "anthropic-version": "2023-06-01", "Authorization": ""} {
		if v := got.Header.Get(k); v != want {
			t.Errorf("header %s = %q, want %q", k, v, want)
		}
	}
	checkGolden(t, "anthropic", "request.golden.json", got.Body)
}

func TestAnthropicRequestEffort(t *testing.T) {
	tests := []struct {
		effort    string
		maxTokens float64
		thinking  any
	}{
		{effort: "", maxTokens: 8192},
		{effort: "low", maxTokens: 10240, thinking: map[string]any{"type": "enabled", "budget_tokens": 2048.0}},
		{effort: "medium", maxTokens: 16384, thinking: map[string]any{"type": "enabled", "budget_tokens": 8192.0}},
		{effort: "high", maxTokens: 32000, thinking: map[string]any{"type": "enabled", "budget_tokens": 24576.0}},
	}
	for _, tt := range tests {
		t.Run("effort="+tt.effort, func(t *testing.T) {
			f := newFake(t, "anthropic", "text.http", holdNone)
			req := &Request{Model: "m", Effort: tt.effort, Messages: []Message{{Role: RoleUser, Content: []Part{{Type: PartText, Text: "hi"}}}}}
			if _, _, err := collect(t.Context(), NewAnthropic(f.settings()), req); err != nil {
				t.Fatal(err)
			}
			var body map[string]any
			if err := json.Unmarshal(f.request(t).Body, &body); err != nil {
				t.Fatal(err)
			}
			if body["max_tokens"] != tt.maxTokens {
				t.Errorf("max_tokens = %v, want %v", body["max_tokens"], tt.maxTokens)
			}
			if diff := cmp.Diff(tt.thinking, body["thinking"]); diff != "" {
				t.Errorf("thinking (-want +got):\n%s", diff)
			}
			if _, ok := body["system"]; ok {
				t.Errorf("empty system prompt sent: %v", body["system"])
			}
		})
	}
}

func TestAnthropicUnknownEffort(t *testing.T) {
	f := newFake(t, "anthropic", "text.http", holdNone)
	_, _, err := collect(t.Context(), NewAnthropic(f.settings()), &Request{Model: "m", Effort: "turbo"})
	var e *Error
	if !errors.As(err, &e) || e.Retryable || e.Stage != "request" {
		t.Fatalf("Stream error = %#v, want a fatal request *Error", err)
	}
	select {
	case <-f.reqs:
		t.Error("the request was sent anyway")
	default:
	}
}
