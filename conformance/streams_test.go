package conformance

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// Lines the reader queues, with EOF, after the pump drained and before it
// looked at EOF are still matched: a server whose last lines and EOF came
// in that window passed or failed by timing ("expected line never
// arrived" for lines received).
func TestUntilFeedsLinesQueuedWithEOF(t *testing.T) {
	c, err := parseCase([]byte(`-- case.json --
{"id": "x", "level": "MUST", "requirements": ["P7"]}
-- client --
{"id":"a","method":"hello","params":{}}
-- expect --
{"id":"a","result":{}}
{"id":"b","result":{}}
`))
	if err != nil {
		t.Fatal(err)
	}
	r := newRun(c, Options{})
	r.lineQueue = [][]byte{[]byte(`{"id":"a","result":{}}`)}
	for _, tt := range []struct {
		name string
		done func() bool
	}{
		{name: "waiting for a label", done: func() bool { return false }},
		{name: "waiting for EOF", done: func() bool { return r.eof }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r.lineQueue = [][]byte{[]byte(`{"id":"a","result":{}}`)}
			r.eof, r.streams, r.received, r.answered = false, map[string]*stream{}, nil, map[string]int{}
			for _, e := range joinExpected(r.d, c.expect) {
				s := r.stream(e.stream)
				s.exp = append(s.exp, e)
			}
			calls := 0
			done := func() bool { // called with r.mu held, right after a drain
				calls++
				if calls == 1 { // the reader's last line and EOF land now
					r.lineQueue = append(r.lineQueue, []byte(`{"id":"b","result":{}}`))
					r.eof = true
				}
				return tt.done()
			}
			p := &pump{r: r, ctx: context.Background()}
			if div := p.until("the server to exit", done); div != nil {
				t.Fatalf("until: %+v", div)
			}
			if div := r.finish(&tapeServer{}); div != nil {
				t.Errorf("a line queued with EOF was not matched: %s: %s", div.Step, div.Message)
			}
		})
	}
}

// Joining a run of n deltas costs O(n), not O(n²): ns/delta stays flat
// from 1,000 to 100,000 deltas (a quadratic join made a long streamed
// answer fall behind its case's timeout on a slow machine).
func BenchmarkJoinDeltas(b *testing.B) {
	for _, n := range []int{1000, 100000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			c, err := parseCase([]byte("-- case.json --\n{\"id\": \"x\", \"level\": \"MUST\", \"requirements\": [\"P7\"]}\n-- client --\n{\"id\":\"p\",\"method\":\"hello\",\"params\":{}}\n-- expect --\n{\"type\":\"text\",\"delta\":\"$prefix:word\",\"request\":\"p\"}\n"))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				r := newRun(c, Options{})
				var s *stream
				for _, one := range r.streams {
					s = one // the case has one stream
				}
				for range n {
					if div := r.event(s, "text", map[string]any{"type": "text", "delta": "word ", "request": "p"}, "x"); div != nil {
						b.Fatal(div.Message)
					}
				}
				if div := r.flush(s); div != nil {
					b.Fatal(div.Message)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/delta")
		})
	}
}

// A "?*" line takes any number of lines of its stream that match it, none
// included, until one matches the expectation after it, which stays
// required.
func TestRepeatLines(t *testing.T) {
	c, err := parseCase([]byte(`-- case.json --
{"id": "x", "level": "MUST", "requirements": ["P7"]}
-- client --
{"id":"p","method":"session.prompt","params":{}}
-- expect --
{"type":"tool_start","id":1,"request":"p"}
?* {"type":"$string","request":"p"}
{"type":"turn_end","aborted":true,"request":"p"}
{"id":"p","result":{"aborted":true}}
`))
	if err != nil {
		t.Fatal(err)
	}
	start, end, result := `{"type":"tool_start","id":1,"request":"p"}`, `{"type":"turn_end","aborted":true,"request":"p"}`, `{"id":"p","result":{"aborted":true}}`
	tests := []struct {
		name  string
		lines []string
		pass  bool
	}{
		{name: "none", lines: []string{start, end, result}, pass: true},
		{name: "several", lines: []string{start, `{"type":"tool_end","id":1,"request":"p"}`, `{"type":"usage","request":"p"}`, `{"type":"tool_start","id":2,"request":"p"}`, end, result}, pass: true},
		{name: "the end missing", lines: []string{start, `{"type":"tool_end","id":1,"request":"p"}`, result}},
		{name: "the end different", lines: []string{start, `{"type":"turn_end","aborted":false,"request":"p"}`, result}},
		{name: "before the first line", lines: []string{`{"type":"tool_start","id":2,"request":"p"}`, start, end, result}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			div := feedAll(newRun(c, Options{}), tt.lines)
			if got := div == nil; got != tt.pass {
				t.Errorf("passed %v, want %v (%+v)", got, tt.pass, div)
			}
		})
	}
}

// A line of a type no schema knows is ignored unless the case expects
// that type (P8), on the process stream too and under strict: true, while
// known lines there always count.
func TestUnknownTypesOnTheProcessStream(t *testing.T) {
	tests := []struct {
		name, header string
		lines        []string
		pass         bool
	}{
		{name: "an unknown type", lines: []string{`{"type":"x_future_notice","detail":1}`, `{"id":"a","result":{}}`}, pass: true},
		{name: "an unknown type, strict", header: `, "strict": true`, lines: []string{`{"type":"x_future_notice"}`, `{"id":"a","result":{}}`}, pass: true},
		{name: "a notice", lines: []string{`{"type":"notice","message":"hi"}`, `{"id":"a","result":{}}`}},
		{name: "an unstamped text event", lines: []string{`{"type":"text","delta":"hi"}`, `{"id":"a","result":{}}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := parseCase([]byte(`-- case.json --
{"id": "x", "level": "MUST", "requirements": ["P8"]` + tt.header + `}
-- client --
{"id":"a","method":"hello","params":{}}
-- expect --
{"id":"a","result":{}}
`))
			if err != nil {
				t.Fatal(err)
			}
			div := feedAll(newRun(c, Options{}), tt.lines)
			if got := div == nil; got != tt.pass {
				t.Errorf("passed %v, want %v (%+v)", got, tt.pass, div)
			}
		})
	}
}

// A client may reuse a request id: each request sent with it gets its
// response, and one more response to it is a second answer (F2).
func TestReusedRequestIDs(t *testing.T) {
	c, err := parseCase([]byte(`-- case.json --
{"id": "x", "level": "MUST", "requirements": ["F2"]}
-- client --
{"id":"same","method":"hello","params":{}}
{"id":"same","method":"models.list","params":{}}
-- expect --
{"id":"same","result":{"protocol":2}}
{"id":"same","result":{"models":[]}}
`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		sent  int // requests sent with the id
		lines []string
		pass  bool
	}{
		{name: "one answer each", sent: 2, lines: []string{`{"id":"same","result":{"protocol":2}}`, `{"id":"same","result":{"models":[]}}`}, pass: true},
		{name: "a third answer", sent: 2, lines: []string{`{"id":"same","result":{"protocol":2}}`, `{"id":"same","result":{"models":[]}}`, `{"id":"same","result":{}}`}},
		{name: "two answers to one request", sent: 1, lines: []string{`{"id":"same","result":{"protocol":2}}`, `{"id":"same","result":{"models":[]}}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRun(c, Options{})
			for range tt.sent {
				r.noteRequest([]byte(`{"id":"same","method":"hello","params":{}}`))
			}
			var div *Divergence
			for _, l := range tt.lines {
				if div = r.feed([]byte(l)); div != nil {
					break
				}
			}
			if got := div == nil; got != tt.pass {
				t.Errorf("passed %v, want %v (%+v)", got, tt.pass, div)
			}
		})
	}
}

// ACP (K5): no update of a session comes between the answer to its
// session/prompt and the client's next request about it, but a request
// about it sent before that answer (a second prompt, run once the first
// ended) may have updates after it.
func TestACPUpdatesAfterAPromptAnswer(t *testing.T) {
	c, err := parseCase([]byte(`-- case.json --
{"id": "x", "level": "MUST", "requirements": ["K5"], "dialect": "acp"}
-- client --
{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"S","prompt":[]}}
-- expect --
?* {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"S"}}
{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}
?* {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"S"}}
? {"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}
`))
	if err != nil {
		t.Fatal(err)
	}
	update := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"S","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}}}`
	tests := []struct {
		name    string
		prompts int // session/prompt requests sent before the first answer
		pass    bool
	}{
		{name: "one prompt", prompts: 1},
		{name: "a second prompt sent before the answer", prompts: 2, pass: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRun(c, Options{})
			for i := range tt.prompts {
				r.noteRequest(fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"session/prompt","params":{"sessionId":"S","prompt":[]}}`, i+1))
			}
			var div *Divergence
			for _, l := range []string{update, `{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}`, update} {
				if div = r.feed([]byte(l)); div != nil {
					break
				}
			}
			if got := div == nil; got != tt.pass {
				t.Errorf("passed %v, want %v (%+v)", got, tt.pass, div)
			}
		})
	}
}

// feedAll feeds lines to r as the server's, then finishes the run: the
// first divergence, or nil.
func feedAll(r *run, lines []string) *Divergence {
	for _, l := range lines {
		if div := r.feed([]byte(l)); div != nil {
			return div
		}
	}
	return r.finish(&tapeServer{})
}

// A "~" line is required but out of its stream's order: the first line
// of its stream that matches it meets it, whenever it comes; the lines in
// order still keep theirs, and a line they take is not a float's (the
// answers of a client that reused one id for a prompt and a request that
// raced it: F2, S2).
func TestFloatingLines(t *testing.T) {
	c, err := parseCase([]byte(`-- case.json --
{"id": "x", "level": "MUST", "requirements": ["F2", "S2"]}
-- client --
{"id":"same","method":"hello","params":{}}
{"id":"same","method":"session.prompt","params":{"session":"S","prompt":"hi"}}
{"id":"same","method":"session.messages","params":{"session":"S"}}
-- expect --
{"id":"same","result":{"protocol":2}}
{"type":"turn_start","session":"S","request":"same"}
~ @m {"id":"same"}
{"type":"text","delta":"a","session":"S","request":"same"}
{"type":"text","delta":" b","session":"S","request":"same"}
{"type":"turn_end","aborted":false,"session":"S","request":"same"}
{"id":"same","result":{"output":"a b"}}
`))
	if err != nil {
		t.Fatal(err)
	}
	const (
		hello    = `{"id":"same","result":{"protocol":2}}`
		start    = `{"type":"turn_start","session":"S","request":"same"}`
		a        = `{"type":"text","delta":"a","session":"S","request":"same"}`
		b        = `{"type":"text","delta":" b","session":"S","request":"same"}`
		end      = `{"type":"turn_end","aborted":false,"session":"S","request":"same"}`
		messages = `{"id":"same","result":{"messages":[]}}`
		answer   = `{"id":"same","result":{"output":"a b"}}`
	)
	tests := []struct {
		name  string
		lines []string
		want  string // "" to pass, else a substring of the divergence
	}{
		{name: "as recorded", lines: []string{hello, start, messages, a, b, end, answer}},
		{name: "the raced answer first", lines: []string{messages, hello, start, a, b, end, answer}},
		{name: "the raced answer last", lines: []string{hello, start, a, b, end, answer, messages}},
		{name: "a float never met", lines: []string{hello, start, a, b, end, answer}, want: "never arrived"},
		{name: "a line out of order is still one", lines: []string{hello, a, start, b, end, answer, messages}, want: "does not match"},
		{name: "two answers for the float", lines: []string{hello, start, messages, a, b, end, answer, messages}, want: "answered twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRun(c, Options{})
			for range 3 {
				r.noteRequest([]byte(`{"id":"same","method":"hello","params":{}}`))
			}
			div := feedAll(r, tt.lines)
			switch {
			case tt.want == "" && div != nil:
				t.Fatalf("failed: %s: %s", div.Step, div.Message)
			case tt.want != "" && (div == nil || !strings.Contains(div.Message, tt.want)):
				t.Fatalf("divergence %+v, want one saying %q", div, tt.want)
			}
			if tt.want == "" && r.labelAt[slices.Index(tt.lines, messages)] != "m" {
				t.Errorf("@m met by %v, want by the session.messages answer", r.labelAt)
			}
		})
	}
}

// A "~" line takes a line that only a "?*" run before the lines in order
// would: pi's catch-all run took the raced answer of a steer that came
// before the prompt's own answer, which then never met its line.
func TestFloatBeforeRepeat(t *testing.T) {
	c, err := parseCase([]byte(`-- case.json --
{"id": "x", "level": "MUST", "requirements": ["F2"], "dialect": "pi-rpc"}
-- client --
{"type":"prompt","message":"hi","id":"c1"}
{"type":"steer","message":"more","id":"c2"}
-- expect --
?* {"type":"$string"}
{"type":"response","id":"c1","command":"prompt","success":true}
~ {"type":"response","id":"c2","command":"steer"}
{"type":"agent_settled","aborted":false}
`))
	if err != nil {
		t.Fatal(err)
	}
	r := newRun(c, Options{})
	r.noteRequest([]byte(`{"type":"prompt","message":"hi","id":"c1"}`))
	r.noteRequest([]byte(`{"type":"steer","message":"more","id":"c2"}`))
	if div := feedAll(r, []string{`{"type":"agent_start"}`, `{"type":"response","id":"c2","command":"steer","success":true}`,
		`{"type":"response","id":"c1","command":"prompt","success":true}`, `{"type":"agent_settled","aborted":false}`}); div != nil {
		t.Fatalf("failed: %s: %s", div.Step, div.Message)
	}
}

// A label on a delta run's expectation after a "?*" line is met once the
// run's text so far matches it, as it is when the label's line comes
// next: a client waiting on the first words of an answer (to send a line
// that races the rest) waited for the whole answer, and its line then
// landed after the work instead of in it.
func TestLabelAfterRepeatMetByDeltasSoFar(t *testing.T) {
	c, err := parseCase([]byte(`-- case.json --
{"id": "x", "level": "MUST", "requirements": ["K5"], "dialect": "acp"}
-- client --
{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"S","prompt":[]}}
#wait w
{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"S","prompt":[]}}
-- expect --
?* {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"S"}}
@w {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"S","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"$prefix:w1"}}}}
{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}
`))
	if err != nil {
		t.Fatal(err)
	}
	r := newRun(c, Options{})
	r.noteRequest([]byte(`{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"S","prompt":[]}}`))
	for _, l := range []string{
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"S","update":{"sessionUpdate":"session_info_update","title":"t"}}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"S","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"w1"}}}}`,
	} {
		if div := r.feed([]byte(l)); div != nil {
			t.Fatalf("feed: %s: %s", div.Step, div.Message)
		}
	}
	if !r.labelsDone([]string{"w"}) {
		t.Error("@w not met by the first chunk of its run")
	}
}
