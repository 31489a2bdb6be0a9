package agent

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/e-agent/e/internal/model"
)

// runWith runs one turn with opts to its end.
func runWith(t *testing.T, s *Session, text string, opts TurnOptions) (Result, *recorder) {
	t.Helper()
	if err := s.Begin(); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	return s.PromptWith(context.Background(), text, nil, opts, rec.sink), rec
}

// loop asks for a tool call in each of n model calls, then answers.
func loop(n int) string {
	return strings.Repeat("/tool bash {\"command\":\"true\"}\n/usage 40 10 0 0 0\n/then\n", n) + "/text done"
}

// Each budget stops a looping tool turn at the right model call with its
// stop reason; the last answer's tools do not run, yet each has a result,
// so the next prompt works (N1, N2).
func TestBudgetStops(t *testing.T) {
	cases := []struct {
		name      string
		budget    Budget
		wantStop  string
		wantCalls int    // model calls made (usage events)
		wantRan   int    // bash calls that ran
		wantError string // the result's error
	}{
		{name: "none", budget: Budget{}, wantStop: StopCompleted, wantCalls: 6, wantRan: 5},
		{name: "model calls", budget: Budget{MaxModelCalls: 3}, wantStop: StopModelCalls, wantCalls: 3, wantRan: 2,
			wantError: "stopped: max_model_calls 3 reached (3 calls made)"},
		{name: "tokens", budget: Budget{MaxTokens: 100}, wantStop: StopTokens, wantCalls: 2, wantRan: 1,
			wantError: "stopped: max_tokens 100 reached (100 tokens used)"},
		{name: "tokens not reached", budget: Budget{MaxTokens: 1000}, wantStop: StopCompleted, wantCalls: 6, wantRan: 5},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := testSession(t, testEngine(t), nil)
			res, rec := runWith(t, s, loop(5), TurnOptions{Budget: c.budget})
			got := struct {
				Stop, Error string
				Calls, Ran  int
				EndStop     string
			}{Stop: res.StopReason, Calls: len(ofType[UsageEvent](rec)), EndStop: ofType[TurnEnd](rec)[0].StopReason}
			if res.Error != nil {
				got.Error = *res.Error
			}
			for _, e := range ofType[ToolEnd](rec) {
				if e.Outcome == "completed" {
					got.Ran++
				}
			}
			want := got
			want.Stop, want.Error, want.Calls, want.Ran, want.EndStop = c.wantStop, c.wantError, c.wantCalls, c.wantRan, c.wantStop
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if res.Aborted {
				t.Error("a budget's stop is not an interruption")
			}
			// The history is valid: the next prompt runs.
			next, _ := prompt(t, s, "/text again")
			if next.Error != nil || next.FinalOutput != "again" {
				t.Errorf("next turn: error %v, output %q", next.Error, next.FinalOutput)
			}
		})
	}
}

// max_duration_ms stops running tools as an interrupt does; the stop
// reason says the budget, not an interruption.
func TestBudgetDuration(t *testing.T) {
	s := testSession(t, testEngine(t), nil)
	res, rec := runWith(t, s, "/tool bash {\"command\":\"sleep 30\"}\n/then\n/text never", TurnOptions{Budget: Budget{MaxDurationMS: 200}})
	if res.StopReason != StopDurationMS || res.Aborted {
		t.Fatalf("stop reason %q, aborted %v; want max_duration_ms, not aborted", res.StopReason, res.Aborted)
	}
	if ends := ofType[ToolEnd](rec); len(ends) != 1 || ends[0].Outcome != "interrupted" {
		t.Errorf("tool ends %+v, want one interrupted", ends)
	}
	if res.Error == nil || !strings.HasPrefix(*res.Error, "stopped: max_duration_ms 200 reached (") {
		t.Errorf("error %v", res.Error)
	}
	if next, _ := prompt(t, s, "/text again"); next.StopReason != StopCompleted {
		t.Errorf("next turn stop reason %q", next.StopReason)
	}
}

// An interrupted turn and a failed one say so.
func TestStopReasonInterruptedAndError(t *testing.T) {
	s := testSession(t, testEngine(t), nil)
	if res, _ := prompt(t, s, "/error fatal boom"); res.StopReason != StopError {
		t.Errorf("failed turn: stop reason %q, want error", res.StopReason)
	}
	if err := s.Begin(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if res := s.PromptWith(ctx, "/text hi", nil, TurnOptions{}, (&recorder{}).sink); res.StopReason != StopInterrupted {
		t.Errorf("interrupted turn: stop reason %q, want interrupted", res.StopReason)
	}
}

func TestMoney(t *testing.T) {
	for _, c := range []struct {
		in   float64
		want string
	}{{0.5, "0.50"}, {1, "1.00"}, {0.005, "0.005"}, {12.25, "12.25"}} {
		if got := money(c.in); got != c.want {
			t.Errorf("money(%v) = %q, want %q", c.in, got, c.want)
		}
	}
}

// The final answer is checked against the output schema: valid, valid
// after one corrective call, invalid twice (J1, J2).
func TestOutputSchema(t *testing.T) {
	schema, err := NewOutputSchema(json.RawMessage(`{"type":"object","required":["ok"],"properties":{"ok":{"type":"boolean"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name      string
		prompt    string
		wantStop  string
		wantValue string // structured_output; "" for null
		wantError string
		wantCalls int
	}{
		{name: "minimal value", prompt: "review", wantStop: StopCompleted, wantValue: `{"ok":false}`, wantCalls: 1},
		{name: "fenced", prompt: "/text ```json\n/text {\"ok\": true}\n/text ```", wantStop: StopCompleted, wantValue: `{"ok":true}`, wantCalls: 1},
		{name: "corrected", prompt: "/text not json\n/then\n/text {\"ok\":true}", wantStop: StopCompleted, wantValue: `{"ok":true}`, wantCalls: 2},
		{name: "invalid twice", prompt: "/text {\"ok\":1}\n/then\n/text still not json", wantStop: StopInvalidOutput,
			wantError: "invalid output: the answer is not one JSON value", wantCalls: 2},
		{name: "tools first", prompt: "/tool bash {\"command\":\"true\"}", wantStop: StopCompleted, wantValue: `{"ok":false}`, wantCalls: 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := testSession(t, testEngine(t), nil)
			res, rec := runWith(t, s, c.prompt, TurnOptions{Output: schema})
			got := struct {
				Stop, Value, Error string
				Calls              int
			}{Stop: res.StopReason, Value: string(res.StructuredOutput),
				Calls: len(ofType[UsageEvent](rec))}
			if res.Error != nil {
				got.Error = *res.Error
			}
			want := got
			want.Stop, want.Value, want.Error, want.Calls = c.wantStop, c.wantValue, c.wantError, c.wantCalls
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// The first invalid answer's error is fed back, the schema with it.
func TestOutputCorrectionMessage(t *testing.T) {
	schema, err := NewOutputSchema(json.RawMessage(`{"type":"object","required":["ok"]}`))
	if err != nil {
		t.Fatal(err)
	}
	s := testSession(t, testEngine(t), nil)
	runWith(t, s, "/text {\"no\":1}\n/then\n/text {\"ok\":1}", TurnOptions{Output: schema})
	s.mu.Lock()
	msgs := s.history(s.entries)
	s.mu.Unlock()
	var fed string
	for _, m := range msgs {
		if m.Role == model.RoleUser && strings.HasPrefix(m.Text(), model.CorrectionPrefix) {
			fed = m.Text()
		}
	}
	for _, want := range []string{`$.ok: required`, `{"type":"object","required":["ok"]}`} {
		if !strings.Contains(fed, want) {
			t.Errorf("corrective message %q lacks %q", fed, want)
		}
	}
}

// A keyword e's validator does not implement is refused, named.
func TestOutputSchemaUnknownKeyword(t *testing.T) {
	_, err := NewOutputSchema(json.RawMessage(`{"type":"object","patternProperties":{"^a":{}}}`))
	if err == nil || !strings.Contains(err.Error(), `"patternProperties"`) {
		t.Errorf("error %v, want one naming patternProperties", err)
	}
	if _, err := NewOutputSchema(json.RawMessage(`{"required":"ok"}`)); err == nil {
		t.Error("a malformed required was accepted")
	}
}

// An endpoint that answers 400 naming response_format is asked again with
// the schema in the system prompt, and a warning says so (J1).
func TestOutputSchemaRefusedField(t *testing.T) {
	srv := chatServer(t,
		reply{status: 400, body: `{"error":{"message":"Unrecognized request argument supplied: response_format","type":"invalid_request_error"}}`},
		reply{text: `{"ok":true}`})
	s := providerSession(t, srv, 100000)
	schema, err := NewOutputSchema(json.RawMessage(`{"type":"object","required":["ok"]}`))
	if err != nil {
		t.Fatal(err)
	}
	res, rec := runWith(t, s, "review", TurnOptions{Output: schema})
	if res.StopReason != StopCompleted || string(res.StructuredOutput) != `{"ok":true}` {
		t.Fatalf("stop %q, value %s, error %v", res.StopReason, res.StructuredOutput, res.Error)
	}
	if w := ofType[Warning](rec); len(w) != 1 || !strings.Contains(w[0].Message, "refused the output schema") {
		t.Errorf("warnings %+v", w)
	}
}

// An Anthropic model that answers 400 naming output_format is asked again
// for a forced tool call, whose input is the answer (J1).
func TestOutputSchemaAnthropicForcedTool(t *testing.T) {
	var mu sync.Mutex
	var bodies []map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		mu.Lock()
		bodies = append(bodies, body)
		n := len(bodies)
		mu.Unlock()
		if n == 1 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"type":"error","error":{"type":"invalid_request_error","message":"output_format: Extra inputs are not permitted"}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, d := range []string{
			`{"type":"message_start","message":{"id":"msg_1","model":"m","usage":{"input_tokens":5,"output_tokens":1}}}`,
			`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"output","input":{}}}`,
			`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"ok\":true}"}}`,
			`{"type":"content_block_stop","index":0}`,
			`{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":4}}`,
			`{"type":"message_stop"}`,
		} {
			io.WriteString(w, "data: "+d+"\n\n")
		}
	}))
	t.Cleanup(srv.Close)
	cat, err := model.NewCatalog(model.Config{Getenv: func(string) string { return "" }, HTTPClient: srv.Client(),
		Providers: map[string]model.ProviderConfig{"anth": {API: model.APIAnthropic, BaseURL: srv.URL,
			Models: []model.ModelConfig{{ID: "m"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	eng := testEngine(t)
	eng.Catalog = cat
	s := testSession(t, eng, func(o *Options) { o.Model, o.Effort, o.Tools = "anth/m", "", nil })
	schema, err := NewOutputSchema(json.RawMessage(`{"type":"object","required":["ok"]}`))
	if err != nil {
		t.Fatal(err)
	}
	res, rec := runWith(t, s, "review", TurnOptions{Output: schema})
	if res.StopReason != StopCompleted || string(res.StructuredOutput) != `{"ok":true}` {
		t.Fatalf("stop %q, value %s, error %v", res.StopReason, res.StructuredOutput, res.Error)
	}
	if w := ofType[Warning](rec); len(w) != 1 || !strings.Contains(w[0].Message, "forced tool call") {
		t.Errorf("warnings %+v", w)
	}
	mu.Lock()
	defer mu.Unlock()
	if _, ok := bodies[0]["output_format"]; !ok {
		t.Errorf("first request without output_format: %v", bodies[0])
	}
	if got := bodies[1]["tool_choice"]; !cmp.Equal(got, map[string]any{"type": "tool", "name": "output"}) {
		t.Errorf("second request's tool_choice %v", got)
	}
}

// An automatic compaction's call counts toward the turn's budget: with
// max_model_calls 1 the compaction is the one call, and the turn stops
// before asking the model (N1).
func TestBudgetCountsCompaction(t *testing.T) {
	eng := testEngine(t)
	eng.CompactThreshold = 0.02 // 4000 of the offline model's 200000 tokens (TestAutoCompaction)
	s := testSession(t, eng, nil)
	if r, _ := prompt(t, s, "/long 4000"); r.Error != nil {
		t.Fatal(*r.Error)
	}
	res, rec := runWith(t, s, "/text never", TurnOptions{Budget: Budget{MaxModelCalls: 1}})
	if len(ofType[Compacted](rec)) != 1 || res.StopReason != StopModelCalls || strings.Contains(res.Output, "never") {
		t.Errorf("events %v, stop reason %q, output %q; want one compaction, then max_model_calls before the answer",
			rec.types(), res.StopReason, res.Output)
	}
}
