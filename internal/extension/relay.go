package extension

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
)

// Ask is the line e rpc writes for a relayed question (X2), or for e's own
// question before a tool call runs (method tool.approve, with Session set
// and Extension empty).
type Ask struct {
	Type      string          `json:"type"` // "ask"
	Ask       int64           `json:"ask"`
	Extension string          `json:"extension,omitempty"`
	Session   string          `json:"session,omitempty"`
	Method    string          `json:"method"`
	Params    json.RawMessage `json:"params"`
}

// cancelled is what an extension gets for a question nobody answered (X3).
var cancelled = json.RawMessage(`{"cancelled":true}`)

// Relay keeps the server's book of asks (X2–X4): numbers unique in the
// process from 1, the asks still pending, and the replies.
type Relay struct {
	emit func(Ask)
	// Cancelled, when set, is told of each ask that ended without a reply
	// because its extension stopped waiting (timeout, crash, interrupted
	// call), so the client can close the question it shows; why is the
	// reason when one is known (the cause of the asker's context), else "".
	Cancelled func(a Ask, why string)

	mu      sync.Mutex
	last    int64
	pending map[int64]chan json.RawMessage
	closed  map[int64]bool // finished asks: true answered, false cancelled
}

// NewRelay returns a Relay that writes ask lines with emit. emit is called
// without locks held and must not block for long.
func NewRelay(emit func(Ask)) *Relay {
	return &Relay{emit: emit, pending: make(map[int64]chan json.RawMessage), closed: make(map[int64]bool)}
}

// Ask emits an ask line and waits for its Reply. When ctx ends first the
// ask is cancelled and the result is {"cancelled":true}.
func (r *Relay) Ask(ctx context.Context, ext, method string, params json.RawMessage) (json.RawMessage, error) {
	return r.Send(ctx, Ask{Extension: ext, Method: method, Params: params}), nil
}

// Send numbers a and emits it, then waits as Ask does.
func (r *Relay) Send(ctx context.Context, a Ask) json.RawMessage {
	if ctx.Err() != nil {
		return cancelled
	}
	if len(a.Params) == 0 {
		a.Params = json.RawMessage(`{}`)
	}
	ch := make(chan json.RawMessage, 1)
	r.mu.Lock()
	r.last++
	n := r.last
	r.pending[n] = ch
	r.mu.Unlock()

	a.Type, a.Ask = "ask", n
	r.emit(a)
	select {
	case res := <-ch:
		return res
	case <-ctx.Done():
		r.mu.Lock()
		if _, ok := r.pending[n]; !ok {
			r.mu.Unlock()
			return <-ch // the reply won the race
		}
		delete(r.pending, n)
		r.closed[n] = false
		r.mu.Unlock()
		if r.Cancelled != nil {
			why := "" // nobody waits any more: the extension or the call
			if cause := context.Cause(ctx); !errors.Is(cause, context.Canceled) && !errors.Is(cause, context.DeadlineExceeded) {
				why = cause.Error()
			}
			r.Cancelled(a, why)
		}
		return cancelled
	}
}

// Reply answers ask n (M15). A nil or null result cancels it: the extension
// gets {"cancelled":true} (X3).
func (r *Relay) Reply(n int64, result json.RawMessage) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	ch, ok := r.pending[n]
	if !ok {
		answered, finished := r.closed[n]
		switch {
		case !finished:
			return fmt.Errorf("unknown ask %d", n)
		case answered:
			return fmt.Errorf("ask %d was already answered", n)
		default:
			return fmt.Errorf("ask %d was cancelled", n)
		}
	}
	if len(result) == 0 || string(result) == "null" {
		result = cancelled
	}
	delete(r.pending, n)
	r.closed[n] = true
	ch <- result
	return nil
}

// CancelAll cancels every pending ask, for example when the client goes.
func (r *Relay) CancelAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for n, ch := range r.pending {
		delete(r.pending, n)
		r.closed[n] = false
		ch <- cancelled
	}
}
