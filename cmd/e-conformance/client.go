package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/e-agent/e/conformance"
)

func init() {
	subcommands["client"] = clientCmd
	subcommands["client-relay"] = clientRelay
}

// clientCmd is e-conformance client --command "CLIENT ARGS" [scenario…]:
// the kit plays e rpc and judges a client (spec/conformance.md §6).
func clientCmd(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("e-conformance client", flag.ContinueOnError)
	fs.SetOutput(stderr)
	command := fs.String("command", "", `the client's command line, e.g. "python3 -m e_client.task"`)
	dir := fs.String("cases", "", "directory of *.json scenarios, added to (or replacing by id) the built-in ones")
	jobs := fs.Int("j", runtime.GOMAXPROCS(0), "scenarios run in parallel")
	jsonOut := fs.Bool("json", false, "print one JSON object per scenario instead of text")
	junit := fs.String("junit", "", "also write a JUnit XML report to this file")
	scale := fs.Float64("timeout-scale", 1, "multiply every timeout (slow machines)")
	list := fs.Bool("list", false, "list the scenarios and the client bugs each catches, and exit")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: e-conformance client --command \"CLIENT ARGS\" [flags] [scenario-glob …]\n")
		fs.PrintDefaults()
	}
	if !parseFlags(fs, args, stderr) {
		return 2
	}
	scenarios, err := conformance.LoadScenarios(*dir)
	if err == nil {
		scenarios, err = selectScenarios(scenarios, fs.Args())
	}
	if err != nil {
		fmt.Fprintln(stderr, "e-conformance client:", err)
		return 2
	}
	if *list {
		for _, s := range scenarios {
			fmt.Fprintf(stdout, "%-20s %s\n", s.ID, s.Catches)
		}
		return 0
	}
	argv, err := conformance.SplitCommand(*command)
	if err == nil && len(argv) == 0 {
		err = errors.New("--command is required")
	}
	if err != nil {
		fmt.Fprintln(stderr, "e-conformance client:", err)
		return 2
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(stderr, "e-conformance client:", err)
		return 2
	}
	opts := conformance.ClientOptions{Client: argv, Relay: []string{exe, "client-relay"}, TimeoutScale: *scale}
	results := make([]*conformance.Result, len(scenarios))
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, max(1, *jobs))
	for i, s := range scenarios {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			r := conformance.RunClient(ctx, s, opts)
			if r.Verdict != conformance.Pass {
				r.Repro = self() + " client --command " + shellQuote(*command) + casesFlag(*dir) + " " + shellQuote(s.ID)
			}
			results[i] = r
			if !*jsonOut {
				mu.Lock()
				r.Report(stdout)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if !writeReports("e-conformance client", results, stdout, stderr, *jsonOut, "", *junit) {
		return 2
	}
	t := tally(results, nil, "", stderr)
	counts, status := t.counts, t.status
	fmt.Fprintf(stderr, "e-conformance client: %d scenarios: %d passed, %d failed, %d errors\n",
		len(results), counts[conformance.Pass], counts[conformance.Fail], counts[conformance.Error])
	return status
}

func casesFlag(dir string) string {
	if dir == "" {
		return ""
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return " --cases " + shellQuote(dir)
}

// selectScenarios keeps the scenarios whose id matches one of the globs.
func selectScenarios(all []*conformance.Scenario, globs []string) ([]*conformance.Scenario, error) {
	if len(globs) == 0 {
		return all, nil
	}
	var out []*conformance.Scenario
	for _, s := range all {
		for _, g := range globs {
			ok, err := filepath.Match(strings.TrimSuffix(filepath.Base(g), ".json"), s.ID)
			if err != nil {
				return nil, fmt.Errorf("scenario glob %q: %w", g, err)
			}
			if ok {
				out = append(out, s)
				break
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no scenario matches %s", strings.Join(globs, " "))
	}
	return out, nil
}

// clientRelay is the server a client under test spawns (E_RPC): it pipes
// the client's lines to the kit's socket and back.
func clientRelay(_ context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) != 1 {
		fmt.Fprintln(stderr, "usage: e-conformance client-relay SOCKET (started by e-conformance client)")
		return 2
	}
	return conformance.Relay(args[0], stdin, stdout)
}
