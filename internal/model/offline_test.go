package model

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/google/go-cmp/cmp"
)

var _ Provider = Offline{}

// turn returns the messages of a turn whose prompt is text, after `calls`
// model calls that each asked for a tool.
func turn(text string, calls int) []Message {
	msgs := []Message{{Role: RoleUser, Content: []Part{{Type: PartText, Text: text}}}}
	for i := range calls {
		msgs = append(msgs,
			Message{Role: RoleAssistant, Content: []Part{{Type: PartToolCall, ID: "c", Name: "ls", Arguments: json.RawMessage(`{}`)}}},
			Message{Role: RoleTool, Content: []Part{{Type: PartToolResult, CallID: "c", Text: strings.Repeat("x", i)}}})
	}
	return msgs
}

// stream runs one offline call and returns what it emitted.
func stream(ctx context.Context, req *Request) ([]Delta, *Response, error) {
	var deltas []Delta
	resp, err := Offline{}.Stream(ctx, req, func(d Delta) { deltas = append(deltas, d) })
	return deltas, resp, err
}

func textDeltas(words ...string) []Delta {
	var ds []Delta
	for _, w := range words {
		ds = append(ds, Delta{Kind: DeltaText, Text: w})
	}
	return ds
}

func textMessage(s string) Message {
	return Message{Role: RoleAssistant, Content: []Part{{Type: PartText, Text: s}}}
}

func TestOfflineReplies(t *testing.T) {
	tests := []struct {
		name       string
		prompt     string
		calls      int // model calls earlier in the turn
		wantDeltas []Delta
		wantMsg    Message
		wantStop   string
	}{
		{
			name:       "text words keep their spaces",
			prompt:     "/text hello  big\tworld",
			wantDeltas: textDeltas("hello", "  big", "\tworld"),
			wantMsg:    textMessage("hello  big\tworld"),
			wantStop:   StopEnd,
		},
		{
			name:       "two text lines join with a newline",
			prompt:     "/text one two\n/text three",
			wantDeltas: textDeltas("one", " two", "\nthree"),
			wantMsg:    textMessage("one two\nthree"),
			wantStop:   StopEnd,
		},
		{
			name:   "reasoning comes first",
			prompt: "/text answer\n/think let me see",
			wantDeltas: []Delta{{Kind: DeltaReasoning, Text: "let"}, {Kind: DeltaReasoning, Text: " me"},
				{Kind: DeltaReasoning, Text: " see"}, {Kind: DeltaText, Text: "answer"}},
			wantMsg: Message{Role: RoleAssistant, Content: []Part{{Type: PartReasoning, Text: "let me see"},
				{Type: PartText, Text: "answer"}}},
			wantStop: StopEnd,
		},
		{
			name:       "non-directive lines are ignored beside directives",
			prompt:     "please answer\n/text ok\r\nthanks",
			wantDeltas: textDeltas("ok"),
			wantMsg:    textMessage("ok"),
			wantStop:   StopEnd,
		},
		{
			name:       "plain text",
			prompt:     "what does   this\nrepo do?",
			wantDeltas: textDeltas("e/offline:", " received", " 5", " words:", ` "what`, " does", " this", " repo", ` do?"`),
			wantMsg:    textMessage(`e/offline: received 5 words: "what does this repo do?"`),
			wantStop:   StopEnd,
		},
		{
			name:       "plain text quotes its first 60 characters",
			prompt:     strings.Repeat("é", 70),
			wantDeltas: textDeltas(`e/offline:`, " received", " 1", " words:", ` "`+strings.Repeat("é", 60)+`"`),
			wantMsg:    textMessage(`e/offline: received 1 words: "` + strings.Repeat("é", 60) + `"`),
			wantStop:   StopEnd,
		},
		{
			name:       "unknown slash words are plain text",
			prompt:     "/texts a\n/foo",
			wantDeltas: textDeltas("e/offline:", " received", " 3", " words:", ` "/texts`, " a", ` /foo"`),
			wantMsg:    textMessage(`e/offline: received 3 words: "/texts a /foo"`),
			wantStop:   StopEnd,
		},
		{
			name:       "plain text is done after one call",
			prompt:     "hi",
			calls:      1,
			wantDeltas: textDeltas("done."),
			wantMsg:    textMessage("done."),
			wantStop:   StopEnd,
		},
		{
			name:       "long",
			prompt:     "/long 5",
			wantDeltas: textDeltas("w1", " w2", " w3", " w4", " w5"),
			wantMsg:    textMessage("w1 w2 w3 w4 w5"),
			wantStop:   StopEnd,
		},
		{
			name:       "an empty segment answers nothing",
			prompt:     "/then\n/text second",
			wantMsg:    Message{Role: RoleAssistant, Content: []Part{}},
			wantDeltas: nil,
			wantStop:   StopEnd,
		},
		{
			name:       "segment 1 drives call 1",
			prompt:     "/then\n/text second",
			calls:      1,
			wantDeltas: textDeltas("second"),
			wantMsg:    textMessage("second"),
			wantStop:   StopEnd,
		},
		{
			name: "tool batch",
			// The split of the arguments backs off to a rune boundary.
			prompt: "/text reading\n/tool read {\"a\":\"ééé\"}\n/tool ls {}\n/then\n/tool bash {\"command\":\"go test\"}\n/then\n/text ok",
			wantDeltas: []Delta{{Kind: DeltaText, Text: "reading"},
				{Kind: DeltaToolCall, Index: 0, ID: "call_0_0", Name: "read", Text: `{"a":"`},
				{Kind: DeltaToolCall, Index: 0, Text: `ééé"}`},
				{Kind: DeltaToolCall, Index: 1, ID: "call_0_1", Name: "ls", Text: `{`},
				{Kind: DeltaToolCall, Index: 1, Text: `}`}},
			wantMsg: Message{Role: RoleAssistant, Content: []Part{{Type: PartText, Text: "reading"},
				{Type: PartToolCall, ID: "call_0_0", Name: "read", Arguments: json.RawMessage(`{"a":"ééé"}`)},
				{Type: PartToolCall, ID: "call_0_1", Name: "ls", Arguments: json.RawMessage(`{}`)}}},
			wantStop: StopToolUse,
		},
		{
			name:   "tool batch of the second segment",
			prompt: "/tool read {\"path\": \"é.go\"}\n/tool ls {}\n/then\n/tool bash {\"command\":\"go test\"}\n/then\n/text ok",
			calls:  1,
			wantDeltas: []Delta{{Kind: DeltaToolCall, Index: 0, ID: "call_1_0", Name: "bash", Text: `{"command"`},
				{Kind: DeltaToolCall, Index: 0, Text: `:"go test"}`}},
			wantMsg: Message{Role: RoleAssistant, Content: []Part{
				{Type: PartToolCall, ID: "call_1_0", Name: "bash", Arguments: json.RawMessage(`{"command":"go test"}`)}}},
			wantStop: StopToolUse,
		},
		{
			name:       "third segment",
			prompt:     "/tool read {\"path\": \"é.go\"}\n/then\n/tool bash {}\n/then\n/text ok",
			calls:      2,
			wantDeltas: textDeltas("ok"),
			wantMsg:    textMessage("ok"),
			wantStop:   StopEnd,
		},
		{
			name:       "past the last segment",
			prompt:     "/tool read {}\n/then\n/tool bash {}",
			calls:      2,
			wantDeltas: textDeltas("done."),
			wantMsg:    textMessage("done."),
			wantStop:   StopEnd,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			deltas, resp, err := stream(t.Context(), &Request{Model: "offline", Messages: turn(tt.prompt, tt.calls)})
			if err != nil {
				t.Fatalf("Stream: %v", err)
			}
			if diff := cmp.Diff(tt.wantDeltas, deltas); diff != "" {
				t.Errorf("deltas (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantMsg, resp.Message); diff != "" {
				t.Errorf("message (-want +got):\n%s", diff)
			}
			if resp.StopReason != tt.wantStop {
				t.Errorf("stop reason %q, want %q", resp.StopReason, tt.wantStop)
			}
		})
	}
}

// The newest user message with text drives the turn: a steered message
// restarts the segments, an image-only message does not.
func TestOfflineNewestPrompt(t *testing.T) {
	msgs := append(turn("/text old", 1),
		Message{Role: RoleUser, Content: []Part{{Type: PartText, Text: "/text new\n/then\n/text newer"}}},
		Message{Role: RoleAssistant, Content: []Part{{Type: PartText, Text: "new"}}},
		Message{Role: RoleUser, Content: []Part{{Type: PartImage, MediaType: "image/png", Data: []byte{1}}}})
	_, resp, err := stream(t.Context(), &Request{Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(textMessage("newer"), resp.Message); diff != "" {
		t.Errorf("message (-want +got):\n%s", diff)
	}

	_, resp, err = stream(t.Context(), &Request{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := resp.Message.Text(), `e/offline: received 0 words: ""`; got != want {
		t.Errorf("reply to no prompt %q, want %q", got, want)
	}
}

func TestOfflineErrors(t *testing.T) {
	retryable := &Error{Provider: "e", Model: OfflineID, Stage: "stream", Retryable: true, Status: 503,
		Type: "offline_retryable", Message: "simulated retryable error"}
	tests := []struct {
		name       string
		prompt     string
		attempt    int
		wantErr    *Error // nil: success
		wantDeltas []Delta
	}{
		{name: "retryable fails attempt 0", prompt: "/error retryable", wantErr: retryable},
		{name: "retryable succeeds on attempt 1", prompt: "/error retryable\n/text recovered", attempt: 1,
			wantDeltas: textDeltas("recovered")},
		{name: "persistent fails attempt 0", prompt: "/error persistent overloaded, try later",
			wantErr: &Error{Provider: "e", Model: OfflineID, Stage: "stream", Retryable: true, Status: 503,
				Type: "offline_retryable", Message: "overloaded, try later"}},
		{name: "persistent fails attempt 5", prompt: "/error persistent", attempt: 5,
			wantErr: &Error{Provider: "e", Model: OfflineID, Stage: "stream", Retryable: true, Status: 503,
				Type: "offline_retryable", Message: "simulated persistent error"}},
		{name: "fatal", prompt: "/error fatal bad request", attempt: 1,
			wantErr: &Error{Provider: "e", Model: OfflineID, Stage: "stream", Status: 400,
				Type: "offline_fatal", Message: "bad request"}},
		{name: "failure after partial output", prompt: "/text partial answer\n/error retryable",
			wantErr: retryable, wantDeltas: textDeltas("partial", " answer")},
		{name: "error of a later segment", prompt: "/text first\n/then\n/error retryable",
			wantDeltas: textDeltas("first")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			deltas, resp, err := stream(t.Context(), &Request{Messages: turn(tt.prompt, 0), Attempt: tt.attempt})
			if diff := cmp.Diff(tt.wantDeltas, deltas); diff != "" {
				t.Errorf("deltas (-want +got):\n%s", diff)
			}
			if tt.wantErr == nil {
				if err != nil || resp == nil {
					t.Fatalf("Stream = %v, %v; want a response", resp, err)
				}
				return
			}
			var got *Error
			if !errors.As(err, &got) {
				t.Fatalf("Stream error %v (%T), want *Error", err, err)
			}
			if diff := cmp.Diff(tt.wantErr, got); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			// Beside the error: what was emitted (Provider), or nothing.
			var streamed string
			for _, d := range deltas {
				streamed += d.Text
			}
			if (resp == nil) != (streamed == "") || resp != nil && resp.Message.Text() != streamed {
				t.Errorf("response %+v beside the error, want one holding %q", resp, streamed)
			}
		})
	}
}

func TestOfflineMalformed(t *testing.T) {
	tests := []struct {
		name   string
		prompt string
		want   string // the error message
	}{
		{"bad json", "/text hi\n/tool x {bad", `malformed directive on line 2 "/tool x {bad": arguments are not a JSON object`},
		{"json not an object", "/tool x [1]", `malformed directive on line 1 "/tool x [1]": arguments are not a JSON object`},
		{"json null", "/tool x null", `malformed directive on line 1 "/tool x null": arguments are not a JSON object`},
		{"tool without json", "/tool x", `malformed directive on line 1 "/tool x": want /tool NAME JSON`},
		{"empty text", "/text", `malformed directive on line 1 "/text": /text needs words`},
		{"empty think", "  /think  ", `malformed directive on line 1 "/think": /think needs words`},
		{"bad delay", "/delay soon", `malformed directive on line 1 "/delay soon": want /delay MS with MS from 0 to 3600000`},
		{"second delay", "/delay 1\n/delay 2", `malformed directive on line 2 "/delay 2": a second /delay in one segment`},
		{"zero long", "/long 0", `malformed directive on line 1 "/long 0": want /long N with N from 1 to 1000000`},
		{"bad error kind", "/error sometimes", `malformed directive on line 1 "/error sometimes": want /error retryable|persistent|fatal [MESSAGE]`},
		{"second error", "/error fatal\n/error fatal", `malformed directive on line 2 "/error fatal": a second /error in one segment`},
		{"short usage", "/usage 1 2", `malformed directive on line 1 "/usage 1 2": want /usage INPUT OUTPUT CACHE_READ CACHE_WRITE_5M CACHE_WRITE_1H [REASONING], non-negative integers, REASONING at most OUTPUT`},
		{"reasoning over output", "/usage 1 2 3 4 5 3", `malformed directive on line 1 "/usage 1 2 3 4 5 3": want /usage INPUT OUTPUT CACHE_READ CACHE_WRITE_5M CACHE_WRITE_1H [REASONING], non-negative integers, REASONING at most OUTPUT`},
		{"negative usage", "/usage 1 2 3 4 -5", `malformed directive on line 1 "/usage 1 2 3 4 -5": want /usage INPUT OUTPUT CACHE_READ CACHE_WRITE_5M CACHE_WRITE_1H [REASONING], non-negative integers, REASONING at most OUTPUT`},
		{"then with words", "/text a\n/then b", `malformed directive on line 2 "/then b": /then takes no arguments`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A malformed line fails every call of the turn, even one whose segment is fine.
			for calls := range 2 {
				_, _, err := stream(t.Context(), &Request{Messages: turn(tt.prompt, calls)})
				var got *Error
				if !errors.As(err, &got) {
					t.Fatalf("call %d: Stream error %v, want *Error", calls, err)
				}
				if got.Retryable || got.Message != tt.want || got.Type != "offline_directive" {
					t.Errorf("call %d: error %+v, want fatal offline_directive %q", calls, got, tt.want)
				}
			}
		})
	}
}

// U1: the five categories are reported as given, disjoint.
func TestOfflineUsage(t *testing.T) {
	tests := []struct {
		name string
		req  *Request
		want Usage
	}{
		{
			name: "explicit",
			req:  &Request{Messages: turn("/text a b\n/usage 1200 80 300 40 5", 0)},
			want: Usage{Input: 1200, Output: 80, CacheRead: 300, CacheWrite5m: 40, CacheWrite1h: 5},
		},
		{
			name: "explicit with reasoning",
			req:  &Request{Messages: turn("/text a\n/usage 10 8 0 0 0 6", 0)},
			want: Usage{Input: 10, Output: 8, Reasoning: 6},
		},
		{
			name: "explicit in the second segment",
			req:  &Request{Messages: turn("/usage 1 1 1 1 1\n/then\n/text x\n/usage 7 6 5 4 3", 1)},
			want: Usage{Input: 7, Output: 6, CacheRead: 5, CacheWrite5m: 4, CacheWrite1h: 3},
		},
		{
			// 7 words of prompt; 3 text words + 2 reasoning words.
			name: "default counts words",
			req:  &Request{Messages: turn("/text a b c\n/think d e", 0)},
			want: Usage{Input: 7, Output: 5},
		},
		{
			// system 100 + prompt 3 + arguments 1 + tool output 0 = 104;
			// "done." is 1 word.
			name: "default counts system, arguments and results",
			req:  &Request{System: "be brief", Messages: turn("/tool ls {}\n", 1)},
			want: Usage{Input: 104, Output: 1},
		},
		{
			// The system prompt holds the cwd, the date and more: any
			// system prompt counts 100, and a path one word, so that a
			// recorded session replays in another temp dir (issue 10).
			name: "default ignores what the system prompt and paths say",
			req:  &Request{System: "you work in /tmp/e-conformance-123456789/cwd on 2026-12-01, with tools: read, write, edit", Messages: turn("/text see /tmp/e-conformance-1/cwd/a.txt\n", 0)},
			want: Usage{Input: 103, Output: 2},
		},
		{
			// Each tool call counts one output token.
			name: "default counts tool calls",
			req:  &Request{Messages: turn("/tool ls {}\n/tool ls {}", 0)},
			want: Usage{Input: 6, Output: 2},
		},
		{
			name: "default input is at least 1",
			req:  &Request{},
			want: Usage{Input: 1, Output: 5},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, resp, err := stream(t.Context(), tt.req)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, resp.Usage); diff != "" {
				t.Errorf("usage (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOfflineCompaction(t *testing.T) {
	msgs := []Message{
		{Role: RoleUser, Content: []Part{{Type: PartText, Text: "/text hi\n/then\n/tool ls {}"}}},
		textMessage("hi"),
		{Role: RoleUser, Content: []Part{{Type: PartText, Text: strings.Repeat("long ", 100)}}},
	}
	_, resp, err := stream(t.Context(), &Request{System: "Summarize the conversation so far.", Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	want := "Summary of 3 messages: " + ("/text hi /then /tool ls {} " + strings.Repeat("long ", 100))[:200]
	if diff := cmp.Diff(textMessage(want), resp.Message); diff != "" {
		t.Errorf("summary (-want +got):\n%s", diff)
	}
}

func TestOfflineDelay(t *testing.T) {
	const delay = 20 * time.Millisecond
	start := time.Now()
	deltas, _, err := stream(t.Context(), &Request{Messages: turn("/delay 20\n/text a b", 0)})
	if err != nil {
		t.Fatal(err)
	}
	if got := time.Since(start); got < 2*delay {
		t.Errorf("two delayed deltas took %v, want at least %v", got, 2*delay)
	}
	if len(deltas) != 2 {
		t.Errorf("got %d deltas, want 2", len(deltas))
	}
}

func TestOfflineCancel(t *testing.T) {
	tests := []struct {
		name       string
		prompt     string
		wantDeltas int
	}{
		{name: "while waiting", prompt: "/delay 3600000\n/text never"},
		{name: "while streaming", prompt: "/long 1000", wantDeltas: 1},
		{name: "before failing", prompt: "/delay 3600000\n/error fatal"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			var deltas int
			var text string
			done := make(chan error, 1)
			go func() {
				// The first delta cancels; a delayed call is cancelled below.
				resp, err := Offline{}.Stream(ctx, &Request{Messages: turn(tt.prompt, 0)}, func(d Delta) {
					deltas++
					text += d.Text
					cancel()
				})
				// Beside the error: what was streamed (Provider).
				if (resp == nil) != (text == "") || resp != nil && resp.Message.Text() != text {
					t.Errorf("response %+v beside the error, want one holding %q", resp, text)
				}
				done <- err
			}()
			if tt.wantDeltas == 0 {
				cancel()
			}
			select {
			case err := <-done:
				if !errors.Is(err, context.Canceled) {
					t.Errorf("Stream error %v, want context.Canceled", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Stream did not return after cancel")
			}
			if deltas != tt.wantDeltas {
				t.Errorf("got %d deltas, want %d", deltas, tt.wantDeltas)
			}
		})
	}
}

func BenchmarkOfflineLong(b *testing.B) {
	req := &Request{Messages: turn("/long 10000", 0)}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		var n int
		if _, err := (Offline{}).Stream(ctx, req, func(Delta) { n++ }); err != nil || n != 10000 {
			b.Fatalf("Stream: %d deltas, %v", n, err)
		}
	}
}

// streamText gives the words of its lines joined by LF, as nextWord
// splits the joined text, and the joined text, the /long lines spelled
// out; its buffer is grown once to the exact size.
func TestStreamText(t *testing.T) {
	long := func(n int) string {
		var words []string
		for i := 1; i <= n; i++ {
			words = append(words, "w"+strconv.Itoa(i))
		}
		return strings.Join(words, " ")
	}
	tests := []struct {
		name  string
		lines []textLine
	}{
		{name: "long 1", lines: []textLine{{long: 1}}},
		{name: "long 9", lines: []textLine{{long: 9}}},
		{name: "long 10", lines: []textLine{{long: 10}}},
		{name: "long 11", lines: []textLine{{long: 11}}},
		{name: "long 99", lines: []textLine{{long: 99}}},
		{name: "long 100", lines: []textLine{{long: 100}}},
		{name: "long 1001", lines: []textLine{{long: 1001}}},
		{name: "text", lines: []textLine{{text: "a  b\tc"}}},
		{name: "text, long, text", lines: []textLine{{text: "x y"}, {long: 12}, {text: "é\u00a0z"}}},
		{name: "long, long", lines: []textLine{{long: 3}, {long: 2}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var parts []string
			size := len(tt.lines) - 1
			for _, l := range tt.lines {
				if l.long > 0 {
					parts = append(parts, long(l.long))
				} else {
					parts = append(parts, l.text)
				}
				size += l.size()
			}
			want := strings.Join(parts, "\n")
			var wantWords, gotWords []string
			eachWord(want, func(w string) error { wantWords = append(wantWords, w); return nil })
			got, err := streamText(tt.lines, func(w string) error { gotWords = append(gotWords, w); return nil })
			if err != nil {
				t.Fatal(err)
			}
			if got != want || size != len(want) {
				t.Errorf("text …%q (size %d), want …%q (%d bytes)", got[max(0, len(got)-20):], size, want[max(0, len(want)-20):], len(want))
			}
			if diff := cmp.Diff(wantWords, gotWords); diff != "" {
				t.Errorf("words (-want +got):\n%s", diff)
			}
		})
	}
}

// The words of a text concatenate back to it, each a run of non-space
// characters (Unicode spaces included) with the space before it.
func FuzzNextWord(f *testing.F) {
	for _, s := range []string{"", "a", " a b", "a\tb\nc", "  é\u00a0ü\u2003x ", "\xff \xfe", "w1 w2 w3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var got []string
		for rest := s; rest != ""; {
			n := nextWord(rest)
			if n == 0 {
				t.Fatalf("nextWord(%q) = 0", rest)
			}
			got = append(got, rest[:n])
			rest = rest[n:]
		}
		if strings.Join(got, "") != s {
			t.Fatalf("words %q do not make %q", got, s)
		}
		for i, w := range got {
			f := strings.Fields(w)
			if len(f) > 1 || i < len(got)-1 && len(f) != 1 || i > 0 && strings.TrimLeftFunc(w, unicode.IsSpace) == w {
				t.Fatalf("word %d of %q is %q", i, s, w)
			}
		}
	})
}

// callLog is a ReadHook that logs its calls among the deltas.
type callLog struct{ log []string }

func (h *callLog) Hold()    { h.log = append(h.log, "hold") }
func (h *callLog) Release() { h.log = append(h.log, "release") }

// The offline model streams as a provider whose first read brings the
// first delta and later reads the rest: its first event goes out alone,
// the others wait in a Hold until the call ends or waits out a /delay (S2,
// issue 15: a burst costs a write per pipeful, not a wake-up per line).
func TestOfflineReadHook(t *testing.T) {
	tests := []struct {
		name, prompt string
		want         []string
	}{{
		name:   "words after the first are held until the end",
		prompt: "/text a b c",
		want:   []string{"a", "hold", " b", " c", "release"},
	}, {
		name:   "a delay releases what is held before it waits",
		prompt: "/delay 1\n/text a b c",
		want:   []string{"a", "hold", "release", "hold", " b", "release", "hold", " c", "release"},
	}, {
		name:   "reasoning and text are one stream",
		prompt: "/think hm\n/text ok\n/tool ls {}",
		want:   []string{"hm", "hold", "ok", "{", "}", "release"},
	}, {
		name:   "a call that emits nothing holds nothing",
		prompt: "/error overloaded",
		want:   nil,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &callLog{}
			ctx := WithReadHook(context.Background(), h)
			Offline{}.Stream(ctx, &Request{Messages: turn(tt.prompt, 0)}, func(d Delta) { h.log = append(h.log, d.Text) })
			if diff := cmp.Diff(tt.want, h.log); diff != "" {
				t.Errorf("hook calls among deltas (-want +got):\n%s", diff)
			}
		})
	}
}

// countFields counts what strings.Fields splits, whitespace of every kind
// and invalid UTF-8 included; the seeds run as a test.
func FuzzCountFields(f *testing.F) {
	for _, s := range []string{"", " ", "a", " a b  c ", "\t\n\v\f\r x", "a\u00a0b\u0085c\u2028d\u3000", "\xff \xc3", "é ü", "\x00\x1c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := countFields(s), len(strings.Fields(s)); got != want {
			t.Errorf("countFields(%q) = %d, want %d", s, got, want)
		}
	})
}
