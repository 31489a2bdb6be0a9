package session

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/e-agent/e/internal/agent"
)

// fakeUI records what reaches one connection's client: it approves every
// call and confirms every question.
type fakeUI struct {
	mu  sync.Mutex
	got []string
}

func (u *fakeUI) add(s string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.got = append(u.got, s)
}

func (u *fakeUI) list() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.got...)
}

func (u *fakeUI) Ask(_ context.Context, ext, method string, _ json.RawMessage) (json.RawMessage, error) {
	u.add("ask " + ext + " " + method)
	return json.RawMessage(`{"confirmed":true}`), nil
}

func (u *fakeUI) Notice(n Notice) { u.add("notice " + n.Message) }

func (u *fakeUI) Approve(_ context.Context, session string, c agent.Call, _ time.Duration) agent.Decision {
	u.add("approve " + session + " " + c.Name)
	return agent.Decision{Allow: true}
}

// guardHost starts a host whose process UI is ui, with the reference
// extension (examples/extensions/guard): its tool deploy asks ui.confirm.
func guardHost(t *testing.T, ui UI) *Host {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "guard")
	if out, err := exec.Command("go", "build", "-o", bin, "../../examples/extensions/guard").CombinedOutput(); err != nil {
		t.Fatalf("build guard: %v\n%s", err, out)
	}
	home := t.TempDir()
	settings := fmt.Sprintf(`{"extensions":[{"name":"guard","command":%q}]}`, bin)
	if err := os.WriteFile(filepath.Join(home, "settings.json"), []byte(settings), 0o600); err != nil {
		t.Fatal(err)
	}
	env := Env{Cwd: t.TempDir(), Home: home, Getenv: func(string) string { return "" }}
	h, err := Start(context.Background(), Options{}, env, ui)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Shutdown)
	return h
}

// deploy runs a turn that calls the guard's deploy tool and returns how
// the call ended.
func deploy(t *testing.T, s *Session) agent.ToolEnd {
	t.Helper()
	var mu sync.Mutex
	var ends []agent.ToolEnd
	turn, err := s.Prompt(context.Background(), "/tool deploy {\"target\":\"prod\"}\n/then\n/text ok", nil, func(ev agent.Event) {
		if e, ok := ev.(agent.ToolEnd); ok {
			mu.Lock()
			ends = append(ends, e)
			mu.Unlock()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	<-turn.Done()
	mu.Lock()
	defer mu.Unlock()
	if len(ends) != 1 {
		t.Fatalf("tool_end events %+v; want one", ends)
	}
	return ends[0]
}

// The UI is per connection: each session's approvals, the extension
// questions its tool calls ask and notices about it reach the UI it was
// created with, never another session's nor the process's; a session
// without one (e -p) has its approvals denied and its questions refused
// (X5), as before.
func TestSessionUI(t *testing.T) {
	process := &fakeUI{}
	h := guardHost(t, process)
	writes, never := agent.ApproveWrites, agent.ApproveNever
	a, b := &fakeUI{}, &fakeUI{}
	sa := create(t, h, Spec{UI: a, Approval: &writes})
	sb := create(t, h, Spec{UI: b, Approval: &writes})
	fork, err := sb.Fork(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	denied := create(t, h, Spec{Approval: &writes})
	refused := create(t, h, Spec{Approval: &never})

	tests := []struct {
		name        string
		s           *Session
		wantOutcome string
		wantContent string
	}{
		{name: "a", s: sa, wantOutcome: "completed", wantContent: "deployed to prod"},
		{name: "b", s: sb, wantOutcome: "completed", wantContent: "deployed to prod"},
		{name: "b's fork keeps b's UI", s: fork, wantOutcome: "completed", wantContent: "deployed to prod"},
		{name: "no UI: approval denied", s: denied, wantOutcome: "denied",
			wantContent: `denied: approval policy "writes" needs a client to approve extension calls and none can be asked`},
		{name: "no UI: question refused", s: refused, wantOutcome: "failed",
			wantContent: "not deployed: ui.confirm was refused: there is no client to ask (e -p, or e rpc without hello ask:true)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			end := deploy(t, tt.s)
			if end.Outcome != tt.wantOutcome || end.Content != tt.wantContent {
				t.Errorf("deploy ended %s %q; want %s %q", end.Outcome, end.Content, tt.wantOutcome, tt.wantContent)
			}
		})
	}
	// Extension notices about a session (sent during its calls) go to its
	// UI; about a session without one, or none, to the process's.
	for _, n := range []Notice{{Message: "about a", Session: sa.ID()}, {Message: "about no UI", Session: denied.ID()},
		{Message: "about none"}} {
		router{h}.Notice(n)
	}
	for _, c := range []struct {
		name string
		ui   *fakeUI
		want []string
	}{
		{name: "a", ui: a, want: []string{"approve " + sa.ID() + " deploy", "ask guard ui.confirm", "notice about a"}},
		{name: "b", ui: b, want: []string{"approve " + sb.ID() + " deploy", "ask guard ui.confirm",
			"approve " + fork.ID() + " deploy", "ask guard ui.confirm"}},
		{name: "process", ui: process, want: []string{"notice about no UI", "notice about none"}},
	} {
		if diff := cmp.Diff(c.want, c.ui.list()); diff != "" {
			t.Errorf("UI %s got (-want +got):\n%s", c.name, diff)
		}
	}
}
