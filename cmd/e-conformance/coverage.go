package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/e-agent/e/conformance"
)

func coverage(_ context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("e-conformance coverage", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("cases", "", "directory of *.txtar cases (default: the built-in golden cases)")
	if !parseFlags(fs, args, stderr) {
		return 2
	}
	cases, err := loadCases(*dir)
	if err != nil {
		fmt.Fprintln(stderr, "e-conformance:", err)
		return 2
	}
	uncovered := 0
	for _, c := range conformance.CoverageOf(cases) {
		if len(c.Cases) == 0 {
			uncovered++
			fmt.Fprintf(stdout, "%-4s UNCOVERED  %s\n", c.ID, c.Text)
			continue
		}
		fmt.Fprintf(stdout, "%-4s %2d cases   %s\n", c.ID, len(c.Cases), strings.Join(c.Cases, " "))
	}
	fmt.Fprintf(stderr, "e-conformance: %d of %d requirements have no case\n", uncovered, len(conformance.Requirements()))
	return 0
}
