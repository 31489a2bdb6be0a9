package server

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/e-agent/e/internal/agent"
	"github.com/e-agent/e/internal/extension"
	"github.com/e-agent/e/internal/model"
	"github.com/e-agent/e/internal/session"
	"github.com/e-agent/e/internal/store"
	"github.com/e-agent/e/protocol"
	"github.com/e-agent/e/schemas"
)

// The tests in this file prove that the Go wire types and the JSON Schemas
// in schemas/ describe the same lines: values marshalled from the structs
// validate, and each schema's required list is exactly the set of fields
// the struct always emits.

func ptr[T any](v T) *T { return &v }

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// jsonField is one member a struct marshals to.
type jsonField struct {
	name   string
	always bool // emitted whatever the value: no omitempty
}

// jsonFields lists the members typ marshals to, flattening embedded
// structs as encoding/json does.
func jsonFields(typ reflect.Type) []jsonField {
	var out []jsonField
	for f := range typ.Fields() {
		tag := f.Tag.Get("json")
		if tag == "-" || !f.IsExported() && !f.Anonymous {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			out = append(out, jsonFields(f.Type)...)
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, jsonField{
			name:   name,
			always: !slices.Contains(strings.Split(opts, ","), "omitempty"),
		})
	}
	return out
}

// objectSchema returns the object schema name, or its $defs entry def.
func objectSchema(t *testing.T, name, def string) (required []string, properties map[string]any) {
	t.Helper()
	b, ok := schemas.Schema(name)
	if !ok {
		t.Fatalf("no schema %q", name)
	}
	var s map[string]any
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	if def != "" {
		s, _ = s["$defs"].(map[string]any)[def].(map[string]any)
		if s == nil {
			t.Fatalf("schema %q has no $defs/%s", name, def)
		}
	}
	required = []string{} // "required" may be absent
	list, _ := s["required"].([]any)
	for _, r := range list {
		required = append(required, r.(string))
	}
	properties, _ = s["properties"].(map[string]any)
	return required, properties
}

// shape ties a Go type to the schema of its JSON form.
type shape struct {
	schema string // schema name
	def    string // a $defs entry of it, or ""
	value  any    // a value of the Go type
	extra  []string
	// added: fields e always sends that the schema keeps optional, as
	// they came after the shape (an older server lacks them).
	added []string
}

// TestRequiredMatchesStructs: each schema's required list equals the
// struct's always-emitted fields, and every field the struct has is a
// property of the schema. Params, results and lines of e rpc are the
// generated types of package protocol (internal/gen TestFresh keeps them
// current), so only the other types are checked here: the agent's events,
// turn result and their shared shapes, which e -p prints too (generated
// as well, but in the engine's Go: the embedded model.Usage and the
// always-sent optional fields come from internal/gen/agent.go's tables,
// which this proves), and the tool.approve ask's params and answer. The
// hand-encoded session.entries result is checked by TestWireSchemas.
func TestRequiredMatchesStructs(t *testing.T) {
	shapes := []shape{
		{schema: "result", value: agent.Result{StopReason: agent.StopCompleted}, // e -p --json's last line
			added: []string{"stop_reason", "structured_output"}},
		{schema: "defs", def: "usage", value: agent.Usage{}},
		{schema: "defs", def: "error_details", value: agent.ErrorDetails{}},
		{schema: "defs", def: "tool_counts", value: agent.ToolCounts{}},
		{schema: "defs", def: "call", value: agent.Call{}},
		{schema: "lines/ask", def: "approve", value: agent.ApproveParams{}},
		{schema: "ask.reply.params", def: "approve_result", value: agent.ApproveReply{}},
		{schema: "defs", def: "part", value: model.Part{}},
		{schema: "defs", def: "message", value: model.Message{}},
	}
	for _, ev := range events() {
		shapes = append(shapes, shape{schema: "events/" + ev.EventType(), value: ev, extra: []string{"type"}})
	}
	for _, s := range shapes {
		t.Run(s.schema+"/"+s.def, func(t *testing.T) {
			required, properties := objectSchema(t, s.schema, s.def)
			want := slices.Clone(s.extra)
			typ := reflect.TypeOf(s.value)
			if typ.Kind() == reflect.Pointer { // *agent.Text, *agent.Reasoning
				typ = typ.Elem()
			}
			for _, f := range jsonFields(typ) {
				if _, ok := properties[f.name]; !ok {
					t.Errorf("field %q is not a property of the schema", f.name)
				}
				added := slices.Contains(s.added, f.name)
				if f.always && !added {
					want = append(want, f.name)
				}
				if added && !f.always {
					t.Errorf("field %q is left out when empty, but e always sends it", f.name)
				}
			}
			slices.Sort(want)
			slices.Sort(required)
			if want == nil {
				want = []string{}
			}
			if diff := cmp.Diff(want, required); diff != "" {
				t.Errorf("required (-struct +schema):\n%s", diff)
			}
		})
	}
}

// events returns representative values of the event types, the hard cases
// of their encoders (P8). It need not name every type: the golden cases
// do, as TestGoldenCoverage requires a case for each property of each
// event of schemas/events and replays them against strict validation.
func events() []agent.Event {
	usage := agent.NewUsage(model.Usage{Input: 1200, Output: 80, CacheRead: 10, CacheWrite5m: 2, CacheWrite1h: 1})
	return []agent.Event{
		agent.TurnStart{},
		&agent.Text{Delta: "It is"},
		&agent.Reasoning{Delta: "think\u2028ing"},
		agent.ToolBatch{Calls: []agent.Call{
			{ID: 1, Name: "read", Arguments: json.RawMessage(`{"path":"README.md"}`), Category: "read", Target: "README.md"},
			{ID: 2, Name: "bash", Arguments: json.RawMessage(`{"command":"ls"}`), Category: "execute", Target: "ls"},
		}},
		agent.ToolStart{ID: 1},
		agent.ToolOutput{ID: 2, Delta: "a\nb\n"},
		agent.ToolEnd{ID: 1, Outcome: "completed", Summary: "12 lines", Content: "…"},
		agent.Compacting{Reason: "auto", TokensBefore: 180000},
		agent.Compacted{TokensBefore: 180000, TokensAfter: 12000, SummaryChars: 4000},
		agent.UsageEvent{Usage: usage},
		agent.Warning{Message: "no provider configured: using the offline model"},
		agent.Error{Message: "model: openai: HTTP 429: rate limited"},
		agent.ErrorDetailsEvent{Details: errorDetails(nil)},
		agent.ErrorDetailsEvent{Details: errorDetails(ptr(429))},
		agent.Retry{Attempt: 2, DelayMS: 500, Reason: "HTTP 429"},
		agent.Recovered{Attempts: 2},
		agent.SessionName{Name: "what does this repo do"},
		agent.Steered{Text: "also check tests"},
		agent.Slept{ID: 3, MS: 1000},
		agent.SleepStopped{ID: 3, MS: 200, Reason: "interrupt"},
		agent.Discarded{Reason: "steer", Text: "too late"},
		agent.TurnEnd{Aborted: false, StopReason: agent.StopCompleted},
		agent.ShellOutput{Delta: "a\nb\n"},
	}
}

func errorDetails(status *int) agent.ErrorDetails {
	return agent.ErrorDetails{
		Stage: "model", Provider: "openai", Model: "openai/gpt-5.5", Status: status, RequestID: "req_1",
		ErrorType: "rate_limit_error", Retryable: true, Decision: "exhausted", Attempts: 3,
		Message: "rate limited", Diagnostic: `{"error":"…"}`, Time: "2026-01-02T03:04:05Z",
	}
}

// TestEventsValidate: every event marshals to a line its schema accepts,
// bare as e -p --json prints it and stamped as e rpc does (S2, S3).
func TestEventsValidate(t *testing.T) {
	for _, ev := range events() {
		t.Run(ev.EventType(), func(t *testing.T) {
			line, err := agent.Marshal(ev)
			if err != nil {
				t.Fatal(err)
			}
			if err := schemas.ValidateEvent(line, false); err != nil {
				t.Errorf("%s: %v", line, err)
			}
			stamped := string(line[:len(line)-1]) + `,"session":"01J0","request":{"n":1}}`
			if err := schemas.ValidateLine([]byte(stamped)); err != nil {
				t.Errorf("%s: %v", stamped, err)
			}
			if err := schemas.ValidateEvent(line, true); err == nil {
				t.Errorf("%s validated as stamped", line)
			}
		})
	}
}

// agentResult returns a result as the agent fills it; failed adds the
// error fields.
func agentResult(failed bool) agent.Result {
	r := agent.Result{
		Output: "The repo is e.", FinalOutput: "The repo is e.", Model: "e/offline", Effort: "",
		Warnings: []string{}, Usage: agent.NewUsage(model.Usage{Input: 10, Output: 5}),
		Tools: agent.ToolCounts{Calls: 1}, StopReason: agent.StopCompleted,
	}
	if failed {
		r.StopReason = agent.StopError
		d := errorDetails(ptr(500))
		r.Error, r.ErrorDetails, r.CostUSD = ptr("model: openai: HTTP 500"), &d, ptr(0.0125)
		r.Session, r.Path, r.Warnings = ptr("01J0"), ptr("/h/.e/sessions/--w--/01J0.jsonl"), []string{"w"}
		r.Tools.Failures = 1
	}
	return r
}

// TestWireValuesValidate: params and results marshalled from the structs,
// with nil pointers (null) and with every field set, pass their schemas.
func TestWireValuesValidate(t *testing.T) {
	when := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	info := model.Info{ID: "e/offline", Provider: "e", Name: "offline", Efforts: []string{}, ImageInput: true, Tools: true, ContextWindow: 200000}
	effort := model.Info{ID: "openai/gpt-5.5", Provider: "openai", Name: "gpt-5.5", Efforts: []string{"low", "high"}, ContextWindow: 400000}
	parts := []model.Part{
		{Type: model.PartText, Text: "hi"},
		{Type: model.PartReasoning, Text: "hm", Signature: "sig"},
		{Type: model.PartImage, MediaType: "image/png", Data: []byte{0x89, 'P', 'N', 'G'}},
		{Type: model.PartToolCall, ID: "call_1", Name: "read", Arguments: json.RawMessage(`{"path":"a"}`)},
		{Type: model.PartToolResult, CallID: "call_1", Text: "boom", IsError: true},
	}
	create := protocol.SessionCreateParams{Cwd: ptr("/w"), Model: ptr("e/offline"), Effort: ptr("high"), Tools: ptr([]string{"read"}),
		ToolMode: ptr(protocol.ToolModeNone), Save: ptr(true), Resume: ptr("/h/x.jsonl"), Name: ptr("ci"),
		ClientTools:         ptr([]protocol.ClientTool{{Name: "ticket", Description: ptr("Look up a ticket."), Parameters: json.RawMessage(`{"type":"object"}`)}}),
		ClientToolTimeoutMS: ptr(int64(30000))}
	tests := []struct {
		method string
		params any
		result any
	}{
		{"hello", protocol.HelloParams{}, protocol.HelloResult{Protocol: 2, Version: "0.1.0", Channel: "dev", Commit: "abc", Cwd: "/w", Home: "/h/.e", Methods: schemas.Methods(), Ask: false}},
		{"hello", protocol.HelloParams{Ask: ptr(true)}, protocol.HelloResult{Protocol: 2, Methods: []string{}, Ask: true}},
		{"models.list", protocol.ModelsListParams{}, protocol.ModelsListResult{Default: "e/offline", Models: modelInfos([]model.Info{info, effort})}},
		{"session.create", protocol.SessionCreateParams{}, protocol.SessionCreateResult{Session: "01J0", Model: "e/offline", Cwd: "/w"}},
		{"session.create", create, protocol.SessionCreateResult{Session: "01J0", Model: "e/offline", Effort: "high", Cwd: "/w", Path: ptr("/h/x.jsonl")}},
		{"session.list", protocol.SessionListParams{}, protocol.SessionListResult{Sessions: summaries([]store.Summary{})}},
		{"session.list", protocol.SessionListParams{Cwd: ptr("/w"), All: ptr(true)}, protocol.SessionListResult{Sessions: summaries([]store.Summary{
			{Path: "/h/x.jsonl", Title: "what does this repo do", Name: "", Modified: when, Messages: 4, Turns: 2, Cwd: "/w"}})}},
		{"session.info", protocol.SessionInfoParams{Session: "01J0"}, protocol.SessionInfoResult{Session: "01J0", Model: "e/offline", Cwd: "/w"}},
		{"session.info", protocol.SessionInfoParams{Session: "01J0"}, protocol.SessionInfoResult{Session: "01J0", Model: "e/offline", Cwd: "/w",
			Path: ptr("/h/x.jsonl"), Name: ptr("ci"), Title: ptr("t"), Messages: 3, Running: true}},
		{"session.prompt", protocol.SessionPromptParams{Session: "01J0", Prompt: "hi"}, turnResult(agentResult(false))},
		{"session.prompt", protocol.SessionPromptParams{Session: "01J0", Prompt: "hi", Images: ptr([]string{"a.png"})}, turnResult(agentResult(true))},
		{"session.steer", protocol.SessionSteerParams{Session: "01J0", Text: "also"}, protocol.SessionSteerResult{Held: true}},
		{"session.follow_up", protocol.SessionFollowUpParams{Session: "01J0", Prompt: "then this"}, turnResult(agentResult(false))},
		{"session.interrupt", protocol.SessionInterruptParams{Session: "01J0"}, protocol.SessionInterruptResult{}},
		{"session.unsteer", protocol.SessionUnsteerParams{Session: "01J0"}, protocol.SessionUnsteerResult{Withdrawn: []string{}}},
		{"session.unsteer", protocol.SessionUnsteerParams{Session: "01J0"}, protocol.SessionUnsteerResult{Withdrawn: []string{"also", "and this"}}},
		{"session.entries", protocol.SessionEntriesParams{Session: "01J0"}, SessionEntriesResult{Entries: []store.Entry{}}},
		{"session.entries", protocol.SessionEntriesParams{Session: "01J0", Since: ptr("e1")}, SessionEntriesResult{Leaf: ptr("e2"),
			Entries: []store.Entry{{Type: store.TypeName, ID: "e2", Parent: "e1", Time: when, Name: "ci"}}}},
		{"session.compact", protocol.SessionCompactParams{Session: "01J0"}, protocol.SessionCompactResult{TokensBefore: 9, TokensAfter: 3, SummaryChars: 40, Usage: usage(agent.NewUsage(model.Usage{Input: 9}))}},
		{"session.compact", protocol.SessionCompactParams{Session: "01J0", Focus: ptr("tests")}, protocol.SessionCompactResult{}},
		{"session.set", protocol.SessionSetParams{Session: "01J0"}, protocol.SessionSetResult{Model: "e/offline"}},
		{"session.set", protocol.SessionSetParams{Session: "01J0", Model: ptr("openai/gpt-5.5"), Effort: ptr("low")}, protocol.SessionSetResult{Model: "openai/gpt-5.5", Effort: "low"}},
		{"session.messages", protocol.SessionMessagesParams{Session: "01J0"}, protocol.SessionMessagesResult{Messages: logMessages([]session.Message{})}},
		{"session.messages", protocol.SessionMessagesParams{Session: "01J0"}, protocol.SessionMessagesResult{Messages: logMessages([]session.Message{
			{ID: "e1", Parent: "", Time: when, Role: model.RoleUser, Content: parts[:1]},
			{ID: "e2", Parent: "e1", Time: when, Role: model.RoleAssistant, Content: parts[1:4]},
			{ID: "e3", Parent: "e2", Time: when, Role: model.RoleTool, Content: parts[4:]},
		})}},
		{"session.shell", protocol.SessionShellParams{Session: "01J0", Command: "ls"}, protocol.SessionShellResult{Entry: "e1", Output: "a\n", ExitCode: ptr(int64(0))}},
		{"session.shell", protocol.SessionShellParams{Session: "01J0", Command: "sleep 9", Exclude: ptr(true), TimeoutMS: ptr(int64(5))},
			protocol.SessionShellResult{Entry: "e1", TimedOut: true}},
		{"session.fork", protocol.SessionForkParams{Session: "01J0"}, protocol.SessionForkResult{Session: "01J1"}},
		{"session.fork", protocol.SessionForkParams{Session: "01J0", At: ptr("e1")}, protocol.SessionForkResult{Session: "01J1"}},
		{"session.fork", protocol.SessionForkParams{Session: "01J0"}, protocol.SessionForkResult{Session: "01J1", Path: ptr("/h/y.jsonl")}},
		{"session.export", protocol.SessionExportParams{Session: "01J0"}, protocol.SessionExportResult{Path: "/h/x.html", Title: "t"}},
		{"session.export", protocol.SessionExportParams{Session: "01J0", Path: ptr("/tmp/x.html")}, protocol.SessionExportResult{Path: "/tmp/x.html"}},
		{"session.rename", protocol.SessionRenameParams{Session: "01J0", Name: "ci"}, protocol.SessionRenameResult{}},
		{"session.close", protocol.SessionCloseParams{Session: "01J0"}, protocol.SessionCloseResult{}},
		{"ask.reply", protocol.AskReplyParams{Ask: 1}, protocol.AskReplyResult{}},
		{"ask.reply", protocol.AskReplyParams{Ask: 1, Result: json.RawMessage(`{"confirmed":true}`)}, protocol.AskReplyResult{}},
		{"shutdown", protocol.ShutdownParams{}, protocol.ShutdownResult{}},
		{"tool.result", protocol.ToolResultParams{Call: 1, Content: "open"}, protocol.ToolResultResult{}},
		{"tool.result", protocol.ToolResultParams{Call: 2, Content: "no such ticket", IsError: ptr(true)}, protocol.ToolResultResult{}},
	}
	seen := map[string]bool{}
	for _, tt := range tests {
		seen[tt.method] = true
		t.Run(tt.method, func(t *testing.T) {
			params, result := mustJSON(t, tt.params), mustJSON(t, tt.result)
			if err := schemas.ValidateParams(tt.method, params); err != nil {
				t.Errorf("params %s: %v", params, err)
			}
			if err := schemas.ValidateResult(tt.method, result); err != nil {
				t.Errorf("result %s: %v", result, err)
			}
			line := `{"id":"r1","result":` + string(result) + `}`
			if err := schemas.ValidateLine([]byte(line)); err != nil {
				t.Errorf("%s: %v", line, err)
			}
		})
	}
	for _, m := range schemas.Methods() {
		if !seen[m] {
			t.Errorf("method %s has no case here", m)
		}
	}
}

// TestLinesValidate: the other lines e rpc and e -p print.
func TestLinesValidate(t *testing.T) {
	flat := func(id string, r agent.Result) []byte {
		return []byte(`{"id":` + id + `,` + string(mustJSON(t, r)[1:]))
	}
	tests := []struct {
		name     string
		line     []byte
		validate func([]byte) error
	}{
		{"one-shot request, nulls", mustJSON(t, protocol.OneShotRequest{ID: json.RawMessage(`"one"`), Prompt: "hi"}), schemas.ValidateOneShot},
		{"one-shot request, set", mustJSON(t, protocol.OneShotRequest{ID: json.RawMessage(`1`), Prompt: "hi", Cwd: ptr("/w"), Model: ptr("e/offline"),
			Effort: ptr("high"), Tools: ptr([]string{}), ToolMode: ptr(protocol.ToolModeAll), Save: ptr(false), Resume: ptr("/h/x.jsonl"),
			Name: ptr("n"), Images: ptr([]string{"a.png"})}), schemas.ValidateOneShot},
		{"one-shot answer (O1)", flat(`"one"`, agentResult(false)), schemas.ValidateLine},
		{"one-shot answer, failed", flat(`null`, agentResult(true)), schemas.ValidateLine},
		{"e -p --json result line (P7)", []byte(`{"type":"result",` + string(mustJSON(t, agentResult(false))[1:])), schemas.ValidateResultLine},
		{"notice (X6)", mustJSON(t, protocol.NoticeLine{Type: "notice", Extension: "deploy", Level: "error", Message: "crashed"}), schemas.ValidateLine},
		{"notice relaying ui.notify", mustJSON(t, protocol.NoticeLine{Type: "notice", Extension: "deploy", Level: "info", Message: "hi",
			Method: "ui.notify", Params: json.RawMessage(`{"message":"hi"}`)}), schemas.ValidateLine},
		{"ask (X2)", mustJSON(t, askLine(extension.Ask{Ask: 1, Extension: "deploy", Method: "ui.confirm",
			Params: json.RawMessage(`{"title":"Deploy?","message":"to prod"}`)})), schemas.ValidateLine},
		{"approval ask (A2)", mustJSON(t, askLine(extension.Ask{Ask: 2, Session: "s1", Method: approveMethod,
			Params: mustJSON(t, agent.ApproveParams{Call: agent.Call{ID: 1, Name: "bash", Arguments: json.RawMessage(`{"command":"ls"}`),
				Category: "execute", Target: "ls"}, TimeoutMS: 50})})), schemas.ValidateLine},
		{"tool_call (G1)", mustJSON(t, protocol.ToolCallLine{Type: "tool_call", Call: 1, Session: "s1", Request: json.RawMessage(`"p"`), ID: 3,
			Name: "ticket", Arguments: json.RawMessage(`{"id":7}`)}), schemas.ValidateLine},
		{"tool_call_cancelled (G2)", mustJSON(t, protocol.ToolCallCancelledLine{Type: "tool_call_cancelled", Call: 1, Session: "s1",
			Reason: protocol.ToolCallCancelledLineReasonTimeout}), schemas.ValidateLine},
		{"notice of a cancelled approval (A3)", mustJSON(t, protocol.NoticeLine{Type: "notice", Session: "s1", Ask: 2, Level: "warning", Message: "cancelled"}), schemas.ValidateLine},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.validate(tt.line); err != nil {
				t.Errorf("%s: %v", tt.line, err)
			}
		})
	}
}
