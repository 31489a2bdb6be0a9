package server

import (
	"context"
	"encoding/json"
	"time"

	"github.com/e-agent/e/internal/agent"

	"github.com/e-agent/e/internal/session"
	"github.com/e-agent/e/protocol"
)

// ui is how extensions reach the client of e rpc (X2–X7).
type ui struct{ s *Server }

func (u ui) Ask(ctx context.Context, ext, method string, params json.RawMessage) (json.RawMessage, error) {
	u.s.mu.Lock()
	ok := u.s.greeted && u.s.ask
	u.s.mu.Unlock()
	if !ok {
		return nil, session.ErrNoUI // refused at once (X5)
	}
	return u.s.relay.Ask(ctx, ext, method, params)
}

// Approve asks the client before a tool call runs (tool.approve asks).
func (u ui) Approve(ctx context.Context, session string, c agent.Call, timeout time.Duration) agent.Decision {
	return approver(u).Approve(ctx, session, c, timeout)
}

// Notice writes a notice line after hello; before it, notices are held and
// delivered right after the hello response, up to heldNotices (X7).
func (u ui) Notice(n session.Notice) {
	line := protocol.NoticeLine{Type: "notice", Extension: n.Extension, Level: n.Level, Message: n.Message, Method: n.Method, Params: n.Params}
	u.s.mu.Lock()
	if !u.s.greeted {
		if len(u.s.held) < heldNotices {
			u.s.held = append(u.s.held, line)
		}
		u.s.mu.Unlock()
		return
	}
	u.s.mu.Unlock()
	u.s.writeJSON(line)
}
