package model

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/e-agent/e/internal/jsonscan"
	"github.com/e-agent/e/internal/providermock"
)

func text(raw []byte) string {
	var b strings.Builder
	jsonscan.Unquote(&b, raw)
	return b.String()
}

// The delta scanners accept only what encoding/json decodes, and read it
// the same: fuzzed events of each API.
func FuzzDeltaScan(f *testing.F) {
	for _, api := range providermock.APIs {
		head, deltas, tail := providermock.Body(api, 2)
		for _, ev := range [][]byte{head, deltas[0], tail} {
			for _, line := range strings.Split(string(ev), "\n") {
				if d, ok := strings.CutPrefix(line, "data: "); ok {
					f.Add(d)
				}
			}
		}
	}
	for _, s := range []string{
		`{"type":"response.output_text.delta","delta":"a\u00e9\ud83d\ude00\ud800x\"\\\/\b\f\n\r\t<>&\u2028"}`,
		`{"type":"response.output_text.delta","Delta":"x","delta":"y"}`,
		`{"type":"response.output_text.delta","delta":"x","delta":"y","output_index":2}`,
		`{"type":"response.reasoning_summary_text.delta","delta":"x","summary_index":1e1}`,
		`{"type":"content_block_delta","index":3,"delta":{"type":"thinking_delta","thinking":"\xff\xfe"}}`,
		`{"choices":[{"delta":{"content":"x","role":"assistant"},"finish_reason":null,"index":0}],"usage":null}`,
		`{"choices":[{"delta":{"content":"x"}},{"delta":{}}]}`,
		` {"type" : "content_block_delta" , "delta" : { "type":"text_delta" , "text" : "" } } `,
		// Nested members read in the same pass (jsonscan.Member.In).
		`{"choices":[]}`, `{"choices":[{"delta":null}]}`, `{"choices":{"delta":{"content":"x"}}}`,
		`{"choices":[ {"delta":{"content":"x"},"delta":{"content":"y"}} ]}`, `{"choices":[{"delta":{"content":"x"}}],"choices":[{"delta":{}}]}`,
		`{"choices":[{"Delta":{"content":"x"},"delta":{"content":"y"}}]}`, `{"choices":[{"delta":{"CONTENT":"x"}}]}`,
		`{"type":"content_block_delta","index":0,"delta":null}`, `{"type":"content_block_delta","index":0,"delta":[{"type":"text_delta","text":"x"}]}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x","Text":"y"}}`,
		// Responses events read from the members scan kept.
		`{"type":"response.output_item.done","output_index":1,"item":{"type":"function_call","call_id":"c\u00e9","name":"f","arguments":"{}","content":[{"text":"long"}]}}`,
		`{"type":"response.output_item.done","item":{"type":"reasoning","encrypted_content":"x","Type":"y"}}`,
		`{"type":"response.completed","response":{"usage":{"input_tokens":3,"output_tokens":4,"input_tokens_details":{"cached_tokens":1}},"output":[]}}`,
		`{"type":"response.incomplete","response":{"incomplete_details":{"reason":"max_output_tokens"},"usage":null}}`,
		`{"type":"response.failed","response":{"error":{"code":"x","message":"m"},"Usage":{}}}`,
		`{"type":"response.completed","response":{"usage":{"input_tokens":1.5}}}`, `{"type":"x","item":null}`, `{"type":5}`,
		// Keys that encoding/json folds to a field: non-ASCII of another
		// length (U+017F, U+212A), case variants; unknown keys of a field's length.
		`{"type":"response.reasoning_summary_text.delta","delta":"x","ſummary_index":1}`, `{"type":"response.output_text.delta","delta":"x","Response":{}}`,
		`{"type":"response.output_text.delta","delta":"x","logprobs":[],"K":1,"DELTA":"y","":0}`,
		`{"choices":[{"delta":{"content":"x","Tool_Calls":[]}}],"USAGE":null}`, `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x","thinKing":"y"}}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		b := []byte(data)
		var r responsesDelta
		if r.scan(rawEvent{Data: b, Event: []byte("response.output_text.delta")}) {
			var e responsesEvent
			if err := json.Unmarshal(b, &e); err != nil {
				t.Fatalf("responses: scanned %q, which encoding/json rejects: %v", data, err)
			}
			if e.OutputIndex != r.output || e.SummaryIndex != r.summary || e.Delta != text(r.delta) {
				t.Fatalf("responses: %q read as %d %d %q, encoding/json reads %d %d %q", data, r.output, r.summary, text(r.delta), e.OutputIndex, e.SummaryIndex, e.Delta)
			}
			if e.Type != "" && e.Type != "response.output_text.delta" && e.Type != "response.refusal.delta" && r.kind == PartText {
				t.Fatalf("responses: %q read as a text delta", data)
			}
		}
		if !r.scan(rawEvent{Data: b}) && r.valid {
			// Any other event: what event reads of it is what encoding/json
			// decodes, and it reads nothing encoding/json rejects.
			var got, want responsesEvent
			if r.event(&got) {
				if err := json.Unmarshal(b, &want); err != nil {
					t.Fatalf("responses: read %q, which encoding/json rejects: %v", data, err)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Fatalf("responses: %q read (-encoding/json +event):\n%s", data, diff)
				}
			}
		}
		var a anthropicDelta
		if a.scan(b) {
			var e anthropicEvent
			if err := json.Unmarshal(b, &e); err != nil {
				t.Fatalf("anthropic: scanned %q, which encoding/json rejects: %v", data, err)
			}
			got := text(a.text)
			if e.Type != "content_block_delta" || e.Delta == nil || e.Index != a.index ||
				e.Delta.Text+e.Delta.Thinking != got || e.Delta.Signature != "" || e.Delta.PartialJSON != "" {
				t.Fatalf("anthropic: %q read as %d %q, encoding/json reads %+v", data, a.index, got, e)
			}
		}
		var c chatDelta
		if c.scan(b) {
			var ch chatChunk
			if err := json.Unmarshal(b, &ch); err != nil {
				t.Fatalf("chat: scanned %q, which encoding/json rejects: %v", data, err)
			}
			got := ""
			if jsonscan.IsString(c.content) {
				got = text(c.content)
			}
			if len(ch.Choices) != 1 || ch.Usage != nil || len(ch.Error) > 0 || ch.Choices[0].FinishReason != "" {
				t.Fatalf("chat: %q read as a plain content chunk, encoding/json reads %+v", data, ch)
			}
			d := ch.Choices[0].Delta
			if d.Content != got || d.Reasoning != "" || d.ReasoningContent != "" || len(d.ToolCalls) > 0 {
				t.Fatalf("chat: %q read as %q, encoding/json reads %+v", data, got, d)
			}
		}
	})
}

// BenchmarkDeltaScan is the fast path's cost per delta event of each API,
// without the stream around it.
func BenchmarkDeltaScan(b *testing.B) {
	for _, api := range providermock.APIs {
		_, deltas, _ := providermock.Body(api, 1)
		_, data, _ := strings.Cut(string(deltas[0]), "data: ")
		ev := rawEvent{Data: []byte(strings.TrimSpace(data)), Event: []byte("response.output_text.delta")}
		b.Run(api, func(b *testing.B) {
			var r responsesDelta
			var a anthropicDelta
			var c chatDelta
			for b.Loop() {
				var ok bool
				switch api {
				case "openai-responses":
					ok = r.scan(ev)
				case "anthropic":
					ok = a.scan(ev.Data)
				default:
					ok = c.scan(ev.Data)
				}
				if !ok {
					b.Fatalf("%s: %q not scanned", api, ev.Data)
				}
			}
		})
	}
}

// BenchmarkResponsesTail is the cost per byte of the events after the
// deltas of Responses answers of 500 and 50,000 deltas (done events that
// repeat the text, the completed response), read as Stream reads them:
// flat when nothing grows faster than the text.
func BenchmarkResponsesTail(b *testing.B) {
	for _, n := range []int{500, 50000} {
		_, _, tail := providermock.Body("openai-responses", n)
		var events []rawEvent
		for _, ev := range strings.Split(strings.TrimSpace(string(tail)), "\n\n") {
			name, data, _ := strings.Cut(ev, "\ndata: ")
			events = append(events, rawEvent{Event: []byte(strings.TrimPrefix(name, "event: ")), Data: []byte(data)})
		}
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			b.SetBytes(int64(len(tail)))
			var fast responsesDelta
			for b.Loop() {
				for _, ev := range events {
					if fast.scan(ev) || fast.valid && repeatsText(string(fast.typ)) {
						continue
					}
					var e responsesEvent
					if !fast.valid || !fast.event(&e) {
						if err := json.Unmarshal(ev.Data, &e); err != nil {
							b.Fatal(err)
						}
					}
				}
			}
		})
	}
}
