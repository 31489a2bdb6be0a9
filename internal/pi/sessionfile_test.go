package pi

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/e-agent/e/internal/testbuild"
)

// TestSessionFileCrossResume checks that the session files e --mode rpc
// saves are pi 1.6.0's (spec/pi.md: Saved sessions): a session written by
// one agent (pi, e) is resumed by both, real pi 1.6.0 from npm and e, and
// each says the same of it (get_messages, get_state, get_session_stats),
// compared as TestDifferential compares (key sets, types, the values of
// kinds, roles and counts). The session has a tool call, a user bash
// command, a name, a thinking level change, a compaction and a prompt
// after it.
func TestSessionFileCrossResume(t *testing.T) {
	node, cli := piInstalled(t)
	if testing.Short() {
		t.Skip("-short: runs real pi (Node)")
	}
	bin := testbuild.Command(t, "github.com/e-agent/e/cmd/e", false)
	agents := []struct {
		name string
		argv []string
	}{{"pi", []string{node, cli}}, {"e", []string{bin}}}
	for _, writer := range agents {
		t.Run("written by "+writer.name, func(t *testing.T) {
			mock := newDiffMock()
			close(mock.summaries)
			srv := httptest.NewServer(mock)
			defer srv.Close()
			agentDir, work, env := diffDirs(t, srv.URL)
			w := newDiffAgent(t, writer.name, writer.argv, env, work, agentDir, mock)
			w.launch(modelFlags...)
			prompt(w, "call-read the file")
			w.call(map[string]any{"type": "bash", "command": "echo from the user"})
			w.call(map[string]any{"type": "set_session_name", "name": "crossed"})
			w.call(map[string]any{"type": "set_thinking_level", "level": "high"})
			prompt(w, "remember this")
			w.call(map[string]any{"type": "compact"})
			prompt(w, "after the compaction")
			file, _ := data(w.call(map[string]any{"type": "get_state"}))["sessionFile"].(string)
			w.exit()
			if file == "" {
				t.Fatalf("%s saved no session file", writer.name)
			}
			saved, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string][]record{}
			for _, reader := range agents {
				// Each reads its own copy: a resume may write to it.
				copyPath := filepath.Join(filepath.Dir(file), reader.name+"-reads.jsonl")
				if err := os.WriteFile(copyPath, saved, 0o600); err != nil {
					t.Fatal(err)
				}
				r := newDiffAgent(t, reader.name, reader.argv, env, work, agentDir, mock)
				r.launch("--session", copyPath)
				for _, c := range []string{"get_messages", "get_state", "get_session_stats"} {
					r.call(map[string]any{"type": c})
				}
				r.exit()
				lines, _ := r.cut(0)
				for _, l := range lines {
					if rec := normalise("cross-resume", l); strings.HasPrefix(rec.kind, "response ") {
						got[reader.name] = append(got[reader.name], rec)
					}
				}
			}
			if d := differences(got["pi"], got["e"]); len(d) > 0 {
				t.Errorf("pi 1.6.0 and e resume the file %s wrote differently:\n%s\nthe file:\n%s", writer.name,
					strings.Join(d, "\n"), saved)
			}
		})
	}
}

// piInstalled returns Node 22's and pi 1.6.0's paths, or skips t when
// scripts/pi-client-setup.sh has not installed them.
func piInstalled(t *testing.T) (node, cli string) {
	cache := piCache()
	node = filepath.Join(cache, "node", "bin", "node")
	cli = filepath.Join(cache, "pi", "node_modules", "@earendil-works", "pi-coding-agent", "dist", "cli.js")
	for _, p := range []string{node, cli} {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("Node 22 and pi 1.6.0 are not installed (%s is missing): run scripts/pi-client-setup.sh", p)
		}
	}
	return node, cli
}
