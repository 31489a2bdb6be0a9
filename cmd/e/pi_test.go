package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestArgsOf(t *testing.T) {
	tests := []struct {
		name string
		argv []string
		want []string
	}{
		{name: "e", argv: []string{"/usr/bin/e", "--mode", "rpc"}, want: []string{"--mode", "rpc"}},
		{name: "prime-agent link", argv: []string{"/opt/bin/prime-agent", "--mode", "rpc", "--no-session"},
			want: []string{"--flavor", "prime", "--mode", "rpc", "--no-session"}},
		{name: "prime-agent.exe", argv: []string{`prime-agent.exe`, "--mode=json", "hi"}, want: []string{"--flavor", "prime", "--mode=json", "hi"}},
		// Not pi's dialect: e's own commands keep their arguments.
		{name: "prime-agent without --mode", argv: []string{"prime-agent", "--version"}, want: []string{"--version"}},
		{name: "other name", argv: []string{"pi", "--mode", "rpc"}, want: []string{"--mode", "rpc"}},
		{name: "empty", argv: nil, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, argsOf(tt.argv)); diff != "" {
				t.Errorf("argsOf(%q) (-want +got):\n%s", tt.argv, diff)
			}
		})
	}
}

// TestPrimeAgentLink runs e through a link named prime-agent, as a
// prime-agent client launches its agent: it speaks prime-agent's flavour
// (get_state's sessionActions and goal, session_action_update), where e
// under its own name speaks pi 1.6.0's (spec/pi.md: prime-agent).
func TestPrimeAgentLink(t *testing.T) {
	link := filepath.Join(t.TempDir(), "prime-agent")
	if err := os.Symlink(bin, link); err != nil {
		t.Skipf("no symlinks here: %v", err)
	}
	in := `{"id":"1","type":"get_state"}` + "\n" + `{"id":"2","type":"follow_up","message":"later"}` + "\n"
	for _, tt := range []struct {
		name, path       string
		state, queueType string
	}{
		{name: "prime-agent", path: link, state: "sessionActions", queueType: "session_action_update"},
		{name: "e", path: bin, state: "pendingMessageCount", queueType: "queue_update"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cmd := command(t, "--mode", "rpc", "--no-session", "--model", "e/offline")
			cmd.Path, cmd.Args[0] = tt.path, tt.path
			cmd.Env = append(cmd.Env, "PI_CODING_AGENT_DIR="+t.TempDir())
			cmd.Stdin = strings.NewReader(in)
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("%s: %v", tt.name, err)
			}
			var state map[string]any
			var types []string
			for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				var v struct {
					Type, Command string
					Data          map[string]any
				}
				if err := json.Unmarshal([]byte(l), &v); err != nil {
					t.Fatalf("line %q: %v", l, err)
				}
				types = append(types, v.Type)
				if v.Command == "get_state" {
					state = v.Data
				}
			}
			if _, ok := state[tt.state]; !ok {
				t.Errorf("get_state has no %s: %v", tt.state, state)
			}
			if !slices.Contains(types, tt.queueType) {
				t.Errorf("no %s among %v", tt.queueType, types)
			}
		})
	}
}
