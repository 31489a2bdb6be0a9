package schemas

import (
	"bytes"
	"encoding/json"
	"flag"
	"io/fs"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

var update = flag.Bool("update", false, "rewrite index.json from the schema files")

// errText is the error's text, "" for nil.
func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestIndexFile keeps index.json equal to what the files say.
func TestIndexFile(t *testing.T) {
	want, _ := Schema("index")
	if *update {
		if err := os.WriteFile(indexFile, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(indexFile)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("index.json is stale; run go test ./schemas -run TestIndexFile -update (-want +got):\n%s", diff)
	}
}

func TestMethods(t *testing.T) {
	want := []string{"ask.reply", "hello", "models.list", "session.close", "session.compact", "session.create",
		"session.entries", "session.export", "session.fork", "session.info", "session.interrupt", "session.list",
		"session.messages", "session.prompt", "session.set", "session.shell", "session.steer", "session.unsteer", "shutdown"} // M1–M18, issue 13
	// A new method needs no line here: its schemas are the list.
	got := Methods()
	if !slices.IsSorted(got) {
		t.Errorf("Methods() not sorted: %q", got)
	}
	for _, m := range want {
		if !slices.Contains(got, m) {
			t.Errorf("Methods() lacks %q: %q", m, got)
		}
	}
}

// TestSchemasCompile compiles every embedded schema and checks the
// conventions of the files owned by this package.
func TestSchemasCompile(t *testing.T) {
	ref := newReference()
	for name, path := range theCatalog().paths {
		t.Run(name, func(t *testing.T) {
			if _, err := compile(name); err != nil {
				t.Fatal(err)
			}
			referenceSchema(t, ref, path) // valid draft 2020-12, by the reference
			if strings.HasPrefix(path, "store/") || strings.HasPrefix(path, "extension/") {
				return // their owners' conventions
			}
			b, _ := Schema(name)
			var head struct {
				Schema string `json:"$schema"`
				ID     string `json:"$id"`
			}
			if err := json.Unmarshal(b, &head); err != nil {
				t.Fatal(err)
			}
			if head.Schema != draft || head.ID != base+path {
				t.Errorf("$schema %q, $id %q; want %q, %q", head.Schema, head.ID, draft, base+path)
			}
		})
	}
}

func TestEveryEventType(t *testing.T) { // P8
	// Events is the set dialects and tests read; each type it names has
	// its schema, and every schema of events/ is in it.
	got := Events()
	if len(got) == 0 {
		t.Fatal("Events() is empty")
	}
	for _, typ := range got {
		if _, ok := Schema("events/" + typ); !ok {
			t.Errorf("Events() names %q, which has no schema", typ)
		}
	}
	entries, err := fs.ReadDir(files, "events")
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(got) {
		t.Errorf("%d files in events/, Events() has %d: %v", len(entries), len(got), got)
	}
}

// optional is one optional parameter of a method: a value of the right
// type and one of a wrong type with the error it gets.
type optional struct {
	field    string
	good     string
	bad      string
	badError string
}

// TestValidateParamsOptional tries every optional parameter omitted, null,
// of the right type and of a wrong type (V1, V3).
func TestValidateParamsOptional(t *testing.T) {
	create := []optional{
		{"cwd", `"/tmp"`, `1`, `params.cwd: expected string, got number`},
		{"model", `"e/offline"`, `true`, `params.model: expected string, got boolean`},
		{"effort", `"high"`, `["high"]`, `params.effort: expected string, got array`},
		{"tools", `["read","bash"]`, `"read"`, `params.tools: expected array, got string`},
		{"tool_mode", `"none"`, `false`, `params.tool_mode: expected "all" or "none", got false`},
		{"save", `true`, `"yes"`, `params.save: expected boolean, got string`},
		{"resume", `"/x/y.jsonl"`, `{}`, `params.resume: expected string, got object`},
		{"name", `"ci"`, `7`, `params.name: expected string, got number`},
	}
	methods := []struct {
		method   string
		required string // the required params, as JSON object members
		optional []optional
	}{
		{"hello", ``, []optional{{"ask", `true`, `"yes"`, `params.ask: expected boolean, got string`}}},
		{"session.create", ``, create},
		{"session.list", ``, []optional{
			{"cwd", `"/tmp"`, `false`, `params.cwd: expected string, got boolean`},
			{"all", `true`, `1`, `params.all: expected boolean, got number`},
		}},
		{"session.prompt", `"session":"s1","prompt":"hi"`, []optional{
			{"images", `["a.png"]`, `"a.png"`, `params.images: expected array, got string`},
		}},
		{"session.compact", `"session":"s1"`, []optional{
			{"focus", `"tests"`, `1`, `params.focus: expected string, got number`},
		}},
		{"session.set", `"session":"s1"`, []optional{
			{"model", `"e/offline"`, `1`, `params.model: expected string, got number`},
			{"effort", `"low"`, `{}`, `params.effort: expected string, got object`},
		}},
		{"session.export", `"session":"s1"`, []optional{
			{"path", `"/tmp/x.html"`, `[]`, `params.path: expected string, got array`},
		}},
		{"ask.reply", `"ask":1`, []optional{
			{"result", `{"confirmed":true}`, ``, ``}, // any JSON value is a result
		}},
	}
	for _, m := range methods {
		obj := func(member string) string {
			switch {
			case m.required == "":
				return "{" + member + "}"
			case member == "":
				return "{" + m.required + "}"
			}
			return "{" + m.required + "," + member + "}"
		}
		for _, o := range m.optional {
			cases := []struct {
				name, params, want string
			}{
				{"omitted", obj(""), ""},
				{"null", obj(`"` + o.field + `":null`), ""},
				{"right type", obj(`"` + o.field + `":` + o.good), ""},
			}
			if o.bad != "" {
				cases = append(cases, struct{ name, params, want string }{
					"wrong type", obj(`"` + o.field + `":` + o.bad), m.method + ": " + o.badError})
			}
			for _, c := range cases {
				t.Run(m.method+"/"+o.field+"/"+c.name, func(t *testing.T) {
					if got := errText(ValidateParams(m.method, []byte(c.params))); got != c.want {
						t.Errorf("ValidateParams(%s, %s)\n got %q\nwant %q", m.method, c.params, got, c.want)
					}
				})
			}
		}
	}
}

func TestValidateParams(t *testing.T) {
	tests := []struct {
		name   string
		method string
		params string
		want   string
	}{
		{name: "absent params are {}", method: "session.create", params: ``},
		{name: "null params are {}", method: "models.list", params: `null`},
		{name: "unknown fields accepted (V2)", method: "session.create", params: `{"future":{"x":1},"save":false}`},
		{name: "unknown fields of shutdown", method: "shutdown", params: `{"reason":"done"}`},
		{name: "unknown method (M17)", method: "foo", params: `{}`, want: `rpc: unknown method "foo"`},
		{name: "params not an object", method: "session.create", params: `[1]`, want: `session.create: params: expected object, got array`},
		{name: "params a string", method: "hello", params: `"x"`, want: `hello: params: expected object, got string`},
		{name: "malformed params", method: "hello", params: `{`, want: `hello: params: malformed JSON: unexpected EOF`},
		{name: "tools item type", method: "session.create", params: `{"tools":["read",1]}`, want: `session.create: params.tools[1]: expected string, got number`},
		{name: "tools empty name", method: "session.create", params: `{"tools":[""]}`, want: `session.create: params.tools[0]: expected a non-empty string, got ""`},
		{name: "unknown tool names are the server's business", method: "session.create", params: `{"tools":["no_such_tool"]}`},
		{name: "tool_mode all", method: "session.create", params: `{"tool_mode":"all"}`},
		{name: "tool_mode unknown word", method: "session.create", params: `{"tool_mode":"some"}`, want: `session.create: params.tool_mode: expected "all" or "none", got "some"`},
		{name: "empty cwd", method: "session.create", params: `{"cwd":""}`, want: `session.create: params.cwd: expected a non-empty string, got ""`},
		{name: "prompt required", method: "session.prompt", params: `{"session":"s1"}`, want: `session.prompt: params.prompt: required`},
		{name: "prompt empty", method: "session.prompt", params: `{"session":"s1","prompt":""}`, want: `session.prompt: params.prompt: expected a non-empty string, got ""`},
		{name: "prompt null", method: "session.prompt", params: `{"session":"s1","prompt":null}`, want: `session.prompt: params.prompt: expected string, got null`},
		{name: "session required", method: "session.info", params: `{}`, want: `session.info: params.session: required`},
		{name: "session empty", method: "session.close", params: `{"session":""}`, want: `session.close: params.session: expected a non-empty string, got ""`},
		{name: "session number", method: "session.fork", params: `{"session":12}`, want: `session.fork: params.session: expected string, got number`},
		{name: "both required missing: first by name", method: "session.prompt", params: `{}`, want: `session.prompt: params.prompt: required`},
		{name: "ten images", method: "session.prompt", params: `{"session":"s","prompt":"p","images":["1","2","3","4","5","6","7","8","9","10"]}`},
		{name: "eleven images (I1)", method: "session.prompt", params: `{"session":"s","prompt":"p","images":["1","2","3","4","5","6","7","8","9","10","11"]}`, want: `session.prompt: params.images: expected at most 10 items, got 11`},
		{name: "image not a string", method: "session.prompt", params: `{"session":"s","prompt":"p","images":[null]}`, want: `session.prompt: params.images[0]: expected string, got null`},
		{name: "steer text required", method: "session.steer", params: `{"session":"s"}`, want: `session.steer: params.text: required`},
		{name: "steer text empty", method: "session.steer", params: `{"session":"s","text":""}`, want: `session.steer: params.text: expected a non-empty string, got ""`},
		{name: "ask required", method: "ask.reply", params: `{"result":{}}`, want: `ask.reply: params.ask: required`},
		{name: "ask zero", method: "ask.reply", params: `{"ask":0}`, want: `ask.reply: params.ask: expected at least 1, got 0`},
		{name: "ask fraction", method: "ask.reply", params: `{"ask":1.5}`, want: `ask.reply: params.ask: expected integer, got number`},
		{name: "ask 1.0 is an integer", method: "ask.reply", params: `{"ask":1.0}`},
		{name: "ask string", method: "ask.reply", params: `{"ask":"1"}`, want: `ask.reply: params.ask: expected integer, got string`},
		{name: "long bad value shown by type", method: "session.create", params: `{"tool_mode":"` + strings.Repeat("x", 100) + `"}`, want: `session.create: params.tool_mode: expected "all" or "none", got string`},
		{name: "deepest failure wins", method: "session.create", params: `{"save":"yes","tools":[1]}`, want: `session.create: params.tools[0]: expected string, got number`},
		{name: "then the first path", method: "session.create", params: `{"save":"yes","name":1,"cwd":2}`, want: `session.create: params.cwd: expected string, got number`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var params []byte
			if tt.params != "" {
				params = []byte(tt.params)
			}
			if got := errText(ValidateParams(tt.method, params)); got != tt.want {
				t.Errorf("ValidateParams(%s, %s)\n got %q\nwant %q", tt.method, tt.params, got, tt.want)
			}
		})
	}
}

// TestErrorsDeterministic: the library reports causes in map order; the
// chosen one must not vary (V3).
func TestErrorsDeterministic(t *testing.T) {
	params := []byte(`{"cwd":1,"model":2,"effort":3,"tools":4,"tool_mode":5,"save":6,"resume":7,"name":8}`)
	want := errText(ValidateParams("session.create", params))
	for range 50 {
		if got := errText(ValidateParams("session.create", params)); got != want {
			t.Fatalf("got %q, earlier %q", got, want)
		}
	}
	if want != `session.create: params.cwd: expected string, got number` {
		t.Errorf("got %q", want)
	}
}

func TestValidateParamsConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	for _, m := range Methods() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ValidateParams(m, []byte(`{"session":"s","prompt":"p","text":"t","ask":1}`))
		}()
	}
	wg.Wait()
}

// result is a valid turn result with the given members replaced.
func result(members ...string) string {
	fields := map[string]string{
		"output": `"hi"`, "final_output": `"hi"`, "model": `"e/offline"`, "effort": `""`, "aborted": `false`,
		"error": `null`, "error_details": `null`, "warnings": `[]`,
		"usage":    `{"input_tokens":1,"output_tokens":2,"cache_read_tokens":0,"cache_write_5m_tokens":0,"cache_write_1h_tokens":0,"prompt_tokens":1}`,
		"cost_usd": `null`, "tools": `{"calls":0,"failures":0}`, "session": `null`, "path": `null`,
		"stop_reason": `"completed"`, "structured_output": `null`,
	}
	for _, m := range members {
		k, v, _ := strings.Cut(m, "=")
		if v == "" {
			delete(fields, k)
		} else {
			fields[k] = v
		}
	}
	var parts []string
	for k, v := range fields {
		parts = append(parts, `"`+k+`":`+v)
	}
	return "{" + strings.Join(parts, ",") + "}"
}

const details = `{"stage":"model","provider":"openai","model":"openai/gpt-5.5","status":429,"request_id":"r1","error_type":"rate_limit_error","retryable":true,"retry_decision":"exhausted","attempts":3,"message":"rate limited","diagnostic":"","time":"2026-01-02T03:04:05Z"}`

func TestValidateResult(t *testing.T) {
	tests := []struct {
		name, method, result, want string
	}{
		{"turn result", "session.prompt", result(), ""},
		{"failed turn", "session.prompt", result(`error="rate limited"`, "error_details="+details, `session="s1"`, `path="/p.jsonl"`, `cost_usd=0.25`), ""},
		{"unknown fields allowed", "session.prompt", result(`future=1`), ""},
		{"path always present", "session.prompt", result("path="), "session.prompt: result.path: required"},
		{"error_details wrong type", "session.prompt", result("error_details=5"), "session.prompt: result.error_details: expected object, got number"},
		{"error_details incomplete", "session.prompt", result(`error_details={"stage":"model"}`), "session.prompt: result.error_details.attempts: required"},
		{"warnings null", "session.prompt", result("warnings=null"), "session.prompt: result.warnings: expected array, got null"},
		{"create", "session.create", `{"session":"s1","model":"e/offline","effort":"","cwd":"/w","path":null}`, ""},
		{"create without path", "session.create", `{"session":"s1","model":"e/offline","effort":"","cwd":"/w"}`, "session.create: result.path: required"},
		{"steer", "session.steer", `{"held":true}`, ""},
		{"steer not held", "session.steer", `{"held":false}`, "session.steer: result.held: expected true, got false"},
		{"empty", "session.close", `{}`, ""},
		{"models", "models.list", `{"default":"e/offline","models":[{"id":"e/offline","provider":"e","model":"offline","effort":[],"image_input":true,"tools":true,"context_window":200000,"available":true}]}`, ""},
		{"models item", "models.list", `{"default":"e/offline","models":[{"id":"e/offline"}]}`, "models.list: result.models[0].available: required"},
		{"unknown method", "foo", `{}`, `schemas: unknown method "foo"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := errText(ValidateResult(tt.method, []byte(tt.result))); got != tt.want {
				t.Errorf("ValidateResult(%s, %s)\n got %q\nwant %q", tt.method, tt.result, got, tt.want)
			}
		})
	}
}

func TestValidateEvent(t *testing.T) {
	tests := []struct {
		name    string
		line    string
		stamped bool
		want    string
	}{
		{"e -p --json text", `{"type":"text","delta":"It is"}`, false, ""},
		{"stamped text (S2)", `{"type":"text","delta":"It is","session":"s1","request":"p1"}`, true, ""},
		{"request null", `{"type":"turn_start","session":"s1","request":null}`, true, ""},
		{"request any JSON", `{"type":"turn_start","session":"s1","request":{"a":[1e400]}}`, true, ""},
		{"stamps missing", `{"type":"turn_start"}`, true, "event turn_start: request: required"},
		{"session missing", `{"type":"turn_start","request":1}`, true, "event turn_start: session: required"},
		{"stamps allowed unstamped", `{"type":"turn_end","aborted":false,"stop_reason":"completed","session":"s1","request":1}`, false, ""},
		{"stamp type checked unstamped", `{"type":"turn_end","aborted":false,"session":1}`, false, "event turn_end: session: expected string, got number"},
		{"field missing", `{"type":"turn_end"}`, false, "event turn_end: aborted: required"},
		{"tool_batch", `{"type":"tool_batch","calls":[{"id":1,"name":"read","arguments":{"path":"README.md"},"category":"read","target":"README.md"}]}`, false, ""},
		{"tool_batch bad call", `{"type":"tool_batch","calls":[{"id":0,"name":"read","arguments":{},"category":"read","target":""}]}`, false, "event tool_batch: calls[0].id: expected at least 1, got 0"},
		{"tool_end outcome", `{"type":"tool_end","id":1,"outcome":"done","summary":"","content":""}`, false, `event tool_end: outcome: expected "completed", "failed", "denied" or "interrupted", got "done"`},
		{"usage", `{"type":"usage","input_tokens":1200,"output_tokens":80,"cache_read_tokens":0,"cache_write_5m_tokens":0,"cache_write_1h_tokens":0,"prompt_tokens":1200}`, false, ""},
		{"error_details", `{"type":"error_details","details":` + details + `}`, false, ""},
		{"retry from 2", `{"type":"retry","attempt":1,"delay_ms":10,"reason":"429"}`, false, "event retry: attempt: expected at least 2, got 1"},
		{"unknown type", `{"type":"party"}`, false, `event: unknown type "party"`},
		{"no type", `{"delta":"x"}`, false, `event: type: required`},
		{"not an object", `[]`, false, `event: expected object, got array`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := errText(ValidateEvent([]byte(tt.line), tt.stamped)); got != tt.want {
				t.Errorf("ValidateEvent(%s, %v)\n got %q\nwant %q", tt.line, tt.stamped, got, tt.want)
			}
		})
	}
}

func TestValidateLine(t *testing.T) {
	tests := []struct {
		name, line, want string
	}{
		{"response", `{"id":"p1","result":{"held":true}}`, ""},
		{"response with null id", `{"id":null,"result":{}}`, ""},
		{"response without id", `{"result":{}}`, "response: id: required"},
		{"response result not an object", `{"id":1,"result":[]}`, "response: result: expected object, got array"},
		{"response with an extra member", `{"id":1,"result":{},"error":"x"}`, "response: error: not allowed"},
		{"error response", `{"id":null,"error":"rpc: line 3: malformed JSON: unexpected end of JSON input"}`, ""},
		{"error response, big id (F2)", `{"id":12345678901234567890,"error":"x"}`, ""},
		{"error response empty", `{"id":1,"error":""}`, `error response: error: expected a non-empty string, got ""`},
		{"neither", `{"id":1}`, "error response: error: required"},
		{"stamped event", `{"type":"turn_end","aborted":true,"stop_reason":"interrupted","session":"s1","request":"p1"}`, ""},
		{"unstamped event", `{"type":"turn_end","aborted":true,"stop_reason":"interrupted"}`, "event turn_end: request: required"},
		{"ask (X2)", `{"type":"ask","ask":1,"extension":"deploy","method":"ui.confirm","params":{"title":"Deploy?","message":"to prod"}}`, ""},
		{"ask of another method", `{"type":"ask","ask":1,"extension":"deploy","method":"ui.notify","params":{}}`, `ask: method: expected "ui.confirm", "ui.select", "ui.input", "ui.editor" or "tool.approve", got "ui.notify"`},
		{"approval ask (tool.approve)", `{"type":"ask","ask":2,"session":"s1","method":"tool.approve","params":{"id":1,"name":"bash","arguments":{"command":"ls"},"category":"execute","target":"ls"}}`, ""},
		{"approval ask without its session", `{"type":"ask","ask":2,"method":"tool.approve","params":{}}`, `ask: extension: required`}, // the validator names the first alternative's miss
		{"notice about an approval ask", `{"type":"notice","session":"s1","ask":2,"level":"warning","message":"cancelled"}`, ""},
		{"notice (X6)", `{"type":"notice","extension":"deploy","level":"error","message":"crashed"}`, ""},
		{"notice relaying ui.notify", `{"type":"notice","extension":"deploy","level":"info","message":"hi","method":"ui.notify","params":{"message":"hi"}}`, ""},
		{"notice without message", `{"type":"notice","extension":"deploy","level":"info"}`, "notice: message: required"},
		{"one-shot answer (O1)", `{"id":"one",` + result()[1:], ""},
		{"one-shot answer without id", result(), "oneshot answer: id: required"},
		{"one-shot answer, saved (O3)", `{"id":"one",` + result(`session="/h/.e/sessions/x/y.jsonl"`)[1:], ""},
		{"result line is not an rpc line", `{"type":"result"}`, `line: unknown type "result"`},
		{"type not a string", `{"type":1}`, "line: type: expected string, got number"},
		{"not an object", `"x"`, "line: expected object, got string"},
		{"malformed", `{"id":1,`, "line: malformed JSON: unexpected EOF"},
		{"two values", `{} {}`, "line: malformed JSON: invalid character after top-level value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := errText(ValidateLine([]byte(tt.line))); got != tt.want {
				t.Errorf("ValidateLine(%s)\n got %q\nwant %q", tt.line, got, tt.want)
			}
		})
	}
}

func TestValidateOneShot(t *testing.T) {
	tests := []struct {
		name, line, want string
	}{
		{"reference example", `{"id":"one","prompt":"summarize this repository","model":"openai/gpt-5.5","effort":"high","tool_mode":"none","tools":null,"save":false,"images":[]}`, ""},
		{"no id", `{"prompt":"hi"}`, ""},
		{"nulls mean defaults (V1)", `{"prompt":"hi","cwd":null,"model":null,"effort":null,"tools":null,"tool_mode":null,"save":null,"resume":null,"name":null,"images":null}`, ""},
		{"unknown fields (V2)", `{"prompt":"hi","x":1}`, ""},
		{"prompt required (O2)", `{"id":1}`, "oneshot: prompt: required"},
		{"prompt empty (O2)", `{"id":1,"prompt":""}`, `oneshot: prompt: expected a non-empty string, got ""`},
		{"prompt not a string", `{"id":1,"prompt":["a"]}`, "oneshot: prompt: expected string, got array"},
		{"tool_mode (O4)", `{"prompt":"hi","tool_mode":false}`, `oneshot: tool_mode: expected "all" or "none", got false`},
		{"save (O4)", `{"prompt":"hi","save":"yes"}`, "oneshot: save: expected boolean, got string"},
		{"images", `{"prompt":"hi","images":[1]}`, "oneshot: images[0]: expected string, got number"},
		{"not an object", `[1]`, "oneshot: expected object, got array"},
		{"malformed", `{`, "oneshot: malformed JSON: unexpected EOF"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := errText(ValidateOneShot([]byte(tt.line))); got != tt.want {
				t.Errorf("ValidateOneShot(%s)\n got %q\nwant %q", tt.line, got, tt.want)
			}
		})
	}
}

func TestValidateResultLine(t *testing.T) { // P7
	tests := []struct {
		name, line, want string
	}{
		{"result line", `{"type":"result",` + result()[1:], ""},
		{"without type", result(), "result line: type: required"},
		{"other type", `{"type":"turn_end",` + result()[1:], `result line: type: expected "result", got "turn_end"`},
		{"missing usage", `{"type":"result",` + result("usage=")[1:], "result line: usage: required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := errText(ValidateResultLine([]byte(tt.line))); got != tt.want {
				t.Errorf("ValidateResultLine(%s)\n got %q\nwant %q", tt.line, got, tt.want)
			}
		})
	}
}

func TestSchema(t *testing.T) {
	for _, name := range []string{"session.create.params", "session.prompt.result", "events/text", "result", "defs", "lines/ask", "oneshot/request", "envelope/error", "index"} {
		if b, ok := Schema(name); !ok || !json.Valid(b) {
			t.Errorf("Schema(%q): ok %v, valid JSON %v", name, ok, json.Valid(b))
		}
	}
	for _, name := range []string{"", "session.create", "methods/session.create.params", "events/text.json", "nope"} {
		if _, ok := Schema(name); ok {
			t.Errorf("Schema(%q) found", name)
		}
	}
}

// TestDocument compiles Document on its own and validates through it: the
// references between files must resolve inside the one document.
func TestDocument(t *testing.T) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(Document()))
	if err != nil {
		t.Fatal(err)
	}
	defs := doc.(map[string]any)["$defs"].(map[string]any)
	if len(defs) != len(theCatalog().paths) {
		t.Errorf("%d schemas in Document, want %d", len(defs), len(theCatalog().paths))
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("https://example.com/doc.json", doc); err != nil {
		t.Fatal(err)
	}
	for name := range defs {
		if _, err := c.Compile("https://example.com/doc.json#/$defs/" + strings.ReplaceAll(name, "/", "~1")); err != nil {
			t.Errorf("compile %s: %v", name, err)
		}
	}
	s, err := c.Compile("https://example.com/doc.json#/$defs/session.prompt.result")
	if err != nil {
		t.Fatal(err)
	}
	good, _ := jsonschema.UnmarshalJSON(strings.NewReader(result()))
	if err := s.Validate(good); err != nil {
		t.Errorf("valid result: %v", err)
	}
	bad, _ := jsonschema.UnmarshalJSON(strings.NewReader(result("usage={}")))
	if err := s.Validate(bad); err == nil {
		t.Error("a result with usage {} validated")
	}
}
