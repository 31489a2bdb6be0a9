package main

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// callerTraceparent is the caller's trace, as a CI job or an SDK passes it.
const callerTraceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

// receiver is a loopback OTLP/HTTP trace receiver: it decodes each
// protobuf export as the collector does and keeps its spans.
type receiver struct {
	mu    sync.Mutex
	spans []*tracepb.Span
	res   []string // service.name of each export's resources
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req coltrace.ExportTraceServiceRequest
	if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" || proto.Unmarshal(body, &req) != nil {
		http.Error(w, "bad export", http.StatusBadRequest)
		return
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.Key == "service.name" {
				rc.res = append(rc.res, kv.GetValue().GetStringValue())
			}
		}
		for _, ss := range rs.ScopeSpans {
			rc.spans = append(rc.spans, ss.Spans...)
		}
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(nil)
}

// chatMock is an OpenAI Chat Completions provider whose first answer calls
// ls and whose second says "listed"; it keeps each request's traceparent.
type chatMock struct {
	mu          sync.Mutex
	traceparent []string
}

func (m *chatMock) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	m.mu.Lock()
	m.traceparent = append(m.traceparent, r.Header.Get("traceparent"))
	n := len(m.traceparent)
	m.mu.Unlock()
	chunk := func(delta, finish string) string {
		return `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + finish + "}]}\n\n"
	}
	w.Header().Set("Content-Type", "text/event-stream")
	if n == 1 {
		io.WriteString(w, chunk(`{"role":"assistant","tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"ls","arguments":"{\"path\":\".\"}"}}]}`, "null"))
		io.WriteString(w, chunk(`{}`, `"tool_calls"`))
	} else {
		io.WriteString(w, chunk(`{"role":"assistant","content":"listed"}`, "null"))
		io.WriteString(w, chunk(`{}`, `"stop"`))
	}
	io.WriteString(w, `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":7,"completion_tokens":3,"total_tokens":10}}`+"\n\ndata: [DONE]\n\n")
}

// runTraced runs e -p against the mock with env added, and returns its
// stdout.
func runTraced(t *testing.T, mock *chatMock, env ...string) string {
	t.Helper()
	prov := httptest.NewServer(mock)
	t.Cleanup(prov.Close)
	cmd := command(t, "-p", "list the files", "-m", "local/m", "--no-save")
	home := strings.TrimPrefix(cmd.Env[len(cmd.Env)-3], "E_HOME=")
	settings := fmt.Sprintf(`{"providers":{"local":{"api":"openai-chat","base_url":%q,"models":[{"id":"m"}]}}}`, prov.URL)
	if err := os.WriteFile(filepath.Join(home, "settings.json"), []byte(settings), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_TRACES_EXPORTER", "TRACEPARENT"} {
		cmd.Env = append(cmd.Env, k+"=")
	}
	cmd.Env = append(cmd.Env, env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("e -p: %v\n%s", err, stderr.String())
	}
	return string(out)
}

// Z1: a turn, its model calls and its tool call are spans of the caller's
// trace, exported over OTLP/HTTP to the endpoint OTEL_* names, and the
// provider's requests carry the turn's traceparent.
func TestTraces(t *testing.T) {
	rc := &receiver{}
	otlp := httptest.NewServer(rc)
	defer otlp.Close()
	mock := &chatMock{}
	if out := runTraced(t, mock, "OTEL_EXPORTER_OTLP_ENDPOINT="+otlp.URL, "OTEL_SERVICE_NAME=bot-e", "TRACEPARENT="+callerTraceparent); out != "listed\n" {
		t.Errorf("stdout %q, want %q", out, "listed\n")
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	type span struct{ Name, Trace, Parent, Status string }
	ids := map[string]string{hex.EncodeToString([]byte{0xb7, 0xad, 0x6b, 0x71, 0x69, 0x20, 0x33, 0x31}): "caller"}
	for _, s := range rc.spans {
		ids[hex.EncodeToString(s.SpanId)] = s.Name
	}
	var got []span
	attrs := map[string]map[string]string{}
	for _, s := range rc.spans {
		got = append(got, span{s.Name, hex.EncodeToString(s.TraceId), ids[hex.EncodeToString(s.ParentSpanId)], s.GetStatus().GetCode().String()})
		attrs[s.Name] = map[string]string{}
		for _, kv := range s.Attributes {
			attrs[s.Name][kv.Key] = fmt.Sprint(kv.Value.GetStringValue(), kv.Value.GetIntValue())
		}
	}
	slices.SortFunc(got, func(a, b span) int { return strings.Compare(a.Name, b.Name) })
	const trace = "0af7651916cd43dd8448eb211c80319c"
	want := []span{
		{"chat local/m", trace, "turn", "STATUS_CODE_UNSET"},
		{"chat local/m", trace, "turn", "STATUS_CODE_UNSET"},
		{"execute_tool ls", trace, "turn", "STATUS_CODE_UNSET"},
		{"turn", trace, "caller", "STATUS_CODE_UNSET"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("spans (-want +got):\n%s", diff)
	}
	if got := attrs["chat local/m"]["gen_ai.usage.input_tokens"]; got != "7" {
		t.Errorf("chat span's gen_ai.usage.input_tokens %q, want 7", got)
	}
	if got := attrs["execute_tool ls"]["e.tool.outcome"]; got != "completed0" {
		t.Errorf("tool span's e.tool.outcome %q, want completed", got)
	}
	if !slices.Contains(rc.res, "bot-e") {
		t.Errorf("resources' service.name %v, want bot-e (OTEL_SERVICE_NAME)", rc.res)
	}
	// The provider saw the turn's span as the parent, in the caller's trace.
	var turnID string
	for _, s := range rc.spans {
		if s.Name == "turn" {
			turnID = hex.EncodeToString(s.SpanId)
		}
	}
	wantTP := "00-" + trace + "-" + turnID + "-01"
	if diff := cmp.Diff([]string{wantTP, wantTP}, mock.traceparent); diff != "" {
		t.Errorf("provider traceparent headers (-want +got):\n%s", diff)
	}
}

// Z1: with traces off, the provider gets the caller's traceparent as it
// came; without one, no header.
func TestTraceparentWithoutTraces(t *testing.T) {
	tests := []struct {
		name string
		env  []string
		want []string
	}{
		{name: "caller's trace", env: []string{"TRACEPARENT=" + callerTraceparent}, want: []string{callerTraceparent, callerTraceparent}},
		{name: "none", want: []string{"", ""}},
		{name: "invalid ignored", env: []string{"TRACEPARENT=00-00000000000000000000000000000000-b7ad6b7169203331-01"}, want: []string{"", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mock := &chatMock{}
			runTraced(t, mock, tt.env...)
			if diff := cmp.Diff(tt.want, mock.traceparent); diff != "" {
				t.Errorf("provider traceparent headers (-want +got):\n%s", diff)
			}
		})
	}
}

// Z1 over e rpc: session.prompt's traceparent is the turn's parent, and the
// offline model's calls and the tool call are the turn's children.
func TestTracesRPC(t *testing.T) {
	rc := &receiver{}
	otlp := httptest.NewServer(rc)
	defer otlp.Close()
	cmd := command(t)
	cmd.Env = append(cmd.Env, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT="+otlp.URL+"/v1/traces", "OTEL_TRACES_EXPORTER=", "OTEL_EXPORTER_OTLP_ENDPOINT=")
	r := startRPCWith(t, cmd, []string{"rpc", "--ne"})
	r.send(`{"id":1,"method":"session.create","params":{}}`)
	var created struct {
		Result struct{ Session string } `json:"result"`
	}
	if err := json.Unmarshal([]byte(r.until(`"id":1`)), &created); err != nil {
		t.Fatal(err)
	}
	r.send(`{"id":2,"method":"session.prompt","params":{"session":"` + created.Result.Session + `","prompt":"/tool ls {\"path\":\".\"}\n/then\n/text done","traceparent":"` + callerTraceparent + `"}}`)
	r.until(`"id":2,"result"`)
	r.in.Close()
	if code := r.wait(); code != 0 {
		t.Fatalf("e rpc exited %d", code)
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	names := map[string]string{"b7ad6b7169203331": "caller"}
	for _, s := range rc.spans {
		names[hex.EncodeToString(s.SpanId)] = s.Name
	}
	var got []string
	for _, s := range rc.spans {
		got = append(got, s.Name+" in "+hex.EncodeToString(s.TraceId)+" under "+names[hex.EncodeToString(s.ParentSpanId)])
	}
	slices.Sort(got)
	const trace = "0af7651916cd43dd8448eb211c80319c"
	want := []string{
		"chat e/offline in " + trace + " under turn",
		"chat e/offline in " + trace + " under turn",
		"execute_tool ls in " + trace + " under turn",
		"turn in " + trace + " under caller",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("spans (-want +got):\n%s", diff)
	}
}
