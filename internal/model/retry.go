package model

import (
	"errors"
	"time"
)

// Backoff bounds.
const (
	backoffBase     = 500 * time.Millisecond
	backoffMax      = 8 * time.Second
	retryAfterLimit = 60 * time.Second
)

// Backoff returns how long to wait before retry number attempt (1 for the
// first retry) of a call that failed with err. A provider's retry-after is
// honoured up to 60 s; otherwise the wait doubles from 500 ms up to 8 s.
// It has no jitter: e makes one call at a time per session, and tests and
// clients can predict the retry events.
func Backoff(attempt int, err error) time.Duration {
	var me *Error
	if errors.As(err, &me) && me.RetryAfterGiven {
		return min(me.RetryAfter, retryAfterLimit)
	}
	d := backoffBase
	for i := 1; i < attempt && d < backoffMax; i++ {
		d *= 2
	}
	return min(d, backoffMax)
}
