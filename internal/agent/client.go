package agent

import (
	"context"
	"encoding/json"

	"github.com/e-agent/e/internal/model"
)

// ClientTools are the tools a session's client provides (e rpc's
// session.create client_tools, G1). The engine offers their definitions
// beside its own and runs their calls through Call; it knows nothing of
// how the call reaches the client.
type ClientTools interface {
	Defs() []model.ToolDef
	// Call runs one call and returns its result for the model. It returns
	// when the client answers or ctx ends (the turn was interrupted); calls
	// of one wave run concurrently.
	Call(ctx context.Context, c ClientCall) (content string, failed bool)
}

// ClientCall is one call of a client tool.
type ClientCall struct {
	Session   string
	ID        int // the call's id in tool_batch and tool_end
	Name      string
	Arguments json.RawMessage // as the model sent them
}

// CategoryClient is the category of a client tool's call in tool_batch.
const CategoryClient = "client"

// offerClient adds the client's tools to the turn's offer. They are offered
// whatever the session's built-in tools (tool_mode none included): the
// client asked for them by name.
func (t *turn) offerClient() {
	if t.s.client == nil {
		return
	}
	t.client = map[string]bool{}
	for _, d := range t.s.client.Defs() {
		if t.offered[d.Name] {
			continue // the session layer refuses a clash; a tool e gained since keeps its name
		}
		t.offered[d.Name] = true
		t.extension[d.Name] = true // its description is its guide
		t.client[d.Name] = true
		t.toolDefs = append(t.toolDefs, d)
	}
}

// clientCall returns how to run p when it calls a client tool, else nil.
func (t *turn) clientCall(p *pending) func() (string, bool) {
	if !t.client[p.part.Name] {
		return nil
	}
	return func() (string, bool) {
		return t.s.client.Call(t.ctx, ClientCall{Session: t.s.id, ID: p.call.ID, Name: p.part.Name, Arguments: p.part.Arguments})
	}
}

// Client returns the session's client tools (nil: none), for its forks.
func (s *Session) Client() ClientTools { return s.client }
