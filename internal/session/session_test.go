package session

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/e-agent/e/internal/agent"
	"github.com/e-agent/e/internal/leakcheck"
	"github.com/e-agent/e/internal/mcp/mcptest"
	"github.com/e-agent/e/internal/sandbox"
)

// TestMain fails the package when goroutines outlive the tests. The test
// binary is also an MCP server for the tests (mcptest).
func TestMain(m *testing.M) {
	if err := sandbox.Main(); err != nil {
		fmt.Fprintln(os.Stderr, "e:", err)
		os.Exit(sandbox.ExitLaunch)
	}
	mcptest.MaybeServe()
	os.Exit(leakcheck.Main(m))
}

// startHost starts a host in a temporary home and cwd; it shuts down when
// the test ends.
func startHost(t testing.TB, opts Options) *Host {
	t.Helper()
	env := Env{Cwd: t.TempDir(), Home: t.TempDir(), Getenv: func(string) string { return "" }}
	h, err := Start(context.Background(), opts, env, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Shutdown)
	return h
}

func create(t *testing.T, h *Host, spec Spec) *Session {
	t.Helper()
	s, err := h.Create(context.Background(), spec)
	if err != nil {
		t.Fatalf("Create(%+v): %v", spec, err)
	}
	return s
}

// events records a turn's event types.
type events struct {
	mu    sync.Mutex
	types []string
	first chan struct{} // closed at the first text event
	once  sync.Once
}

func newEvents() *events { return &events{first: make(chan struct{})} }

func (e *events) sink(ev agent.Event) {
	e.mu.Lock()
	e.types = append(e.types, ev.EventType())
	e.mu.Unlock()
	if ev.EventType() == "turn_start" {
		e.once.Do(func() { close(e.first) })
	}
}

func (e *events) list() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.types...)
}

// held starts a turn that waits for an hour before its text, once it has
// started; ev gets its events.
func held(t *testing.T, s *Session, round int, ev *events) *Turn {
	t.Helper()
	turn, err := s.Prompt(context.Background(), "/delay 3600000\n/text wait", nil, ev.sink)
	if err != nil {
		t.Fatalf("round %d: prompt: %v", round, err)
	}
	<-ev.first
	return turn
}

// TestPromptAfterStop: a prompt right after Stop, before the stopped turn
// has ended, waits for it and starts (a client need not wait for the
// interrupt's answer). TestTurnPerDone checks that without a Stop it fails
// as turn_running.
func TestPromptAfterStop(t *testing.T) {
	h := startHost(t, Options{NoTools: true})
	s := create(t, h, Spec{})
	for i := range 20 {
		t1 := held(t, s, i, newEvents())
		s.Stop()
		t2, err := s.Prompt(context.Background(), "/text next", nil, func(agent.Event) {})
		if err != nil {
			t.Fatalf("round %d: prompt right after Stop: %v", i, err)
		}
		select {
		case <-t1.Done():
		default:
			t.Fatalf("round %d: the second turn started before the stopped one ended", i)
		}
		<-t2.Done()
		if r := t2.Result(); r.Output != "next" || r.Aborted {
			t.Fatalf("round %d: second turn: %+v", i, r)
		}
	}
}

// TestTurnPerDone checks that each turn has its own done channel: an
// interrupt waits for the turn it stopped, and the next prompt starts at
// once, however the two race (the crash under -race of issue 12.1).
func TestTurnPerDone(t *testing.T) {
	h := startHost(t, Options{NoTools: true})
	s := create(t, h, Spec{})
	for i := range 50 {
		ev := newEvents()
		t1 := held(t, s, i, ev)
		if _, err := s.Prompt(context.Background(), "/text no", nil, ev.sink); CodeOf(err) != CodeTurnRunning {
			t.Fatalf("round %d: second prompt: %v, want code %s", i, err, CodeTurnRunning)
		}
		if got := s.Stop(); got != t1 {
			t.Fatalf("round %d: Stop returned %p, want the running turn %p", i, got, t1)
		}
		// The next prompt right after the interrupted one's result, while
		// another goroutine still waits on the first turn.
		waited := make(chan error, 1)
		go func() { waited <- t1.Wait(context.Background()) }()
		<-t1.Done()
		if !t1.Result().Aborted {
			t.Fatalf("round %d: interrupted turn not aborted: %+v", i, t1.Result())
		}
		t2, err := s.Prompt(context.Background(), "/text fine", nil, func(agent.Event) {})
		if err != nil {
			t.Fatalf("round %d: prompt after interrupt: %v", i, err)
		}
		if err := <-waited; err != nil {
			t.Fatal(err)
		}
		<-t2.Done()
		if r := t2.Result(); r.Output != "fine" || r.Aborted {
			t.Fatalf("round %d: second turn: %+v", i, r)
		}
		if got := ev.list(); got[len(got)-1] != "turn_end" {
			t.Fatalf("round %d: events %v do not end with turn_end", i, got)
		}
	}
}

func TestCreateErrors(t *testing.T) {
	h := startHost(t, Options{})
	untrusted := t.TempDir()
	if err := os.WriteFile(filepath.Join(untrusted, "AGENTS.md"), []byte("hi"), 0o600); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "f")
	os.WriteFile(file, nil, 0o600)
	str := func(s string) *string { return &s }
	tests := []struct {
		name  string
		spec  Spec
		code  Code
		param string
	}{
		{name: "missing cwd", spec: Spec{Cwd: "/no/such/dir"}, code: CodeNotFound, param: "cwd"},
		{name: "cwd is a file", spec: Spec{Cwd: file}, code: CodeInvalidParams, param: "cwd"},
		{name: "unknown model", spec: Spec{Model: str("nowhere/x")}, code: CodeInvalidParams, param: "model"},
		{name: "bad effort", spec: Spec{Effort: str("extreme")}, code: CodeInvalidParams, param: "effort"},
		{name: "unknown tool", spec: Spec{Tools: []string{"read", "nope"}}, code: CodeInvalidParams, param: "tools[1]"},
		{name: "untrusted", spec: Spec{Cwd: untrusted}, code: CodeUntrusted},
		{name: "missing log", spec: Spec{Resume: "/no/such.jsonl"}, code: CodeNotFound, param: "resume"},
		{name: "unknown session id", spec: Spec{Resume: "01JNOSUCHSESSION0000000000"}, code: CodeNotFound, param: "resume"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := h.Create(context.Background(), tt.spec)
			var se *Error
			if !errors.As(err, &se) {
				t.Fatalf("Create: %v, want a *session.Error", err)
			}
			if se.Code != tt.code || se.Param != tt.param {
				t.Errorf("Create: code %q param %q (%v), want code %q param %q", se.Code, se.Param, err, tt.code, tt.param)
			}
			if len(h.Sessions()) != 0 {
				t.Errorf("a failed create left a session behind")
			}
		})
	}
}

// TestResumeOpenLog: a log open for writing in this process cannot be
// opened for writing again (C6); a read-only copy gets its own id (C7);
// closing releases the lock.
func TestResumeOpenLog(t *testing.T) {
	h := startHost(t, Options{})
	w := create(t, h, Spec{Save: true})
	path := w.Path()
	if path == "" {
		t.Fatal("saved session has no path")
	}
	_, err := h.Create(context.Background(), Spec{Resume: path, Save: true})
	if CodeOf(err) != CodeLocked {
		t.Fatalf("second writable resume: %v (code %s), want code locked", err, CodeOf(err))
	}
	c := create(t, h, Spec{Resume: path})
	if c.ID() == w.ID() || c.Path() != "" {
		t.Errorf("read-only copy: id %s path %q; want an id other than %s and no path", c.ID(), c.Path(), w.ID())
	}
	if got, err := h.Get(w.ID()); err != nil || got != w {
		t.Errorf("Get(writer id) = %v, %v; want the writer", got, err)
	}
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + ".lock"); !os.IsNotExist(err) {
		t.Errorf("lock file left after close: %v", err)
	}
	if _, err := h.Get(w.ID()); CodeOf(err) != CodeUnknownSession {
		t.Errorf("Get after close: %v, want unknown_session", err)
	}
	again := create(t, h, Spec{Resume: path, Save: true})
	if again.ID() != w.ID() {
		t.Errorf("writable resume after close: id %s, want the log's %s", again.ID(), w.ID())
	}
}

// TestResumeByID: resume takes a session's id, found in the sessions folder
// whatever the cwd's slug; a read-only copy says so, with a warning (C7),
// and a writable resume says nothing.
func TestResumeByID(t *testing.T) {
	h := startHost(t, Options{})
	other := t.TempDir() // a log under another cwd's slug
	w := create(t, h, Spec{Save: true, Cwd: other})
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name         string
		spec         Spec
		wantReadOnly bool
		wantWarning  string
	}{
		{name: "read-only", spec: Spec{Resume: w.ID()}, wantReadOnly: true, wantWarning: "its turns will not be saved (pass save: true"},
		{name: "writable", spec: Spec{Resume: w.ID(), Save: true}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := create(t, h, tt.spec)
			defer s.Close(context.Background())
			in := s.Info()
			if in.Cwd != other || in.ReadOnly != tt.wantReadOnly || !strings.Contains(in.Warning, tt.wantWarning) || (tt.wantWarning == "") != (in.Warning == "") {
				t.Errorf("Info: cwd %s read-only %t warning %q; want cwd %s, read-only %t, warning with %q",
					in.Cwd, in.ReadOnly, in.Warning, other, tt.wantReadOnly, tt.wantWarning)
			}
		})
	}
	ns := startHost(t, Options{NoSave: true})
	ns.env.Home = h.env.Home
	s := create(t, ns, Spec{Resume: w.ID(), Save: true})
	defer s.Close(context.Background())
	if in := s.Info(); !in.ReadOnly || !strings.Contains(in.Warning, "--no-save") {
		t.Errorf("under --no-save: read-only %t warning %q; want read-only, naming --no-save", in.ReadOnly, in.Warning)
	}
}

func TestSteerAndSetCodes(t *testing.T) {
	h := startHost(t, Options{})
	s := create(t, h, Spec{})
	if err := s.Steer("x"); CodeOf(err) != CodeNoTurn {
		t.Errorf("Steer when idle: %v, want no_turn", err)
	}
	bad := "extreme"
	if _, _, err := s.Set(nil, &bad); CodeOf(err) != CodeInvalidParams {
		t.Errorf("Set bad effort: %v, want invalid_params", err)
	}
	if _, err := s.Prompt(context.Background(), "hi", []string{"missing.png"}, nil); CodeOf(err) != CodeNotFound {
		t.Errorf("Prompt with a missing image: %v, want not_found", err)
	}
}

// TestPathSurvivesClose: a prompt's result names its log even when Close
// races the end of the turn (issue 12.8).
func TestPathSurvivesClose(t *testing.T) {
	h := startHost(t, Options{})
	s := create(t, h, Spec{Save: true})
	turn, err := s.Prompt(context.Background(), "/text hi", nil, func(agent.Event) {})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-turn.Done()
	if p := turn.Result().Path; p == nil || *p != s.Path() {
		t.Errorf("result path %v, want %s", p, s.Path())
	}
}

// TestCreateFromHistory: a session can start from a given history, saved
// into a folder of the front end's choosing (pi's sessions folder).
func TestCreateFromHistory(t *testing.T) {
	h := startHost(t, Options{})
	src := create(t, h, Spec{})
	turn, err := src.Prompt(context.Background(), "/text one", nil, func(agent.Event) {})
	if err != nil {
		t.Fatal(err)
	}
	<-turn.Done()
	dir := filepath.Join(t.TempDir(), "pi-sessions")
	s := create(t, h, Spec{Save: true, Dir: dir, History: src.Entries(), Parent: "/elsewhere/parent.jsonl"})
	if got := filepath.Dir(s.Path()); got != dir {
		t.Errorf("log in %s, want %s", got, dir)
	}
	if s.Header().Parent != "/elsewhere/parent.jsonl" {
		t.Errorf("header parent %q", s.Header().Parent)
	}
	msgs := s.Messages()
	if len(msgs) != 2 || msgs[0].Parent != "" || msgs[1].Parent == "" {
		t.Fatalf("messages %+v: want the two of the source, relinked from a root", msgs)
	}
	turn, err = s.Prompt(context.Background(), "/text two", nil, func(agent.Event) {})
	if err != nil {
		t.Fatal(err)
	}
	<-turn.Done()
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := create(t, h, Spec{Resume: s.Path()})
	if got := len(r.Messages()); got != 4 {
		t.Errorf("resumed copy has %d messages, want 4", got)
	}
}

// TestResumeAtLeaf: a session resumed at an entry (Spec.Leaf) has the
// branch ending there, and goes on from it: what came after stays in the
// log on a branch of its own, which a later resume leaves out.
func TestResumeAtLeaf(t *testing.T) {
	h := startHost(t, Options{})
	s := create(t, h, Spec{Save: true, Dir: t.TempDir()})
	for _, p := range []string{"/text one", "/text two"} {
		turn, err := s.Prompt(context.Background(), p, nil, func(agent.Event) {})
		if err != nil {
			t.Fatal(err)
		}
		<-turn.Done()
	}
	msgs := s.Messages()
	leaf := msgs[1].ID // the answer to "one"
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := create(t, h, Spec{Save: true, Resume: s.Path(), Leaf: leaf})
	if got := len(r.Messages()); got != 2 {
		t.Errorf("resumed at the first answer: %d messages, want 2", got)
	}
	turn, err := r.Prompt(context.Background(), "/text three", nil, func(agent.Event) {})
	if err != nil {
		t.Fatal(err)
	}
	<-turn.Done()
	if err := r.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, m := range create(t, h, Spec{Resume: s.Path()}).Messages() {
		for _, p := range m.Content {
			texts = append(texts, p.Text)
		}
	}
	if got, want := strings.Join(texts, "|"), "/text one|one|/text three|three"; got != want {
		t.Errorf("the log's branch: %q, want %q", got, want)
	}
	if _, err := h.Create(context.Background(), Spec{Resume: s.Path(), Leaf: "nope"}); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("resume at an entry the log lacks: %v, want an error naming it", err)
	}
}

// TestCreateAtFile: a new saved session's log can be a file its user
// named (pi's --session PATH of a file that does not exist yet), its
// folder made; a file that exists, and one with a history or a resume,
// are refused.
func TestCreateAtFile(t *testing.T) {
	h := startHost(t, Options{})
	file := filepath.Join(t.TempDir(), "new", "mine.jsonl")
	s := create(t, h, Spec{Save: true, File: file})
	if s.Path() != file {
		t.Errorf("log at %s, want %s", s.Path(), file)
	}
	turn, err := s.Prompt(context.Background(), "/text kept", nil, func(agent.Event) {})
	if err != nil {
		t.Fatal(err)
	}
	<-turn.Done()
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r := create(t, h, Spec{Resume: file}); len(r.Messages()) != 2 {
		t.Errorf("the file resumed has %d messages, want 2", len(r.Messages()))
	}
	for _, tt := range []struct {
		name string
		spec Spec
	}{
		{"the file exists", Spec{Save: true, File: file}},
		{"with a history", Spec{Save: true, File: file + ".2", History: s.Entries()}},
		{"with a resume", Spec{Save: true, File: file + ".3", Resume: file}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := h.Create(context.Background(), tt.spec); err == nil || !strings.Contains(err.Error(), file) {
				t.Errorf("Create: %v, want an error naming %s", err, file)
			}
		})
	}
}

// The system prompt's git summary describes the tree at the session's
// first model call, not at the process's start: a client that changes the
// tree between the two (a checkout, a new file) gets a prompt that says so.
func TestGitSummaryIsCurrent(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	if out, err := exec.Command("git", "-C", dir, "init", "-q", "-b", "trunk").CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	env := Env{Cwd: dir, Home: t.TempDir(), Getenv: func(string) string { return "" }}
	h, err := Start(context.Background(), Options{}, env, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Shutdown)
	if got, want := create(t, h, Spec{}).SystemPrompt(), "- Git: branch trunk, clean\n"; !strings.Contains(got, want) {
		t.Errorf("system prompt:\n%s\nwant it to hold %q", got, want)
	}
	if err := os.WriteFile(filepath.Join(dir, "new.txt"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if got, want := create(t, h, Spec{}).SystemPrompt(), "- Git: branch trunk, 0 changed, 1 untracked\n"; !strings.Contains(got, want) {
		t.Errorf("system prompt of a session created after a file was added:\n%s\nwant it to hold %q", got, want)
	}
}

// A model or effort change while a turn runs is refused (e rpc's
// session.set: turn_running), unless Behaviour.SetWhileRunning (pi's
// set_thinking_level): then it is recorded at once, the running turn
// keeps the effort it started with, and the next turn has the new one.
func TestSetWhileRunning(t *testing.T) {
	for _, tt := range []struct {
		name    string
		allowed bool
	}{
		{name: "e rpc", allowed: false},
		{name: "pi", allowed: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := startHost(t, Options{NoTools: true, Behaviour: Behaviour{Behaviour: agent.Behaviour{SetWhileRunning: tt.allowed}}})
			s := create(t, h, Spec{})
			t1 := held(t, s, 0, newEvents())
			high := "high"
			_, ef, err := s.Set(nil, &high)
			if !tt.allowed {
				if CodeOf(err) != CodeTurnRunning {
					t.Fatalf("Set during a turn = %v, want turn_running", err)
				}
				s.Stop()
				<-t1.Done()
				return
			}
			if err != nil || ef != "high" {
				t.Fatalf("Set during a turn = %q, %v; want high", ef, err)
			}
			if got := s.Info().Effort; got != "high" {
				t.Errorf("session effort after Set = %q, want high", got)
			}
			s.Stop()
			<-t1.Done()
			if got := t1.Result().Effort; got != "medium" {
				t.Errorf("the running turn's effort = %q, want medium, the one it started with", got)
			}
			t2, err := s.Prompt(context.Background(), "/text next", nil, func(agent.Event) {})
			if err != nil {
				t.Fatal(err)
			}
			<-t2.Done()
			if got := t2.Result().Effort; got != "high" {
				t.Errorf("the next turn's effort = %q, want high", got)
			}
		})
	}
}
