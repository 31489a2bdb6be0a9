package agent

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/e-agent/e/internal/model"
)

// fakeClient is a client's tools: each call waits until the test answers
// it (or its context ends), so a test sees which calls are pending at once.
type fakeClient struct {
	mu      sync.Mutex
	calls   []ClientCall
	arrived chan ClientCall
	answers map[string]chan string // by the call's first argument "k"
}

func newFakeClient() *fakeClient {
	return &fakeClient{arrived: make(chan ClientCall, 8), answers: map[string]chan string{}}
}

func (f *fakeClient) Defs() []model.ToolDef {
	return []model.ToolDef{{Name: "ticket", Description: "Look up a ticket.", Parameters: json.RawMessage(`{"type":"object"}`)}}
}

func (f *fakeClient) answer(k string) chan string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.answers[k] == nil {
		f.answers[k] = make(chan string, 1)
	}
	return f.answers[k]
}

func (f *fakeClient) Call(ctx context.Context, c ClientCall) (string, bool) {
	var args struct{ K string }
	_ = json.Unmarshal(c.Arguments, &args)
	f.mu.Lock()
	f.calls = append(f.calls, c)
	f.mu.Unlock()
	ch := f.answer(args.K)
	f.arrived <- c
	select {
	case s := <-ch:
		return s, false
	case <-ctx.Done():
		return "cancelled", true
	}
}

func (f *fakeClient) await(t *testing.T, n int) []string {
	t.Helper()
	var got []string
	for range n {
		select {
		case c := <-f.arrived:
			got = append(got, string(c.Arguments))
		case <-testDeadline(t):
			t.Fatalf("%d of %d client calls arrived", len(got), n)
		}
	}
	return got
}

func testDeadline(t *testing.T) <-chan struct{} {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	t.Cleanup(cancel)
	return ctx.Done()
}

const twoTickets = "/tool ticket {\"k\":\"a\"}\n/tool ticket {\"k\":\"b\"}\n/then\n/text ok"

// G1: the calls of one wave reach the client together, each as category
// client, and the answers, in whatever order they come, are their results.
func TestClientToolsConcurrent(t *testing.T) {
	eng := testEngine(t)
	f := newFakeClient()
	s := testSession(t, eng, func(o *Options) { o.Tools = nil; o.Client = f })
	rec := &recorder{}
	done := startPrompt(t, s, twoTickets, rec)
	got := f.await(t, 2) // both pending before either is answered
	if len(got) != 2 {
		t.Fatalf("arrived %v", got)
	}
	f.answer("b") <- "B"
	f.answer("a") <- "A"
	res := receive(t, done)
	if res.FinalOutput != "ok" || res.Tools.Calls != 2 || res.Tools.Failures != 0 {
		t.Errorf("result %q, tools %+v; want ok and two good calls", res.FinalOutput, res.Tools)
	}
	batch := ofType[ToolBatch](rec)
	var cats []string
	for _, c := range batch[0].Calls {
		cats = append(cats, c.Category)
	}
	if diff := cmp.Diff([]string{"client", "client"}, cats); diff != "" {
		t.Errorf("categories (-want +got):\n%s", diff)
	}
	contents := map[int]string{}
	for _, e := range ofType[ToolEnd](rec) {
		contents[e.ID] = e.Content
	}
	if diff := cmp.Diff(map[int]string{1: "A", 2: "B"}, contents); diff != "" {
		t.Errorf("tool_end contents (-want +got):\n%s", diff)
	}
	checkHistory(t, s)
}

// G2: an interrupt ends the pending calls: their context ends, they end
// interrupted, and the history stays valid.
func TestClientToolsInterrupt(t *testing.T) {
	eng := testEngine(t)
	f := newFakeClient()
	s := testSession(t, eng, func(o *Options) { o.Client = f })
	rec := &recorder{}
	done := startPrompt(t, s, twoTickets, rec)
	f.await(t, 2)
	s.Interrupt()
	res := receive(t, done)
	var outcomes []string
	for _, e := range ofType[ToolEnd](rec) {
		outcomes = append(outcomes, e.Outcome)
	}
	if diff := cmp.Diff([]string{"interrupted", "interrupted"}, outcomes); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	if !res.Aborted {
		t.Error("the turn was not aborted")
	}
	checkTurnEnd(t, rec, true)
	checkHistory(t, s)
}

// Without a client, a session offers no client tools: the model's call of
// one fails as not offered.
func TestClientToolsNotOffered(t *testing.T) {
	eng := testEngine(t)
	s := testSession(t, eng, nil)
	_, rec := prompt(t, s, "/tool ticket {}\n/then\n/text ok")
	ends := ofType[ToolEnd](rec)
	if len(ends) != 1 || ends[0].Outcome != "failed" {
		t.Errorf("tool_end %+v; want the call failed", ends)
	}
}

// The approval policy applies to client tools as to an extension's: under
// writes their calls ask first, and a rejected call never reaches the client.
func TestClientToolsApproval(t *testing.T) {
	eng := testEngine(t)
	a := &scripted{answers: []Decision{{Reason: "not now"}}}
	f := newFakeClient()
	s := testSession(t, eng, func(o *Options) { o.Approver = a; o.Client = f; o.Approval = Approval{Policy: ApproveWrites} })
	_, rec := prompt(t, s, "/tool ticket {\"k\":\"a\"}\n/then\n/text ok")
	if diff := cmp.Diff([]string{"ticket"}, a.names()); diff != "" {
		t.Errorf("asked (-want +got):\n%s", diff)
	}
	ends := ofType[ToolEnd](rec)
	if len(ends) != 1 || ends[0].Outcome != "denied" {
		t.Errorf("tool_end %+v; want denied", ends)
	}
	if len(f.calls) != 0 {
		t.Errorf("the client got %v; want no call", f.calls)
	}
}
