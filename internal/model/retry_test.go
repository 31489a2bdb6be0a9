package model

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestBackoff(t *testing.T) {
	plain := &Error{Retryable: true}
	tests := []struct {
		name    string
		attempt int
		err     error
		want    time.Duration
	}{
		{name: "first retry", attempt: 1, err: plain, want: 500 * time.Millisecond},
		{name: "second retry", attempt: 2, err: plain, want: time.Second},
		{name: "fifth retry", attempt: 5, err: plain, want: 8 * time.Second},
		{name: "capped", attempt: 40, err: plain, want: 8 * time.Second},
		{name: "attempt zero", attempt: 0, err: plain, want: 500 * time.Millisecond},
		{name: "not a model error", attempt: 2, err: errors.New("x"), want: time.Second},
		{name: "retry-after honoured", attempt: 3, err: &Error{RetryAfter: time.Second, RetryAfterGiven: true}, want: time.Second},
		{name: "retry-after wrapped", attempt: 1, err: fmt.Errorf("agent: %w", &Error{RetryAfter: 3 * time.Second, RetryAfterGiven: true}), want: 3 * time.Second},
		{name: "retry-after capped", attempt: 1, err: &Error{RetryAfter: time.Hour, RetryAfterGiven: true}, want: 60 * time.Second},
		{name: "retry-after 0: at once", attempt: 3, err: &Error{RetryAfterGiven: true}, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Backoff(tt.attempt, tt.err); got != tt.want {
				t.Errorf("Backoff(%d) = %v, want %v", tt.attempt, got, tt.want)
			}
		})
	}
}
