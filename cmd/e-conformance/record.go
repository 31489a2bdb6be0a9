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
	out := fs.String("out", "", "case file to write, e.g. golden/new-case.txtar (its directory is made)")
	model := fs.String("model", "", "default model when there is no upstream (default e/offline)")
	upstream := fs.String("upstream", "", "OpenAI-compatible base URL that model calls are forwarded to; key from $E_RECORD_API_KEY")
	here := fs.Bool("here", false, "record in the current directory and $E_HOME as they are, model calls forwarded to the tape provider of $E_HOME/settings.json (to re-record a case with e-conformance record as its server)")
	noTrust := fs.Bool("no-trust", false, "do not run \"e trust CWD\" before the server starts")
	like := fs.String("like", "", "a case file whose description, header, fixtures and checks the recording takes")
	dialect := fs.String("dialect", "", "the protocol the server speaks: e-rpc, pi-rpc or acp (default: --like's, else the one the command names: e acp, e --mode rpc)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: e-conformance record --out FILE [--model M] [--upstream URL] [--here] [--no-trust] [--like CASE] [--dialect D] -- CMD ARGS")
		fs.PrintDefaults()
	}
	if !parseFlags(fs, args, stderr) {
		return 2
	}
	if *out == "" || fs.NArg() == 0 {
		fs.Usage()
		return 2
	}
	switch *dialect {
	case "", conformance.DialectERPC, conformance.DialectPi, conformance.DialectACP:
	default:
		fmt.Fprintf(stderr, "e-conformance record: --dialect %q: want %s, %s or %s\n", *dialect, conformance.DialectERPC, conformance.DialectPi, conformance.DialectACP)
		return 2
	}
	// The server starts in the recording's temp dir (or here, --here): a
	// relative program or path is the caller's.
	server, err := absCommand(fs.Args())
	if err != nil {
		fmt.Fprintln(stderr, "e-conformance record:", err)
		return 2
	}
	// SIGINT and SIGTERM are the server's: Record forwards them and ends
	// as the server does, so they must not cancel it.
	ps, err := conformance.Record(context.WithoutCancel(ctx), conformance.RecordOptions{
		Server: server, Out: *out, Model: *model, Upstream: *upstream, APIKey: os.Getenv("E_RECORD_API_KEY"),
		Stdin: stdin, Stdout: stdout, Stderr: stderr, Here: *here, NoTrust: *noTrust, Like: *like, Dialect: *dialect,
	})
	if err != nil {
		fmt.Fprintln(stderr, "e-conformance:", err)
		return 1
	}
	if *like == "" {
		fmt.Fprintf(stderr, "e-conformance: wrote %s; fill in its description, requirements and level\n", *out)
	}
	return conformance.ExitLike(ps) // the recorder ends as the server did
}
