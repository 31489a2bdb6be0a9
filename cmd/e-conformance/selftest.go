package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/e-agent/e/conformance"
	"github.com/e-agent/e/golden"
)

func init() {
	subcommands["proxy"] = proxy
	subcommands["selftest"] = selftest
	subcommands["mutants"] = listMutants
}

// proxy runs a server behind the mutation proxy.
func proxy(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("e-conformance proxy", flag.ContinueOnError)
	fs.SetOutput(stderr)
	mutant := fs.String("mutant", "identity", "the defect to plant (e-conformance mutants lists them)")
	if !parseFlags(fs, args, stderr) {
		return 2
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "e-conformance proxy: no server command: usage: e-conformance proxy [--mutant NAME] -- CMD ARGS")
		return 2
	}
	code, err := conformance.Proxy(ctx, *mutant, fs.Args(), stdin, stdout)
	if err != nil {
		fmt.Fprintln(stderr, "e-conformance:", err)
	}
	return code
}

func listMutants(_ context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	for _, m := range conformance.Mutants() {
		kind := "mutant"
		if m.Control {
			kind = "control"
		}
		fmt.Fprintf(stdout, "%-8s %-14s %s\n", kind, m.Class, m.Name)
	}
	return 0
}

// selftest runs the mutation self-test against a server.
func selftest(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("e-conformance selftest", flag.ContinueOnError)
	fs.SetOutput(stderr)
	server := fs.String("server", "", `the reference server (default: e next to this binary, or on PATH, with rpc)`)
	dir := fs.String("cases", "", "directory of *.txtar cases (default: the built-in golden cases)")
	survivors := fs.String("survivors", "", "survivors file: mutants no case can catch, each with a reason (default: the built-in golden/survivors.txt)")
	jobs := fs.Int("j", runtime.GOMAXPROCS(0), "mutants tried at once")
	only := fs.String("only", "", "comma-separated prefixes of the mutants to try (default: all)")
	scale := fs.Float64("timeout-scale", 1, "multiply every case's timeout")
	jsonOut := fs.Bool("json", false, "print the report as JSON")
	verbose := fs.Bool("v", false, "print a line per mutant as it is judged")
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
	surv, err := readSurvivors(*survivors)
	if err != nil {
		fmt.Fprintln(stderr, "e-conformance:", err)
		return 2
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(stderr, "e-conformance:", err)
		return 2
	}
	o := conformance.SelfTestOptions{Server: argv, Proxy: []string{exe, "proxy"}, Cases: cases, Jobs: *jobs,
		TimeoutScale: *scale, Survivors: surv}
	if *only != "" {
		for _, m := range conformance.Mutants() {
			for _, p := range strings.Split(*only, ",") {
				if strings.HasPrefix(m.Name, p) {
					o.Mutants = append(o.Mutants, m)
					break
				}
			}
		}
		if len(o.Mutants) == 0 {
			fmt.Fprintf(stderr, "e-conformance: no mutant starts with %s\n", *only)
			return 2
		}
	}
	if *verbose {
		o.Progress = stderr
	}
	rep, err := conformance.SelfTest(ctx, o)
	if err != nil {
		fmt.Fprintln(stderr, "e-conformance:", err)
		return 2
	}
	if *jsonOut {
		json.NewEncoder(stdout).Encode(rep)
	} else {
		rep.Write(stdout)
	}
	if len(rep.Problems) > 0 {
		return 1
	}
	return 0
}

func readSurvivors(path string) (map[string]string, error) {
	if path != "" {
		return conformance.ReadSurvivors(filepath.Clean(path))
	}
	b, err := golden.Cases.ReadFile("survivors.txt")
	if errors.Is(err, os.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	return conformance.ParseSurvivors(bytes.NewReader(b), "golden/survivors.txt")
}
