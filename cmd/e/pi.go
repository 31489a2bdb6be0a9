package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
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

// argsOf is the arguments of command line argv: e run under the name
// prime-agent (a link to it, as a prime-agent client launches its agent)
// speaks prime-agent's flavour of pi's dialect, as --flavor prime selects
// it; a --flavor given wins, being later.
func argsOf(argv []string) []string {
	if len(argv) == 0 {
		return nil
	}
	name := strings.TrimSuffix(filepath.Base(argv[0]), ".exe")
	if name == "prime-agent" && piMode(argv[1:]) {
		return append([]string{"--flavor", "prime"}, argv[1:]...)
	}
	return argv[1:]
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
