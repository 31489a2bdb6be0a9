package model

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestOutputSchemaRequest checks that each API sends the output schema in
// its own field (J1): the bodies are golden files (-update rewrites them).
func TestOutputSchemaRequest(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","required":["ok"],"properties":{"ok":{"type":"boolean"}},"additionalProperties":false}`)
	cases := []struct {
		dir      string
		newP     func(ProviderSettings) Provider
		wantBeta string // the anthropic-beta header
	}{
		{dir: "responses", newP: NewOpenAIResponses},
		{dir: "chat", newP: NewOpenAIChat},
		{dir: "anthropic", newP: NewAnthropic, wantBeta: anthropicStructuredBeta},
	}
	for _, c := range cases {
		t.Run(c.dir, func(t *testing.T) {
			f := newFake(t, c.dir, "text.http", holdNone)
			req := &Request{Model: "m1", System: "You are e.", OutputSchema: schema,
				Messages: []Message{{Role: RoleUser, Content: []Part{{Type: PartText, Text: "review"}}}}}
			if _, _, err := collect(t.Context(), c.newP(f.settings()), req); err != nil {
				t.Fatal(err)
			}
			got := f.request(t)
			if b := got.Header.Get("anthropic-beta"); b != c.wantBeta {
				t.Errorf("anthropic-beta = %q, want %q", b, c.wantBeta)
			}
			checkGolden(t, c.dir, "output-schema.golden.json", got.Body)
		})
	}
}

func TestMinimalInstance(t *testing.T) {
	cases := []struct {
		name   string
		schema string
		want   string
	}{
		{name: "object with required", schema: `{"type":"object","required":["a","n"],"properties":{"a":{"type":"string","minLength":3},"n":{"type":"integer","minimum":2},"opt":{"type":"string"}}}`,
			want: `{"a":"xxx","n":2}`},
		{name: "array of enum", schema: `{"type":"array","minItems":2,"items":{"enum":["lo","hi"]}}`, want: `["lo","lo"]`},
		{name: "ref and const", schema: `{"$defs":{"v":{"const":7}},"type":"object","required":["v"],"properties":{"v":{"$ref":"#/$defs/v"}}}`,
			want: `{"v":7}`},
		{name: "nullable and exclusive", schema: `{"type":["null","number"],"exclusiveMinimum":0}`, want: `1`},
		{name: "allOf merges", schema: `{"allOf":[{"type":"object","required":["a"],"properties":{"a":{"type":"boolean"}}},{"required":["b"],"properties":{"b":{"type":"null"}}}]}`,
			want: `{"a":false,"b":null}`},
		{name: "no type", schema: `true`, want: `{}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if diff := cmp.Diff(c.want, string(minimalInstance(json.RawMessage(c.schema)))); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestOfflineOutputSchema: the offline model answers a schema with its
// minimal value when its directives say nothing of text, and the
// corrective call (CorrectionPrefix) is driven by the prompt's next
// segment (J2).
func TestOfflineOutputSchema(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","required":["ok"],"properties":{"ok":{"type":"boolean"}}}`)
	user := func(s string) Message { return Message{Role: RoleUser, Content: []Part{{Type: PartText, Text: s}}} }
	asst := func(s string) Message {
		return Message{Role: RoleAssistant, Content: []Part{{Type: PartText, Text: s}}}
	}
	cases := []struct {
		name string
		msgs []Message
		want string
	}{
		{name: "plain prompt", msgs: []Message{user("review this")}, want: `{"ok":false}`},
		{name: "text directive", msgs: []Message{user("/text not json\n/then\n/text still not")}, want: "not json"},
		{name: "corrective call takes the next segment", msgs: []Message{user("/text not json\n/then\n/text still not"),
			asst("not json"), user(CorrectionPrefix + " nope")}, want: "still not"},
		{name: "past the segments", msgs: []Message{user("/text not json"), asst("not json"), user(CorrectionPrefix + " nope")},
			want: `{"ok":false}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, resp, err := collect(t.Context(), Offline{}, &Request{Messages: c.msgs, OutputSchema: schema})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, resp.Message.Text()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// A model without structured output answers through a forced tool
// (Request.OutputTool): the request offers the tool and forces it, and its
// call comes back as the answer's text, unwrapped from "value" when the
// schema is not an object's (J1).
func TestAnthropicOutputTool(t *testing.T) {
	f := newFake(t, "anthropic", "output-tool.http", holdNone)
	req := &Request{Model: "m1", Effort: "high", OutputSchema: json.RawMessage(`{"type":"array","items":{"type":"integer"}}`), OutputTool: true,
		Messages: []Message{{Role: RoleUser, Content: []Part{{Type: PartText, Text: "count"}}}}}
	deltas, resp, err := collect(t.Context(), NewAnthropic(f.settings()), req)
	if err != nil {
		t.Fatal(err)
	}
	got := f.request(t)
	if b := got.Header.Get("anthropic-beta"); b != "" {
		t.Errorf("anthropic-beta = %q, want none", b)
	}
	checkGolden(t, "anthropic", "output-tool.golden.json", got.Body)
	want := &Response{Message: Message{Role: RoleAssistant, Content: []Part{{Type: PartText, Text: "[1, 2]"}}},
		Usage: Usage{Input: 20, Output: 9}, StopReason: StopEnd, RequestID: "req_011CAnthropicOutputTool",
		ResponseID: "msg_01Out", FinishReason: "tool_use"}
	if diff := cmp.Diff(want, resp); diff != "" {
		t.Errorf("response (-want +got):\n%s", diff)
	}
	if last := deltas[len(deltas)-1]; last != (Delta{Kind: DeltaText, Text: "[1, 2]"}) {
		t.Errorf("last delta %+v, want the answer's text", last)
	}
}
