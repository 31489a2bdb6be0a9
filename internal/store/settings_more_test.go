package store

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Retry and stall settings are range-checked like tool_concurrency (L2).
func TestSettingsRetryFields(t *testing.T) {
	tests := []struct {
		name, json string
		wantErr    string
		wantStall  int
		wantTries  int
	}{
		{name: "defaults", json: `{}`},
		{name: "set", json: `{"stall_timeout_ms":250,"max_attempts":2}`, wantStall: 250, wantTries: 2},
		{name: "null is default", json: `{"stall_timeout_ms":null,"max_attempts":null}`},
		{name: "stall zero", json: `{"stall_timeout_ms":0}`, wantErr: "stall_timeout_ms 0 out of range"},
		{name: "attempts too many", json: `{"max_attempts":21}`, wantErr: "max_attempts 21 out of range"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home := t.TempDir()
			if err := os.WriteFile(filepath.Join(home, "settings.json"), []byte(tt.json), 0o600); err != nil {
				t.Fatal(err)
			}
			s, err := LoadSettings(home)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || s.StallTimeoutMS != tt.wantStall || s.MaxAttempts != tt.wantTries {
				t.Errorf("got %+v, %v", s, err)
			}
		})
	}
}

// A misspelt key is an error naming it and the key it was meant to be, not
// a setting silently left at its default.
func TestSettingsUnknownKey(t *testing.T) {
	tests := []struct{ name, json, want string }{
		{name: "typo", json: `{"default_modle":"a/b"}`, want: `settings.json: unknown key "default_modle" (did you mean "default_model"?)`},
		{name: "far from any", json: `{"tool_concurrency":4,"colour":"red"}`, want: `settings.json: unknown key "colour" (known: tool_concurrency, default_model,`},
		{name: "system prompts", json: `{"system_prompt":"s","append_system_prompt":"a"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home := t.TempDir()
			if err := os.WriteFile(filepath.Join(home, "settings.json"), []byte(tt.json), 0o600); err != nil {
				t.Fatal(err)
			}
			s, err := LoadSettings(home)
			if tt.want == "" {
				if err != nil || s.SystemPrompt != "s" || s.AppendSystem != "a" {
					t.Errorf("got %+v, %v", s, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %v, want one line with %q", err, tt.want)
			}
		})
	}
}

// Every problem of settings.json at once, one line each, the good settings
// beside them: a file is fixed in one pass, not one error per run.
func TestSettingsEveryProblem(t *testing.T) {
	home := t.TempDir()
	doc := `{"default_modle":"a/b","colour":"red","tool_concurrency":0,"max_attempts":3,"stall_timeout_ms":0}`
	if err := os.WriteFile(filepath.Join(home, "settings.json"), []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := LoadSettings(home)
	if err == nil {
		t.Fatal("no error")
	}
	lines := strings.Split(err.Error(), "\n")
	var got []string
	for _, l := range lines {
		_, msg, _ := strings.Cut(l, "settings.json: ")
		got = append(got, strings.SplitN(msg, " (", 2)[0])
	}
	want := []string{`unknown key "colour"`, `unknown key "default_modle"`, "tool_concurrency 0 out of range 1..64", "stall_timeout_ms 0 out of range 1..3600000"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("problems:\n got %q\nwant %q", got, want)
	}
	if s.MaxAttempts != 3 || s.ToolConcurrency != DefaultToolConcurrency {
		t.Errorf("settings beside the errors: %+v; want max_attempts 3, tool_concurrency the default", s)
	}
}

// The process's turn budget (N1): each key read, an out-of-range value an
// error naming it.
func TestSettingsBudget(t *testing.T) {
	tests := []struct {
		name, json string
		want       Settings // the budget fields
		wantErr    string
	}{
		{name: "all", json: `{"max_model_calls":3,"max_tokens":1000,"max_cost_usd":0.5,"max_duration_ms":60000}`,
			want: Settings{MaxModelCalls: 3, MaxTokens: 1000, MaxCostUSD: 0.5, MaxDurationMS: 60000}},
		{name: "null is none", json: `{"max_model_calls":null}`},
		{name: "zero calls", json: `{"max_model_calls":0}`, wantErr: "max_model_calls 0 out of range"},
		{name: "negative cost", json: `{"max_cost_usd":-1}`, wantErr: "max_cost_usd -1 out of range"},
		{name: "zero duration", json: `{"max_duration_ms":0}`, wantErr: "max_duration_ms 0 out of range"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home := t.TempDir()
			if err := os.WriteFile(filepath.Join(home, "settings.json"), []byte(tt.json), 0o600); err != nil {
				t.Fatal(err)
			}
			s, err := LoadSettings(home)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := Settings{MaxModelCalls: s.MaxModelCalls, MaxTokens: s.MaxTokens, MaxCostUSD: s.MaxCostUSD, MaxDurationMS: s.MaxDurationMS}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("budget (-want +got):\n%s", diff)
			}
		})
	}
}
