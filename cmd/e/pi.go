package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/e-agent/e/internal/pi"
)

// piMode reports whether args select pi's dialect: a --mode option before
// any "--" (pi's clients start `CLI --mode rpc …`).
func piMode(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if a == "--mode" || strings.HasPrefix(a, "--mode=") {
			return true
		}
	}
	return false
}

// runPi is e --mode rpc and e --mode json: pi's CLI surface over e's
// sessions (spec/pi.md).
func runPi(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	env, err := sessionEnv()
	if err != nil {
		fmt.Fprintf(stderr, "e: %v\n", err)
		return 1
	}
	return pi.Main(args, pi.Env{Stdin: stdin, Stdout: stdout, Stderr: stderr, Cwd: env.Cwd, Home: env.Home,
		Getenv: os.Getenv, Version: version})
}
