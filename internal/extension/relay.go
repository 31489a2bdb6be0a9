package extension

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/e-agent/e/internal/lineserver"
)

// Ask is a relayed question (X2), or e's own question before a tool call
// runs (method tool.approve, with Session set and Extension empty). The
// front end writes it as its ask line (e rpc: schemas/lines/ask.json's
// generated protocol.AskLine).
type Ask struct {
	Ask       int64  // the number a reply names, unique in the process from 1
	Extension string // the asking extension
	Session   string // the session whose tool call waits
	Method    string
	Params    json.RawMessage // never empty: {} when the asker gave none
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

	calls lineserver.Calls[json.RawMessage]
}

// NewRelay returns a Relay that writes ask lines with emit. emit is called
// without locks held and must not block for long.
func NewRelay(emit func(Ask)) *Relay { return &Relay{emit: emit} }

// Ask emits a question and waits for its Reply. When ctx ends first the
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
	call := r.calls.Open()
	a.Ask = call.N
	r.emit(a)
	res, ok := call.Wait(ctx)
	if ok {
		return res
	}
	if r.Cancelled != nil {
		why := "" // nobody waits any more: the extension or the call
		if cause := context.Cause(ctx); !errors.Is(cause, context.Canceled) && !errors.Is(cause, context.DeadlineExceeded) {
			why = cause.Error()
		}
		r.Cancelled(a, why)
	}
	return cancelled
}

// Reply answers ask n (M15). A nil or null result cancels it: the extension
// gets {"cancelled":true} (X3).
func (r *Relay) Reply(n int64, result json.RawMessage) error {
	if len(result) == 0 || string(result) == "null" {
		result = cancelled
	}
	err := r.calls.Answer(n, result)
	switch {
	case errors.Is(err, lineserver.ErrUnknownCall):
		return fmt.Errorf("unknown ask %d", n)
	case err != nil:
		return fmt.Errorf("ask %d %w", n, err)
	}
	return nil
}

// CancelAll cancels every pending ask, for example when the client goes.
func (r *Relay) CancelAll() { r.calls.CancelAll(cancelled) }
