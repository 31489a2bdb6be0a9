package session

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/e-agent/e/internal/agent"
	"github.com/e-agent/e/internal/mcp/mcptest"
	"github.com/e-agent/e/internal/store"
)

// shell runs spec to its end and returns its result and the output events.
func shell(t *testing.T, s *Session, spec ShellSpec) (ShellResult, string) {
	t.Helper()
	var out strings.Builder
	turn, err := s.Shell(context.Background(), spec, func(ev agent.Event) {
		out.WriteString(ev.(agent.ShellOutput).Delta)
	})
	if err != nil {
		t.Fatalf("Shell(%+v): %v", spec, err)
	}
	<-turn.Done()
	res, err := turn.Shell()
	if err != nil {
		t.Fatalf("Shell(%+v) result: %v", spec, err)
	}
	return res, out.String()
}

// TestShell: a user's shell command is recorded in the log, and the model
// sees it unless it was excluded (M18).
func TestShell(t *testing.T) {
	h := startHost(t, Options{})
	s := create(t, h, Spec{Save: true})
	zero, two := 0, 2
	tests := []struct {
		name string
		spec ShellSpec
		want ShellRun
	}{
		{name: "in context", spec: ShellSpec{Command: "echo seen; exit 2"},
			want: ShellRun{Command: "echo seen; exit 2", Output: "seen\n", ExitCode: &two}},
		{name: "excluded", spec: ShellSpec{Command: "echo hidden", Exclude: true},
			want: ShellRun{Command: "echo hidden", Output: "hidden\n", ExitCode: &zero, Exclude: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, streamed := shell(t, s, tt.spec)
			if diff := cmp.Diff(tt.want, res.ShellRun); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			if streamed != tt.want.Output {
				t.Errorf("streamed %q, want %q", streamed, tt.want.Output)
			}
			es := s.Entries()
			if last := es[len(es)-1]; last.ID != res.Entry || last.Type != store.TypeShell {
				t.Errorf("last entry %+v, want the shell entry %s", last, res.Entry)
			}
		})
	}
	var context []string
	for _, m := range agent.History(s.Entries()) {
		context = append(context, m.Content[0].Text)
	}
	want := []string{"Ran `echo seen; exit 2`\n```\nseen\n```\n(exit code 2)"}
	if diff := cmp.Diff(want, context); diff != "" {
		t.Errorf("model context (-want +got):\n%s", diff)
	}
	rr, err := store.Read(s.Path())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(s.Entries(), rr.Entries); diff != "" {
		t.Errorf("log (-memory +file):\n%s", diff)
	}
}

// TestShellIsTheRunningThing: while a shell command runs, turns and steers
// are refused; Stop kills it and its entry says cancelled.
func TestShellIsTheRunningThing(t *testing.T) {
	h := startHost(t, Options{})
	s := create(t, h, Spec{})
	started := make(chan struct{})
	turn, err := s.Shell(context.Background(), ShellSpec{Command: "echo go; sleep 30"}, func(agent.Event) {
		select {
		case <-started:
		default:
			close(started)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	<-started
	if _, err := s.Prompt(context.Background(), "/text no", nil, nil); CodeOf(err) != CodeTurnRunning {
		t.Errorf("Prompt during a shell command: %v, want turn_running", err)
	}
	if _, err := s.Shell(context.Background(), ShellSpec{Command: "true"}, nil); CodeOf(err) != CodeTurnRunning {
		t.Errorf("Shell during a shell command: %v, want turn_running", err)
	}
	if err := s.Steer("x"); CodeOf(err) != CodeNoTurn {
		t.Errorf("Steer during a shell command: %v, want no_turn", err)
	}
	if got := s.Stop(); got != turn {
		t.Fatalf("Stop returned %p, want the shell's turn %p", got, turn)
	}
	<-turn.Done()
	res, err := turn.Shell()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(ShellRun{Command: "echo go; sleep 30", Output: "go\n", Cancelled: true}, res.ShellRun); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if _, err := s.Shell(context.Background(), ShellSpec{}, nil); CodeOf(err) != CodeInvalidParams {
		t.Errorf("empty command: %v, want invalid_params", err)
	}
}

// TestForkAt: a fork's history ends at the entry named (M19), or just
// before it, keeping the entries' ids; the saved fork lies beside its
// original, in whatever folder that is.
func TestForkAt(t *testing.T) {
	h := startHost(t, Options{})
	dir := filepath.Join(t.TempDir(), "pi-sessions")
	s := create(t, h, Spec{Save: true, Dir: dir})
	for _, p := range []string{"/text one", "/text two"} {
		turn, err := s.Prompt(context.Background(), p, nil, func(agent.Event) {})
		if err != nil {
			t.Fatal(err)
		}
		<-turn.Done()
	}
	var msgs []string
	for _, m := range s.Messages() {
		msgs = append(msgs, m.ID)
	}
	ids := func(es []Entry) []string {
		var out []string
		for _, e := range es {
			if e.Type == store.TypeMessage {
				out = append(out, e.ID)
			}
		}
		return out
	}
	tests := []struct {
		name string
		fork func() (*Session, error)
		want []string
	}{
		{name: "whole branch", fork: func() (*Session, error) { return s.Fork(context.Background(), "") }, want: msgs},
		{name: "at the first answer", fork: func() (*Session, error) { return s.Fork(context.Background(), msgs[1]) }, want: msgs[:2]},
		{name: "before the second prompt", fork: func() (*Session, error) { return s.ForkBefore(context.Background(), msgs[2]) }, want: msgs[:2]},
		{name: "before the first prompt", fork: func() (*Session, error) { return s.ForkBefore(context.Background(), msgs[0]) }, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := tt.fork()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, ids(f.Entries())); diff != "" {
				t.Errorf("fork's messages (-want +got):\n%s", diff)
			}
			if filepath.Dir(f.Path()) != dir || f.Header().Parent != s.Path() {
				t.Errorf("fork at %s with parent %s; want in %s with parent %s", f.Path(), f.Header().Parent, dir, s.Path())
			}
			if es := f.Entries(); len(es) > 0 && es[0].Parent != "" {
				t.Errorf("first entry's parent %q, want a root", es[0].Parent)
			}
		})
	}
	if _, err := s.Fork(context.Background(), "nope"); CodeOf(err) != CodeInvalidParams || !strings.Contains(err.Error(), "at:") {
		t.Errorf("fork at a missing entry: %v, want invalid_params naming at", err)
	}
}

// TestForkStartsMCP: a fork offers the MCP tools of its original, through
// servers of its own, whose start ctx bounds (a cancelled ctx fails the
// fork, leaving no session and no log behind).
func TestForkStartsMCP(t *testing.T) {
	h := startHost(t, Options{})
	exe, env, err := mcptest.Command()
	if err != nil {
		t.Fatal(err)
	}
	s := create(t, h, Spec{Save: true, MCP: []MCPServer{{Name: "t", Command: exe, Env: env}}})
	f, err := s.Fork(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	var ends []agent.ToolEnd
	turn, err := f.Prompt(context.Background(), `/tool mcp__t__echo {"text":"hi"}`+"\n/then\n/text done", nil, func(ev agent.Event) {
		if e, ok := ev.(agent.ToolEnd); ok {
			ends = append(ends, e)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	<-turn.Done()
	if len(ends) != 1 || ends[0].Outcome != "completed" || ends[0].Content != "echo: hi" {
		t.Errorf("the fork's MCP call ended %+v, want completed with the echo", ends)
	}
	before, _ := filepath.Glob(filepath.Join(filepath.Dir(s.Path()), "*.jsonl"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Fork(ctx, ""); err == nil {
		t.Error("fork with a cancelled ctx: no error, want the MCP start to fail")
	}
	after, _ := filepath.Glob(filepath.Join(filepath.Dir(s.Path()), "*.jsonl"))
	if len(after) != len(before) || len(h.Sessions()) != 2 {
		t.Errorf("a failed fork left %d logs (had %d) and %d sessions (want 2)", len(after), len(before), len(h.Sessions()))
	}
}
