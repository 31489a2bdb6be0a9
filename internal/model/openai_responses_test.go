package model

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestOpenAIResponsesStream(t *testing.T) { // U1: input excludes cached tokens
	runStreamCases(t, "responses", NewOpenAIResponses, []streamCase{
		{file: "text.http",
			deltas: []Delta{{Kind: DeltaText, Text: "Hello"}, {Kind: DeltaText, Text: ", world."}},
			want: &Response{
				Message:    Message{Role: RoleAssistant, Content: []Part{{Type: PartText, Text: "Hello, world."}}},
				Usage:      Usage{Input: 152, Output: 6, CacheRead: 2048},
				StopReason: StopEnd, RequestID: "req_resp_text_1", ResponseID: "resp_01", FinishReason: "completed"}},
		{file: "reasoning.http",
			deltas: []Delta{{Kind: DeltaReasoning, Text: "**Planning** the"}, {Kind: DeltaReasoning, Text: " answer"},
				{Kind: DeltaReasoning, Text: "\n\n"}, {Kind: DeltaReasoning, Text: "**Checking** facts"},
				{Kind: DeltaText, Text: "42."}},
			want: &Response{
				Message: Message{Role: RoleAssistant, Content: []Part{
					{Type: PartReasoning, Text: "**Planning** the answer\n\n**Checking** facts",
						Signature: "openai-responses:gAAAAABoEncrypted=="},
					{Type: PartText, Text: "42."}}},
				Usage:      Usage{Input: 50, Output: 120, Reasoning: 100},
				StopReason: StopMaxToken, RequestID: "req_resp_reason_1", ResponseID: "resp_02",
				FinishReason: "incomplete.max_output_tokens"}},
		{file: "tools.http",
			// The recording interleaves the calls' argument fragments.
			deltas: []Delta{twoCallDeltas[0], twoCallDeltas[1], twoCallDeltas[3], twoCallDeltas[2],
				twoCallDeltas[4], twoCallDeltas[5]},
			want: &Response{
				Message:    Message{Role: RoleAssistant, Content: twoCalls},
				Usage:      Usage{Input: 388, Output: 45, CacheRead: 512},
				StopReason: StopToolUse, RequestID: "req_resp_tools_1", ResponseID: "resp_03", FinishReason: "completed"}},
	})
}

func TestOpenAIResponsesRequest(t *testing.T) {
	f := newFake(t, "responses", "text.http", holdNone)
	if _, _, err := collect(t.Context(), NewOpenAIResponses(f.settings()), richRequest()); err != nil {
		t.Fatal(err)
	}
	got := f.request(t)
	if got.Path != "/responses" {
		t.Errorf("path = %q, want /responses", got.Path)
	}
	if a := got.Header.Get("Authorization"); a != "Bearer "+testKey {
		t.Errorf("Authorization = %q", a)
	}
	checkGolden(t, "responses", "request.golden.json", got.Body)
}

// TestOpenAIResponsesRequestPlain checks that without an effort no
// reasoning is asked for.
func TestOpenAIResponsesRequestPlain(t *testing.T) {
	f := newFake(t, "responses", "text.http", holdNone)
	req := &Request{Model: "gpt-4.1", Messages: []Message{{Role: RoleUser, Content: []Part{{Type: PartText, Text: "hi"}}}}}
	if _, _, err := collect(t.Context(), NewOpenAIResponses(f.settings()), req); err != nil {
		t.Fatal(err)
	}
	var body any
	if err := json.Unmarshal(f.request(t).Body, &body); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"model": "gpt-4.1",
		"input": []any{map[string]any{"type": "message", "role": "user",
			"content": []any{map[string]any{"type": "input_text", "text": "hi"}}}},
		"store":  false,
		"stream": true,
	}
	if diff := cmp.Diff(want, body); diff != "" {
		t.Errorf("body (-want +got):\n%s", diff)
	}
}
