package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/e-agent/e/internal/lineserver"
	"github.com/e-agent/e/internal/session"
	"github.com/e-agent/e/protocol"
)

// Tools the client provides (G1, G2): session.create's client_tools are
// offered to the model; each call goes out as a tool_call line, numbered
// in the process like asks, and comes back as tool.result.

// clientCalls is the server's book of client tool calls: the pending ones
// and those that ended, so a late tool.result is told which it is.
type clientCalls struct {
	s     *Server
	calls lineserver.Calls[toolAnswer]
}

type toolAnswer struct {
	content string
	isError bool
}

// requestKey carries the id of the session.prompt whose turn runs, for the
// request field of its tool_call lines.
type requestKey struct{}

func withRequest(ctx context.Context, id json.RawMessage) context.Context {
	return context.WithValue(ctx, requestKey{}, id)
}

// clientTools adds session.create's client tools to spec; they need a
// client that answers questions: hello with ask:true, as asks do (X5).
func (s *Server) clientTools(r *request, p protocol.SessionCreateParams, spec *session.Spec) error {
	if p.ClientTools == nil || len(*p.ClientTools) == 0 {
		return nil
	}
	if !r.asks {
		return &session.Error{Code: session.CodeInvalidParams, Param: "client_tools",
			Err: errors.New("client tools need hello with ask:true first, as asks do")}
	}
	for _, t := range *p.ClientTools {
		ct := session.ClientTool{Name: t.Name, Parameters: t.Parameters}
		if t.Description != nil {
			ct.Description = *t.Description
		}
		spec.ClientTools = append(spec.ClientTools, ct)
	}
	spec.ToolClient = &s.calls
	if d := millis(p.ClientToolTimeoutMS); d != nil {
		spec.ClientToolTimeout = *d
	}
	return nil
}

// CallTool writes the tool_call line and waits for its tool.result; when
// ctx ends first the client gets a tool_call_cancelled line.
func (c *clientCalls) CallTool(ctx context.Context, tc session.ToolCall) (string, bool, error) {
	call := c.calls.Open()
	req, _ := ctx.Value(requestKey{}).(json.RawMessage)
	c.s.writeJSON(protocol.ToolCallLine{Type: "tool_call", Call: call.N, Session: protocol.SessionID(tc.Session), Request: req,
		ID: int64(tc.ID), Name: tc.Name, Arguments: tc.Arguments})
	if a, ok := call.Wait(ctx); ok {
		return a.content, a.isError, nil
	}
	reason := protocol.ToolCallCancelledLineReasonInterrupted
	if errors.Is(context.Cause(ctx), session.ErrClientToolTimeout) {
		reason = protocol.ToolCallCancelledLineReasonTimeout
	}
	c.s.writeJSON(protocol.ToolCallCancelledLine{Type: "tool_call_cancelled", Call: call.N, Session: protocol.SessionID(tc.Session), Reason: reason})
	return "", false, ctx.Err()
}

// answer routes a tool.result to its pending call.
func (c *clientCalls) answer(n int64, a toolAnswer) error {
	err := c.calls.Answer(n, a)
	switch {
	case errors.Is(err, lineserver.ErrUnknownCall):
		return fmt.Errorf("no tool call %d was made", n)
	case errors.Is(err, lineserver.ErrAnswered):
		return fmt.Errorf("call %d was already answered", n)
	case err != nil:
		return fmt.Errorf("call %d was already cancelled", n)
	}
	return nil
}

func (s *Server) toolResult(r *request, p protocol.ToolResultParams) (any, error) {
	if err := s.calls.answer(p.Call, toolAnswer{content: p.Content, isError: p.IsError != nil && *p.IsError}); err != nil {
		return nil, &session.Error{Code: session.CodeUnknownCall, Param: "call", Err: err}
	}
	return protocol.ToolResultResult{}, nil
}
