package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/e-agent/e/internal/model"
	"github.com/e-agent/e/internal/store"
)

// P8: the events of a turn come in a fixed order.
func TestEventOrder(t *testing.T) {
	tests := []struct {
		name   string
		prompt string
		want   []string
	}{
		{
			name:   "plain",
			prompt: "/text hello world",
			want:   []string{"turn_start", "session_name", "text", "text", "usage", "turn_end"},
		},
		{
			name:   "reasoning first",
			prompt: "/text answer\n/think hmm",
			want:   []string{"turn_start", "session_name", "reasoning", "text", "usage", "turn_end"},
		},
		{
			name:   "tool turn",
			prompt: "/tool read {\"path\":\"a.txt\"}\n/then\n/text ok",
			want: []string{"turn_start", "session_name", "usage", "tool_batch", "tool_start", "tool_end",
				"text", "usage", "turn_end"},
		},
		{
			name:   "bash streams output",
			prompt: "/tool bash {\"command\":\"echo hi\"}\n/then\n/text ok",
			want: []string{"turn_start", "session_name", "usage", "tool_batch", "tool_start", "tool_output",
				"tool_end", "text", "usage", "turn_end"},
		},
		{
			name:   "sleep reports slept",
			prompt: "/tool sleep {\"ms\":1}\n/then\n/text ok",
			want: []string{"turn_start", "session_name", "usage", "tool_batch", "tool_start", "slept",
				"tool_end", "text", "usage", "turn_end"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := testSession(t, testEngine(t), nil)
			if err := os.WriteFile(filepath.Join(s.Cwd(), "a.txt"), []byte("alpha\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			res, rec := prompt(t, s, tt.prompt)
			if diff := cmp.Diff(tt.want, rec.types()); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if res.Error != nil {
				t.Errorf("error: %s", *res.Error)
			}
			checkTurnEnd(t, rec, false)
		})
	}
}

// P8: tool_batch, tool_start and tool_end describe the call.
func TestToolEvents(t *testing.T) {
	s := testSession(t, testEngine(t), nil)
	if err := os.WriteFile(filepath.Join(s.Cwd(), "a.txt"), []byte("alpha\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, rec := prompt(t, s, "/tool read {\"path\":\"a.txt\"}\n/tool bash {\"command\":\"true\"}")
	wantBatch := []ToolBatch{{Calls: []Call{
		{ID: 1, Name: "read", Arguments: json.RawMessage(`{"path":"a.txt"}`), Category: "read", Target: "a.txt"},
		{ID: 2, Name: "bash", Arguments: json.RawMessage(`{"command":"true"}`), Category: "execute", Target: "true"},
	}}}
	if diff := cmp.Diff(wantBatch, ofType[ToolBatch](rec)); diff != "" {
		t.Errorf("tool_batch (-want +got):\n%s", diff)
	}
	ends := ofType[ToolEnd](rec)
	byID := map[int]ToolEnd{}
	for _, e := range ends {
		byID[e.ID] = e
	}
	if diff := cmp.Diff(ToolEnd{ID: 1, Outcome: "completed", Summary: "1 line", Content: "alpha\n"}, byID[1]); diff != "" {
		t.Errorf("tool_end of read (-want +got):\n%s", diff)
	}
	if got := byID[2]; got.Outcome != "completed" || !strings.Contains(got.Content, "[exit 0]") {
		t.Errorf("tool_end of bash = %+v, want completed with [exit 0]", got)
	}
	// Ids continue across the turns of a session.
	_, rec = prompt(t, s, "/tool ls {}")
	if got := ofType[ToolBatch](rec)[0].Calls[0].ID; got != 3 {
		t.Errorf("first call id of the second turn = %d, want 3", got)
	}
}

// Call ids continue after those of a resumed history, so they stay unique
// within the session.
func TestCallIDsContinueAfterResume(t *testing.T) {
	eng := testEngine(t)
	first := testSession(t, eng, nil)
	prompt(t, first, "/tool ls {}\n/tool ls {}")
	resumed := testSession(t, eng, func(o *Options) { o.Entries = first.Entries() })
	_, rec := prompt(t, resumed, "/tool ls {}")
	if got := ofType[ToolBatch](rec)[0].Calls[0].ID; got != 3 {
		t.Errorf("first call id after resume = %d, want 3", got)
	}
	if got := ofType[SessionName](rec); len(got) != 0 {
		t.Errorf("a resumed session with a title got session_name again: %v", got)
	}

	// A resume counts the calls without decoding the messages that name
	// none; one that spells its part type with escapes is decoded.
	entries := first.Entries()
	spelled := 0
	for i, en := range entries {
		if bytes.Contains(en.Message, []byte(`"tool_call"`)) {
			entries[i].Message = bytes.ReplaceAll(en.Message, []byte(`"tool_call"`), []byte(`"tool\u005fcall"`))
			spelled++
		}
	}
	if spelled == 0 {
		t.Fatal("no message of the first session holds a tool call")
	}
	escaped := testSession(t, eng, func(o *Options) { o.Entries = entries })
	_, rec = prompt(t, escaped, "/tool ls {}")
	if got := ofType[ToolBatch](rec)[0].Calls[0].ID; got != 3 {
		t.Errorf("first call id after resuming calls spelled with escapes = %d, want 3", got)
	}
}

// Every turn ends with exactly one turn_end, as its last event, on every
// path that ends by itself (PITFALLS: ordering and completeness).
func TestTurnEndOnEveryPath(t *testing.T) {
	many := strings.Repeat("/tool nope {}\n/then\n", maxSteps+1)
	tests := []struct {
		name      string
		model     string
		prompt    string
		wantError string // substring; "" for none
	}{
		{name: "success", prompt: "/text hi"},
		{name: "fatal model error", prompt: "/error fatal boom", wantError: "boom"},
		{name: "retries exhausted", prompt: "/error persistent", wantError: "simulated persistent error"},
		{name: "malformed directive", prompt: "/long 0", wantError: "malformed directive on line 1"},
		{name: "unknown model", model: "nope/none", prompt: "hi", wantError: `unknown model "nope/none"`},
		{name: "max steps", prompt: many, wantError: "asked for tools 200 times"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := testSession(t, testEngine(t), func(o *Options) {
				if tt.model != "" {
					o.Model = tt.model
				}
			})
			res, rec := prompt(t, s, tt.prompt)
			checkTurnEnd(t, rec, false)
			got := ""
			if res.Error != nil {
				got = *res.Error
			}
			if (tt.wantError == "") != (got == "") || !strings.Contains(got, tt.wantError) {
				t.Fatalf("error = %q, want one containing %q", got, tt.wantError)
			}
			if tt.wantError == "" {
				return
			}
			// The error event carries the result's error, just before turn_end.
			evs := rec.all()
			errEv, ok := evs[len(evs)-2].(Error)
			if res.ErrorDetails != nil {
				errEv, ok = evs[len(evs)-3].(Error)
			}
			if !ok || errEv.Message != got {
				t.Errorf("events end with %v, want error %q before turn_end", rec.types(), got)
			}
		})
	}
}

// Result fields: output joins all text, final_output is the last answer,
// usage sums every call with prompt_tokens derived (U1), tools counts
// calls and failures.
func TestResultFields(t *testing.T) {
	eng := testEngine(t)
	s := testSession(t, eng, func(o *Options) { o.Tools = nil })
	res, rec := prompt(t, s, "/text first part\n/tool nope {}\n/usage 10 5 3 2 1\n/then\n/text second\n/usage 1 2 3 4 5")
	zero := 0.0
	want := Result{
		Output:      "first partsecond",
		FinalOutput: "second",
		Model:       model.OfflineID,
		Effort:      "medium",
		Warnings:    []string{},
		Usage: Usage{Usage: model.Usage{Input: 11, Output: 7, CacheRead: 6, CacheWrite5m: 6, CacheWrite1h: 6},
			PromptTokens: 11 + 6 + 6 + 6},
		CostUSD:    &zero,
		Tools:      ToolCounts{Calls: 1, Failures: 1},
		StopReason: StopCompleted,
		// The last answer is one text part: its entry's encoding.
		FinalOutputJSON: []byte(`"second"`),
	}
	if diff := cmp.Diff(want, res); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
	wantUsage := []UsageEvent{
		{Usage: NewUsage(model.Usage{Input: 10, Output: 5, CacheRead: 3, CacheWrite5m: 2, CacheWrite1h: 1})},
		{Usage: NewUsage(model.Usage{Input: 1, Output: 2, CacheRead: 3, CacheWrite5m: 4, CacheWrite1h: 5})},
	}
	if diff := cmp.Diff(wantUsage, ofType[UsageEvent](rec)); diff != "" {
		t.Errorf("usage events (-want +got):\n%s", diff)
	}
	b, err := Marshal(wantUsage[0])
	if err != nil {
		t.Fatal(err)
	}
	wantJSON := `{"type":"usage","input_tokens":10,"output_tokens":5,"cache_read_tokens":3,` +
		`"cache_write_5m_tokens":2,"cache_write_1h_tokens":1,"prompt_tokens":16}`
	if string(b) != wantJSON {
		t.Errorf("Marshal(usage) = %s, want %s", b, wantJSON)
	}
}

// A session on the fallback model warns once, on its first turn.
func TestDefaultWarning(t *testing.T) {
	eng := testEngine(t)
	eng.DefaultWarning = "no model provider configured"
	s := testSession(t, eng, nil)
	for i, want := range [][]string{{"no model provider configured"}, {}} {
		res, rec := prompt(t, s, "/text hi")
		if diff := cmp.Diff(want, res.Warnings); diff != "" {
			t.Errorf("turn %d warnings (-want +got):\n%s", i+1, diff)
		}
		if got := len(ofType[Warning](rec)); got != len(want) {
			t.Errorf("turn %d: %d warning events, want %d", i+1, got, len(want))
		}
	}
}

// U2: a terminal model failure carries error_details with the retry
// decision; retries are visible as retry events.
func TestErrorDetails(t *testing.T) {
	st400, st503 := 400, 503
	tests := []struct {
		name       string
		prompt     string
		want       ErrorDetails
		wantRetry  []Retry
		wantEvents []string
	}{
		{
			name:   "fatal is not retried",
			prompt: "/error fatal boom",
			want: ErrorDetails{Stage: "model", Provider: "e", Model: model.OfflineID, Status: &st400,
				ErrorType: "offline_fatal", Decision: "not_retryable", Attempts: 1, Message: "model: e: HTTP 400: boom"},
			wantEvents: []string{"turn_start", "session_name", "error", "error_details", "turn_end"},
		},
		{
			name:   "persistent exhausts the attempts",
			prompt: "/error persistent",
			want: ErrorDetails{Stage: "model", Provider: "e", Model: model.OfflineID, Status: &st503,
				ErrorType: "offline_retryable", Retryable: true, Decision: "exhausted", Attempts: 3,
				Message: "model: e: HTTP 503: simulated persistent error"},
			wantRetry: []Retry{
				{Attempt: 2, DelayMS: 1, Reason: "model: e: HTTP 503: simulated persistent error"},
				{Attempt: 3, DelayMS: 2, Reason: "model: e: HTTP 503: simulated persistent error"},
			},
			wantEvents: []string{"turn_start", "session_name", "retry", "retry", "error", "error_details", "turn_end"},
		},
		{
			name:   "malformed directive is not retried",
			prompt: "/usage 1",
			want: ErrorDetails{Stage: "model", Provider: "e", Model: model.OfflineID, Status: &st400,
				ErrorType: "offline_directive", Decision: "not_retryable", Attempts: 1,
				Message: `model: e: HTTP 400: malformed directive on line 1 "/usage 1": want /usage INPUT OUTPUT CACHE_READ CACHE_WRITE_5M CACHE_WRITE_1H [REASONING], non-negative integers, REASONING at most OUTPUT`},
			wantEvents: []string{"turn_start", "session_name", "error", "error_details", "turn_end"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := testSession(t, testEngine(t), nil)
			res, rec := prompt(t, s, tt.prompt)
			ignore := cmpopts.IgnoreFields(ErrorDetails{}, "Time")
			if res.ErrorDetails == nil {
				t.Fatalf("no error_details; error %v", res.Error)
			}
			if diff := cmp.Diff(tt.want, *res.ErrorDetails, ignore); diff != "" {
				t.Errorf("error_details (-want +got):\n%s", diff)
			}
			if res.Error == nil || *res.Error != tt.want.Message {
				t.Errorf("error = %v, want %q", res.Error, tt.want.Message)
			}
			evs := ofType[ErrorDetailsEvent](rec)
			if len(evs) != 1 || !cmp.Equal(evs[0].Details, *res.ErrorDetails) {
				t.Errorf("error_details events = %+v, want one equal to the result's", evs)
			}
			if diff := cmp.Diff(tt.wantRetry, ofType[Retry](rec), cmpopts.IgnoreFields(Retry{}, "Logged")); diff != "" {
				t.Errorf("retry events (-want +got):\n%s", diff)
			}
			// Each retried attempt is in the history, before the error.
			var got []string
			for _, en := range s.Entries() {
				switch en.Type {
				case store.TypeAttempt:
					got = append(got, fmt.Sprintf("attempt %d: %s", en.Call.Attempts, en.Error))
				case store.TypeError:
					n := 0
					if en.Call != nil {
						n = en.Call.Attempts
					}
					got = append(got, fmt.Sprintf("error after %d attempts: %s", n, en.Error))
				}
			}
			want := []string{}
			for i, r := range tt.wantRetry {
				want = append(want, fmt.Sprintf("attempt %d: %s", i+1, r.Reason))
			}
			want = append(want, fmt.Sprintf("error after %d attempts: %s", tt.want.Attempts, tt.want.Message))
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("attempt and error entries (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantEvents, rec.types()); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if res.Aborted {
				t.Error("a failed turn is not aborted")
			}
		})
	}
}

// CancelRetryWait ends a retry's wait (an hour here): ending the turn with
// the failure, which the attempt entry already records (no error entry),
// its decision "cancelled"; or at once into a new model call, as pi's run
// goes on with what is queued: a steer sent during the wait goes in
// first, and the new call's retry counts its attempts from 1 again (the
// offline model fails the first attempt of each call; the second wait is
// cancelled).
func TestCancelRetryWait(t *testing.T) {
	tests := []struct {
		name       string
		now        bool
		wantEvents []string
		wantErr    string // the turn's error_details decision, "" for none
		wantTypes  string // the entries after the prompt
	}{{
		name:       "cancelled",
		wantEvents: []string{"turn_start", "session_name", "text", "discarded", "retry", "error", "error_details", "turn_end"},
		wantErr:    "cancelled",
		wantTypes:  "title attempt",
	}, {
		name: "called again at once",
		now:  true,
		wantEvents: []string{"turn_start", "session_name", "text", "discarded", "retry", "steered", "text", "discarded", "retry",
			"error", "error_details", "turn_end"},
		wantErr:   "cancelled",
		wantTypes: "title attempt message attempt",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eng := testEngine(t)
			eng.RetryBase = time.Hour
			s := testSession(t, eng, nil)
			if s.CancelRetryWait(tt.now) {
				t.Error("CancelRetryWait while idle reports a wait")
			}
			rec := &recorder{}
			cancelled := make(chan bool, 2)
			retries := 0
			rec.hook = func(ev Event) {
				if isType[Retry](ev) {
					retries++
					now := tt.now && retries == 1
					if now {
						if err := s.Steer("/error retryable again\n/text back"); err != nil {
							t.Error(err)
						}
					}
					cancelled <- s.CancelRetryWait(now)
				}
			}
			res := promptWith(t, s, "/error retryable overloaded\n/text back", rec)
			if !<-cancelled {
				t.Error("CancelRetryWait after the retry event reports no wait")
			}
			if diff := cmp.Diff(tt.wantEvents, rec.types()); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			for _, r := range ofType[Retry](rec) {
				if r.Attempt != 2 {
					t.Errorf("retry attempt %d, want 2: each call counts its own", r.Attempt)
				}
			}
			got := ""
			if res.ErrorDetails != nil {
				got = res.ErrorDetails.Decision
			}
			if got != tt.wantErr || res.Aborted {
				t.Errorf("decision %q, aborted %v; want %q, not aborted", got, res.Aborted, tt.wantErr)
			}
			types := strings.Fields(entryTypes(s))
			if i := slices.Index(types, "message"); i >= 0 { // after the prompt
				types = types[i+1:]
			}
			if diff := cmp.Diff(tt.wantTypes, strings.Join(types, " ")); diff != "" {
				t.Errorf("entries after the prompt (-want +got):\n%s", diff)
			}
		})
	}
}

// A retryable failure is retried and recovers; the text the failed
// attempt streamed is discarded, so output holds the answer once.
func TestRetryRecovers(t *testing.T) {
	s := testSession(t, testEngine(t), nil)
	res, rec := prompt(t, s, "/text partial words\n/error retryable overloaded")
	wantEvents := []string{"turn_start", "session_name", "text", "text", "discarded", "retry",
		"text", "text", "recovered", "usage", "turn_end"}
	if diff := cmp.Diff(wantEvents, rec.types()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]Discarded{{Reason: "retry", Text: "partial words"}}, ofType[Discarded](rec)); diff != "" {
		t.Errorf("discarded (-want +got):\n%s", diff)
	}
	retries := ofType[Retry](rec)
	if diff := cmp.Diff([]Retry{{Attempt: 2, DelayMS: 1, Reason: "model: e: HTTP 503: overloaded"}}, retries,
		cmpopts.IgnoreFields(Retry{}, "Logged")); diff != "" {
		t.Errorf("retry (-want +got):\n%s", diff)
	}
	// The failed attempt is an entry of the history, with what it streamed,
	// before the answer; the retry event names it. Model calls never see it.
	var attempts []store.Entry
	for _, en := range s.Entries() {
		if en.Type == store.TypeAttempt {
			attempts = append(attempts, en)
		}
	}
	if len(attempts) != 1 || len(retries) != 1 || retries[0].Logged == nil || retries[0].Logged.ID != attempts[0].ID {
		t.Fatalf("attempt entries %+v, retry events %+v: want one attempt entry, named by the retry event", attempts, retries)
	}
	a := attempts[0]
	if a.Error != "model: e: HTTP 503: overloaded" || a.Call == nil || a.Call.Attempts != 1 || a.Call.Model != model.OfflineID ||
		string(a.Message) != `{"role":"assistant","content":[{"type":"text","text":"partial words"}]}` {
		t.Errorf("attempt entry %+v (call %+v, message %s): want attempt 1 of e/offline, its error and its partial answer", a, a.Call, a.Message)
	}
	var answers int
	for _, m := range History(s.Entries()) {
		if m.Role == model.RoleAssistant {
			answers++
		}
	}
	if answers != 1 {
		t.Errorf("the history holds %d assistant messages, want 1: the failed attempt is not a message", answers)
	}
	if diff := cmp.Diff([]Recovered{{Attempts: 2}}, ofType[Recovered](rec)); diff != "" {
		t.Errorf("recovered (-want +got):\n%s", diff)
	}
	if res.Error != nil || res.Output != "partial words" || res.FinalOutput != "partial words" {
		t.Errorf("result error %v, output %q, final %q; want no error and the answer once", res.Error, res.Output, res.FinalOutput)
	}
	checkTurnEnd(t, rec, false)
}

// U3: a saved session appends error_details to its private sidecar.
func TestErrorSidecar(t *testing.T) {
	eng := testEngine(t)
	cwd := t.TempDir()
	log, err := store.Create(t.TempDir(), store.Header{Cwd: cwd, Model: model.OfflineID, Effort: "medium"})
	if err != nil {
		t.Fatal(err)
	}
	path := log.Path()
	s := testSession(t, eng, func(o *Options) { o.Cwd, o.Log = cwd, log })
	prompt(t, s, "/error fatal boom")
	side := path + ".errors.jsonl"
	fi, err := os.Stat(side)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("sidecar mode %v, want 0600", fi.Mode().Perm())
	}
	b, err := os.ReadFile(side)
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(string(b), "\n"); lines != 1 || !strings.Contains(string(b), `"offline_fatal"`) {
		t.Errorf("sidecar = %s, want one line with the details", b)
	}
}

// I2: a model without image input refuses images before any call.
func TestImagesNeedImageInput(t *testing.T) {
	cat, err := model.NewCatalog(model.Config{Getenv: func(string) string { return "" },
		Providers: map[string]model.ProviderConfig{"local": {API: model.APIOpenAIChat,
			BaseURL: "http://127.0.0.1:1/v1", Models: []model.ModelConfig{{ID: "m"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	eng := testEngine(t)
	eng.Catalog = cat
	s := testSession(t, eng, func(o *Options) { o.Model, o.Effort = "local/m", "" })
	if err := s.Begin(); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	img := []model.Part{{Type: model.PartImage, MediaType: "image/png", Data: []byte("\x89PNG\r\n\x1a\n")}}
	res := s.Prompt(t.Context(), "look", img, rec.sink)
	if res.Error == nil || !strings.Contains(*res.Error, "does not accept images") {
		t.Errorf("error = %v, want one saying the model does not accept images", res.Error)
	}
	checkTurnEnd(t, rec, false)
	if n := len(s.Entries()); n != 0 {
		t.Errorf("a refused prompt left %d entries", n)
	}
	if got := ofType[UsageEvent](rec); len(got) != 0 {
		t.Errorf("a refused prompt called the model: %v", got)
	}
}

func TestErrBusyAndIdle(t *testing.T) {
	s := testSession(t, testEngine(t), nil)
	if err := s.Steer("x"); !errors.Is(err, ErrIdle) {
		t.Errorf("Steer on idle = %v, want ErrIdle", err)
	}
	s.Interrupt() // idle: does nothing, returns at once
	if err := s.Begin(); err != nil {
		t.Fatal(err)
	}
	// S5: a second prompt is refused while a turn runs.
	if err := s.Begin(); !errors.Is(err, ErrBusy) {
		t.Errorf("second Begin = %v, want ErrBusy", err)
	}
	effort := "low"
	if _, _, err := s.Set(nil, &effort); !errors.Is(err, ErrBusy) {
		t.Errorf("Set while running = %v, want ErrBusy", err)
	}
	if !s.Info().Running {
		t.Error("Info().Running = false after Begin")
	}
	rec := &recorder{}
	s.Prompt(t.Context(), "/text hi", nil, rec.sink)
	if s.Info().Running {
		t.Error("Info().Running = true after the turn")
	}
	if err := s.Begin(); err != nil {
		t.Errorf("Begin after the turn ended: %v", err)
	}
	s.Prompt(t.Context(), "/text again", nil, rec.sink)
}

// M13: the log keeps what an export shows: each answer's model call, each
// tool call's outcome and duration, and the error that ended a turn.
func TestEntryMetadata(t *testing.T) {
	s := testSession(t, testEngine(t), nil)
	prompt(t, s, "/usage 10 3 2 1 0\n/tool read {\"path\":\"missing.txt\"}\n/tool bash {\"command\":\"true\"}\n/then\n/text done")
	prompt(t, s, "/error fatal broken")
	if got, want := entryTypes(s), "message title message message message message error"; got != want {
		t.Fatalf("entries %q, want %q", got, want)
	}
	en := s.Entries()
	call := en[2].Call
	if call == nil || call.Model != model.OfflineID || call.Attempts != 1 || call.Usage != (store.Usage{Input: 10, Output: 3, CacheRead: 2, CacheWrite5m: 1}) {
		t.Errorf("first answer's call = %+v", call)
	}
	var outcomes []string
	for _, r := range en[3].Runs {
		outcomes = append(outcomes, r.Outcome)
	}
	if diff := cmp.Diff([]string{"failed", "completed"}, outcomes); diff != "" || en[3].Runs[0].CallID == "" {
		t.Errorf("tool runs %+v (-want +got):\n%s", en[3].Runs, diff)
	}
	if en[4].Call == nil {
		t.Errorf("second answer has no call")
	}
	if e := en[6]; !strings.Contains(e.Error, "broken") {
		t.Errorf("error entry %+v, want the turn's error", e)
	}
}

// TestErrorText checks Behaviour.ErrorText (pi's dialect): it words a failed
// model call in the retry's reason, the attempt entry, the turn's error
// and its error entry, while error_details keep e's words.
func TestErrorText(t *testing.T) {
	eng := testEngine(t)
	eng.Behaviour.ErrorText = func(me *model.Error) string { return fmt.Sprintf("%d says %s", me.Status, me.Message) }
	s := testSession(t, eng, nil)
	_, rec := prompt(t, s, "/error retryable overloaded\n/text back")
	if r := ofType[Retry](rec); len(r) != 1 || r[0].Reason != "503 says overloaded" {
		t.Errorf("retry events %+v, want the reason %q", r, "503 says overloaded")
	}
	res, rec := prompt(t, s, "/error fatal no way")
	if res.Error == nil || *res.Error != "400 says no way" {
		t.Errorf("turn error %v, want %q", res.Error, "400 says no way")
	}
	if d := ofType[ErrorDetailsEvent](rec); len(d) != 1 || d[0].Details.Message != "model: e: HTTP 400: no way" {
		t.Errorf("error details %+v, want e's words", d)
	}
	var logged []string
	for _, en := range s.Entries() {
		if en.Type == store.TypeAttempt || en.Type == store.TypeError {
			logged = append(logged, en.Error)
		}
	}
	if diff := cmp.Diff([]string{"503 says overloaded", "400 says no way"}, logged); diff != "" {
		t.Errorf("attempt and error entries (-want +got):\n%s", diff)
	}
}
