package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/e-agent/e/internal/trace"
)

// startTracing sets up OpenTelemetry traces when the OTEL_* variables ask
// for them (internal/trace; otherwise nothing is initialised), and returns
// what flushes them before e exits. A configuration e cannot use is a
// warning on stderr, never a failure: traces are the operator's, the turn
// the user's.
func startTracing(getenv func(string) string, stderr io.Writer, cmd string) func() {
	shutdown, err := trace.Setup(getenv, version)
	if err != nil {
		fmt.Fprintf(stderr, "%s: warning: traces are off: %v\n", cmd, err)
		return func() {}
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := shutdown(ctx); err != nil {
			fmt.Fprintf(stderr, "%s: warning: traces: %v\n", cmd, err)
		}
	}
}
