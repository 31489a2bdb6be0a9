package session

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/e-agent/e/internal/agent"
)

// A turn's budget is the prompt's, else the session's, else the
// process's (settings under the --max-* flags), limit by limit (N1).
func TestBudgetLayers(t *testing.T) {
	loop := strings.Repeat("/tool bash {\"command\":\"true\"}\n/then\n", 5) + "/text done"
	cases := []struct {
		name     string
		settings string // settings.json; "" for none
		process  agent.Budget
		session  agent.Budget
		prompt   agent.Budget
		fork     bool   // prompt a fork of the session
		want     string // stop_reason
		calls    int    // tool calls announced
	}{
		{name: "none", want: agent.StopCompleted, calls: 5},
		{name: "settings", settings: `{"max_model_calls":2}`, want: agent.StopModelCalls, calls: 2},
		{name: "flag over settings", settings: `{"max_model_calls":2}`, process: agent.Budget{MaxModelCalls: 3},
			want: agent.StopModelCalls, calls: 3},
		{name: "session over process", process: agent.Budget{MaxModelCalls: 2}, session: agent.Budget{MaxModelCalls: 4},
			want: agent.StopModelCalls, calls: 4},
		{name: "prompt over session", session: agent.Budget{MaxModelCalls: 2}, prompt: agent.Budget{MaxModelCalls: 10},
			want: agent.StopCompleted, calls: 5},
		{name: "a fork keeps the session's", session: agent.Budget{MaxModelCalls: 2}, fork: true,
			want: agent.StopModelCalls, calls: 2},
		{name: "other limits stay", session: agent.Budget{MaxModelCalls: 2}, prompt: agent.Budget{MaxTokens: 1 << 40},
			want: agent.StopModelCalls, calls: 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env := Env{Cwd: t.TempDir(), Home: t.TempDir(), Getenv: func(string) string { return "" }}
			if c.settings != "" {
				if err := os.WriteFile(filepath.Join(env.Home, "settings.json"), []byte(c.settings), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			h, err := Start(context.Background(), Options{Model: "e/offline", Budget: c.process}, env, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(h.Shutdown)
			s := create(t, h, Spec{Budget: c.session})
			if c.fork {
				if s, err = s.Fork(context.Background(), ""); err != nil {
					t.Fatal(err)
				}
			}
			turn, err := s.PromptWith(context.Background(), loop, nil, PromptOptions{Budget: c.prompt}, func(agent.Event) {})
			if err != nil {
				t.Fatal(err)
			}
			<-turn.Done()
			res := turn.Result()
			if res.StopReason != c.want || res.Tools.Calls != c.calls {
				t.Errorf("stop reason %q after %d tool calls, want %q after %d", res.StopReason, res.Tools.Calls, c.want, c.calls)
			}
		})
	}
}

// A prompt's output schema that e's validator cannot run, and a cost
// budget on a model without prices, are invalid_params naming the
// parameter; neither starts a turn (J1, N1).
func TestPromptOptionsRefused(t *testing.T) {
	home := t.TempDir()
	settings := `{"providers":{"local":{"api":"openai-chat","base_url":"http://127.0.0.1:1/v1","models":[{"id":"m"}]}}}`
	if err := os.WriteFile(filepath.Join(home, "settings.json"), []byte(settings), 0o644); err != nil {
		t.Fatal(err)
	}
	h, err := Start(context.Background(), Options{}, Env{Cwd: t.TempDir(), Home: home, Getenv: func(string) string { return "" }}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Shutdown)
	model := "local/m"
	s := create(t, h, Spec{Model: &model})
	cases := []struct {
		name      string
		opts      PromptOptions
		wantParam string
		wantText  string
	}{
		{name: "unknown keyword", opts: PromptOptions{OutputSchema: json.RawMessage(`{"type":"object","if":{}}`)},
			wantParam: "output_schema", wantText: `"if"`},
		{name: "cost without prices", opts: PromptOptions{Budget: agent.Budget{MaxCostUSD: 0.5}},
			wantParam: "max_cost_usd", wantText: "no prices"},
	}
	t.Run("session's cost without prices", func(t *testing.T) {
		_, err := h.Create(context.Background(), Spec{Model: &model, Budget: agent.Budget{MaxCostUSD: 1}})
		var se *Error
		if !errors.As(err, &se) || se.Code != CodeInvalidParams || se.Param != "max_cost_usd" {
			t.Fatalf("error %v, want invalid_params at max_cost_usd", err)
		}
	})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := s.PromptWith(context.Background(), "hi", nil, c.opts, func(agent.Event) {})
			var se *Error
			if !errors.As(err, &se) || se.Code != CodeInvalidParams || se.Param != c.wantParam || !strings.Contains(err.Error(), c.wantText) {
				t.Fatalf("error %v, want invalid_params at %s containing %s", err, c.wantParam, c.wantText)
			}
		})
	}
}
