// Command e-conformance runs the golden conformance cases against any
// implementation of e rpc, records new cases, and reports which
// requirements the cases cover.
//
//	e-conformance [flags] [case-glob …]          run cases (all by default)
//	e-conformance record --out FILE -- CMD ARGS  record a client session as a case
//	e-conformance coverage [--cases DIR]         requirements and the cases citing them
//
// Print cases run e -p: their command is --server with its trailing "rpc"
// replaced by the case's args; a server command not ending in rpc skips
// them (spec/conformance.md §1.3).
//
// Exit status: 0 every case passed (or failed as listed in --known-failing);
// 1 a case failed, or a known-failing case passed; 2 a usage problem, a
// broken case, or a case the runner could not judge (ERROR).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"

	"github.com/e-agent/e/conformance"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if len(args) > 0 {
		switch args[0] {
		case "record":
			return record(ctx, args[1:], stdin, stdout, stderr)
		case "coverage":
			return coverage(args[1:], stdout, stderr)
		}
	}
	return runCases(ctx, args, stdout, stderr)
}

func runCases(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("e-conformance", flag.ContinueOnError)
	fs.SetOutput(stderr)
	server := fs.String("server", "", `server command, e.g. "e rpc" (default: e next to this binary, or on PATH, with rpc)`)
	dir := fs.String("cases", "golden", "directory of *.txtar cases")
	jobs := fs.Int("j", runtime.GOMAXPROCS(0), "cases run in parallel")
	jsonOut := fs.Bool("json", false, "print one JSON object per case instead of text")
	junit := fs.String("junit", "", "also write a JUnit XML report to this file")
	known := fs.String("known-failing", "", "file of case ids expected to fail; such a case passing fails the run")
	scale := fs.Float64("timeout-scale", 1, "multiply every case's timeout (slow machines, -race builds)")
	levels := fs.String("level", "MUST,SHOULD,MAY", "levels to run; others are skipped")
	strict := fs.Bool("strict", false, "fail fields and event types no schema describes (default: additive, reported as notes)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: e-conformance [flags] [case-glob …]\n       e-conformance record --out FILE -- CMD ARGS\n       e-conformance coverage [--cases DIR]\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	argv, err := serverCommand(*server)
	if err != nil {
		fmt.Fprintln(stderr, "e-conformance:", err)
		return 2
	}
	cases, err := conformance.LoadDir(*dir)
	if err != nil {
		fmt.Fprintln(stderr, "e-conformance:", err)
		return 2
	}
	cases, err = selectCases(cases, fs.Args())
	if err != nil {
		fmt.Fprintln(stderr, "e-conformance:", err)
		return 2
	}
	knownFailing := map[string]bool{}
	if *known != "" {
		if knownFailing, err = conformance.ReadKnownFailing(*known); err != nil {
			fmt.Fprintln(stderr, "e-conformance:", err)
			return 2
		}
	}
	wantLevel := map[string]bool{}
	for _, l := range strings.Split(*levels, ",") {
		wantLevel[strings.ToUpper(strings.TrimSpace(l))] = true
	}
	opts := conformance.Options{Server: argv, TimeoutScale: *scale, Validator: conformance.SchemaValidator{Strict: *strict}}

	results := make([]*conformance.Result, len(cases))
	var mu sync.Mutex // serialises printing
	var wg sync.WaitGroup
	sem := make(chan struct{}, max(1, *jobs))
	for i, c := range cases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			var r *conformance.Result
			if !wantLevel[c.Level] {
				r = &conformance.Result{ID: c.ID, File: c.File, Level: c.Level, Requirements: c.Requirements, Verdict: conformance.Skip,
					Divergence: &conformance.Divergence{Step: "case", Message: "level " + c.Level + " not selected"}}
			} else {
				r = conformance.Run(ctx, c, opts)
			}
			if r.Verdict == conformance.Fail || r.Verdict == conformance.Error {
				r.Repro = repro(*server, *dir, c.ID)
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

	if *jsonOut {
		if err := conformance.WriteJSON(stdout, results); err != nil {
			fmt.Fprintln(stderr, "e-conformance:", err)
			return 2
		}
	}
	if *junit != "" {
		if err := writeJUnit(*junit, results); err != nil {
			fmt.Fprintln(stderr, "e-conformance:", err)
			return 2
		}
	}
	counts := map[conformance.Verdict]int{}
	status, unexpectedPass, expectedFail := 0, 0, 0
	for _, r := range results {
		counts[r.Verdict]++
		switch {
		case knownFailing[r.ID] && r.Verdict == conformance.Pass:
			unexpectedPass++
			fmt.Fprintf(stderr, "e-conformance: %s is listed in %s but passes: remove it from the list\n", r.ID, *known)
			status = max(status, 1)
		case knownFailing[r.ID] && r.Verdict == conformance.Fail:
			expectedFail++
		case r.Verdict == conformance.Fail:
			status = max(status, 1)
		case r.Verdict == conformance.Error:
			status = 2
		}
	}
	fmt.Fprintf(stderr, "e-conformance: %d cases: %d passed, %d failed (%d known), %d errors, %d skipped",
		len(results), counts[conformance.Pass], counts[conformance.Fail], expectedFail, counts[conformance.Error], counts[conformance.Skip])
	if unexpectedPass > 0 {
		fmt.Fprintf(stderr, ", %d known-failing passed", unexpectedPass)
	}
	fmt.Fprintln(stderr)
	return status
}

// serverCommand splits --server, or finds e next to this binary or on PATH.
func serverCommand(s string) ([]string, error) {
	if s != "" {
		argv, err := conformance.SplitCommand(s)
		if err != nil {
			return nil, fmt.Errorf("--server: %w", err)
		}
		if len(argv) == 0 {
			return nil, errors.New("--server is empty")
		}
		return argv, nil
	}
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), "e")
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return []string{p, "rpc"}, nil
		}
	}
	p, err := exec.LookPath("e")
	if err != nil {
		return nil, errors.New(`no server: e is neither next to e-conformance nor on PATH; pass --server "CMD ARGS"`)
	}
	return []string{p, "rpc"}, nil
}

// selectCases keeps the cases whose id or file matches one of the globs.
func selectCases(cases []*conformance.Case, globs []string) ([]*conformance.Case, error) {
	if len(globs) == 0 {
		return cases, nil
	}
	var out []*conformance.Case
	for _, c := range cases {
		for _, g := range globs {
			g = strings.TrimSuffix(filepath.Base(g), ".txtar")
			ok, err := filepath.Match(g, c.ID)
			if err != nil {
				return nil, fmt.Errorf("case glob %q: %w", g, err)
			}
			if ok {
				out = append(out, c)
				break
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no case matches %s", strings.Join(globs, " "))
	}
	return out, nil
}

func repro(server, dir, id string) string {
	s := "e-conformance"
	if server != "" {
		s += " --server " + shellQuote(server)
	}
	if dir != "golden" {
		s += " --cases " + shellQuote(dir)
	}
	return s + " " + shellQuote(id)
}

func shellQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`*?[]#~;&|<>(){}!") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func writeJUnit(path string, results []*conformance.Result) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := conformance.WriteJUnit(f, results); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
