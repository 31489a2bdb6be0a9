package main

import (
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
