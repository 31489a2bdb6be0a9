package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

const secretKey = "sk-opslogtestsecret0123456789abcdef"

// readLog parses an operator log: one JSON object a line.
func readLog(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, rec)
	}
	return out
}

func find(recs []map[string]any, msg string) map[string]any {
	for _, r := range recs {
		if r["msg"] == msg {
			return r
		}
	}
	return nil
}

// The operator log records start, sessions, model calls (with attempts and
// tokens), tool calls (with outcome and duration), retries and the turn, and
// never a key or the prompt's text unless asked (--log-content), and then
// redacted.
func TestOperatorLog(t *testing.T) {
	prompt := "/tool bash {\"command\":\"echo " + secretKey + "; exit 3\"}\n/then\n/error retryable boom\n/text done " + secretKey
	for _, content := range []bool{false, true} {
		t.Run(map[bool]string{false: "default", true: "log-content"}[content], func(t *testing.T) {
			logPath := filepath.Join(t.TempDir(), "e.log")
			args := []string{"-m", "e/offline", "-p", prompt, "--log", logPath}
			if content {
				args = append(args, "--log-content")
			}
			cmd := command(t, args...)
			cmd.Env = append(cmd.Env, "OPENAI_API_KEY="+secretKey)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("e -p: %v\n%s", err, out)
			}
			raw, _ := os.ReadFile(logPath)
			if strings.Contains(string(raw), secretKey) || strings.Contains(string(raw), "opslogtestsecret") {
				t.Errorf("the key reached the log:\n%s", raw)
			}
			if got := strings.Contains(string(raw), "echo [REDACTED]"); got != content {
				t.Errorf("tool arguments in the log: %v, want %v:\n%s", got, content, raw)
			}
			if got := strings.Contains(string(raw), "/then"); got != content {
				t.Errorf("prompt text in the log: %v, want %v", got, content)
			}
			recs := readLog(t, logPath)
			var msgs []string
			for _, r := range recs {
				msgs = append(msgs, r["msg"].(string))
			}
			want := "start session created model call tool call model retry model call turn shutdown session closed"
			if content {
				want = "start session created prompt model call tool call model retry model call turn shutdown session closed"
			}
			if got := strings.Join(msgs, " "); got != want {
				t.Errorf("records %q, want %q", got, want)
			}
			start := find(recs, "start")
			if p, _ := start["providers"].(map[string]any)["openai"].(map[string]any); p["key_set"] != true || p["key_env"] != "OPENAI_API_KEY" {
				t.Errorf("start record's openai provider: %v", p)
			}
			tool := find(recs, "tool call")
			if tool["level"] != "WARN" || tool["name"] != "bash" || tool["outcome"] != "failed" || tool["summary"] != "exit 3" || tool["duration_ms"] == nil {
				t.Errorf("tool call record %v", tool)
			}
			var calls []map[string]any
			for _, r := range recs {
				if r["msg"] == "model call" {
					calls = append(calls, r)
				}
			}
			if c := calls[1]; c["attempts"] != 2.0 || c["status"] != "ok" || c["provider"] != "e" || c["tokens"].(map[string]any)["input"].(float64) <= 0 {
				t.Errorf("second model call %v, want 2 attempts, ok, tokens", c)
			}
			if r := find(recs, "turn"); r["outcome"] != "completed" || r["tool_failures"] != 1.0 {
				t.Errorf("turn record %v", r)
			}
		})
	}
}

// E_LOG is --log's default; a request error of e rpc is logged.
func TestOperatorLogRPC(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "e.log")
	cmd := command(t, "rpc", "--no-save")
	cmd.Env = append(cmd.Env, "E_LOG="+logPath)
	cmd.Stdin = strings.NewReader(`{"id":"x","method":"session.prompt","params":{"session":"nope","prompt":"hi"}}` + "\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("e rpc: %v\n%s", err, out)
	}
	r := find(readLog(t, logPath), "request failed")
	if r == nil || r["level"] != "WARN" || r["code"] != "unknown_session" || !strings.Contains(r["error"].(string), "nope") {
		t.Errorf("request failed record %v", r)
	}
}

// A retry record carries the failed attempt's HTTP status and the
// provider's request id, what an operator quotes to the provider.
func TestOperatorLogRetryStatus(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.Header().Set("x-request-id", "req_retry_1")
			w.Header().Set("retry-after", "0")
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(`{"error":{"type":"server_error","message":"overloaded"}}`))
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte("data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"},\"finish_reason\":null}]}\n\n" +
			"data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":1}}\n\n" +
			"data: [DONE]\n\n"))
	}))
	defer srv.Close()
	home := t.TempDir()
	settings := `{"providers":{"local":{"api":"openai-chat","base_url":"` + srv.URL + `/v1","models":[{"id":"m"}]}},"default_model":"local/m"}`
	if err := os.WriteFile(filepath.Join(home, "settings.json"), []byte(settings), 0o600); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(t.TempDir(), "e.log")
	cmd := command(t, "-p", "hi", "--no-save", "--log", logPath)
	cmd.Env = append(cmd.Env, "E_HOME="+home)
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "ok") {
		t.Fatalf("e -p: %v\n%s", err, out)
	}
	r := find(readLog(t, logPath), "model retry")
	if r == nil || r["http_status"] != 503.0 || r["request_id"] != "req_retry_1" || r["attempt"] != 2.0 {
		t.Errorf("model retry record %v, want http_status 503, request_id req_retry_1, attempt 2", r)
	}
}
