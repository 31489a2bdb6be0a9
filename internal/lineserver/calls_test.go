package lineserver

import (
	"context"
	"errors"
	"sync"
	"testing"
)

// M15, X3, G2: a call ends once, answered or cancelled, and a late answer
// is told which.
func TestCalls(t *testing.T) {
	tests := []struct {
		name     string
		cancel   bool // the waiter's context ends before the answer
		all      bool // CancelAll instead of an answer
		wantOK   bool
		wantGot  string
		wantLate error // a second answer's error
	}{
		{name: "answered", wantOK: true, wantGot: "yes", wantLate: ErrAnswered},
		{name: "cancelled by the waiter", cancel: true, wantLate: ErrCancelled},
		{name: "cancelled by CancelAll", all: true, wantOK: true, wantGot: "gone", wantLate: ErrCancelled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c Calls[string]
			k := c.Open()
			if k.N != 1 {
				t.Errorf("first call numbered %d, want 1", k.N)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			switch {
			case tt.cancel:
				cancel()
			case tt.all:
				c.CancelAll("gone")
			default:
				if err := c.Answer(k.N, "yes"); err != nil {
					t.Fatalf("Answer: %v", err)
				}
			}
			got, ok := k.Wait(ctx)
			if ok != tt.wantOK || got != tt.wantGot {
				t.Errorf("Wait = %q, %v; want %q, %v", got, ok, tt.wantGot, tt.wantOK)
			}
			if err := c.Answer(k.N, "late"); !errors.Is(err, tt.wantLate) {
				t.Errorf("late Answer: %v, want %v", err, tt.wantLate)
			}
		})
	}
	var c Calls[string]
	if err := c.Answer(7, "x"); !errors.Is(err, ErrUnknownCall) {
		t.Errorf("Answer of a call never made: %v, want %v", err, ErrUnknownCall)
	}
}

// An answer racing the waiter's cancel: either the waiter gets it and the
// answer is taken, or the waiter is cancelled and the answer refused.
func TestCallsRace(t *testing.T) {
	var c Calls[int]
	for range 200 {
		k := c.Open()
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		var answerErr error
		wg.Go(func() { answerErr = c.Answer(k.N, 1) })
		wg.Go(cancel)
		got, ok := k.Wait(ctx)
		wg.Wait()
		if ok != (answerErr == nil) || ok && got != 1 {
			t.Fatalf("call %d: Wait = %d, %v; Answer: %v", k.N, got, ok, answerErr)
		}
		cancel()
	}
}
