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
	"github.com/e-agent/e/golden"
	"github.com/e-agent/e/internal/cli"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// subcommands are the words e-conformance takes before its flags; without
// one it runs cases. Each lives in a file of its own.
var subcommands = map[string]func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int{
	"record":   record,
	"coverage": coverage,
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if len(args) > 0 {
		if sub, ok := subcommands[args[0]]; ok {
			if cli.WantsHelp(args[1:]) {
				fmt.Fprint(stdout, helpPages[args[0]])
				return 0
			}
			return sub(ctx, args[1:], stdin, stdout, stderr)
		}
		if args[0] == "help" && len(args) == 2 {
			if page, ok := helpPages[args[1]]; ok {
				fmt.Fprint(stdout, page)
				return 0
			}
		}
		if unknownCommand(args[0], stderr) {
			return 2
		}
	}
	if cli.WantsHelp(args) || len(args) == 1 && args[0] == "help" {
		fmt.Fprint(stdout, helpPages[""])
		return 0
	}
	return runCases(ctx, args, stdout, stderr)
}

// loadCases reads the cases of dir, or the embedded ones when dir is "".
func loadCases(dir string) ([]*conformance.Case, error) {
	if dir == "" {
		return conformance.LoadFS(golden.Cases, "golden")
	}
	return conformance.LoadDir(dir)
}

func runCases(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("e-conformance", flag.ContinueOnError)
	fs.SetOutput(stderr)
	server := fs.String("server", "", `server command, e.g. "e rpc" (default: e next to this binary, or on PATH, with rpc)`)
	dir := fs.String("cases", "", "directory of *.txtar cases (default: the golden cases built into this binary)")
	jobs := fs.Int("j", runtime.GOMAXPROCS(0), "cases run in parallel")
	jsonOut := fs.Bool("json", false, "print one JSON object per case instead of text")
	junit := fs.String("junit", "", "also write a JUnit XML report to this file")
	htmlOut := fs.String("html", "", "also write a self-contained HTML report to this file")
	known := fs.String("known-failing", "", "file of case ids expected to fail; such a case passing fails the run")
	scale := fs.Float64("timeout-scale", 1, "multiply every case's timeout (slow machines, -race builds)")
	levels := fs.String("level", "MUST,SHOULD,MAY", "levels to run; others are skipped")
	strict := fs.Bool("strict", false, "fail fields and event types no schema describes (default: additive, reported as notes)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: e-conformance [flags] [case-glob …]\n       e-conformance record --out FILE -- CMD ARGS\n       e-conformance coverage [--cases DIR]\n")
		fs.PrintDefaults()
	}
	if !parseFlags(fs, args, stderr) {
		return 2
	}
	argv, err := serverCommand(*server)
	if err != nil {
		fmt.Fprintln(stderr, "e-conformance:", err)
		return 2
	}
	cases, err := loadCases(*dir)
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
	var prog *caseProgress // the status line on a terminal
	if !*jsonOut {
		prog = newCaseProgress(stderr, len(cases))
	}
	var mu sync.Mutex // serialises printing
	var wg sync.WaitGroup
	sem := make(chan struct{}, max(1, *jobs))
	for i, c := range cases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			mu.Lock()
			prog.start(c.ID)
			mu.Unlock()
			var r *conformance.Result
			if !wantLevel[c.Level] {
				r = &conformance.Result{ID: c.ID, File: c.File, Level: c.Level, Requirements: c.Requirements, Verdict: conformance.Skip,
					Divergence: &conformance.Divergence{Step: "case", Message: "level " + c.Level + " not selected"}}
			} else {
				r = conformance.Run(ctx, c, opts)
			}
			if r.Verdict == conformance.Fail || r.Verdict == conformance.Error {
				r.Repro = repro(argv, *dir, c.ID)
			}
			results[i] = r
			mu.Lock()
			prog.finished(r)
			if !*jsonOut {
				r.Report(stdout)
			}
			prog.show()
			mu.Unlock()
		}()
	}
	wg.Wait()
	prog.clear()

	if !writeReports("e-conformance", results, stdout, stderr, *jsonOut, *htmlOut, *junit) {
		return 2
	}
	t := tally(results, knownFailing, *known, stderr)
	counts, status, unexpectedPass, expectedFail := t.counts, t.status, t.unexpectedPass, t.expectedFail
	fmt.Fprintf(stderr, "e-conformance: %d cases: %d passed, %d failed (%d known), %d errors, %d skipped",
		len(results), counts[conformance.Pass], counts[conformance.Fail], expectedFail, counts[conformance.Error], counts[conformance.Skip])
	if unexpectedPass > 0 {
		fmt.Fprintf(stderr, ", %d known-failing passed", unexpectedPass)
	}
	fmt.Fprintln(stderr)
	return status
}

// serverCommand splits --server, or finds e next to this binary or on PATH.
// The program is made absolute against the caller's directory (each case
// runs in a temp dir of its own, so "./e rpc" must not be looked up there).
func serverCommand(s string) ([]string, error) {
	if s != "" {
		argv, err := conformance.SplitCommand(s)
		if err != nil {
			return nil, fmt.Errorf("--server: %w", err)
		}
		if len(argv) == 0 {
			return nil, errors.New("--server is empty")
		}
		argv, err = absCommand(argv)
		if err != nil {
			return nil, fmt.Errorf("--server: %w", err)
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
	p, err = filepath.Abs(p)
	if err != nil {
		return nil, err
	}
	return []string{p, "rpc"}, nil
}

// absCommand resolves a command line given in the caller's directory for
// a process that runs in another (a case's temp dir): its program as
// absProgram does, and each argument with a slash that names an existing
// file or directory there (the script of "python3 ./proxy.py -- ./e rpc",
// the server behind a wrapper) made absolute. Other arguments stay.
func absCommand(argv []string) ([]string, error) {
	p, err := absProgram(argv[0])
	if err != nil {
		return nil, err
	}
	out := []string{p}
	for _, a := range argv[1:] {
		if strings.Contains(a, "/") && !filepath.IsAbs(a) {
			if _, err := os.Stat(a); err == nil {
				if abs, err := filepath.Abs(a); err == nil {
					a = abs
				}
			}
		}
		out = append(out, a)
	}
	return out, nil
}

// absProgram resolves a program the way a shell in the caller's directory
// would: a name with a slash against the directory, a bare name on PATH.
func absProgram(name string) (string, error) {
	if !strings.Contains(name, "/") {
		p, err := exec.LookPath(name)
		if err != nil {
			return "", err
		}
		return filepath.Abs(p)
	}
	p, err := filepath.Abs(name)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%s: %w", name, errors.Unwrap(err))
	}
	return p, nil
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

// repro is a command that reruns one case from any directory: the server
// and the cases by absolute paths, the runner by its own.
func repro(server []string, dir, id string) string {
	quoted := make([]string, len(server))
	for i, a := range server {
		quoted[i] = shellQuote(a)
	}
	s := self() + " --server " + shellQuote(strings.Join(quoted, " "))
	if dir != "" {
		if abs, err := filepath.Abs(dir); err == nil {
			dir = abs
		}
		s += " --cases " + shellQuote(dir)
	}
	return s + " " + shellQuote(id)
}

// self is how to run this runner again: its own path, or, under go run
// (whose binary is gone when it exits), go run in the module.
func self() string {
	exe, err := os.Executable()
	if err != nil {
		return "e-conformance"
	}
	if !strings.Contains(exe, string(filepath.Separator)+"go-build") {
		return shellQuote(exe)
	}
	if root := moduleRoot(); root != "" {
		return "(cd " + shellQuote(root) + " && go run ./cmd/e-conformance)"
	}
	return "e-conformance"
}

// moduleRoot is the directory of e's go.mod above the working directory, or "".
func moduleRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(string(b), "module github.com/e-agent/e\n") {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

func shellQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`*?[]#~;&|<>(){}!") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// writeReports writes the reports a run asked for: JSON on stdout, an
// HTML page, a JUnit file. It says on stderr what failed, prefixed with
// name, and returns false then.
func writeReports(name string, results []*conformance.Result, stdout, stderr io.Writer, jsonOut bool, htmlPath, junitPath string) bool {
	var err error
	if jsonOut {
		err = conformance.WriteJSON(stdout, results)
	}
	if err == nil && htmlPath != "" {
		err = writeReport(htmlPath, results, conformance.WriteHTML)
	}
	if err == nil && junitPath != "" {
		err = writeReport(junitPath, results, conformance.WriteJUnit)
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return false
	}
	return true
}

// counted is the tally of a run's verdicts and the exit status they make.
type counted struct {
	counts                       map[conformance.Verdict]int
	status                       int // 0 all passed, 1 a failure, 2 an error
	unexpectedPass, expectedFail int // cases of the known-failing list
}

// tally counts the verdicts; a case of known (the list in file knownFile)
// must fail, and one that passes is reported on stderr and fails the run.
func tally(results []*conformance.Result, known map[string]bool, knownFile string, stderr io.Writer) counted {
	t := counted{counts: map[conformance.Verdict]int{}}
	for _, r := range results {
		t.counts[r.Verdict]++
		switch {
		case known[r.ID] && r.Verdict == conformance.Pass:
			t.unexpectedPass++
			fmt.Fprintf(stderr, "e-conformance: %s is listed in %s but passes: remove it from the list\n", r.ID, knownFile)
			t.status = max(t.status, 1)
		case known[r.ID] && r.Verdict == conformance.Fail:
			t.expectedFail++
		case r.Verdict == conformance.Fail:
			t.status = max(t.status, 1)
		case r.Verdict == conformance.Error:
			t.status = 2
		}
	}
	return t
}

func writeReport(path string, results []*conformance.Result, write func(io.Writer, []*conformance.Result) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f, results); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
