package model

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestOpenAIChatStream(t *testing.T) { // U1: input excludes cached tokens
	runStreamCases(t, "chat", NewOpenAIChat, []streamCase{
		{file: "text.http",
			deltas: []Delta{{Kind: DeltaText, Text: "Hello"}, {Kind: DeltaText, Text: ", world."}},
			want: &Response{
				Message:    Message{Role: RoleAssistant, Content: []Part{{Type: PartText, Text: "Hello, world."}}},
				Usage:      Usage{Input: 226, Output: 5, CacheRead: 1024},
				StopReason: StopEnd, RequestID: "req_chat_text_1", ResponseID: "chatcmpl-AaA1", FinishReason: "stop",
				ResponseModel: "gpt-4.1-2025-04-14"}},
		{file: "text.http", model: "gpt-4.1-2025-04-14", // the model asked for answered: no response model
			deltas: []Delta{{Kind: DeltaText, Text: "Hello"}, {Kind: DeltaText, Text: ", world."}},
			want: &Response{
				Message:    Message{Role: RoleAssistant, Content: []Part{{Type: PartText, Text: "Hello, world."}}},
				Usage:      Usage{Input: 226, Output: 5, CacheRead: 1024},
				StopReason: StopEnd, RequestID: "req_chat_text_1", ResponseID: "chatcmpl-AaA1", FinishReason: "stop"}},
		{file: "reasoning.http",
			deltas: []Delta{{Kind: DeltaReasoning, Text: "The user greets."}, {Kind: DeltaReasoning, Text: " Reply briefly."},
				{Kind: DeltaText, Text: "Hi!"}},
			want: &Response{
				Message: Message{Role: RoleAssistant, Content: []Part{
					{Type: PartReasoning, Text: "The user greets. Reply briefly.", Signature: "openai-chat:reasoning_content"},
					{Type: PartText, Text: "Hi!"}}},
				Usage:      Usage{Input: 20, Output: 9, Reasoning: 6},
				StopReason: StopMaxToken, ResponseID: "chatcmpl-r1", FinishReason: "length", ResponseModel: "deepseek-r1"}},
		{file: "reasoning-twice.http", // the first non-empty reasoning field counts, once
			deltas: []Delta{{Kind: DeltaReasoning, Text: "Hm."}, {Kind: DeltaText, Text: "Ok."}},
			want: &Response{
				Message: Message{Role: RoleAssistant, Content: []Part{
					{Type: PartReasoning, Text: "Hm.", Signature: "openai-chat:reasoning"}, {Type: PartText, Text: "Ok."}}},
				StopReason: StopEnd, ResponseID: "gen-9", FinishReason: "stop"}},
		{file: "tools.http",
			deltas: twoCallDeltas,
			want: &Response{
				Message:    Message{Role: RoleAssistant, Content: twoCalls},
				Usage:      Usage{Input: 300, Output: 40},
				StopReason: StopToolUse, RequestID: "req_chat_tools_1", ResponseID: "chatcmpl-T1", FinishReason: "tool_calls",
				ResponseModel: "gpt-4.1-2025-04-14"}},
	})
}

func TestOpenAIChatRequest(t *testing.T) {
	f := newFake(t, "chat", "text.http", holdNone)
	if _, _, err := collect(t.Context(), NewOpenAIChat(f.settings()), richRequest()); err != nil {
		t.Fatal(err)
	}
	got := f.request(t)
	if got.Path != "/chat/completions" {
		t.Errorf("path = %q, want /chat/completions", got.Path)
	}
	if a := got.Header.Get("Authorization"); a != "Bearer "+testKey {
		t.Errorf("Authorization = %q", a)
	}
	checkGolden(t, "chat", "request.golden.json", got.Body)
}

// TestOpenAIChatRequestPlain checks the minimal body: no effort, tools or
// system prompt sends none of their keys, and no key sends no Authorization.
func TestOpenAIChatRequestPlain(t *testing.T) {
	f := newFake(t, "chat", "text.http", holdNone)
	s := f.settings()
	s.APIKey = ""
	req := &Request{Model: "llama3", Messages: []Message{{Role: RoleUser, Content: []Part{{Type: PartText, Text: "hi"}}}}}
	if _, _, err := collect(t.Context(), NewOpenAIChat(s), req); err != nil {
		t.Fatal(err)
	}
	got := f.request(t)
	if a, ok := got.Header["Authorization"]; ok {
		t.Errorf("Authorization sent without a key: %q", a)
	}
	var body any
	if err := json.Unmarshal(got.Body, &body); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"model":          "llama3",
		"messages":       []any{map[string]any{"role": "user", "content": "hi"}},
		"stream":         true,
		"stream_options": map[string]any{"include_usage": true},
	}
	if diff := cmp.Diff(want, body); diff != "" {
		t.Errorf("body (-want +got):\n%s", diff)
	}
}

// TestOpenAIChatToolCallShapes covers compatible servers that send a
// whole call per chunk without index or id, and broken argument JSON.
func TestOpenAIChatToolCallShapes(t *testing.T) {
	tests := []struct {
		name   string
		chunks []string
		want   []Part
	}{
		{name: "no index, no id",
			chunks: []string{
				`{"choices":[{"delta":{"tool_calls":[{"function":{"name":"read","arguments":"{\"path\":\"a\"}"}}]}}]}`,
				`{"choices":[{"delta":{"tool_calls":[{"function":{"name":"read","arguments":"{\"path\":\"b\"}"}}]}}]}`,
			},
			// Without ids nothing tells two calls from fragments of one; the
			// arguments become one string and stay encodable.
			want: []Part{{Type: PartToolCall, ID: "call_0", Name: "read",
				Arguments: json.RawMessage(`"{\"path\":\"a\"}{\"path\":\"b\"}"`)}}},
		{name: "index reused with new ids",
			chunks: []string{
				`{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":"read","arguments":"{}"}}]}}]}`,
				`{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c2","function":{"name":"bash","arguments":"{}"}}]}}]}`,
			},
			want: []Part{{Type: PartToolCall, ID: "c1", Name: "read", Arguments: json.RawMessage(`{}`)},
				{Type: PartToolCall, ID: "c2", Name: "bash", Arguments: json.RawMessage(`{}`)}}},
		{name: "no arguments",
			chunks: []string{`{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":"now"}}]},"finish_reason":"tool_calls"}]}`},
			want:   []Part{{Type: PartToolCall, ID: "c1", Name: "now", Arguments: json.RawMessage(`{}`)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := sseServer(t, tt.chunks...)
			_, resp, err := collect(t.Context(), NewOpenAIChat(ProviderSettings{BaseURL: srv.URL, Client: srv.Client()}), &Request{Model: "m"})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, resp.Message.Content); diff != "" {
				t.Errorf("content (-want +got):\n%s", diff)
			}
			if resp.StopReason != StopToolUse {
				t.Errorf("StopReason = %q, want tool_use", resp.StopReason)
			}
		})
	}
}
