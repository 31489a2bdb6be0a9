package main

import (
	"context"
	"fmt"
	"io"

	"github.com/e-agent/e/internal/acp"
	"github.com/e-agent/e/internal/startpages"
)

// runACP is e acp: an Agent Client Protocol agent on stdin and stdout
// (spec/acp.md).
func runACP(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var f runFlags
	fs := newFlagSet("acp", stderr)
	f.register(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return usageError(stderr, err)
	}
	if f.help {
		fmt.Fprint(stdout, acpHelp)
		return 0
	}
	if f.version {
		fmt.Fprintf(stdout, "e %s\n", version)
		return 0
	}
	if len(pos) > 0 {
		return usageError(stderr, fmt.Errorf("acp takes no arguments, got %q", pos[0]))
	}
	env, err := sessionEnv()
	if err != nil {
		fmt.Fprintf(stderr, "e acp: %v\n", err)
		return 1
	}
	opts, closeLog, err := f.sessionOptions()
	if err != nil {
		return usageError(stderr, err)
	}
	defer closeLog()
	defer startTracing(env.Getenv, stderr, "e acp")()
	a, err := acp.New(context.Background(), opts, acp.Env{Env: env, Stdin: stdin, Stdout: stdout, Stderr: stderr})
	if err != nil {
		return startFailed(opts.Log, stderr, "e acp", err)
	}
	// Start-up is over: the pages only it touched need not stay mapped
	// (beside the first request, which need not wait for it).
	go startpages.Release()
	return a.Serve()
}
