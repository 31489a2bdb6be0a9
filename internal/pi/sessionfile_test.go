package pi

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/e-agent/e/internal/model"
	"github.com/e-agent/e/internal/session"
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

// TestFileCodec writes a session of every kind of entry e records in pi's
// session-file format, then checks that the file's entries are those
// get_entries shows (one converter), that every parentId names an entry,
// and that reading the file back and writing what was read gives the same
// file, byte for byte (spec/pi.md: Saved sessions).
func TestFileCodec(t *testing.T) {
	info := model.Info{ID: "e/offline", Provider: "e", Name: "offline", API: model.APIOffline, Efforts: []string{"low", "medium", "high"}}
	lookup := func(id string) (model.Info, bool) { return info, id == info.ID }
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	n := 0
	entry := func(typ string, f func(*session.Entry)) session.Entry {
		n++
		en := session.Entry{Type: typ, ID: fmt.Sprintf("%08x", n), Time: at.Add(time.Duration(n) * time.Second)}
		if n > 1 {
			en.Parent = fmt.Sprintf("%08x", n-1)
		}
		f(&en)
		return en
	}
	msg := func(role string, parts ...model.Part) func(*session.Entry) {
		return func(en *session.Entry) { en.Message, _ = json.Marshal(model.Message{Role: role, Content: parts}) }
	}
	text := func(s string) model.Part { return model.Part{Type: model.PartText, Text: s} }
	call := &session.ModelCall{Model: "e/offline", Attempts: 1, DurationMS: 12, ResponseID: "r1", FinishReason: "stop"}
	call.Usage.Input, call.Usage.Output = 10, 3
	exit := 0
	es := []session.Entry{
		entry(session.EntryMessage, msg(model.RoleUser, text("hello"))),
		entry(session.EntryMessage, func(en *session.Entry) {
			msg(model.RoleAssistant, model.Part{Type: model.PartToolCall, ID: "c1", Name: "read", Arguments: json.RawMessage(`{"path":"a"}`)},
				model.Part{Type: model.PartToolCall, ID: "c2", Name: "bash", Arguments: json.RawMessage(`{"command":"ls"}`)})(en)
			en.Call = call
		}),
		entry(session.EntryMessage, func(en *session.Entry) {
			msg(model.RoleTool, model.Part{Type: model.PartToolResult, CallID: "c1", Text: "alpha"},
				model.Part{Type: model.PartToolResult, CallID: "c2", Text: "a\n[exit 0]", IsError: false})(en)
			en.Runs = []session.ToolRun{{CallID: "c1", Outcome: "completed", DurationMS: 3}, {CallID: "c2", Outcome: "completed", DurationMS: 4}}
		}),
		entry(session.EntryMessage, func(en *session.Entry) { msg(model.RoleAssistant, text("done"))(en); en.Call = call }),
		entry(session.EntryShell, func(en *session.Entry) {
			en.Shell = &session.ShellRun{Command: "echo hi", Output: "hi\n", ExitCode: &exit}
		}),
		entry(session.EntryName, func(en *session.Entry) { en.Name = "named" }),
		entry(session.EntrySettings, func(en *session.Entry) { en.Model, en.Effort = "e/offline", "high" }),
		entry(session.EntryMessage, msg(model.RoleUser, text("cut me"))),
		entry(session.EntryMessage, msg(model.RoleAssistant, text("half an ans"))), // streamed before the cut
		entry(session.EntryInterrupted, func(en *session.Entry) { en.Call = call }),
		entry(session.EntryMessage, msg(model.RoleUser, text("cut at once"))),
		entry(session.EntryInterrupted, func(*session.Entry) {}),
		entry(session.EntryMessage, msg(model.RoleUser, text("fail once"))),
		entry(session.EntryAttempt, func(en *session.Entry) { en.Call, en.Error = call, "503: overloaded" }),
		entry(session.EntryError, func(en *session.Entry) { en.Call, en.Error = call, "400: bad request" }),
		entry(session.EntryCompaction, func(en *session.Entry) { en.Summary, en.Kept, en.Tokens = "the summary", "0000000b", 99 }),
		entry(session.EntryMessage, msg(model.RoleUser, text("after"))),
		entry(session.EntryMessage, func(en *session.Entry) { msg(model.RoleAssistant, text("the end"))(en); en.Call = call }),
	}
	h := session.Header{ID: "01SESSION", Cwd: "/work", Created: at, Model: "e/offline", Effort: "medium"}
	sys := SystemMessage{Role: "system", Content: "You are e."}
	write := func(h session.Header, es []session.Entry) []byte {
		fc := newFileCodec(lookup, "e/offline")
		b, err := fc.Header(nil, h)
		if err != nil {
			t.Fatal(err)
		}
		fc.setSystem(sys)
		for _, en := range es {
			if b, err = fc.Entry(b, en); err != nil {
				t.Fatal(err)
			}
		}
		return fc.Flush(b)
	}
	file := write(h, es)

	lines := strings.Split(strings.TrimSuffix(string(file), "\n"), "\n")
	var got []map[string]any
	ids := map[string]bool{}
	for _, l := range lines[1:] {
		var v map[string]any
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		if p, ok := v["parentId"].(string); ok && !ids[p] {
			t.Errorf("entry %v names parent %q, no entry before it", v["id"], p)
		}
		ids[v["id"].(string)] = true
		got = append(got, v)
	}
	c := newConverter(lookup, h)
	c.system = func(ts int64) (SystemMessage, bool) { m := sys; m.Timestamp = ts; return m, true }
	chain := c.chain()
	chain.root = h.ID + ".thinking"
	var want []Entry
	for _, en := range es {
		want = chain.add(want, en)
	}
	var wantJSON []map[string]any
	for _, en := range want {
		b, _ := marshal(en)
		var v map[string]any
		json.Unmarshal(b, &v)
		wantJSON = append(wantJSON, v)
	}
	if diff := cmp.Diff(wantJSON, got[2:]); diff != "" { // after the opening model and level
		t.Errorf("the file's entries are not get_entries' (-want +got):\n%s", diff)
	}

	dh, des, err := newFileCodec(lookup, "e/offline").Decode("test.jsonl", file)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(file), string(write(dh, des))); diff != "" {
		t.Errorf("the file read back and written again differs (-first +again):\n%s", diff)
	}
}

// TestFileCodecContinues checks where e goes on in a file pi wrote: after
// its last line, also one e has no counterpart of (a custom entry), so
// that pi still finds it on the active branch; a model e lacks is left
// out, the session starting on the fallback model.
func TestFileCodecContinues(t *testing.T) {
	info := model.Info{ID: "e/offline", Provider: "e", Name: "offline", API: model.APIOffline}
	lookup := func(id string) (model.Info, bool) { return info, id == info.ID }
	file := `{"type":"session","version":3,"id":"u-1","timestamp":"2026-11-30T10:00:00.000Z","cwd":"/p"}
{"type":"model_change","id":"a1","parentId":null,"timestamp":"2026-11-30T10:00:00.001Z","provider":"anthropic","modelId":"nothing"}
{"type":"message","id":"a2","parentId":"a1","timestamp":"2026-11-30T10:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}
{"type":"custom","id":"a3","parentId":"a2","timestamp":"2026-11-30T10:00:02.000Z","customType":"x","data":{}}
`
	fc := newFileCodec(lookup, "e/offline")
	h, es, err := fc.Decode("f.jsonl", []byte(file))
	if err != nil {
		t.Fatal(err)
	}
	if h.Model != "e/offline" || len(es) != 1 || es[0].ID != "a2" || es[0].Parent != "" {
		t.Fatalf("decoded %+v %+v", h, es)
	}
	m, _ := json.Marshal(model.Message{Role: model.RoleUser, Content: []model.Part{{Type: model.PartText, Text: "more"}}})
	b, err := fc.Entry(nil, session.Entry{Type: session.EntryMessage, ID: "b1", Parent: "a2", Time: time.Now(), Message: m})
	if err != nil {
		t.Fatal(err)
	}
	var got struct{ ParentID string }
	if err := json.Unmarshal(b, &got); err != nil || got.ParentID != "a3" {
		t.Errorf("appended %s: want parentId a3 (the file's last line), err %v", b, err)
	}
}

// TestOwns: a session file is pi's when its header is a session line with
// a timestamp and without e's created (spec/pi.md: Saved sessions).
func TestOwns(t *testing.T) {
	tests := []struct {
		name   string
		header string
		want   bool
	}{
		{name: "pi", header: `{"type":"session","version":3,"id":"x","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}`, want: true},
		{name: "e", header: `{"type":"session","id":"x","created":"2026-01-01T00:00:00Z","timestamp":"t"}`},
		{name: "created null", header: `{"type":"session","timestamp":"t","created":null}`},
		{name: "no timestamp", header: `{"type":"session","id":"x"}`},
		{name: "timestamp null", header: `{"type":"session","timestamp":null}`},
		{name: "timestamp a number", header: `{"type":"session","timestamp":1}`},
		{name: "not a session", header: `{"type":"message","timestamp":"t"}`},
		{name: "not JSON", header: `{"type":"session","timestamp":"t"`},
		{name: "not an object", header: `["session"]`},
	}
	fc := &fileCodec{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := fc.Owns([]byte(tt.header)); got != tt.want {
				t.Errorf("Owns(%s) = %v, want %v", tt.header, got, tt.want)
			}
		})
	}
}
