package pi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"
)

func TestJSTrim(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"  a b \n", "a b"},
		{"\t\r\n", ""},
		{"\uFEFF\u00a0x\u2028\u3000", "x"},
		{"\u0085x\u0085", "\u0085x\u0085"}, // not white space to JavaScript
	} {
		if got := jsTrim(tc.in); got != tc.want {
			t.Errorf("jsTrim(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// lines collects a front's output lines and says when one comes.
type lines struct {
	mu   sync.Mutex
	buf  []byte
	all  []string
	more chan struct{}
}

func newLines() *lines { return &lines{more: make(chan struct{}, 1)} }

func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			break
		}
		l.all = append(l.all, string(l.buf[:i]))
		l.buf = l.buf[i+1:]
	}
	l.mu.Unlock()
	select {
	case l.more <- struct{}{}:
	default:
	}
	return len(p), nil
}

// await waits for a line that holds each of parts and returns its index.
func (l *lines) await(t *testing.T, parts ...string) int {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		l.mu.Lock()
		for i, s := range l.all {
			if !slices.ContainsFunc(parts, func(p string) bool { return !strings.Contains(s, p) }) {
				l.mu.Unlock()
				return i
			}
		}
		l.mu.Unlock()
		select {
		case <-l.more:
		case <-timeout:
			t.Fatalf("no line with %q; lines:\n%s", parts, strings.Join(l.snapshot(), "\n"))
		}
	}
}

func (l *lines) snapshot() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.all)
}

// heldSummaries is a Chat Completions model whose first summary call (the
// third call: two prompts come first) is held until it is cancelled;
// held is closed once it arrived. Every other call answers "ok".
type heldSummaries struct {
	mu    sync.Mutex
	calls int
	held  chan struct{}
}

func (m *heldSummaries) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	m.mu.Lock()
	m.calls++
	n := m.calls
	m.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	if n == 3 {
		w.(http.Flusher).Flush()
		close(m.held)
		<-r.Context().Done()
		return
	}
	io.WriteString(w, `data: {"id":"c","model":"m1","choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":null}]}`+"\n\n"+
		`data: {"id":"c","model":"m1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`+"\n\ndata: [DONE]\n\n")
}

// TestCompactStopsCompact checks the order of a compact sent during a
// compact (Q5), as pi 1.6.0's: its abort() ends the first compaction
// (aborted) and resumes the second compact in the same tick, so the second
// compaction_start comes before the first compact's "Compaction cancelled".
func TestCompactStopsCompact(t *testing.T) {
	mock := &heldSummaries{held: make(chan struct{})}
	srv := httptest.NewServer(mock)
	defer srv.Close()
	out := newLines()
	models := fmt.Sprintf(`{"providers":{"mock":{"baseUrl":%q,"api":"openai-completions","apiKey":"k","models":[{"id":"m1"}]}}}`, srv.URL+"/v1")
	fr := newFrontWith(t, out, map[string]string{"models.json": models, "settings.json": `{"compaction":{"keepRecentTokens":1}}`},
		"--provider", "mock", "--model", "m1")
	for _, p := range []string{"one", "two"} {
		if err := fr.startRun(p, nil, nil, func() {}); err != nil {
			t.Fatal(err)
		}
		<-fr.runDone
	}
	fr.handle([]byte(`{"id":"c1","type":"compact"}`))
	<-mock.held
	fr.handle([]byte(`{"id":"c2","type":"compact"}`))
	out.await(t, `"id":"c2"`)
	var got []string
	for _, l := range out.snapshot() {
		switch {
		case strings.Contains(l, `"type":"compaction_`):
			var v struct {
				Type    string `json:"type"`
				Aborted bool   `json:"aborted"`
			}
			json.Unmarshal([]byte(l), &v)
			got = append(got, fmt.Sprintf("%s aborted=%t", v.Type, v.Aborted))
		case strings.Contains(l, `"command":"compact"`):
			var v struct {
				ID      string `json:"id"`
				Success bool   `json:"success"`
			}
			json.Unmarshal([]byte(l), &v)
			got = append(got, fmt.Sprintf("response %s success=%t", v.ID, v.Success))
		}
	}
	want := []string{"compaction_start aborted=false", "compaction_end aborted=true", "compaction_start aborted=false",
		"response c1 success=false", "compaction_end aborted=false", "response c2 success=true"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("compactions and compact responses (-want +got):\n%s", diff)
	}
}

// TestUIResult checks what an extension gets for a client's answer to a
// dialog (Q6): pi 1.6.0's value, confirmed or cancelled, and the result
// the prime-agent RPC guide's clients send (a string, a boolean for confirm, null for a
// cancel); an answer with none of them is pi's cancel (false for confirm).
func TestUIResult(t *testing.T) {
	for _, tt := range []struct {
		name, method, answer, want string
	}{
		{"select value", "select", `{"value":"b"}`, `{"value":"b"}`},
		{"select result", "select", `{"result":"b"}`, `{"value":"b"}`},
		{"input empty result", "input", `{"result":""}`, `{"value":""}`},
		{"editor result", "editor", `{"result":"text\nmore"}`, `{"value":"text\nmore"}`},
		{"select null result", "select", `{"result":null}`, `{"cancelled":true}`},
		{"select nothing", "select", `{}`, `{"cancelled":true}`},
		{"select cancelled", "select", `{"cancelled":true,"result":"b"}`, `{"cancelled":true}`},
		{"select boolean result", "select", `{"result":true}`, `{"cancelled":true}`},
		{"value before result", "input", `{"value":"v","result":"r"}`, `{"value":"v"}`},
		{"confirm confirmed", "confirm", `{"confirmed":true}`, `{"confirmed":true}`},
		{"confirm result true", "confirm", `{"result":true}`, `{"confirmed":true}`},
		{"confirm result false", "confirm", `{"result":false}`, `{"confirmed":false}`},
		{"confirm null result", "confirm", `{"result":null}`, `{"cancelled":true}`},
		{"confirm nothing", "confirm", `{}`, `{"confirmed":false}`},
		{"confirm cancelled", "confirm", `{"cancelled":true}`, `{"cancelled":true}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(uiResult(tt.method, gjson.Parse(tt.answer))); got != tt.want {
				t.Errorf("uiResult(%s, %s) = %s, want %s", tt.method, tt.answer, got, tt.want)
			}
		})
	}
}
