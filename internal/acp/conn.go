package acp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"

	"github.com/e-agent/e/internal/jsonl"
)

// Conn is one JSON-RPC 2.0 peer on a line stream: it writes responses and
// notifications, and sends requests of its own (session/request_permission)
// whose responses the reader hands back with deliver.
type Conn struct {
	out *jsonl.Writer

	mu      sync.Mutex
	next    int64
	pending map[string]chan message
}

func newConn(out *jsonl.Writer) *Conn {
	return &Conn{out: out, pending: map[string]chan message{}}
}

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
	c.mu.Lock()
	c.next++
	id := strconv.FormatInt(c.next, 10)
	ch := make(chan message, 1)
	c.pending[id] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
	}()
	c.write(outRequest{"2.0", json.RawMessage(id), method, params})
	select {
	case m := <-ch:
		if m.Error != nil {
			return nil, fmt.Errorf("%s: the client answered with error %d: %s", method, m.Error.Code, m.Error.Message)
		}
		return m.Result, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// deliver hands a response to the call waiting for it; a response nobody
// waits for (late, or never asked) is dropped.
func (c *Conn) deliver(m message) {
	id := string(bytes.TrimSpace(m.ID))
	c.mu.Lock()
	ch, ok := c.pending[id]
	delete(c.pending, id)
	c.mu.Unlock()
	if ok {
		ch <- m
	}
}

// cancelAll ends every call waiting for the client, which has gone.
func (c *Conn) cancelAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, ch := range c.pending {
		delete(c.pending, id)
		ch <- message{Error: &Error{Code: CodeInternal, Message: "the connection closed"}}
	}
}
