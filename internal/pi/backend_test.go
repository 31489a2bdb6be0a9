package pi

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/e-agent/e/internal/agent"
)

// newFront starts an e --mode rpc front end in-process, saving sessions
// under a temp folder, without serving stdin; the test's cleanup shuts it.
// settings, when given, is pi's settings.json.
func newFront(t *testing.T, settings ...string) *front {
	t.Helper()
	files := map[string]string{}
	for _, s := range settings {
		files["settings.json"] = s
	}
	return newFrontWith(t, io.Discard, files)
}

// newFrontWith is newFront writing its lines to out, with files (by name)
// in pi's config folder and args after its own flags.
func newFrontWith(t *testing.T, out io.Writer, files map[string]string, args ...string) *front {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{"work", "e-home", "pi-agent"} {
		os.Mkdir(filepath.Join(dir, d), 0o700)
	}
	for name, s := range files {
		if err := os.WriteFile(filepath.Join(dir, "pi-agent", name), []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	f, err := ParseFlags(append([]string{"--mode", "rpc", "--session-dir", filepath.Join(dir, "sessions")}, args...))
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"PI_CODING_AGENT_DIR": filepath.Join(dir, "pi-agent")}
	fr, err := start(f, Env{Stdin: strings.NewReader(""), Stdout: out, Stderr: io.Discard,
		Cwd: filepath.Join(dir, "work"), Home: filepath.Join(dir, "e-home"),
		Getenv: func(k string) string { return vars[k] }, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fr.shutdown)
	return fr
}

// TestSessionsOnTheHost checks that the dialect's sessions are the session
// layer's (Host.Create): registered with the host while current, gone from
// it once replaced, and saved in pi's per-cwd folder.
func TestSessionsOnTheHost(t *testing.T) {
	fr := newFront(t)
	work := fr.env.Cwd
	first := fr.session()
	if _, err := fr.h.Get(first.ID()); err != nil {
		t.Fatalf("the first session is not on the host: %v", err)
	}
	if want := fr.b.dir(work); filepath.Dir(first.Path()) != want {
		t.Errorf("saved in %s, want pi's folder %s", filepath.Dir(first.Path()), want)
	}
	if _, err := fr.newSession(CommandNewSession{Type: "new_session"}); err != nil {
		t.Fatal(err)
	}
	second := fr.session()
	if _, err := fr.h.Get(first.ID()); err == nil {
		t.Errorf("the replaced session %s is still on the host", first.ID())
	}
	if _, err := fr.h.Get(second.ID()); err != nil || len(fr.h.Sessions()) != 1 {
		t.Errorf("host sessions %d, the new one: %v", len(fr.h.Sessions()), err)
	}
}

// TestStatsCoverTheSession checks that get_session_stats counts the whole
// session as pi does, not this process's calls: a session switched back to
// still reports the model call it made before.
func TestStatsCoverTheSession(t *testing.T) {
	fr := newFront(t)
	if err := fr.startRun("/text counted", nil, nil, func() {}); err != nil {
		t.Fatal(err)
	}
	<-fr.runDone
	path := fr.session().Path()
	stats := func() ResponseGetSessionStatsData {
		st, err := fr.getSessionStats(CommandGetSessionStats{Type: "get_session_stats"})
		if err != nil {
			t.Fatal(err)
		}
		return st.(ResponseGetSessionStatsData)
	}
	before := stats()
	if _, err := fr.newSession(CommandNewSession{Type: "new_session"}); err != nil {
		t.Fatal(err)
	}
	if _, err := fr.switchSession(CommandSwitchSession{Type: "switch_session", SessionPath: path}); err != nil {
		t.Fatal(err)
	}
	after := stats()
	if after.Tokens.Total == 0 || after.AssistantMessages != 1 || after.UserMessages != 1 {
		t.Errorf("stats after switching back = %+v; want the earlier call counted", after)
	}
	if diff := cmp.Diff(before.Tokens, after.Tokens); diff != "" {
		t.Errorf("tokens (-before +after):\n%s", diff)
	}
}

// TestContextTokens checks the front's estimate of a compacted context:
// pi's estimate of the messages get_messages shows, the system message
// (e's prompt and tools) first among them.
func TestContextTokens(t *testing.T) {
	fr := newFront(t, `{"compaction":{"keepRecentTokens":1}}`)
	if err := fr.startRun("/text one two three", nil, nil, func() {}); err != nil {
		t.Fatal(err)
	}
	<-fr.runDone
	sess := fr.session()
	turn, err := sess.Compact(t.Context(), "", func(agent.Event) {})
	if err != nil {
		t.Fatal(err)
	}
	<-turn.Done()
	if _, err := turn.Compacted(); err != nil {
		t.Fatal(err)
	}
	msgs := fr.contextMessages()
	sys, ok := msgs[0].(SystemMessage)
	if !ok {
		t.Fatalf("context opens with %T, want the system message", msgs[0])
	}
	got, rest := recorder{sess, fr}.ContextTokens(), estimateMessages(msgs[1:])
	if want := estimateMessages([]any{sys}) + rest; got != want || got <= rest {
		t.Errorf("ContextTokens = %d, want %d (the system message's %d plus the rest's %d)", got, want, got-rest, rest)
	}
}

// TestNewSessionWaitsForCompaction: new_session during a compact command
// stops the compaction and returns once it has answered, so nothing of it
// comes after the replacement (before, a prompt right after could fail as
// "already processing", and -race saw the translator written under the
// compaction's feet).
func TestNewSessionWaitsForCompaction(t *testing.T) {
	fr := newFront(t)
	// pi keeps the last 20,000 tokens: the first answer is beyond them.
	for _, p := range []string{"/long 30000", "/text recent"} {
		if err := fr.startRun(p, nil, nil, func() {}); err != nil {
			t.Fatal(err)
		}
		<-fr.runDone
	}
	fr.compact(&command{typ: "compact"}, CommandCompact{Type: "compact"})
	fr.mu.Lock()
	compacting := fr.compacting
	fr.mu.Unlock()
	if compacting == "" {
		t.Fatal("compact did not start a compaction")
	}
	if _, err := fr.newSession(CommandNewSession{Type: "new_session"}); err != nil {
		t.Fatal(err)
	}
	fr.mu.Lock()
	compacting = fr.compacting
	fr.mu.Unlock()
	if compacting != "" {
		t.Errorf("after new_session the compaction is still going on (%q)", compacting)
	}
	if err := fr.startRun("/text next", nil, nil, func() {}); err != nil {
		t.Errorf("a prompt after new_session: %v", err)
	}
}

// TestStartFlags checks pi's start-up flags as pi 1.6.0 takes them
// (checked against it by TestDifferential): processes started one after
// another in one folder, each with its flags.
func TestStartFlags(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"work", "e-home", "pi-agent"} {
		os.Mkdir(filepath.Join(dir, d), 0o700)
	}
	os.WriteFile(filepath.Join(dir, "pi-agent", "models.json"), []byte(`{"providers":{"mock":{"baseUrl":"http://127.0.0.1:1/v1",
		"api":"openai-completions","apiKey":"k","models":[{"id":"m1","reasoning":true},{"id":"m2"}]}}}`), 0o600)
	os.WriteFile(filepath.Join(dir, "pi-agent", "settings.json"), []byte(`{"defaultProvider":"mock","defaultModel":"m1"}`), 0o600)
	vars := map[string]string{"PI_CODING_AGENT_DIR": filepath.Join(dir, "pi-agent")}
	flat := filepath.Join(dir, "flat")
	run := func(args ...string) *front {
		t.Helper()
		f, err := ParseFlags(append([]string{"--mode", "rpc"}, args...))
		if err != nil {
			t.Fatal(err)
		}
		fr, err := start(f, Env{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: io.Discard,
			Cwd: filepath.Join(dir, "work"), Home: filepath.Join(dir, "e-home"),
			Getenv: func(k string) string { return vars[k] }, Version: "test"})
		if err != nil {
			t.Fatal(err)
		}
		fr.shutdown()
		return fr
	}
	type state struct{ Model, Level, Session string }
	of := func(fr *front) state { return state{fr.info.ID, fr.level, fr.session().ID()} }
	first := of(run("--model", "m2"))
	tests := []struct {
		name string
		args []string
		want state
	}{
		// The level as given: e's effort of minimal is low.
		{name: "model suffix and --thinking", args: []string{"--no-session", "--model", "mock/m1:low", "--thinking", "minimal"},
			want: state{Model: "mock/m1", Level: "minimal"}},
		// A session opened goes on with its own model, at the level
		// --thinking names (e took the default model before).
		{name: "continue", args: []string{"-c"}, want: state{Model: "mock/m2", Level: "off", Session: first.Session}},
		{name: "session id prefix", args: []string{"--session", first.Session[:20], "--thinking", "high"},
			want: state{Model: "mock/m2", Level: "off", Session: first.Session}},
		{name: "continue with --thinking", args: []string{"-c", "--model", "m1", "--thinking", "high"},
			want: state{Model: "mock/m1", Level: "high", Session: first.Session}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := of(run(tt.args...))
			if tt.want.Session == "" {
				got.Session = ""
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("state (-want +got):\n%s", diff)
			}
		})
	}
	// --session-dir keeps the sessions in the folder itself, where -c
	// finds the newest of this cwd.
	inFlat := run("--session-dir", flat)
	if got := filepath.Dir(inFlat.session().Path()); got != flat {
		t.Errorf("--session-dir: saved in %s, want %s", got, flat)
	}
	if got := of(run("--session-dir", flat, "-c")).Session; got != inFlat.session().ID() {
		t.Errorf("--session-dir -c opened %s, want %s", got, inFlat.session().ID())
	}
}

// TestCloneUnsaved: as pi 1.6.0's, clone refuses a saved session with no
// message yet (pi has not written its file), in pi's words.
func TestCloneUnsaved(t *testing.T) {
	fr := newFront(t)
	clone := CommandClone{Type: "clone"}
	want := "This session has not been saved yet. Send a message before cloning or forking it."
	if _, err := fr.clone(clone); err == nil || err.Error() != want {
		t.Fatalf("clone of a new session: %v, want %q", err, want)
	}
	if err := fr.startRun("/text one", nil, nil, func() {}); err != nil {
		t.Fatal(err)
	}
	<-fr.runDone
	if _, err := fr.clone(clone); err != nil {
		t.Errorf("clone after a message: %v", err)
	}
}

// TestEmptyFieldGiven checks that a command's optional field given as ""
// counts as given, as pi's: set_model's provider "" is a model not found,
// not a missing provider; fork's entryId "" an invalid entry, not a clone.
// Its command's generated struct tells the two apart (pointers).
func TestEmptyFieldGiven(t *testing.T) {
	fr := newFront(t)
	tests := []struct {
		name, line, want string
	}{
		{name: "set_model provider", line: `{"type":"set_model","provider":"","modelId":"x"}`, want: "Model not found: /x"},
		{name: "set_model provider left out", line: `{"type":"set_model","modelId":"x"}`, want: "set_model: provider: required"},
		{name: "set_model modelId", line: `{"type":"set_model","provider":"e","modelId":""}`, want: "Model not found: e/"},
		{name: "fork entryId", line: `{"type":"fork","entryId":""}`, want: "Invalid entry ID for forking"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			c := &command{typ: strings.Fields(tt.name)[0], line: []byte(tt.line)}
			switch c.typ {
			case "set_model":
				var p CommandSetModel
				if err = c.decode(&p); err == nil {
					_, err = fr.setModel(p)
				}
			case "fork":
				var p CommandFork
				if err = c.decode(&p); err == nil {
					_, err = fr.fork(p)
				}
			}
			if err == nil || err.Error() != tt.want {
				t.Errorf("%s = %v, want %q", tt.line, err, tt.want)
			}
		})
	}
}
