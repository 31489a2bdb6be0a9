package main

import (
	"context"
	"fmt"
	"io"

	"github.com/e-agent/e/internal/startpages"
	"github.com/e-agent/e/server"
)

// runRPC is e rpc: the method protocol over stdin and stdout.
func runRPC(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var f runFlags
	fs := newFlagSet("rpc", stderr)
	f.register(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return usageError(stderr, err)
	}
	if f.help {
		fmt.Fprint(stdout, rpcHelp)
		return 0
	}
	if f.version {
		fmt.Fprintf(stdout, "e %s\n", version)
		return 0
	}
	if len(pos) > 0 {
		return usageError(stderr, fmt.Errorf("rpc takes no arguments, got %q", pos[0]))
	}
	env, err := sessionEnv()
	if err != nil {
		fmt.Fprintf(stderr, "e rpc: %v\n", err)
		return 1
	}
	opts, closeLog, err := f.sessionOptions()
	if err != nil {
		return usageError(stderr, err)
	}
	defer closeLog()
	defer startTracing(env.Getenv, stderr, "e rpc")()
	srv, err := server.New(context.Background(), opts, server.Env{Stdin: stdin, Stdout: stdout, Stderr: stderr,
		Cwd: env.Cwd, Home: env.Home, Getenv: env.Getenv})
	if err != nil {
		return startFailed(opts.Log, stderr, "e rpc", err)
	}
	// Start-up is over: the pages only it touched need not stay mapped
	// (beside the first request, which need not wait for it).
	go startpages.Release()
	return srv.Serve()
}
