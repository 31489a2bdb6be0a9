// Command ebench drives the benchmarks of bench/ that need whole
// processes: e rpc against the floor of pre-encoded lines (events), e rpc
// against a loopback provider mock (provider), the time from a provider's
// first delta to e's first text event beside a minimal SSE client
// (first), e --mode rpc beside real pi (pi), and e beside its peers
// (peers). The scripts in bench/ run it.
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: ebench events|floor|provider|first|sse-floor|pi|peers|mock [flags]")
		os.Exit(2)
	}
	cmd, args := os.Args[1], os.Args[2:]
	fs := flag.NewFlagSet("ebench "+cmd, flag.ExitOnError)
	var err error
	switch cmd {
	case "events":
		err = events(fs, args)
	case "floor":
		err = floor(fs, args)
	case "provider":
		err = provider(fs, args)
	case "first":
		err = first(fs, args)
	case "sse-floor":
		err = sseFloor(fs, args)
	case "mock":
		err = mock(fs, args)
	case "peers":
		err = peers(fs, args)
	case "pi":
		err = piSideBySide(fs, args)
	default:
		fmt.Fprintf(os.Stderr, "ebench: unknown command %q\n", cmd)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "ebench %s: %v\n", cmd, err)
		os.Exit(1)
	}
}
