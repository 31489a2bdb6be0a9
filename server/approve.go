package server

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/e-agent/e/internal/agent"
	"github.com/e-agent/e/internal/extension"
)

// approveMethod is the ask method of e's own question before a tool call
// runs under an approval policy.
const approveMethod = "tool.approve"

// approver relays approval questions to the client as ask lines, numbered
// and answered (ask.reply) like extension asks.
type approver struct{ s *Server }

func (a approver) Approve(ctx context.Context, session string, c agent.Call, timeout time.Duration) agent.Decision {
	a.s.mu.Lock()
	ok := a.s.greeted && a.s.ask
	a.s.mu.Unlock()
	if !ok {
		return agent.Decision{Reason: "no client to ask: approvals need hello with ask:true"}
	}
	params, _ := json.Marshal(agent.ApproveParams{Call: c, TimeoutMS: timeout.Milliseconds()})
	res := a.s.relay.Send(ctx, extension.Ask{Session: session, Method: approveMethod, Params: params})
	var r agent.ApproveReply
	_ = json.Unmarshal(res, &r) // anything else is not an answer: the call is denied below
	switch {
	case r.Decision == "allow":
		return agent.Decision{Allow: true}
	case r.Decision == "allow_session":
		return agent.Decision{Allow: true, Always: true}
	case r.Decision == "reject":
		return agent.Decision{Reason: r.Reason}
	case r.Cancelled:
		return agent.Decision{Reason: "the client cancelled the question"}
	}
	return agent.Decision{Reason: fmt.Sprintf("the client's answer %s is not a decision allow, allow_session or reject", clip(res))}
}

// clip shortens an answer quoted in a reason.
func clip(b []byte) string {
	if len(b) > 80 {
		return string(b[:77]) + "..."
	}
	return string(b)
}
