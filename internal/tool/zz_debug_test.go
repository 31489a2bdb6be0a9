package tool

import (
	"context"
	"testing"
	"time"
)

func TestZZDebugCancel(t *testing.T) {
	var worst time.Duration
	for i := 0; i < 40; i++ {
		s := newSession(t)
		ctx, cancel := context.WithCancel(context.Background())
		_, wait := startBash(t, ctx, s, "(setsid sleep 1000 >/dev/null 2>&1 &); echo pid=$$; echo ready; sleep 1000")
		start := time.Now()
		cancel()
		wait()
		if d := time.Since(start); d > worst {
			worst = d
		}
	}
	t.Logf("worst %v", worst)
}
