package model

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"gotest.tools/v3/golden"
)

// testKey is the API key given to providers under test; it must never
// appear in an error.
const testKey = "sk-test-0123456789abcdef"

// apis are the HTTP adapters with their testdata directories.
var apis = []struct {
	name string // testdata directory
	new  func(ProviderSettings) Provider
}{
	{"chat", NewOpenAIChat},
	{"responses", NewOpenAIResponses},
	{"anthropic", NewAnthropic},
}

// Where a replayed response holds the connection open.
const (
	holdNone   = iota
	holdAfter  // send the recording, then fall silent
	holdBefore // fall silent before the response head
)

// captured is a request as the fake server received it.
type captured struct {
	Path   string
	Header http.Header
	Body   []byte
}

// fake is an httptest server on loopback replaying one recorded response.
type fake struct {
	srv  *httptest.Server
	reqs chan captured
}

// newFake serves testdata/<dir>/<file>: a status line, headers, an empty
// line, then the body as recorded on the wire. A held connection is
// released when the test ends, never by sleeping.
func newFake(t *testing.T, dir, file string, hold int) *fake {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", dir, file))
	if err != nil {
		t.Fatal(err)
	}
	rec, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(raw)), nil)
	if err != nil {
		t.Fatalf("%s/%s: %v", dir, file, err)
	}
	body, err := io.ReadAll(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	f := &fake{reqs: make(chan captured, 1)}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		select {
		case f.reqs <- captured{Path: r.URL.Path, Header: r.Header.Clone(), Body: b}:
		default:
		}
		wait := func() {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
		if hold == holdBefore {
			wait()
			return
		}
		for k, v := range rec.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.StatusCode)
		_, _ = w.Write(body)
		if hold == holdAfter {
			w.(http.Flusher).Flush()
			wait()
		}
	}))
	t.Cleanup(f.srv.Close)
	t.Cleanup(func() { close(release) }) // runs first: handlers return, Close can finish
	return f
}

func (f *fake) settings() ProviderSettings {
	return ProviderSettings{BaseURL: f.srv.URL, APIKey: testKey, Client: f.srv.Client()}
}

// request returns what the fake server received.
func (f *fake) request(t *testing.T) captured {
	t.Helper()
	select {
	case c := <-f.reqs:
		return c
	default:
		t.Fatal("the server received no request")
		return captured{}
	}
}

// collect runs one Stream call and gathers its deltas.
func collect(ctx context.Context, p Provider, req *Request) ([]Delta, *Response, error) {
	var deltas []Delta
	resp, err := p.Stream(ctx, req, func(d Delta) { deltas = append(deltas, d) })
	return deltas, resp, err
}

func TestErrorClassification(t *testing.T) { // U2
	// Stall timeouts: the one after the head leaves the head time to arrive
	// on a loaded machine; the one before it is never reached by any data.
	tests := []struct {
		api, file string
		hold      int
		stall     time.Duration
		want      Error
	}{
		{api: "chat", file: "429.http", want: Error{Retryable: true, Provider: "openai", Model: "openai/m", Stage: "request",
			Status: 429, RequestID: "req_chat_429", Type: "requests", RetryAfter: time.Second, RetryAfterGiven: true,
			Message: "Rate limit reached for gpt-4.1 in organization org-x on requests per min (RPM): Limit 500, Used 500, Requested 1. Please try again in 120ms."}},
		{api: "chat", file: "quota.http", want: Error{Provider: "openai", Model: "openai/m", Stage: "request",
			Status: 429, RequestID: "req_chat_quota", Type: "insufficient_quota",
			Message: "You exceeded your current quota, please check your plan and billing details."}},
		{api: "chat", file: "500.http", want: Error{Retryable: true, Provider: "openai", Model: "openai/m", Stage: "request",
			Status: 500, RequestID: "req_chat_500", Type: "server_error",
			Message: "The server had an error while processing your request. Sorry about that!"}},
		{api: "chat", file: "400.http", want: Error{Provider: "openai", Model: "openai/m", Stage: "request",
			Status: 400, RequestID: "req_chat_400", Type: "invalid_request_error",
			Message: "Invalid type for 'messages[1].content': expected one of a string or array of objects, but got an integer instead."}},
		{api: "chat", file: "overloaded.http", want: Error{Retryable: true, Provider: "openai", Model: "openai/m", Stage: "stream",
			Type: "overloaded_error", Message: "Server is overloaded, please retry."}},
		{api: "chat", file: "cut.http", want: Error{Retryable: true, Provider: "openai", Model: "openai/m", Stage: "stream",
			Message: "stream ended before data: [DONE]"}},
		{api: "chat", file: "stall.http", hold: holdAfter, stall: 200 * time.Millisecond, want: Error{Retryable: true,
			Provider: "openai", Model: "openai/m", Stage: "stream", Type: "stall", Message: "no data from the provider for 200ms"}},
		{api: "chat", file: "stall.http", hold: holdBefore, stall: 20 * time.Millisecond, want: Error{Retryable: true,
			Provider: "openai", Model: "openai/m", Stage: "connect", Type: "stall", Message: "no data from the provider for 20ms"}},

		{api: "responses", file: "429.http", want: Error{Retryable: true, Provider: "openai", Model: "openai/m", Stage: "request",
			Status: 429, RequestID: "req_resp_429", Type: "tokens", RetryAfter: time.Second, RetryAfterGiven: true,
			Message: "Rate limit reached for gpt-5.5 on tokens per min (TPM): Limit 30000, Used 30000, Requested 900."}},
		{api: "responses", file: "503.http", want: Error{Retryable: true, Provider: "openai", Model: "openai/m", Stage: "request",
			Status: 503, RequestID: "req_resp_503", Type: "server_error", RetryAfter: 250 * time.Millisecond, RetryAfterGiven: true,
			Message: "The engine is currently overloaded, please try again later"}},
		{api: "responses", file: "400.http", want: Error{Provider: "openai", Model: "openai/m", Stage: "request",
			Status: 400, RequestID: "req_resp_400", Type: "invalid_request_error",
			Message: "Unsupported parameter: 'reasoning.effort' is not supported with this model."}},
		{api: "responses", file: "overloaded.http", want: Error{Retryable: true, Provider: "openai", Model: "openai/m", Stage: "stream",
			Type: "server_is_overloaded", Message: "Our servers are currently overloaded. Please try again later."}},
		{api: "responses", file: "failed.http", want: Error{Provider: "openai", Model: "openai/m", Stage: "stream",
			RequestID: "req_resp_failed", Type: "invalid_prompt",
			Message: "Invalid prompt: your prompt was flagged as potentially violating our usage policy."}},
		{api: "responses", file: "cut.http", want: Error{Retryable: true, Provider: "openai", Model: "openai/m", Stage: "stream",
			Message: "stream ended before response.completed"}},
		{api: "responses", file: "stall.http", hold: holdAfter, stall: 200 * time.Millisecond, want: Error{Retryable: true,
			Provider: "openai", Model: "openai/m", Stage: "stream", Type: "stall", Message: "no data from the provider for 200ms"}},

		{api: "anthropic", file: "429.http", want: Error{Retryable: true, Provider: "anthropic", Model: "anthropic/m", Stage: "request",
			Status: 429, RequestID: "req_011CAnthropic429", Type: "rate_limit_error", RetryAfter: time.Second, RetryAfterGiven: true,
			Message: "This request would exceed the rate limit for your organization of 50 requests per minute."}},
		{api: "anthropic", file: "500.http", want: Error{Retryable: true, Provider: "anthropic", Model: "anthropic/m", Stage: "request",
			Status: 500, RequestID: "req_011CAnthropic500", Type: "api_error", Message: "Internal server error"}},
		{api: "anthropic", file: "529.http", want: Error{Retryable: true, Provider: "anthropic", Model: "anthropic/m", Stage: "request",
			Status: 529, RequestID: "req_011CAnthropic529", Type: "overloaded_error", Message: "Overloaded"}},
		{api: "anthropic", file: "400.http", want: Error{Provider: "anthropic", Model: "anthropic/m", Stage: "request",
			Status: 400, RequestID: "req_011CAnthropic400", Type: "invalid_request_error",
			Message: "max_tokens: must be greater than thinking.budget_tokens"}},
		{api: "anthropic", file: "overloaded.http", want: Error{Retryable: true, Provider: "anthropic", Model: "anthropic/m", Stage: "stream",
			RequestID: "req_011CAnthropicOver", Type: "overloaded_error", Message: "Overloaded"}},
		{api: "anthropic", file: "cut.http", want: Error{Retryable: true, Provider: "anthropic", Model: "anthropic/m", Stage: "stream",
			Message: "stream ended before message_stop"}},
		{api: "anthropic", file: "stall.http", hold: holdAfter, stall: 200 * time.Millisecond, want: Error{Retryable: true,
			Provider: "anthropic", Model: "anthropic/m", Stage: "stream", Type: "stall", Message: "no data from the provider for 200ms"}},
	}
	for _, tt := range tests {
		t.Run(tt.api+"/"+tt.file+map[int]string{holdBefore: "/before-head"}[tt.hold], func(t *testing.T) {
			var newProvider func(ProviderSettings) Provider
			for _, a := range apis {
				if a.name == tt.api {
					newProvider = a.new
				}
			}
			f := newFake(t, tt.api, tt.file, tt.hold)
			s := f.settings()
			s.StallTimeout = tt.stall
			deltas, resp, err := collect(t.Context(), newProvider(s), &Request{Model: "m"})
			var got *Error
			if !errors.As(err, &got) {
				t.Fatalf("Stream = %v, %v; want an *Error", resp, err)
			}
			// Beside the error: the text that was streamed (Provider).
			var text string
			for _, d := range deltas {
				if d.Kind == DeltaText {
					text += d.Text
				}
			}
			// With no delta, a response only for the answer's id, which
			// the stream may give first (pi keeps it on an aborted answer).
			if resp == nil && len(deltas) > 0 || resp != nil && (resp.Message.Text() != text || len(deltas) == 0 && resp.ResponseID == "") {
				t.Errorf("Stream response %+v beside the error, want one holding the streamed %q", resp, text)
			}
			if diff := cmp.Diff(tt.want, *got, cmpopts.IgnoreFields(Error{}, "Err", "Body")); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			if got.Status != 0 && got.Body == "" {
				t.Errorf("Body is empty for an HTTP error")
			}
			if IsRetryable(err) != tt.want.Retryable {
				t.Errorf("IsRetryable = %v", !tt.want.Retryable)
			}
		})
	}
}

// TestSecretsRedacted checks a server echoing the key leaks it nowhere. U2
func TestSecretsRedacted(t *testing.T) {
	f := newFake(t, "chat", "401.http", holdNone)
	s := f.settings()
	s.APIKey = "sk-test-0123456789abcdef"
	_, _, err := collect(t.Context(), NewOpenAIChat(s), &Request{Model: "m"})
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("Stream error = %v, want *Error", err)
	}
	if e.Retryable || e.Status != 401 || e.Type != "invalid_request_error" {
		t.Errorf("error = %+v, want fatal 401 invalid_request_error", e)
	}
	for name, s := range map[string]string{"Message": e.Message, "Body": e.Body, "Error()": e.Error()} {
		if strings.Contains(s, "0123456789abcdef") {
			t.Errorf("%s leaks the key: %s", name, s)
		}
		if !strings.Contains(s, "[redacted]") {
			t.Errorf("%s = %q, want a [redacted] marker", name, s)
		}
	}
	if strings.Contains(e.Message, "\n") {
		t.Errorf("Message has a line break: %q", e.Message)
	}
}

// TestUnauthorizedNamesKeyEnv: a refused key's error names the variable it
// came from (never the key), as the catalog builds the provider.
func TestUnauthorizedNamesKeyEnv(t *testing.T) {
	f := newFake(t, "chat", "401.http", holdNone)
	cat, err := NewCatalog(Config{
		Providers: map[string]ProviderConfig{"local": {API: APIOpenAIChat, BaseURL: f.srv.URL, APIKeyEnv: "LOCAL_KEY", Models: []ModelConfig{{ID: "m"}}}},
		Getenv: func(k string) string {
			if k == "LOCAL_KEY" {
				return "sk-test-0123456789abcdef"
			}
			return ""
		},
		HTTPClient: f.srv.Client(),
	})
	if err != nil {
		t.Fatal(err)
	}
	p, err := cat.Provider("local/m")
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = collect(t.Context(), p, &Request{Model: "m"})
	if err == nil || !strings.Contains(err.Error(), "HTTP 401") || !strings.Contains(err.Error(), "LOCAL_KEY") || strings.Contains(err.Error(), "0123456789abcdef") {
		t.Errorf("error %v: want HTTP 401 naming LOCAL_KEY, without the key", err)
	}
}

func TestRedactSecrets(t *testing.T) {
	tests := []struct {
		name, in, key, want string
	}{
		{name: "configured key", in: "key=abcd1234efgh was rejected", key: "abcd1234efgh", want: "key=[redacted] was rejected"},
		{name: "sk key", in: "bad key sk-ant-api03-AbC_dEf-123456", want: "bad key sk-[redacted]"},
		{name: "bearer", in: `Authorization: Bearer eyJhbGciOi.x.y, next`, want: `Authorization: Bearer [redacted], next`},
		{name: "api key header", in: `{"x-api-key": "secret-value"}`, want: `{"x-api-key": "[redacted]"}`},
		{name: "api_key query", in: "GET /v1?api_key=s3cr3t&x=1", want: "GET /v1?api_key=[redacted]&x=1"},
		{name: "nothing secret", in: "rate limited, try again in 2s", want: "rate limited, try again in 2s"},
		{name: "short key left alone", in: "abc", key: "abc", want: "abc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := redactSecrets(tt.in, tt.key); got != tt.want {
				t.Errorf("redactSecrets(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestRetryAfter(t *testing.T) {
	fixed := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	defer func(f func() time.Time) { now = f }(now)
	now = func() time.Time { return fixed }
	tests := []struct {
		name   string
		header map[string]string
		want   time.Duration
		given  bool
	}{
		{name: "none", want: 0},
		{name: "seconds", header: map[string]string{"retry-after": "1"}, want: time.Second, given: true},
		{name: "fractional seconds", header: map[string]string{"retry-after": "1.5"}, want: 1500 * time.Millisecond, given: true},
		{name: "milliseconds first", header: map[string]string{"retry-after-ms": "250", "retry-after": "1"}, want: 250 * time.Millisecond, given: true},
		{name: "zero seconds: at once", header: map[string]string{"retry-after": "0"}, want: 0, given: true},
		{name: "zero milliseconds: at once", header: map[string]string{"retry-after-ms": "0", "retry-after": "5"}, want: 0, given: true},
		{name: "http date", header: map[string]string{"retry-after": "Thu, 01 Jan 2026 12:00:30 GMT"}, want: 30 * time.Second, given: true},
		{name: "date in the past: at once", header: map[string]string{"retry-after": "Thu, 01 Jan 2026 11:00:00 GMT"}, want: 0, given: true},
		{name: "garbage", header: map[string]string{"retry-after": "soon"}, want: 0},
		{name: "negative", header: map[string]string{"retry-after": "-3"}, want: 0},
		{name: "negative milliseconds, then seconds", header: map[string]string{"retry-after-ms": "-1", "retry-after": "2"}, want: 2 * time.Second, given: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tt.header {
				h.Set(k, v)
			}
			if got, given := retryAfter(h); got != tt.want || given != tt.given {
				t.Errorf("retryAfter = %v, %v; want %v, %v", got, given, tt.want, tt.given)
			}
		})
	}
}

func TestConnectRefused(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there now
	for _, a := range apis {
		t.Run(a.name, func(t *testing.T) {
			_, _, err := collect(t.Context(), a.new(ProviderSettings{BaseURL: url, APIKey: testKey}), &Request{Model: "m"})
			var e *Error
			if !errors.As(err, &e) || !e.Retryable || e.Stage != "connect" {
				t.Fatalf("Stream error = %#v, want a retryable connect *Error", err)
			}
			if strings.Contains(e.Error(), testKey) {
				t.Errorf("error leaks the key: %v", e)
			}
		})
	}
}

// TestCancel checks a call cancelled mid-stream returns ctx.Err() at once,
// while the provider holds the stream open, with the text it streamed.
func TestCancel(t *testing.T) {
	for _, a := range apis {
		t.Run(a.name, func(t *testing.T) {
			f := newFake(t, a.name, "cut.http", holdAfter)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			var text string
			resp, err := a.new(f.settings()).Stream(ctx, &Request{Model: "m"}, func(d Delta) {
				if d.Kind == DeltaText {
					text += d.Text
				}
				cancel()
			})
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("Stream error = %v, want context.Canceled", err)
			}
			if text == "" || resp == nil || resp.Message.Text() != text {
				t.Errorf("Stream response %+v beside the error, want one holding the streamed %q", resp, text)
			}
			if want := map[string]string{"chat": "chatcmpl-C1", "anthropic": "msg_01Cut", "responses": "resp_06"}[a.name]; resp != nil && resp.ResponseID != want {
				t.Errorf("Stream response id %q beside the error, want the stream's %q", resp.ResponseID, want)
			}
			// The model the answer named ("m" was asked for; the Responses API's is not read).
			if want := map[string]string{"chat": "gpt-4.1", "anthropic": "claude-sonnet-4-5-20250929"}[a.name]; resp != nil && resp.ResponseModel != want {
				t.Errorf("Stream response model %q beside the error, want the stream's %q", resp.ResponseModel, want)
			}
			var e *Error
			if errors.As(err, &e) {
				t.Errorf("Stream error is an *Error: %v", e)
			}
		})
	}
}

func TestJSONInsteadOfStream(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"choices":[{"message":{"content":"hi"}}]}`)
	}))
	defer srv.Close()
	_, _, err := collect(t.Context(), NewOpenAIChat(ProviderSettings{BaseURL: srv.URL, Client: srv.Client()}), &Request{Model: "m"})
	var e *Error
	if !errors.As(err, &e) || e.Retryable || e.Stage != "decode" || !strings.Contains(e.Body, `"hi"`) {
		t.Fatalf("Stream error = %#v, want a fatal decode *Error with the body", err)
	}
}

// richRequest exercises every mapping of a request body: system prompt,
// effort, text and an image, reasoning of each provider (each adapter
// replays only its own), parallel tool calls and their results, tools.
func richRequest() *Request {
	return &Request{
		Model:  "m1",
		System: "You are e.",
		Effort: "high",
		Messages: []Message{
			{Role: RoleUser, Content: []Part{
				{Type: PartText, Text: "What is in this image?"},
				{Type: PartImage, MediaType: "image/png", Data: []byte("\x89PNG\r\n\x1a\nfake")},
			}},
			{Role: RoleAssistant, Content: []Part{
				{Type: PartReasoning, Text: "Thinking about it.", Signature: "anthropic:sigA"},
				{Type: PartReasoning, Signature: "anthropic-redacted:dataR"},
				{Type: PartReasoning, Text: "**Summary**", Signature: "openai-responses:gAAAAencR"},
				{Type: PartReasoning, Text: "unsigned thoughts are not replayed"},
				{Type: PartText, Text: "Let me look."},
				{Type: PartToolCall, ID: "call_1", Name: "read", Arguments: json.RawMessage(`{"path":"a.go"}`)},
				{Type: PartToolCall, ID: "call_2", Name: "bash", Arguments: json.RawMessage(`{"command":"ls"}`)},
			}},
			{Role: RoleTool, Content: []Part{
				{Type: PartToolResult, CallID: "call_1", Text: "package a"},
				{Type: PartToolResult, CallID: "call_2", Text: "exit status 1", IsError: true},
			}},
			{Role: RoleAssistant, Content: []Part{{Type: PartText, Text: "A PNG."}}},
			{Role: RoleUser, Content: []Part{{Type: PartText, Text: "Thanks <3 & bye"}}},
		},
		Tools: []ToolDef{
			{Name: "read", Description: "Read a file.",
				Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)},
			{Name: "bash", Description: "Run a command.",
				Parameters: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}`)},
		},
	}
}

// checkGolden compares the JSON body with testdata/<dir>/<name> after
// unmarshalling both; go test -update rewrites the file.
func checkGolden(t *testing.T, dir, name string, body []byte) {
	t.Helper()
	path := filepath.Join("testdata", dir, name)
	var got any
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("request body is not JSON: %v\n%s", err, body)
	}
	if golden.FlagUpdate() {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		_ = enc.Encode(got)
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var want any
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("request body differs from %s (-want +got):\n%s", path, diff)
	}
}

// streamCase is one recorded answer and what a provider makes of it,
// asked for model ("" is "m", which no recording names).
type streamCase struct {
	file   string
	model  string
	deltas []Delta
	want   *Response
}

func runStreamCases(t *testing.T, dir string, newProvider func(ProviderSettings) Provider, tests []streamCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.file+" "+tt.model, func(t *testing.T) {
			f := newFake(t, dir, tt.file, holdNone)
			model := tt.model
			if model == "" {
				model = "m"
			}
			deltas, resp, err := collect(t.Context(), newProvider(f.settings()), &Request{Model: model})
			if err != nil {
				t.Fatalf("Stream: %v", err)
			}
			if diff := cmp.Diff(tt.deltas, deltas); diff != "" {
				t.Errorf("deltas (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.want, resp); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
			if _, err := json.Marshal(resp.Message); err != nil {
				t.Errorf("the message does not encode: %v", err)
			}
		})
	}
}

// Parts and deltas of the parallel tool calls in every tools.http.
var (
	twoCalls = []Part{
		{Type: PartToolCall, ID: "call_A1", Name: "read", Arguments: json.RawMessage(`{"path": "a.go"}`)},
		{Type: PartToolCall, ID: "call_B2", Name: "bash", Arguments: json.RawMessage(`{"command": "ls"}`)},
	}
	twoCallDeltas = []Delta{
		{Kind: DeltaToolCall, Index: 0, ID: "call_A1", Name: "read"},
		{Kind: DeltaToolCall, Index: 0, Text: `{"pa`},
		{Kind: DeltaToolCall, Index: 0, Text: `th": "a.go"}`},
		{Kind: DeltaToolCall, Index: 1, ID: "call_B2", Name: "bash"},
		{Kind: DeltaToolCall, Index: 1, Text: `{"command"`},
		{Kind: DeltaToolCall, Index: 1, Text: `: "ls"}`},
	}
)

// sseServer streams data events, then data: [DONE].
func sseServer(t *testing.T, data ...string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, d := range append(data, "[DONE]") {
			_, _ = io.WriteString(w, "data: "+d+"\n\n")
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestConnectionReuse: consecutive calls share one connection, because each
// reads its body to the end before closing it, even when the end of the
// chunked body comes after the last event has been read.
func TestConnectionReuse(t *testing.T) {
	defer func(w time.Duration) { drainWait = w }(drainWait)
	drainWait = time.Minute
	for _, api := range apis {
		t.Run(api.name, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("testdata", api.name, "text.http"))
			if err != nil {
				t.Fatal(err)
			}
			rec, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(raw)), nil)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(rec.Body)
			if err != nil {
				t.Fatal(err)
			}
			// The handler returns, which sends the body's last chunk, only
			// once the client has read the final event.
			read := make(chan struct{}, 1)
			var conns atomic.Int32
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = w.Write(body)
				w.(http.Flusher).Flush()
				select {
				case <-read:
				case <-r.Context().Done():
				}
			}))
			srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
				if s == http.StateNew {
					conns.Add(1)
				}
			}
			srv.Start()
			t.Cleanup(srv.Close)
			tail := bytes.TrimSpace(body)
			tail = tail[len(tail)-min(len(tail), 12):]
			client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
				return &tailConn{Conn: c, tail: tail, read: read}, err
			}}}
			t.Cleanup(client.CloseIdleConnections)
			p := api.new(ProviderSettings{BaseURL: srv.URL, APIKey: testKey, Client: client})
			for i := range 3 {
				if _, _, err := collect(t.Context(), p, &Request{Model: "m"}); err != nil {
					t.Fatalf("call %d: %v", i+1, err)
				}
			}
			if n := conns.Load(); n != 1 {
				t.Errorf("3 calls opened %d connections, want 1", n)
			}
		})
	}
}

// TestBodyHeldOpen: a server that keeps the body open after the final event
// costs the call its connection, not the answer.
func TestBodyHeldOpen(t *testing.T) {
	defer func(w time.Duration) { drainWait = w }(drainWait)
	drainWait = time.Millisecond
	for _, api := range apis {
		t.Run(api.name, func(t *testing.T) {
			f := newFake(t, api.name, "text.http", holdAfter)
			if _, _, err := collect(t.Context(), api.new(f.settings()), &Request{Model: "m"}); err != nil {
				t.Fatalf("Stream: %v", err)
			}
		})
	}
}

// tailConn signals read each time what it has read comes to end with tail.
type tailConn struct {
	net.Conn
	tail []byte
	seen []byte
	read chan<- struct{}
}

func (c *tailConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.seen = append(c.seen, b[:n]...)
	if bytes.Contains(c.seen, c.tail) {
		c.seen = c.seen[:0]
		select {
		case c.read <- struct{}{}:
		default:
		}
	}
	return n, err
}

func TestMalformedEvent(t *testing.T) {
	srv := sseServer(t, `{"choices":[{"delta":{"content":"a"}}]}`, `{"choices":[{"delta":`)
	var deltas []Delta
	_, err := NewOpenAIChat(ProviderSettings{BaseURL: srv.URL, Client: srv.Client()}).Stream(t.Context(), &Request{Model: "m"},
		func(d Delta) { deltas = append(deltas, d) })
	var e *Error
	if !errors.As(err, &e) || e.Retryable || e.Stage != "decode" || e.Body != `{"choices":[{"delta":` {
		t.Fatalf("Stream error = %#v, want a fatal decode *Error with the event", err)
	}
	if want := "malformed JSON in a stream event: unexpected end of JSON input"; e.Message != want {
		t.Errorf("message %q, want %q", e.Message, want)
	}
	if diff := cmp.Diff([]Delta{{Kind: DeltaText, Text: "a"}}, deltas); diff != "" {
		t.Errorf("deltas before the error (-want +got):\n%s", diff)
	}
}

// hookLog records a ReadHook's calls and the emits between them; second
// is closed at the second Release, before the second Read.
type hookLog struct {
	calls  []string
	second chan struct{}
}

func (h *hookLog) Hold() { h.calls = append(h.calls, "hold") }

func (h *hookLog) Release() {
	h.calls = append(h.calls, "release")
	if slices.Equal(h.calls, []string{"release", "hold", "release"}) {
		close(h.second)
	}
}

// TestReadHook: a stream releases its context's ReadHook before each Read
// of the response and when it ends, and holds it when a Read returns, so
// every delta is emitted while held, and nothing is held once the call
// has returned (F5: the server writes a Read's lines in one go).
func TestReadHook(t *testing.T) {
	defer func(w time.Duration) { drainWait = w }(drainWait)
	drainWait = time.Minute
	for _, api := range apis {
		t.Run(api.name, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("testdata", api.name, "text.http"))
			if err != nil {
				t.Fatal(err)
			}
			rec, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(raw)), nil)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(rec.Body)
			if err != nil {
				t.Fatal(err)
			}
			h := &hookLog{second: make(chan struct{})}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "text/event-stream")
				// The first event alone, the rest once the client has
				// worked through it: it reads at least twice.
				first := bytes.Index(body, []byte("\n\n")) + 2
				_, _ = w.Write(body[:first])
				w.(http.Flusher).Flush()
				select {
				case <-h.second:
				case <-r.Context().Done():
				}
				_, _ = w.Write(body[first:])
			}))
			t.Cleanup(srv.Close)
			p := api.new(ProviderSettings{BaseURL: srv.URL, APIKey: testKey})
			_, err = p.Stream(WithReadHook(t.Context(), h), &Request{Model: "m"}, func(Delta) { h.calls = append(h.calls, "emit") })
			if err != nil {
				t.Fatal(err)
			}
			held, emits, reads := false, 0, 0
			for i, c := range h.calls {
				switch c {
				case "hold":
					if held {
						t.Fatalf("call %d: hold while held: %v", i, h.calls)
					}
					held = true
					reads++
				case "release":
					held = false
				case "emit":
					if !held {
						t.Fatalf("call %d: emit while not held: %v", i, h.calls)
					}
					emits++
				}
			}
			if h.calls[0] != "release" || held || emits == 0 || reads < 2 {
				t.Errorf("hook calls %v: want a release first and last, %d emits and at least 2 reads", h.calls, emits)
			}
		})
	}
}
