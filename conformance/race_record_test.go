package conformance

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A client line sent while work runs in its scope races it: its answer
// keeps only its framing and placeholders, what it puts into the work
// (steered, pi's queue_update) is left out, and a line that can change
// the work (a steer) cuts the text streaming then, opens a stop window on
// the work, loosens the texts of its end and taints the session's later
// answers and counts. The same lines
// sent while nothing runs stay exact.
func TestRecordRaces(t *testing.T) {
	tests := []struct {
		name, dialect string
		log           []recorded
		want          string
	}{
		{name: "e rpc info while idle stays exact", log: []recorded{
			{client: true, line: `{"id":"i","method":"session.info","params":{"session":"S1"}}`},
			{line: `{"id":"i","result":{"session":"S1","messages":2,"running":false}}`},
		}, want: `{"id":"i","result":{"messages":2,"running":false,"session":"{{s1}}"}}
`},
		{name: "e rpc info and steer racing a turn", log: []recorded{
			{client: true, line: `{"id":"p","method":"session.prompt","params":{"session":"S1"}}`},
			{line: `{"type":"turn_start","session":"S1","request":"p"}`},
			{line: `{"type":"text","delta":"w1","session":"S1","request":"p"}`},
			{client: true, line: `{"id":"i","method":"session.info","params":{"session":"S1"}}`},
			{line: `{"id":"i","result":{"session":"S1","messages":2,"running":true}}`},
			{client: true, line: `{"id":"st","method":"session.steer","params":{"session":"S1","text":"more"}}`},
			{line: `{"id":"st","result":{"held":true}}`},
			{line: `{"type":"steered","text":"more","session":"S1","request":"p"}`},
			{line: `{"type":"text","delta":"ok","session":"S1","request":"p"}`},
			{line: `{"type":"turn_end","aborted":false,"session":"S1","request":"p"}`},
			{line: `{"id":"p","result":{"final_output":"ok","output":"w1ok","usage":{"input_tokens":9},"session":"S1"}}`},
			{client: true, line: `{"id":"m","method":"session.messages","params":{"session":"S1"}}`},
			{line: `{"id":"m","result":{"messages":[{"role":"user"}]}}`},
			{client: true, line: `{"id":"q","method":"session.prompt","params":{"session":"S1"}}`},
			{line: `{"type":"usage","input_tokens":12,"session":"S1","request":"q"}`},
			{line: `{"id":"q","result":{"final_output":"x","session":"S1"}}`},
		}, want: `{"type":"turn_start","session":"{{s1}}","request":"p"}
@l1 {"type":"text","delta":"$prefix:w1","session":"{{s1}}","request":"p"}
~ @l2 {"id":"i"}
?* {"type":"$string","request":"p"}
~ @l3 {"id":"st"}
{"type":"turn_end","aborted":false,"session":"{{s1}}","request":"p"}
?* {"type":"$string","request":"p"}
@l4 {"id":"p","result":{"final_output":"$string","output":"$prefix:w1","session":"{{s1}}","usage":{"input_tokens":"$number"}}}
@l5 {"id":"m"}
{"type":"usage","input_tokens":"$number","session":"{{s1}}","request":"q"}
{"id":"q"}
`},
		// A prompt sent while the session's turn runs is refused or, the
		// turn having ended by the time it lands, runs: what its own turn
		// prints is the timing's, until its answer.
		{name: "e rpc prompt racing a turn", log: []recorded{
			{client: true, line: `{"id":"p","method":"session.prompt","params":{"session":"S1"}}`},
			{line: `{"type":"turn_start","session":"S1","request":"p"}`},
			{client: true, line: `{"id":"q","method":"session.prompt","params":{"session":"S1"}}`},
			{line: `{"type":"turn_end","aborted":false,"session":"S1","request":"p"}`},
			{line: `{"id":"p","result":{"aborted":false,"session":"S1"}}`},
			{line: `{"type":"turn_start","session":"S1","request":"q"}`},
			{line: `{"type":"text","delta":"hi","session":"S1","request":"q"}`},
			{line: `{"type":"turn_end","aborted":false,"session":"S1","request":"q"}`},
			{line: `{"id":"q","result":{"aborted":false,"output":"hi","session":"S1"}}`},
		}, want: `@l1 {"type":"turn_start","session":"{{s1}}","request":"p"}
?* {"type":"$string","request":"p"}
?* {"type":"$string","request":"q"}
{"type":"turn_end","aborted":false,"session":"{{s1}}","request":"p"}
?* {"type":"$string","request":"p"}
{"id":"p","result":{"aborted":false,"session":"{{s1}}"}}
~ {"id":"q"}
`},
		// A raced answer binds a placeholder only where a later line
		// needs it: the fork's session, which the client then names, not
		// the leaf entries read.
		{name: "e rpc raced answers bind what later lines name", log: []recorded{
			{client: true, line: `{"id":"p","method":"session.prompt","params":{"session":"S1"}}`},
			{line: `{"type":"turn_start","session":"S1","request":"p"}`},
			{client: true, line: `{"id":"e","method":"session.entries","params":{"session":"S1"}}`},
			{client: true, line: `{"id":"f","method":"session.fork","params":{"session":"S1"}}`},
			{line: `{"id":"e","result":{"entries":[],"leaf":"d73ff4af62469d156bb035ae371ebcb7"}}`},
			{line: `{"id":"f","result":{"session":"01M8SNJQ30ZX6X92FB33HP47FD"}}`},
			{line: `{"type":"turn_end","aborted":false,"session":"S1","request":"p"}`},
			{line: `{"id":"p","result":{"aborted":false,"session":"S1"}}`},
			{client: true, line: `{"id":"i","method":"session.info","params":{"session":"01M8SNJQ30ZX6X92FB33HP47FD"}}`},
			{line: `{"id":"i","result":{"session":"01M8SNJQ30ZX6X92FB33HP47FD"}}`},
		}, want: `@l1 {"type":"turn_start","session":"{{s1}}","request":"p"}
~ @l2 {"id":"e"}
~ @l3 {"id":"f","result":{"session":"{{s2}}"}}
{"type":"turn_end","aborted":false,"session":"{{s1}}","request":"p"}
@l4 {"id":"p","result":{"aborted":false,"session":"{{s1}}"}}
{"id":"i","result":{"session":"{{s2}}"}}
`},
		// The leaf an entries request racing a shell command reads is the
		// last entry before the command's or the command's own: a raced
		// answer binds placeholders, never names one bound before.
		{name: "e rpc entries racing a shell command", log: []recorded{
			{client: true, line: `{"id":"a","method":"session.shell","params":{"session":"S1","command":"echo a"}}`},
			{line: `{"type":"shell_output","delta":"a\n","session":"S1","request":"a"}`},
			{line: `{"id":"a","result":{"entry":"d73ff4af62469d156bb035ae371ebcb7","exit_code":0}}`},
			{client: true, line: `{"id":"b","method":"session.shell","params":{"session":"S1","command":"echo b"}}`},
			{client: true, line: `{"id":"e","method":"session.entries","params":{"session":"S1"}}`},
			{line: `{"id":"e","result":{"entries":[{"id":"d73ff4af62469d156bb035ae371ebcb7"}],"leaf":"d73ff4af62469d156bb035ae371ebcb7"}}`},
			{line: `{"type":"shell_output","delta":"b\n","session":"S1","request":"b"}`},
			{line: `{"id":"b","result":{"entry":"d1a0100465a918a350d337f844ac1e5e","exit_code":0}}`},
		}, want: `{"type":"shell_output","delta":"a\n","session":"{{s1}}","request":"a"}
@l1 {"id":"a","result":{"entry":"{{e1}}","exit_code":0}}
~ {"id":"e"}
{"type":"shell_output","delta":"b\n","session":"{{s1}}","request":"b"}
{"id":"b","result":{"entry":"{{e2}}","exit_code":0}}
`},
		{name: "pi get_state before the run shows", dialect: DialectPi, log: []recorded{
			{client: true, line: `{"id":"1","type":"prompt","message":"m"}`},
			{client: true, line: `{"id":"2","type":"get_state"}`},
			{line: `{"id":"1","type":"response","command":"prompt","success":true}`},
			{line: `{"id":"2","type":"response","command":"get_state","success":true,"data":{"isStreaming":false,"messageCount":0,"sessionId":"01M8SNJQ30ZX6X92FB33HP47FD"}}`},
			{line: `{"type":"agent_start"}`},
			{line: `{"type":"agent_settled","aborted":false}`},
			{client: true, line: `{"id":"3","type":"get_state"}`},
			{line: `{"id":"3","type":"response","command":"get_state","success":true,"data":{"isStreaming":false,"messageCount":2,"sessionId":"01M8SNJQ30ZX6X92FB33HP47FD"}}`},
		}, want: `@l1 {"type":"response","id":"1","command":"prompt","success":true}
~ @l2 {"type":"response","id":"2","command":"get_state"}
{"type":"agent_start"}
@l3 {"type":"agent_settled","aborted":false}
{"type":"response","id":"3","command":"get_state","data":{"isStreaming":false,"messageCount":2,"sessionId":"{{s1}}"},"success":true}
`},
		{name: "pi steer racing a run", dialect: DialectPi, log: []recorded{
			{client: true, line: `{"id":"1","type":"prompt","message":"m"}`},
			{line: `{"id":"1","type":"response","command":"prompt","success":true}`},
			{line: `{"type":"agent_start"}`},
			{client: true, line: `{"id":"2","type":"steer","message":"s"}`},
			{line: `{"type":"queue_update","steering":["s"],"followUp":[]}`},
			{line: `{"id":"2","type":"response","command":"steer","success":true}`},
			{line: `{"type":"agent_end","messages":[]}`},
			{line: `{"type":"agent_settled","aborted":false}`},
		}, want: `@l1 {"type":"response","id":"1","command":"prompt","success":true}
@l2 {"type":"agent_start"}
?* {"type":"$string"}
~ {"type":"response","id":"2","command":"steer"}
{"type":"agent_settled","aborted":false}
?* {"type":"$string"}
`},
		// A follow-up sent during the run that found it over is queued for
		// the next: its queue_update comes after the run, here, and in it
		// on another run, so it is left out there too (race-client.py pi 9).
		{name: "pi follow-up queued after the run it raced", dialect: DialectPi, log: []recorded{
			{client: true, line: `{"id":"1","type":"prompt","message":"m"}`},
			{line: `{"id":"1","type":"response","command":"prompt","success":true}`},
			{line: `{"type":"agent_start"}`},
			{client: true, line: `{"id":"2","type":"follow_up","message":"f"}`},
			{line: `{"type":"agent_end","messages":[]}`},
			{line: `{"type":"agent_settled","aborted":false}`},
			{line: `{"type":"queue_update","steering":[],"followUp":["f"]}`},
			{line: `{"id":"2","type":"response","command":"follow_up","success":true}`},
			{client: true, line: `{"id":"3","type":"get_state"}`},
		}, want: `@l1 {"type":"response","id":"1","command":"prompt","success":true}
@l2 {"type":"agent_start"}
?* {"type":"$string"}
@l3 {"type":"agent_settled","aborted":false}
?* {"type":"$string"}
~ @l4 {"type":"response","id":"2","command":"follow_up"}
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, draftExpect(t, tt.dialect, tt.log)); diff != "" {
				t.Errorf("expect section (-want +got):\n%s", diff)
			}
		})
	}
}

// pi's command-born events are in streams of their own, so that a run
// going on meanwhile is not ordered against them: a bash command's
// output in its response's stream, a rename and a thinking level each in
// one of its own kind. Adjacent bash output deltas are joined.
func TestPiEventStreams(t *testing.T) {
	tests := []struct {
		line string
		key  string
	}{
		{`{"type":"bash_execution_update","id":"7","delta":"x"}`, `r:"7"`},
		{`{"type":"bash_execution_update","delta":"x"}`, "process"},
		{`{"type":"session_info_changed","name":"n"}`, "command:session_info_changed"},
		{`{"type":"thinking_level_changed","level":"high"}`, "command:thinking_level_changed"},
		{`{"type":"message_update","assistantMessageEvent":{"type":"text_delta","delta":"x","contentIndex":0}}`, "process"},
		{`{"type":"response","id":"7","command":"bash","success":true}`, `r:"7"`},
	}
	for _, tt := range tests {
		v, err := decode([]byte(tt.line))
		if err != nil {
			t.Fatal(err)
		}
		lc, err := piDialect{}.classify(v.(map[string]any), &Case{}, nil)
		if err != nil || lc.key != tt.key {
			t.Errorf("classify(%s) = %q, %v; want %q", tt.line, lc.key, err, tt.key)
		}
	}
	b := expectBuilder{d: piDialect{}}
	for _, l := range []string{`{"type":"bash_execution_update","id":"7","delta":"a\n"}`, `{"type":"bash_execution_update","id":"7","delta":"b\n"}`} {
		v, _ := decode([]byte(l))
		b.add(v.(map[string]any))
	}
	if got, want := b.String(), `{"type":"bash_execution_update","id":"7","delta":"a\nb\n"}`+"\n"; got != want {
		t.Errorf("joined bash output: got %s want %s", got, want)
	}
}

// A pi step with two tool calls or more records its calls' lines as one
// "?*" line up to the step's turn_end, whose toolResults must each come in
// any order, and so must the run's agent_end messages: the calls may
// finish in either order. A step with one call keeps its lines.
func TestRecordPiConcurrentCalls(t *testing.T) {
	log := []recorded{
		{client: true, line: `{"id":"1","type":"prompt","message":"m"}`},
		{line: `{"id":"1","type":"response","command":"prompt","success":true}`},
		{line: `{"type":"agent_start"}`},
		{line: `{"type":"message_end","message":{"role":"assistant","content":[{"type":"toolCall","id":"a"},{"type":"toolCall","id":"b"}]}}`},
		{line: `{"type":"tool_execution_start","toolCallId":"b"}`},
		{line: `{"type":"tool_execution_start","toolCallId":"a"}`},
		{line: `{"type":"tool_execution_end","toolCallId":"b"}`},
		{line: `{"type":"message_start","message":{"role":"toolResult","toolCallId":"b"}}`},
		{line: `{"type":"tool_execution_end","toolCallId":"a"}`},
		{line: `{"type":"turn_end","toolResults":[{"toolCallId":"b"},{"toolCallId":"a"}]}`},
		{line: `{"type":"message_end","message":{"role":"assistant","content":[{"type":"toolCall","id":"c"}]}}`},
		{line: `{"type":"tool_execution_start","toolCallId":"c"}`},
		{line: `{"type":"turn_end","toolResults":[{"toolCallId":"c"}]}`},
		{line: `{"type":"agent_end","messages":[{"role":"toolResult","toolCallId":"b"},{"role":"toolResult","toolCallId":"a"}]}`},
		{line: `{"type":"agent_settled","aborted":false}`},
	}
	want := `{"type":"response","id":"1","command":"prompt","success":true}
{"type":"agent_start"}
{"type":"message_end","message":{"content":[{"id":"a","type":"toolCall"},{"id":"b","type":"toolCall"}],"role":"assistant"}}
?* {"type":"$string"}
{"type":"turn_end","toolResults":{"$all":[{"$some":{"toolCallId":"b"}},{"$some":{"toolCallId":"a"}}]}}
{"type":"message_end","message":{"content":[{"id":"c","type":"toolCall"}],"role":"assistant"}}
{"type":"tool_execution_start","toolCallId":"c"}
{"type":"turn_end","toolResults":[{"toolCallId":"c"}]}
{"type":"agent_end","messages":{"$all":[{"$some":{"role":"toolResult","toolCallId":"b"}},{"$some":{"role":"toolResult","toolCallId":"a"}}]}}
{"type":"agent_settled","aborted":false}
`
	if diff := cmp.Diff(want, draftExpect(t, DialectPi, log)); diff != "" {
		t.Errorf("expect section (-want +got):\n%s", diff)
	}
}

// A pi follow_up that races a run lands in it, or, when the run ended
// first, is queued (pi queues it while idle) and joins the next run as
// more turns; a steer likewise joins the next run after its prompt. A
// recording of either replays against the other (spec/conformance.md 5;
// scripts/race-pi-client.py seed 9 recorded one and replayed the other).
func TestRecordPiQueuedMessages(t *testing.T) {
	msg := func(role, text string) string {
		return `{"role":"` + role + `","content":[{"type":"text","text":"` + text + `"}]}`
	}
	turn := func(user, answer string, queue bool) []recorded {
		var l []recorded
		l = append(l, recorded{line: `{"type":"turn_start"}`})
		if queue {
			l = append(l, recorded{line: `{"type":"queue_update","steering":[],"followUp":[]}`})
		}
		return append(l,
			recorded{line: `{"type":"message_start","message":` + msg("user", user) + `}`},
			recorded{line: `{"type":"message_end","message":` + msg("user", user) + `}`},
			recorded{line: `{"type":"message_start","message":{"role":"assistant","content":[]}}`},
			recorded{line: `{"type":"message_update","assistantMessageEvent":{"type":"text_delta","contentIndex":0,"delta":"` + answer + `"}}`},
			recorded{line: `{"type":"message_end","message":` + msg("assistant", answer) + `}`},
			recorded{line: `{"type":"turn_end","message":` + msg("assistant", answer) + `}`})
	}
	// steerTurn is a first turn that takes a queued steer after its prompt.
	steerTurn := func(user, steer, answer string) []recorded {
		return []recorded{
			{line: `{"type":"turn_start"}`},
			{line: `{"type":"message_start","message":` + msg("user", user) + `}`},
			{line: `{"type":"message_end","message":` + msg("user", user) + `}`},
			{line: `{"type":"queue_update","steering":[],"followUp":[]}`},
			{line: `{"type":"message_start","message":` + msg("user", steer) + `}`},
			{line: `{"type":"message_end","message":` + msg("user", steer) + `}`},
			{line: `{"type":"message_start","message":{"role":"assistant","content":[]}}`},
			{line: `{"type":"message_update","assistantMessageEvent":{"type":"text_delta","contentIndex":0,"delta":"` + answer + `"}}`},
			{line: `{"type":"message_end","message":` + msg("assistant", answer) + `}`},
			{line: `{"type":"turn_end","message":` + msg("assistant", answer) + `}`},
		}
	}
	end := func(n int) []recorded {
		ms := make([]string, n)
		for i := range ms {
			ms[i] = msg([]string{"user", "assistant"}[i%2], "x")
		}
		return []recorded{{line: `{"type":"agent_end","messages":[` + strings.Join(ms, ",") + `]}`}, {line: `{"type":"agent_settled","aborted":false}`}}
	}
	cat := func(parts ...[]recorded) []recorded { return slices.Concat(parts...) }
	start := func(id string) []recorded {
		return []recorded{{line: `{"id":"` + id + `","type":"response","command":"prompt","success":true}`}, {line: `{"type":"agent_start"}`}}
	}
	first := []recorded{{client: true, line: `{"id":"1","type":"prompt","message":"m"}`}}
	second := []recorded{{client: true, line: `{"id":"3","type":"prompt","message":"n"}`}}
	tests := []struct {
		name     string
		race     recorded // the racing line
		answered recorded // its answer
		variants [][]recorded
	}{
		{name: "follow_up",
			race:     recorded{client: true, line: `{"id":"2","type":"follow_up","message":"f"}`},
			answered: recorded{line: `{"id":"2","type":"response","command":"follow_up","success":true,"data":{"disposition":"queued"}}`},
			variants: [][]recorded{
				// The follow-up lands in the run, as a turn of its own.
				cat(start("1"), turn("m", "a", false), nil, turn("f", "fa", true), end(4), second, start("3"), turn("n", "b", false), end(2)),
				// The run ends first: the next prompt's run takes it.
				cat(start("1"), turn("m", "a", false), end(2), nil, second, start("3"), turn("n", "b", false), turn("f", "fa", true), end(4)),
			}},
		{name: "steer",
			race:     recorded{client: true, line: `{"id":"2","type":"steer","message":"s"}`},
			answered: recorded{line: `{"id":"2","type":"response","command":"steer","success":true,"data":{"disposition":"queued"}}`},
			variants: [][]recorded{
				cat(start("1"), turn("m", "a", false), nil, turn("s", "sa", true), end(4), second, start("3"), turn("n", "b", false), end(2)),
				cat(start("1"), turn("m", "a", false), end(2), nil, second, start("3"), steerTurn("n", "s", "b"), end(3)),
			}},
	}
	for _, tt := range tests {
		// The racing line goes out right after the run's first turn
		// began; its answer comes after the first run's turn (at the
		// nil part) or after the run.
		logs := make([][]recorded, len(tt.variants))
		for i, v := range tt.variants {
			at := slices.IndexFunc(v, func(l recorded) bool { return l.line == `{"type":"turn_start"}` }) + 1
			log := cat(first, v[:at], []recorded{tt.race}, v[at:])
			answerAt := slices.IndexFunc(log, func(l recorded) bool { return l.line == `{"type":"agent_settled","aborted":false}` }) + 1
			if i == 0 {
				answerAt = slices.IndexFunc(log, func(l recorded) bool { return strings.Contains(l.line, `"turn_end"`) }) + 1
			}
			logs[i] = cat(log[:answerAt], []recorded{tt.answered}, log[answerAt:])
		}
		for i, rec := range logs {
			out, err := draftCase(&Case{ID: "x", Level: "MUST", Requirements: []string{"Q4"}, Exit: "0", Dialect: DialectPi}, rec, nil, map[string]any{})
			if err != nil {
				t.Fatal(err)
			}
			c, err := parseCase(out)
			if err != nil {
				t.Fatalf("%s: %v\n%s", tt.name, err, out)
			}
			for j, replay := range logs {
				t.Run(fmt.Sprintf("%s/recorded %d/replayed %d", tt.name, i, j), func(t *testing.T) {
					var server []string
					for _, l := range replay {
						if !l.client {
							server = append(server, l.line)
						}
					}
					if div := feedAll(newRun(c, Options{}), server); div != nil {
						t.Errorf("the recording does not replay: %v\n%s", div, out)
					}
				})
			}
		}
	}
}
