package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// e doctor says what e would use and exits 1 when something is broken;
// it names key variables, never their values.
func TestDoctor(t *testing.T) {
	tests := []struct {
		name     string
		settings string
		env      []string
		code     int
		want     []string
	}{
		{name: "fresh home", code: 0, want: []string{"(absent: the defaults)", "default model: e/offline",
			"OPENAI_API_KEY is not set", "trusted directories:\n  (none)", "extensions:\n  (none)", "no problems found."}},
		{name: "key set", env: []string{"OPENAI_API_KEY=" + secretKey}, code: 0,
			want: []string{"OPENAI_API_KEY is set", "default model: openai/gpt-5.5"}},
		{name: "misspelt setting", settings: `{"default_modle":"openai/gpt-5.5"}`, code: 1,
			want: []string{`PROBLEM: store: settings `, `unknown key "default_modle" (did you mean "default_model"?)`, "1 problem(s) found."}},
		{name: "default model without its key", settings: `{"default_model":"anthropic/claude-sonnet-4-5"}`, code: 1,
			want: []string{"PROBLEM: model \"anthropic/claude-sonnet-4-5\": provider \"anthropic\" needs an API key: set ANTHROPIC_API_KEY"}},
		{name: "missing extension", settings: `{"extensions":[{"name":"guard","command":"/nonexistent/guard"}]}`, code: 1,
			want: []string{"guard        /nonexistent/guard", "PROBLEM: extension guard:"}},
		{name: "local provider", settings: `{"providers":{"local":{"api":"openai-chat","base_url":"http://127.0.0.1:9/v1","models":[{"id":"q"}]}},"default_model":"local/q"}`,
			code: 0, want: []string{"local        openai-chat       http://127.0.0.1:9/v1            no key needed (1 models)", "default model: local/q"}},
		{name: "sandbox W5", code: 0, want: []string{"sandbox:\n  Landlock ABI ", "settings: sandbox off, network false"}},
		{name: "sandbox unenforceable W4", settings: `{"sandbox":"read-only"}`, env: []string{"E_SANDBOX_KERNEL_LIMIT=landlock=0"}, code: 1,
			want: []string{"Landlock ABI 0", "can enforce: nothing", "PROBLEM: settings sandbox: mode read-only without network cannot be enforced here: it needs Landlock"}},
		{name: "sandbox unknown mode", settings: `{"sandbox":"strict"}`, code: 1,
			want: []string{`PROBLEM: settings sandbox: unknown mode "strict"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home := t.TempDir()
			if tt.settings != "" {
				os.WriteFile(filepath.Join(home, "settings.json"), []byte(tt.settings), 0o600)
			}
			cmd := command(t, "doctor")
			cmd.Env = append(cmd.Env, append([]string{"E_HOME=" + home}, tt.env...)...)
			out, err := cmd.Output()
			if code := exitCode(err); code != tt.code {
				t.Errorf("exit %d, want %d:\n%s", code, tt.code, out)
			}
			for _, w := range append(tt.want, "home:      "+home) {
				if !strings.Contains(string(out), w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			if strings.Contains(string(out), "opslogtestsecret") {
				t.Errorf("a key value in the output:\n%s", out)
			}
		})
	}
}

// e doctor --probe calls each configured provider once (its models list)
// and reports every settings problem in the same run.
func TestDoctorProbe(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/ok/v1/models" && r.Method == http.MethodGet:
			w.Write([]byte(`{"data":[]}`))
		case r.URL.Path == "/locked/v1/models" && r.Header.Get("Authorization") == "Bearer "+secretKey:
			w.Header().Set("x-request-id", "req_probe_1")
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"error":{"type":"invalid_request_error","message":"Incorrect API key provided"}}`))
		default:
			w.WriteHeader(http.StatusTeapot)
		}
	}))
	defer srv.Close()
	home := t.TempDir()
	settings := `{"providers":{
		"good":{"api":"openai-chat","base_url":"` + srv.URL + `/ok/v1","models":[{"id":"m"}]},
		"locked":{"api":"openai-chat","base_url":"` + srv.URL + `/locked/v1","api_key_env":"LOCKED_KEY","models":[{"id":"m"}]},
		"keyed":{"api":"openai-chat","base_url":"` + srv.URL + `/ok/v1","api_key":"sk-in-the-file","models":[{"id":"m"}]}},
		"colour":"red","max_attempts":99}`
	os.WriteFile(filepath.Join(home, "settings.json"), []byte(settings), 0o600)
	cmd := command(t, "doctor", "--probe")
	cmd.Env = append(cmd.Env, "E_HOME="+home, "LOCKED_KEY="+secretKey)
	out, err := cmd.Output()
	if code := exitCode(err); code != 1 {
		t.Errorf("exit %d, want 1:\n%s", code, out)
	}
	for _, w := range []string{
		`PROBLEM: store: settings ` + filepath.Join(home, "settings.json") + `: unknown key "colour"`,
		`: max_attempts 99 out of range 1..20`,
		`PROBLEM: model: provider "keyed": api_key: settings.json holds no keys; put the key in an environment variable and name it in api_key_env`,
		"good         openai-chat",
		"    probe: answered in ",
		"PROBLEM: probe locked: model: locked: HTTP 401: Incorrect API key provided (the API key is the value of LOCKED_KEY: check it); request id req_probe_1",
		"OPENAI_API_KEY is not set (", "\n    probe: skipped (OPENAI_API_KEY is not set)",
		"4 problem(s) found.",
	} {
		if !strings.Contains(string(out), w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	if strings.Contains(string(out), "sk-in-the-file") || strings.Contains(string(out), "opslogtestsecret") {
		t.Errorf("a key value in the output:\n%s", out)
	}
}
