package server

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"

	"github.com/e-agent/e/schemas"
)

// F2, F4, F5: framing and id echo.
func TestFraming(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  []string // exact response lines, in order
	}{
		{"crlf stripped F5", "{\"id\":1,\"method\":\"session.info\",\"params\":{\"session\":\"x\"}}\r\n",
			[]string{`{"id":1,"error":"session.info: unknown session \"x\"","code":"unknown_session"}`}},
		{"no trailing LF still served F5", `{"id":2,"method":"nope"}`,
			[]string{`{"id":2,"error":"rpc: unknown method \"nope\"","code":"unknown_method"}`}},
		{"U+2028 is data F5", "{\"id\":\"a\u2028b\",\"method\":\"nope\u2029\"}\n",
			// The id is echoed as sent; in strings e writes, U+2028/2029 are
			// escaped so no reader can split on them.
			[]string{"{\"id\":\"a\u2028b\",\"error\":\"rpc: unknown method \\\"nope\\\\u2029\\\"\",\"code\":\"unknown_method\"}"}},
		{"blank lines ignored", "\n\r\n   \n{\"id\":3,\"method\":\"nope\"}\n",
			[]string{`{"id":3,"error":"rpc: unknown method \"nope\"","code":"unknown_method"}`}},
		{"malformed JSON keeps serving F4", "{\"id\":4,\n{\"id\":5,\"method\":\"nope\"}\n",
			[]string{`{"id":null,"error":"rpc: line 1: malformed JSON: unexpected end of JSON input (at byte 8)","code":"parse_error"}`, `{"id":5,"error":"rpc: unknown method \"nope\"","code":"unknown_method"}`}},
		{"not an object", "[1,2]\n", []string{`{"id":null,"error":"rpc: line 1: expected a JSON object, got array","code":"invalid_request"}`}},
		{"id 1e400 byte for byte F2", `{"id":1e400,"method":"nope"}` + "\n", []string{`{"id":1e400,"error":"rpc: unknown method \"nope\"","code":"unknown_method"}`}},
		{"id -0 F2", `{"id":-0,"method":"nope"}` + "\n", []string{`{"id":-0,"error":"rpc: unknown method \"nope\"","code":"unknown_method"}`}},
		{"big integer id F2", `{"id":123456789012345678901234567890,"method":"nope"}` + "\n",
			[]string{`{"id":123456789012345678901234567890,"error":"rpc: unknown method \"nope\"","code":"unknown_method"}`}},
		{"object id kept with its spacing F2", `{"id":{"a": [1, 2]},"method":"nope"}` + "\n",
			[]string{`{"id":{"a": [1, 2]},"error":"rpc: unknown method \"nope\"","code":"unknown_method"}`}},
		{"missing id is null", `{"method":"nope"}` + "\n", []string{`{"id":null,"error":"rpc: unknown method \"nope\"","code":"unknown_method"}`}},
		{"method not a string", `{"id":6,"method":7}` + "\n", []string{`{"id":6,"error":"rpc: line 1: method: expected string, got number","code":"invalid_request"}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := startServer(t, serverSetup{})
			c.send(tt.input)
			if code := c.closeInput(); code != 0 {
				t.Errorf("exit status %d, want 0", code)
			}
			if diff := cmp.Diff(tt.want, c.seen); diff != "" {
				t.Errorf("lines (-want +got):\n%s", diff)
			}
		})
	}
}

// M17, V1–V3: validation errors name the method and the parameter path.
func TestValidation(t *testing.T) {
	tests := []struct {
		name, method, params string
		wantErr              []string // substrings of the error; nil means success
	}{
		{"tool_mode false", "session.create", `{"tool_mode":false}`, []string{"session.create", "params.tool_mode"}},
		{"save yes", "session.create", `{"save":"yes"}`, []string{"session.create", "params.save"}},
		{"nulls mean defaults", "session.create", `{"cwd":null,"model":null,"effort":null,"tools":null,"tool_mode":null,"save":null,"resume":null,"name":null}`, nil},
		{"unknown fields accepted V2", "session.create", `{"future":1}`, nil},
		{"missing cwd C1", "session.create", `{"cwd":"/does/not/exist"}`, []string{"session.create", "params.cwd", "does not exist"}},
		{"unknown tool C3", "session.create", `{"tools":["read","teleport"]}`, []string{"params.tools[1]", "teleport"}},
		{"unknown model", "session.create", `{"model":"nope/x"}`, []string{"params.model"}},
		{"model without its key", "session.create", `{"model":"openai/gpt-5.5"}`, []string{"params.model", "OPENAI_API_KEY"}},
		{"prompt needs session", "session.prompt", `{"prompt":"x"}`, []string{"session.prompt", "params.session"}},
		{"ask must be boolean", "hello", `{"ask":"yes"}`, []string{"hello", "params.ask"}},
		{"params null is empty", "models.list", `null`, nil},
		{"ask beyond any integer type", "ask.reply", `{"ask":1e30}`, []string{"ask.reply", "params.ask"}},
		{"unknown ask M15", "ask.reply", `{"ask":99}`, []string{"ask.reply: unknown ask 99"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := startServer(t, serverSetup{})
			c.send(fmt.Sprintf(`{"id":1,"method":%q,"params":%s}`+"\n", tt.method, tt.params))
			resp := c.response("1")
			errText := gjson.Get(resp, "error").String()
			if tt.wantErr == nil {
				if errText != "" {
					t.Fatalf("unexpected error: %s", resp)
				}
				return
			}
			if errText == "" || strings.Contains(errText, "\n") {
				t.Fatalf("want a one-line error, got %s", resp)
			}
			// The method names the error once, at its start: a component
			// that prefixes its own errors with it would double it.
			if !strings.HasPrefix(errText, tt.method+": ") || strings.Count(errText, tt.method+":") != 1 {
				t.Errorf("error %q does not start with %q exactly once", errText, tt.method+": ")
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(errText, w) {
					t.Errorf("error %q does not mention %q", errText, w)
				}
			}
		})
	}
}

// M1
func TestHello(t *testing.T) {
	c := startServer(t, serverSetup{})
	c.call(1, "hello", map[string]any{"ask": true})
	resp := c.response("1")
	if got := gjson.Get(resp, "result.ask").Bool(); !got {
		t.Errorf("ask not echoed: %s", resp)
	}
	methods := gjson.Get(resp, "result.methods").Array()
	if len(methods) != len(schemas.Methods()) {
		t.Errorf("methods: got %d, want the %d of schemas/methods: %s", len(methods), len(schemas.Methods()), resp)
	}
	if gjson.Get(resp, "result.protocol").Int() != Protocol {
		t.Errorf("protocol: %s", resp)
	}
}

// M6, S2, P8: a prompt streams stamped events, then the result.
func TestPromptEvents(t *testing.T) {
	c := startServer(t, serverSetup{})
	sid := c.create(nil)
	c.call("p1", "session.prompt", map[string]any{"session": sid, "prompt": "/think hmm\n/text hello world"})
	lines := c.until(`"p1"`)
	want := []string{"turn_start", "warning", "session_name", "reasoning", "text", "text", "usage", "turn_end", "response"}
	if diff := cmp.Diff(want, types(lines)); diff != "" {
		t.Errorf("line types (-want +got):\n%s", diff)
	}
	for _, l := range lines[:len(lines)-1] {
		if gjson.Get(l, "session").String() != sid || gjson.Get(l, "request").Raw != `"p1"` {
			t.Errorf("event not stamped with session and request: %s", l)
		}
	}
	res := lines[len(lines)-1]
	if got := gjson.Get(res, "result.output").String(); got != "hello world" {
		t.Errorf("output %q, want %q", got, "hello world")
	}
	if got := gjson.Get(res, "result.session").String(); got != sid {
		t.Errorf("result.session %q, want %q", got, sid)
	}
}

// S5: a second prompt while a turn runs is refused; M8 interrupt ends it.
func TestSecondPromptRefusedAndInterrupt(t *testing.T) {
	c := startServer(t, serverSetup{})
	sid := c.create(nil)
	c.call("p1", "session.prompt", map[string]any{"session": sid, "prompt": "/delay 100000\n/text never"})
	// Wait for the turn to start so the refusal is about a running turn.
	for gjson.Get(c.next(), "type").String() != "turn_start" {
	}
	c.call("p2", "session.prompt", map[string]any{"session": sid, "prompt": "again"})
	resp := c.response(`"p2"`)
	if e := gjson.Get(resp, "error").String(); !strings.Contains(e, "is running a turn") {
		t.Fatalf("second prompt: %s", resp)
	}
	c.call("i", "session.interrupt", map[string]any{"session": sid})
	lines := c.until(`"p1"`)
	res := lines[len(lines)-1]
	if !gjson.Get(res, "result.aborted").Bool() {
		t.Errorf("interrupted turn not aborted: %s", res)
	}
	if last := lines[len(lines)-2]; gjson.Get(last, "type").String() != "turn_end" || !gjson.Get(last, "aborted").Bool() {
		t.Errorf("last event %s, want turn_end aborted", last)
	}
	if r := c.response(`"i"`); gjson.Get(r, "error").Exists() {
		t.Errorf("interrupt: %s", r)
	}
	// The history stays valid: the next prompt works.
	c.call("p3", "session.prompt", map[string]any{"session": sid, "prompt": "/text again"})
	if r := c.response(`"p3"`); gjson.Get(r, "result.output").String() != "again" {
		t.Errorf("prompt after interrupt: %s", r)
	}
}

// L2: a batch of 20 calls with tool_concurrency 4 never runs more than 4 at once.
func TestToolWaves(t *testing.T) {
	c := startServer(t, serverSetup{settings: `{"tool_concurrency":4}`})
	sid := c.create(nil)
	var prompt strings.Builder
	for i := range 20 {
		fmt.Fprintf(&prompt, "/tool ls {\"path\":\".\"}\n")
		_ = i
	}
	prompt.WriteString("/then\n/text done")
	c.call("p", "session.prompt", map[string]any{"session": sid, "prompt": prompt.String()})
	lines := c.until(`"p"`)
	running, peak, ends := 0, 0, 0
	for _, l := range lines {
		switch gjson.Get(l, "type").String() {
		case "tool_start":
			running++
			peak = max(peak, running)
		case "tool_end":
			running--
			ends++
		}
	}
	if peak > 4 || peak == 0 {
		t.Errorf("peak concurrency %d, want 1..4", peak)
	}
	if ends != 20 {
		t.Errorf("%d tool_end events, want 20", ends)
	}
	res := lines[len(lines)-1]
	if got := gjson.Get(res, "result.tools.calls").Int(); got != 20 {
		t.Errorf("tools.calls %d, want 20: %s", got, res)
	}
}

// M7: steer on an idle session is an error; a held steer enters the turn.
func TestSteer(t *testing.T) {
	c := startServer(t, serverSetup{})
	sid := c.create(nil)
	c.call("s0", "session.steer", map[string]any{"session": sid, "text": "x"})
	if r := c.response(`"s0"`); !strings.Contains(gjson.Get(r, "error").String(), "no running turn") {
		t.Errorf("idle steer: %s", r)
	}
	c.call("p", "session.prompt", map[string]any{"session": sid, "prompt": `/tool sleep {"ms":600000}` + "\n/then\n/text slept"})
	for gjson.Get(c.next(), "type").String() != "tool_start" {
	}
	c.call("s1", "session.steer", map[string]any{"session": sid, "text": "/text steered"})
	lines := c.until(`"p"`)
	got := types(lines)
	for _, want := range []string{"sleep_stopped", "steered"} {
		found := false
		for _, g := range got {
			found = found || g == want
		}
		if !found {
			t.Errorf("no %s event in %v", want, got)
		}
	}
	if out := gjson.Get(lines[len(lines)-1], "result.final_output").String(); out != "steered" {
		t.Errorf("final_output %q, want %q", out, "steered")
	}
}

// O1, O2, O5: one-shot lines answer flat, without events.
func TestOneShot(t *testing.T) {
	c := startServer(t, serverSetup{})
	c.send(`{"id":"one","prompt":"/text hi there","tool_mode":"none","tools":null,"save":false,"images":[]}` + "\n")
	resp := c.next()
	if got := gjson.Get(resp, "output").String(); got != "hi there" || gjson.Get(resp, "id").String() != "one" {
		t.Errorf("one-shot answer: %s", resp)
	}
	c.send(`{"id":"two","prompt":""}` + "\n")
	if resp := c.next(); !strings.Contains(gjson.Get(resp, "error").String(), "prompt") {
		t.Errorf("empty prompt: %s", resp)
	}
}

// M16: shutdown answers {} and exits 0.
func TestShutdown(t *testing.T) {
	c := startServer(t, serverSetup{})
	c.call(9, "shutdown", nil)
	if r := c.response("9"); r != `{"id":9,"result":{}}` {
		t.Errorf("shutdown response %s", r)
	}
	if code := <-c.exit; code != 0 {
		t.Errorf("exit %d, want 0", code)
	}
	c.exit <- 0
}

// The methods hello reports are exactly the methods schemas/index.json lists.
func TestMethodsMatchSchemas(t *testing.T) {
	if diff := cmp.Diff(schemas.Methods(), methods); diff != "" {
		t.Errorf("methods (-schemas +server):\n%s", diff)
	}
}

// C6, C7: what resuming a log repaired or skipped reaches the client as a
// warning on the session's first turn; read-only resume repairs nothing.
func TestResumeWarnings(t *testing.T) {
	c := startServer(t, serverSetup{})
	c.call("c", "session.create", map[string]any{"save": true})
	path := gjson.Get(c.response(`"c"`), "result.path").String()
	sid := gjson.Get(c.seen[len(c.seen)-1], "result.session").String()
	c.call("p", "session.prompt", map[string]any{"session": sid, "prompt": "/text one"})
	c.response(`"p"`)
	c.call("x", "session.close", map[string]any{"session": sid})
	c.response(`"x"`)
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"type":"message","id":"torn`) // a crash mid-write
	f.Close()

	for _, tt := range []struct {
		name string
		save bool
		want string
	}{
		{"read-only ignores the torn line", false, "ignored a torn last line"},
		{"writable resume repairs it", true, "repaired a torn last line"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c.call("r", "session.create", map[string]any{"resume": path, "save": tt.save})
			sid := gjson.Get(c.response(`"r"`), "result.session").String()
			c.call("q", "session.prompt", map[string]any{"session": sid, "prompt": "/text two"})
			found := false
			for _, l := range c.until(`"q"`) {
				if gjson.Get(l, "type").String() == "warning" && strings.Contains(gjson.Get(l, "message").String(), tt.want) {
					found = true
				}
			}
			if !found {
				t.Errorf("no warning containing %q", tt.want)
			}
			c.call("z", "session.close", map[string]any{"session": sid})
			c.response(`"z"`)
		})
	}
}

// T1, V3: a rejected session.set names the parameter and changes neither.
func TestSessionSetRejected(t *testing.T) {
	c := startServer(t, serverSetup{})
	sid := c.create(map[string]any{"effort": "low"})
	tests := []struct {
		name   string
		params map[string]any
		want   string
	}{
		{"bad effort", map[string]any{"effort": "ultra"}, "session.set: params.effort: "},
		{"bad model", map[string]any{"model": "nope/x", "effort": "high"}, "session.set: params.model: "},
		{"effort the new model lacks", map[string]any{"model": "openai/gpt-4.1", "effort": "high"}, "session.set: params.effort: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.params["session"] = sid
			c.call("s", "session.set", tt.params)
			if e := gjson.Get(c.response(`"s"`), "error").String(); !strings.HasPrefix(e, tt.want) {
				t.Errorf("error %q, want prefix %q", e, tt.want)
			}
			c.call("i", "session.info", map[string]any{"session": sid})
			info := c.response(`"i"`)
			if gjson.Get(info, "result.model").String() != "e/offline" || gjson.Get(info, "result.effort").String() != "low" {
				t.Errorf("rejected update changed the session: %s", info)
			}
		})
	}
}

// D1, O1: EOF stops a running one-shot turn too; its answer still comes.
func TestEOFStopsOneShot(t *testing.T) {
	c := startServer(t, serverSetup{})
	c.send(`{"id":"slow","prompt":"/delay 100000\n/text never"}` + "\n")
	c.call("c", "session.create", nil) // proves the line above was read
	c.response(`"c"`)
	if code := c.closeInput(); code != 0 {
		t.Errorf("exit %d, want 0", code)
	}
	var answer string
	for _, l := range c.seen {
		if gjson.Get(l, "id").String() == "slow" {
			answer = l
		}
	}
	if !gjson.Get(answer, "aborted").Bool() {
		t.Errorf("one-shot answer %q, want aborted", answer)
	}
}

// M8, issue 12.1: the next prompt sent as soon as an interrupted prompt's
// response arrives, before the interrupt's own response, is served; every
// request is answered once, the interrupt after the turn it ended. Under
// -race this caught the turn WaitGroup reused while interrupt waited on it.
func TestPromptRightAfterInterrupt(t *testing.T) {
	c := startServer(t, serverSetup{opts: Options{NoTools: true}})
	sid := c.create(nil)
	for i := range 40 {
		p, in, next := fmt.Sprintf(`"p%d"`, i), fmt.Sprintf(`"i%d"`, i), fmt.Sprintf(`"n%d"`, i)
		c.call(p[1:len(p)-1], "session.prompt", map[string]any{"session": sid, "prompt": "/delay 100000\n/text never"})
		for gjson.Get(c.next(), "type").String() != "turn_start" {
		}
		c.call(in[1:len(in)-1], "session.interrupt", map[string]any{"session": sid})
		got := map[string]string{}
		for len(got) < 1 {
			line := c.next()
			if id := gjson.Get(line, "id"); id.Exists() && !gjson.Get(line, "type").Exists() {
				got[id.Raw] = line
			}
		}
		if _, ok := got[p]; !ok {
			t.Fatalf("round %d: first response %v, want the interrupted prompt's (before the interrupt's)", i, got)
		}
		c.call(next[1:len(next)-1], "session.prompt", map[string]any{"session": sid, "prompt": "/text again"})
		for len(got) < 3 {
			line := c.next()
			if id := gjson.Get(line, "id"); id.Exists() && !gjson.Get(line, "type").Exists() {
				if _, dup := got[id.Raw]; dup {
					t.Fatalf("round %d: second response to %s: %s", i, id.Raw, line)
				}
				got[id.Raw] = line
			}
		}
		if !gjson.Get(got[p], "result.aborted").Bool() || gjson.Get(got[in], "error").Exists() ||
			gjson.Get(got[next], "result.output").String() != "again" {
			t.Fatalf("round %d: responses %v", i, got)
		}
	}
}

// TestFollowUp (issue 29): a follow-up on an idle session starts at once;
// an interrupt of its turn answers after that turn's response and drops
// the follow-up queued behind it (code interrupted); EOF answers one still
// queued the same way. Rounds, for -race and the order of the answers.
func TestFollowUp(t *testing.T) {
	c := startServer(t, serverSetup{opts: Options{NoTools: true}})
	sid := c.create(nil)
	held := "/delay 100000\n/text never"
	for i := range 10 {
		f1, f2, in := fmt.Sprintf("f1-%d", i), fmt.Sprintf("f2-%d", i), fmt.Sprintf("i-%d", i)
		c.call(f1, "session.follow_up", map[string]any{"session": sid, "prompt": held})
		for gjson.Get(c.next(), "type").String() != "turn_start" {
		}
		c.call(f2, "session.follow_up", map[string]any{"session": sid, "prompt": "/text no"})
		c.call(in, "session.interrupt", map[string]any{"session": sid})
		var order []string
		got := map[string]string{}
		for len(got) < 3 {
			line := c.next()
			if id := gjson.Get(line, "id"); id.Exists() && !gjson.Get(line, "type").Exists() {
				got[id.String()] = line
				order = append(order, id.String())
			} else if r := gjson.Get(line, "request").String(); r == f2 {
				t.Fatalf("round %d: the dropped follow-up ran: %s", i, line)
			}
		}
		if !gjson.Get(got[f1], "result.aborted").Bool() || gjson.Get(got[in], "error").Exists() ||
			gjson.Get(got[f2], "code").String() != "interrupted" {
			t.Fatalf("round %d: responses %v", i, got)
		}
		if slices.Index(order, f1) > slices.Index(order, in) {
			t.Fatalf("round %d: the interrupt answered before the turn it stopped: %v", i, order)
		}
	}
	c.call("g1", "session.follow_up", map[string]any{"session": sid, "prompt": held})
	for gjson.Get(c.next(), "type").String() != "turn_start" {
	}
	c.call("g2", "session.follow_up", map[string]any{"session": sid, "prompt": "/text no"})
	c.call("info", "session.info", map[string]any{"session": sid}) // proves g2 was read
	c.response(`"info"`)
	if code := c.closeInput(); code != 0 {
		t.Errorf("exit %d, want 0", code)
	}
	answers := map[string]string{}
	for _, l := range c.seen {
		if id := gjson.Get(l, "id").String(); (id == "g1" || id == "g2") && !gjson.Get(l, "type").Exists() {
			answers[id] = l
		}
	}
	if !gjson.Get(answers["g1"], "result.aborted").Bool() || gjson.Get(answers["g2"], "code").String() != "interrupted" {
		t.Errorf("answers at EOF: %v", answers)
	}
}
