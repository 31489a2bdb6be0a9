package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/e-agent/e/internal/agent"
	"github.com/e-agent/e/internal/model"
	"github.com/e-agent/e/schemas"
)

// ClientTool is a tool the client provides (e rpc's session.create
// client_tools, G1): the model sees it beside e's tools, and its calls go
// to the client through the front end's ToolClient.
type ClientTool struct {
	Name        string
	Description string
	Parameters  json.RawMessage // a JSON Schema of the arguments; empty: any object
}

// ToolClient is how a front end hands a client tool's call to its client
// (e rpc: a tool_call line answered by tool.result). CallTool blocks until
// the client answers or ctx ends; when ctx ends first it tells the client
// the call is cancelled (context.Cause(ctx) is ErrClientToolTimeout when
// the session's timeout ended it) and returns ctx's error.
type ToolClient interface {
	CallTool(ctx context.Context, c ToolCall) (content string, isError bool, err error)
}

// ToolCall is one call of a client tool, its arguments valid against the
// tool's parameters (G2).
type ToolCall struct {
	Session   string
	ID        int // the call's id in tool_batch and tool_end
	Name      string
	Arguments json.RawMessage
}

// ErrClientToolTimeout is the cause of a client tool call's context when
// the session's client tool timeout ended it.
var ErrClientToolTimeout = errors.New("client tool timeout")

// toolName is what providers accept as a function name (as for extension
// tools).
var toolName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// anyObject is the parameters of a client tool that gives none.
var anyObject = json.RawMessage(`{"type":"object","properties":{}}`)

// clientTools is a session's client tools as the engine runs them.
type clientTools struct {
	defs    []model.ToolDef
	schemas map[string]*schemas.UserSchema
	client  ToolClient
	timeout time.Duration // 0: none
}

// checkClientTools validates spec's client tools: names as providers
// accept them, unique, not e's or an extension's tool; parameters a JSON
// Schema object in the validator's keywords.
func (h *Host) checkClientTools(spec Spec) (*clientTools, error) {
	if len(spec.ClientTools) == 0 {
		return nil, nil
	}
	if spec.ToolClient == nil {
		return nil, paramErr(CodeInvalidParams, "client_tools", "this front end has no client to run tools")
	}
	if spec.ClientToolTimeout < 0 {
		return nil, paramErr(CodeInvalidParams, "client_tool_timeout_ms", "%v is negative", spec.ClientToolTimeout)
	}
	ct := &clientTools{schemas: map[string]*schemas.UserSchema{}, client: spec.ToolClient, timeout: spec.ClientToolTimeout}
	taken := h.toolNames()
	for i, t := range spec.ClientTools {
		param := fmt.Sprintf("client_tools[%d]", i)
		switch {
		case !toolName.MatchString(t.Name):
			return nil, paramErr(CodeInvalidParams, param+".name", "tool name %q must match %s", t.Name, toolName)
		case slices.Contains(taken, t.Name):
			return nil, paramErr(CodeInvalidParams, param+".name", "tool %q is already one of e's or an extension's tools", t.Name)
		case ct.schemas[t.Name] != nil:
			return nil, paramErr(CodeInvalidParams, param+".name", "tool %q is listed twice", t.Name)
		}
		params := t.Parameters
		if len(params) == 0 || string(params) == "null" {
			params = anyObject
		}
		c, err := schemas.CompileUser(params)
		if err != nil {
			return nil, paramErr(CodeInvalidParams, param+".parameters", "%v", err)
		}
		ct.schemas[t.Name] = c
		ct.defs = append(ct.defs, model.ToolDef{Name: t.Name, Description: t.Description, Parameters: params})
	}
	return ct, nil
}

func (c *clientTools) Defs() []model.ToolDef { return c.defs }

// Call checks the arguments, so that an invalid call fails back to the
// model without reaching the client (G2), then asks the client, within
// the session's timeout.
func (c *clientTools) Call(ctx context.Context, call agent.ClientCall) (string, bool) {
	args := call.Arguments
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	if err := c.schemas[call.Name].Validate(args); err != nil {
		return fmt.Sprintf("invalid arguments for %s: %v", call.Name, err), true
	}
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, c.timeout, ErrClientToolTimeout)
		defer cancel()
	}
	content, isError, err := c.client.CallTool(ctx, ToolCall{Session: call.Session, ID: call.ID, Name: call.Name, Arguments: args})
	switch {
	case err != nil && errors.Is(context.Cause(ctx), ErrClientToolTimeout):
		return fmt.Sprintf("%s timed out: the client gave no result within %d ms", call.Name, c.timeout.Milliseconds()), true
	case err != nil:
		return "interrupted before the client answered", true
	}
	return content, isError
}
