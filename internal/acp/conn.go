package acp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/e-agent/e/internal/jsonl"
	"github.com/e-agent/e/internal/lineserver"
)

// Conn is one JSON-RPC 2.0 peer on a line stream: it writes responses and
// notifications, and sends requests of its own (session/request_permission)
// whose responses the reader hands back with deliver.
type Conn struct {
	out   *jsonl.Writer
	calls lineserver.Calls[message]
}

func newConn(out *jsonl.Writer) *Conn { return &Conn{out: out} }

func (c *Conn) write(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("acp: marshal %T: %v", v, err)) // e's own types always marshal
	}
	// Background: the writer drains even after a failure, so this cannot block forever.
	_ = c.out.Write(context.Background(), b)
}

// reply writes the one response of the request id.
func (c *Conn) reply(id json.RawMessage, result any, err *Error) {
	if id == nil {
		id = json.RawMessage("null")
	}
	if err != nil {
		c.write(errorReply{"2.0", id, err})
		return
	}
	if result == nil {
		result = struct{}{}
	}
	c.write(resultReply{"2.0", id, result})
}

// notify writes a notification.
func (c *Conn) notify(method string, params any) {
	c.write(outNotification{"2.0", method, params})
}

// call sends a request to the client and waits for its response or ctx.
func (c *Conn) call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	call := c.calls.Open()
	c.write(outRequest{"2.0", json.RawMessage(strconv.FormatInt(call.N, 10)), method, params})
	m, ok := call.Wait(ctx)
	switch {
	case !ok:
		return nil, ctx.Err()
	case m.Error != nil:
		return nil, fmt.Errorf("%s: the client answered with error %d: %s", method, m.Error.Code, m.Error.Message)
	}
	return m.Result, nil
}

// deliver hands a response to the call waiting for it; a response nobody
// waits for (late, or never asked) is dropped.
func (c *Conn) deliver(m message) {
	if n, err := strconv.ParseInt(string(bytes.TrimSpace(m.ID)), 10, 64); err == nil {
		_ = c.calls.Answer(n, m)
	}
}

// cancelAll ends every call waiting for the client, which has gone.
func (c *Conn) cancelAll() {
	c.calls.CancelAll(message{Error: &Error{Code: CodeInternal, Message: "the connection closed"}})
}
