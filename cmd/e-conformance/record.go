package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/e-agent/e/conformance"
)

// record proxies this process's stdin/stdout to a fresh server and writes
// the session as a draft case.
func record(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("e-conformance record", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "", "case file to write, e.g. golden/new-case.txtar")
	model := fs.String("model", "", "default model when there is no upstream (default e/offline)")
	upstream := fs.String("upstream", "", "OpenAI-compatible base URL that model calls are forwarded to; key from $E_RECORD_API_KEY")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: e-conformance record --out FILE [--model M] [--upstream URL] -- CMD ARGS")
		fs.PrintDefaults()
	}
	if !parseFlags(fs, args, stderr) {
		return 2
	}
	if *out == "" || fs.NArg() == 0 {
		fs.Usage()
		return 2
	}
	err := conformance.Record(ctx, conformance.RecordOptions{
		Server: fs.Args(), Out: *out, Model: *model, Upstream: *upstream, APIKey: os.Getenv("E_RECORD_API_KEY"),
		Stdin: stdin, Stdout: stdout, Stderr: stderr,
	})
	if err != nil {
		fmt.Fprintln(stderr, "e-conformance:", err)
		return 1
	}
	fmt.Fprintf(stderr, "e-conformance: wrote %s; fill in its description, requirements and level\n", *out)
	return 0
}
