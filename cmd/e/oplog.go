package main

import (
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"

	"github.com/e-agent/e/internal/session"
)

// openLog opens the operator log of --log FILE, else of $E_LOG; with
// neither it returns nil and a no-op close. The file is appended to
// (created 0600: it names paths and models).
func (f *runFlags) openLog() (*slog.Logger, func(), error) {
	path := f.log
	if path == "" {
		path = os.Getenv("E_LOG")
	}
	if path == "" {
		return nil, func() {}, nil
	}
	file, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("--log: %w", err)
	}
	return slog.New(session.NewLogHandler(file, slog.LevelInfo)), func() { file.Close() }, nil
}

// sessionOptions is options() with the operator log opened; call done
// after the host has shut down.
func (f *runFlags) sessionOptions() (opts session.Options, done func(), err error) {
	b := f.budget
	switch {
	case b.MaxModelCalls < 0:
		return session.Options{}, nil, fmt.Errorf("--max-model-calls %d: want 1 or more", b.MaxModelCalls)
	case b.MaxTokens < 0:
		return session.Options{}, nil, fmt.Errorf("--max-tokens %d: want 1 or more", b.MaxTokens)
	case b.MaxCostUSD < 0 || math.IsNaN(b.MaxCostUSD) || math.IsInf(b.MaxCostUSD, 0):
		return session.Options{}, nil, fmt.Errorf("--max-cost-usd %g: want a number above 0", b.MaxCostUSD)
	case b.MaxDurationMS < 0:
		return session.Options{}, nil, fmt.Errorf("--max-duration-ms %d: want 1 or more", b.MaxDurationMS)
	}
	log, done, err := f.openLog()
	if err != nil {
		return session.Options{}, nil, err
	}
	opts = f.options()
	opts.Log, opts.LogContent = log, f.logContent
	return opts, done, nil
}

// startFailed tells the log, when there is one, why e did not start.
func startFailed(log *slog.Logger, stderr io.Writer, prefix string, err error) int {
	logStartFailure(log, err)
	fmt.Fprintf(stderr, "%s: %v\n", prefix, err)
	return 1
}

// logStartFailure records a start-up failure in the operator log, if any.
func logStartFailure(log *slog.Logger, err error) {
	if log != nil {
		log.Error("start failed", "error", err.Error())
	}
}
