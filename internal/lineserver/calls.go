package lineserver

import (
	"context"
	"errors"
	"sync"
)

// Calls is a connection's book of the calls it makes to its client and
// waits on: asks and approvals, client tools, ACP requests, pi's extension
// dialogs. Each is numbered from 1, waits for its answer or its context,
// and is remembered once it ended, so that a late answer is told whether
// the call was answered already or cancelled. An answer that races a
// cancel is decided once, under one lock: the waiter gets the answer or
// the answer is refused, never both or neither. The zero value is ready
// to use.
type Calls[A any] struct {
	mu      sync.Mutex
	last    int64
	pending map[int64]chan A
	ended   map[int64]bool // true: answered, false: cancelled
}

// The errors of Answer, to wrap with the call's name.
var (
	ErrUnknownCall = errors.New("no such call was made")
	ErrAnswered    = errors.New("was already answered")
	ErrCancelled   = errors.New("was cancelled")
)

// Call is one call of a Calls: its number, for the line that makes it.
type Call[A any] struct {
	N  int64
	ch chan A
	c  *Calls[A]
}

// Open numbers a new call, pending until its Wait or CancelAll ends it.
// The caller writes the call's line after Open, so an answer cannot come
// before the call is known.
func (c *Calls[A]) Open() *Call[A] {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pending == nil {
		c.pending, c.ended = map[int64]chan A{}, map[int64]bool{}
	}
	c.last++
	k := &Call[A]{N: c.last, ch: make(chan A, 1), c: c}
	c.pending[k.N] = k.ch
	return k
}

// Wait waits for the call's answer. When ctx ends first the call is
// cancelled (a later Answer gets ErrCancelled) and ok is false, unless the
// answer came meanwhile.
func (k *Call[A]) Wait(ctx context.Context) (a A, ok bool) {
	select {
	case a = <-k.ch:
		return a, true
	case <-ctx.Done():
	}
	c := k.c
	c.mu.Lock()
	if _, waiting := c.pending[k.N]; !waiting {
		c.mu.Unlock()
		return <-k.ch, true // the answer won the race
	}
	delete(c.pending, k.N)
	c.ended[k.N] = false
	c.mu.Unlock()
	return a, false
}

// Answer hands a to call n's Wait. It fails with ErrUnknownCall,
// ErrAnswered or ErrCancelled when n is not waiting.
func (c *Calls[A]) Answer(n int64, a A) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch, ok := c.pending[n]
	if !ok {
		answered, ended := c.ended[n]
		switch {
		case !ended:
			return ErrUnknownCall
		case answered:
			return ErrAnswered
		}
		return ErrCancelled
	}
	delete(c.pending, n)
	c.ended[n] = true
	ch <- a
	return nil
}

// CancelAll answers every pending call with a, for a client that went
// away: their later answers get ErrCancelled.
func (c *Calls[A]) CancelAll(a A) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for n, ch := range c.pending {
		delete(c.pending, n)
		c.ended[n] = false
		ch <- a
	}
}
