package server

import (
	"context"
	"encoding/json"

	"github.com/e-agent/e/internal/extension"
	"github.com/e-agent/e/internal/model"
)

// ui is how extensions reach the client of e rpc (X2–X7).
type ui struct{ s *Server }

func (u ui) Ask(ctx context.Context, ext, method string, params json.RawMessage) (json.RawMessage, error) {
	u.s.mu.Lock()
	ok := u.s.hello && u.s.ask
	u.s.mu.Unlock()
	if !ok {
		return nil, extension.ErrNoUI // refused at once (X5)
	}
	return u.s.relay.Ask(ctx, ext, method, params)
}

// Notice writes a notice line after hello; before it, notices are held and
// delivered right after the hello response, up to heldNotices (X7).
func (u ui) Notice(n extension.Notice) {
	line := Notice{Type: "notice", Extension: n.Extension, Level: n.Level, Message: n.Message, Method: n.Method, Params: n.Params}
	u.s.mu.Lock()
	if !u.s.hello {
		if len(u.s.held) < heldNotices {
			u.s.held = append(u.s.held, line)
		}
		u.s.mu.Unlock()
		return
	}
	u.s.mu.Unlock()
	u.s.writeJSON(line)
}

// extHost adapts the extension host to the agent.
type extHost struct{ h *extension.Host }

func (e extHost) Tools() []model.ToolDef {
	var defs []model.ToolDef
	for _, t := range e.h.Tools() {
		defs = append(defs, model.ToolDef{Name: t.Name, Description: t.Description, Parameters: t.Parameters})
	}
	return defs
}

func (e extHost) CallTool(ctx context.Context, session, name string, args json.RawMessage) (string, bool) {
	return e.h.CallTool(ctx, session, name, args)
}

func (e extHost) Gate(ctx context.Context, session, name string, args json.RawMessage) (bool, string) {
	return e.h.Gate(ctx, session, name, args)
}

func (e extHost) Notify(event string, data any) { e.h.Notify(event, data) }
