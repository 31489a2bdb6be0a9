package agent

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// scripted answers approval requests from a list and records each one.
type scripted struct {
	mu      sync.Mutex
	answers []Decision
	asked   []Call
	// block, when set, makes Approve wait for the turn to end instead.
	block   bool
	waiting chan struct{}
}

func (a *scripted) Approve(ctx context.Context, session string, c Call, _ time.Duration) Decision {
	a.mu.Lock()
	a.asked = append(a.asked, c)
	if a.block {
		a.mu.Unlock()
		close(a.waiting)
		<-ctx.Done()
		return Decision{}
	}
	d := a.answers[0]
	a.answers = a.answers[1:]
	a.mu.Unlock()
	return d
}

func (a *scripted) names() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for _, c := range a.asked {
		out = append(out, c.Name)
	}
	return out
}

const writeThenRead = "/tool write {\"path\":\"x.txt\",\"content\":\"hi\"}\n/tool read {\"path\":\"x.txt\"}\n/then\n/text ok"

func TestApproval(t *testing.T) {
	tests := []struct {
		name     string
		policy   string
		answers  []Decision
		asked    []string // tools the client was asked about
		outcomes []string // tool_end outcomes, by call
		content  string   // the write call's content
		written  bool
	}{
		{name: "never asks", policy: ApproveNever, outcomes: []string{"completed", "completed"}, written: true},
		{name: "writes asks for the write only", policy: ApproveWrites, answers: []Decision{{Allow: true}},
			asked: []string{"write"}, outcomes: []string{"completed", "completed"}, written: true},
		{name: "all asks for both", policy: ApproveAll, answers: []Decision{{Allow: true}, {Allow: true}},
			asked: []string{"write", "read"}, outcomes: []string{"completed", "completed"}, written: true},
		{name: "a rejected call is denied with the reason", policy: ApproveWrites,
			answers: []Decision{{Reason: "not in this repo"}}, asked: []string{"write"},
			outcomes: []string{"denied", "failed"}, content: "denied: not in this repo"},
		{name: "a rejection without reason says who", policy: ApproveWrites, answers: []Decision{{}},
			asked: []string{"write"}, outcomes: []string{"denied", "failed"}, content: "denied: rejected by the client"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eng := testEngine(t)
			a := &scripted{answers: tt.answers}
			s := testSession(t, eng, func(o *Options) { o.Approver = a; o.Approval = Approval{Policy: tt.policy} })
			_, rec := prompt(t, s, writeThenRead)
			if diff := cmp.Diff(tt.asked, a.names()); diff != "" {
				t.Errorf("asked (-want +got):\n%s", diff)
			}
			var outcomes []string
			for _, e := range ofType[ToolEnd](rec) {
				outcomes = append(outcomes, e.Outcome)
			}
			if diff := cmp.Diff(tt.outcomes, outcomes); diff != "" {
				t.Errorf("outcomes (-want +got):\n%s", diff)
			}
			if tt.content != "" {
				if got := ofType[ToolEnd](rec)[0].Content; got != tt.content {
					t.Errorf("write content %q, want %q", got, tt.content)
				}
			}
			_, err := os.Stat(filepath.Join(s.Cwd(), "x.txt"))
			if tt.written != (err == nil) {
				t.Errorf("x.txt: %v; want written %v", err, tt.written)
			}
			checkTurnEnd(t, rec, false)
			checkHistory(t, s)
		})
	}
}

func TestApprovalAlwaysForTheSession(t *testing.T) {
	eng := testEngine(t)
	a := &scripted{answers: []Decision{{Allow: true, Always: true}}}
	s := testSession(t, eng, func(o *Options) { o.Approver = a; o.Approval = Approval{Policy: ApproveWrites} })
	prompt(t, s, "/tool write {\"path\":\"a.txt\",\"content\":\"1\"}\n/then\n/text ok")
	prompt(t, s, "/tool write {\"path\":\"b.txt\",\"content\":\"2\"}\n/then\n/text ok")
	if diff := cmp.Diff([]string{"write"}, a.names()); diff != "" {
		t.Errorf("asked (-want +got):\n%s", diff)
	}
	for _, f := range []string{"a.txt", "b.txt"} {
		if _, err := os.Stat(filepath.Join(s.Cwd(), f)); err != nil {
			t.Error(err)
		}
	}
}

func TestApprovalWithoutApprover(t *testing.T) {
	s := testSession(t, testEngine(t), func(o *Options) { o.Approval = Approval{Policy: ApproveWrites} })
	_, rec := prompt(t, s, writeThenRead)
	ends := ofType[ToolEnd](rec)
	want := `denied: approval policy "writes" needs a client to approve write calls and none can be asked`
	if ends[0].Outcome != "denied" || ends[0].Content != want {
		t.Errorf("write ended %s %q, want denied %q", ends[0].Outcome, ends[0].Content, want)
	}
	if _, err := os.Stat(filepath.Join(s.Cwd(), "x.txt")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("x.txt: %v; want never written", err)
	}
}

func TestApprovalInterrupted(t *testing.T) {
	eng := testEngine(t)
	a := &scripted{block: true, waiting: make(chan struct{})}
	s := testSession(t, eng, func(o *Options) { o.Approver = a; o.Approval = Approval{Policy: ApproveAll} })
	rec := &recorder{}
	done := startPrompt(t, s, writeThenRead, rec)
	<-a.waiting
	s.Interrupt()
	res := receive(t, done)
	var outcomes []string
	for _, e := range ofType[ToolEnd](rec) {
		outcomes = append(outcomes, e.Outcome)
	}
	if diff := cmp.Diff([]string{"interrupted", "interrupted"}, outcomes); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	if len(a.names()) != 1 {
		t.Errorf("asked %v; want no question after the interrupt", a.names())
	}
	if !res.Aborted {
		t.Error("the turn was not aborted")
	}
	checkTurnEnd(t, rec, true)
	checkHistory(t, s)
}

func TestApprovalTimeout(t *testing.T) {
	eng := testEngine(t)
	a := &scripted{block: true, waiting: make(chan struct{})}
	s := testSession(t, eng, func(o *Options) {
		o.Approver = a
		o.Approval = Approval{Policy: ApproveWrites, Timeout: time.Millisecond}
	})
	res, rec := prompt(t, s, writeThenRead)
	ends := ofType[ToolEnd](rec)
	if ends[0].Outcome != "denied" || ends[0].Content != "denied: no answer within 1 ms" {
		t.Errorf("write ended %s %q, want denied after the timeout", ends[0].Outcome, ends[0].Content)
	}
	if res.Aborted || res.FinalOutput != "ok" {
		t.Errorf("aborted %v, final %q; want the turn to go on", res.Aborted, res.FinalOutput)
	}
}

func TestSetApproval(t *testing.T) {
	s := testSession(t, testEngine(t), nil)
	if got := s.Approval(); got != (Approval{Policy: ApproveNever}) {
		t.Errorf("default %+v, want policy never", got)
	}
	if err := s.SetApproval(Approval{Policy: "sometimes"}); err == nil || err.Error() != `unknown approval policy "sometimes" (known: [never writes all])` {
		t.Errorf("SetApproval(sometimes) = %v", err)
	}
	want := Approval{Policy: ApproveAll, Timeout: time.Second}
	if err := s.SetApproval(want); err != nil || s.Approval() != want {
		t.Errorf("SetApproval(all) = %v, settings %+v", err, s.Approval())
	}
}
