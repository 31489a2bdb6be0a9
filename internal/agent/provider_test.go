package agent

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/e-agent/e/internal/model"
)

// reply is one scripted answer of the fake provider: an HTTP error when
// status is set, else an OpenAI chat stream of text.
type reply struct {
	status int
	header map[string]string
	text   string
	body   string // the error body; "" for a generic one
}

// chatServer is an OpenAI Chat Completions endpoint on loopback that
// answers the requests in turn with the scripted replies.
func chatServer(t *testing.T, replies ...reply) *httptest.Server {
	t.Helper()
	var mu sync.Mutex
	next := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		i := next
		next++
		mu.Unlock()
		if i >= len(replies) {
			http.Error(w, `{"error":{"message":"script exhausted","type":"invalid_request_error"}}`, http.StatusBadRequest)
			return
		}
		rp := replies[i]
		for k, v := range rp.header {
			w.Header().Set(k, v)
		}
		if rp.status != 0 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(rp.status)
			body := rp.body
			if body == "" {
				body = `{"error":{"message":"scripted failure","type":"scripted_error"}}`
			}
			io.WriteString(w, body)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		content, _ := json.Marshal(rp.text)
		for _, d := range []string{
			`{"choices":[{"delta":{"content":` + string(content) + `},"finish_reason":"stop"}]}`,
			`{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":2}}`,
			`[DONE]`,
		} {
			io.WriteString(w, "data: "+d+"\n\n")
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// providerSession returns a session on model local/m served by srv, with
// the given context window.
func providerSession(t *testing.T, srv *httptest.Server, window int) *Session {
	t.Helper()
	cat, err := model.NewCatalog(model.Config{Getenv: func(string) string { return "" }, HTTPClient: srv.Client(),
		Providers: map[string]model.ProviderConfig{"local": {API: model.APIOpenAIChat, BaseURL: srv.URL,
			Models: []model.ModelConfig{{ID: "m", ContextWindow: window}}}}})
	if err != nil {
		t.Fatal(err)
	}
	eng := testEngine(t)
	eng.Catalog = cat
	return testSession(t, eng, func(o *Options) { o.Model, o.Effort, o.Tools = "local/m", "", nil })
}

// A provider's retry-after decides the wait, 0 meaning at once (U2); the
// retry recovers.
func TestRetryAfter(t *testing.T) {
	tests := []struct {
		name    string
		header  map[string]string
		delayMS int64
	}{
		{name: "milliseconds", header: map[string]string{"retry-after-ms": "7"}, delayMS: 7},
		{name: "zero seconds", header: map[string]string{"retry-after": "0"}, delayMS: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := chatServer(t, reply{status: 429, header: tt.header}, reply{text: "hi"})
			s := providerSession(t, srv, 0)
			res, rec := prompt(t, s, "hello")
			want := []Retry{{Attempt: 2, DelayMS: tt.delayMS, Reason: "model: local: HTTP 429: scripted failure"}}
			if diff := cmp.Diff(want, ofType[Retry](rec), cmpopts.IgnoreFields(Retry{}, "Logged")); diff != "" {
				t.Errorf("retry (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]Recovered{{Attempts: 2}}, ofType[Recovered](rec)); diff != "" {
				t.Errorf("recovered (-want +got):\n%s", diff)
			}
			if res.Error != nil || res.FinalOutput != "hi" {
				t.Errorf("error %v, final %q; want hi", res.Error, res.FinalOutput)
			}
			wantUsage := NewUsage(model.Usage{Input: 10, Output: 2})
			if res.Usage != wantUsage {
				t.Errorf("usage %+v, want only the successful attempt's %+v", res.Usage, wantUsage)
			}
		})
	}
}

// A failed automatic compaction ends the turn with error_details whose
// stage is compaction (U2); the history is left as it was.
func TestAutoCompactionFailure(t *testing.T) {
	// A 1000-token window compacts above 800 tokens: 3200 characters.
	srv := chatServer(t,
		reply{text: strings.Repeat("word ", 1000)},
		reply{status: 400})
	s := providerSession(t, srv, 1000)
	if r, _ := prompt(t, s, "first"); r.Error != nil {
		t.Fatal(*r.Error)
	}
	before := len(s.Entries())
	res, rec := prompt(t, s, "second")
	checkTurnEnd(t, rec, false)
	if got := rec.types(); !cmp.Equal(got[:2], []string{"turn_start", "compacting"}) {
		t.Errorf("events %v, want compacting at the start", got)
	}
	if got := ofType[Compacted](rec); len(got) != 0 {
		t.Errorf("compacted after a failure: %+v", got)
	}
	st := 400
	want := &ErrorDetails{Stage: "compaction", Provider: "local", Model: "local/m", Status: &st,
		ErrorType: "scripted_error", Decision: "not_retryable", Attempts: 1,
		Message: "model: local: HTTP 400: scripted failure"}
	if diff := cmp.Diff(want, res.ErrorDetails, cmpopts.IgnoreFields(ErrorDetails{}, "Time", "Diagnostic")); diff != "" {
		t.Errorf("error_details (-want +got):\n%s", diff)
	}
	if res.Error == nil || !strings.HasPrefix(*res.Error, "agent: compaction: ") {
		t.Errorf("error = %v, want a compaction error", res.Error)
	}
	// Only the new prompt and the error were added: no compaction entry.
	if got := entryTypes(s); strings.Contains(got, "compaction") || len(s.Entries()) != before+2 || !strings.HasSuffix(got, "message error") {
		t.Errorf("entries %q, want only the new prompt and the error added", got)
	}
}

// S4: when the provider says the request is over its context window, the
// turn compacts what came before it and continues, once.
func TestContextOverflowCompacts(t *testing.T) {
	tooLong := `{"error":{"message":"This model's maximum context length is 8192 tokens","type":"invalid_request_error","code":"context_length_exceeded"}}`
	tests := []struct {
		name      string
		replies   []reply
		wantFinal string
		wantErr   bool
	}{
		{"compacts and continues", []reply{{text: "one"}, {status: 400, body: tooLong}, {text: "summary"}, {text: "two"}}, "two", false},
		{"fails when compacting did not help", []reply{{text: "one"}, {status: 400, body: tooLong}, {text: "summary"}, {status: 400, body: tooLong}}, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := providerSession(t, chatServer(t, tt.replies...), 1_000_000)
			if r, _ := prompt(t, s, "first"); r.Error != nil {
				t.Fatalf("first turn: %s", *r.Error)
			}
			res, rec := prompt(t, s, "second")
			if got := len(ofType[Compacting](rec)); got != 1 {
				t.Errorf("%d compactions, want 1", got)
			}
			if (res.Error != nil) != tt.wantErr || res.FinalOutput != tt.wantFinal {
				t.Errorf("error %v, final %q; want error %v, final %q", res.Error, res.FinalOutput, tt.wantErr, tt.wantFinal)
			}
			checkTurnEnd(t, rec, false)
		})
	}
}
