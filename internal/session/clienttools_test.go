package session

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/e-agent/e/internal/agent"
)

// toolClient answers every call with answer, or, when answer is "", waits
// for the call's context and reports its cause.
type toolClient struct {
	answer string
	mu     sync.Mutex
	calls  []ToolCall
	causes []error
}

func (c *toolClient) CallTool(ctx context.Context, tc ToolCall) (string, bool, error) {
	c.mu.Lock()
	c.calls = append(c.calls, tc)
	c.mu.Unlock()
	if c.answer != "" {
		return c.answer, false, nil
	}
	<-ctx.Done()
	c.mu.Lock()
	c.causes = append(c.causes, context.Cause(ctx))
	c.mu.Unlock()
	return "", false, ctx.Err()
}

var ticketParams = json.RawMessage(`{"type":"object","properties":{"id":{"type":"integer"}},"required":["id"]}`)

// G1: client tools are checked at create: names, clashes with e's tools,
// duplicates, their schemas, and a front end that can run them.
func TestClientToolsCreate(t *testing.T) {
	h := startHost(t, Options{})
	c := &toolClient{answer: "ok"}
	for _, tc := range []struct {
		name  string
		tools []ClientTool
		cli   ToolClient
		param string // of the invalid_params error; "" when the create succeeds
	}{
		{name: "valid", tools: []ClientTool{{Name: "ticket", Parameters: ticketParams}, {Name: "post"}}, cli: c},
		{name: "no client", tools: []ClientTool{{Name: "ticket"}}, param: "client_tools"},
		{name: "bad name", tools: []ClientTool{{Name: "a b"}}, cli: c, param: "client_tools[0].name"},
		{name: "built-in", tools: []ClientTool{{Name: "post"}, {Name: "bash"}}, cli: c, param: "client_tools[1].name"},
		{name: "twice", tools: []ClientTool{{Name: "post"}, {Name: "post"}}, cli: c, param: "client_tools[1].name"},
		{name: "unsupported keyword", tools: []ClientTool{{Name: "post", Parameters: json.RawMessage(`{"if":{}}`)}}, cli: c,
			param: "client_tools[0].parameters"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := h.Create(context.Background(), Spec{ClientTools: tc.tools, ToolClient: tc.cli})
			if tc.param == "" {
				if err != nil {
					t.Fatal(err)
				}
				s.Close(context.Background())
				return
			}
			var se *Error
			if !errors.As(err, &se) || se.Code != CodeInvalidParams || se.Param != tc.param {
				t.Fatalf("Create: %v; want invalid_params naming %s", err, tc.param)
			}
		})
	}
}

// runTickets runs a turn that calls ticket with args, then answers "ok".
func runTickets(t *testing.T, spec Spec, args string) (agent.Result, []agent.ToolEnd) {
	t.Helper()
	h := startHost(t, Options{})
	s := create(t, h, spec)
	var mu sync.Mutex
	var ends []agent.ToolEnd
	turn, err := s.Prompt(context.Background(), "/tool ticket "+args+"\n/then\n/text ok", nil, func(ev agent.Event) {
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
	return turn.Result(), ends
}

// G2: a call whose arguments break the tool's schema never reaches the
// client; the model reads why, and the turn goes on.
func TestClientToolsInvalidArguments(t *testing.T) {
	c := &toolClient{answer: "found"}
	spec := Spec{ClientTools: []ClientTool{{Name: "ticket", Parameters: ticketParams}}, ToolClient: c}
	res, ends := runTickets(t, spec, `{"id":"seven"}`)
	if len(c.calls) != 0 {
		t.Errorf("the client got %v; want no call", c.calls)
	}
	if len(ends) != 1 || ends[0].Outcome != "failed" || !strings.Contains(ends[0].Content, "id: expected integer") {
		t.Errorf("tool_end %+v; want failed naming id", ends)
	}
	if res.FinalOutput != "ok" {
		t.Errorf("final output %q; want the turn to go on", res.FinalOutput)
	}

	res, ends = runTickets(t, spec, `{"id":7}`)
	if diff := cmp.Diff([]ToolCall{{Session: *res.Session, ID: 1, Name: "ticket", Arguments: json.RawMessage(`{"id":7}`)}}, c.calls); diff != "" {
		t.Errorf("client calls (-want +got):\n%s", diff)
	}
	if len(ends) != 1 || ends[0].Outcome != "completed" || ends[0].Content != "found" {
		t.Errorf("tool_end %+v; want completed with the client's answer", ends)
	}
}

// G2: a call the client does not answer within the session's timeout ends
// with ErrClientToolTimeout as its context's cause; the model reads that it
// timed out and the turn goes on.
func TestClientToolsTimeout(t *testing.T) {
	c := &toolClient{}
	spec := Spec{ClientTools: []ClientTool{{Name: "ticket"}}, ToolClient: c, ClientToolTimeout: time.Millisecond}
	res, ends := runTickets(t, spec, `{}`)
	if len(c.causes) != 1 || !errors.Is(c.causes[0], ErrClientToolTimeout) {
		t.Errorf("causes %v; want the timeout", c.causes)
	}
	if len(ends) != 1 || ends[0].Outcome != "failed" || !strings.Contains(ends[0].Content, "ticket timed out") {
		t.Errorf("tool_end %+v; want failed, timed out", ends)
	}
	if res.FinalOutput != "ok" || res.Aborted {
		t.Errorf("final output %q, aborted %v; want the turn to go on", res.FinalOutput, res.Aborted)
	}
}
