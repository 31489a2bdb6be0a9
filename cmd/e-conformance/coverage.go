package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/e-agent/e/conformance"
)

// coverage reports what the cases cover: requirement IDs, event types and
// every property of every params, result and event schema, then every
// property of the pi dialect's schemas, unexercised first.
func coverage(_ context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("e-conformance coverage", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("cases", "", "directory of *.txtar cases (default: the built-in golden cases)")
	failUncovered := fs.String("fail-uncovered", "", `exit 1 when something of these kinds has no case: a comma-separated list of "requirements", "events", "properties", "pi-properties", or "all"`)
	if !parseFlags(fs, args, stderr) {
		return 2
	}
	cases, err := loadCases(*dir)
	if err != nil {
		fmt.Fprintln(stderr, "e-conformance:", err)
		return 2
	}
	reqUncovered := 0
	for _, c := range conformance.CoverageOf(cases) {
		if len(c.Cases) == 0 {
			reqUncovered++
			fmt.Fprintf(stdout, "%-4s UNCOVERED  %s\n", c.ID, c.Text)
			continue
		}
		fmt.Fprintf(stdout, "%-4s %2d cases   %s\n", c.ID, len(c.Cases), strings.Join(c.Cases, " "))
	}
	props := conformance.PropertyCoverageOf(cases)
	typesUncovered, typesAll, propsUncovered, propsAll := 0, 0, 0, 0
	for _, p := range props {
		if p.Path == "" {
			typesAll++
		} else {
			propsAll++
		}
		if len(p.Cases) == 0 {
			if p.Path == "" {
				typesUncovered++
			} else {
				propsUncovered++
			}
			fmt.Fprintf(stdout, "UNCOVERED  %s\n", p.Name())
			continue
		}
		fmt.Fprintf(stdout, "%3d cases  %s  %s\n", len(p.Cases), p.Name(), strings.Join(p.Cases, " "))
	}
	piUncovered, piAll := 0, 0
	for _, p := range conformance.DialectPropertyCoverageOf(cases) {
		piAll++
		if len(p.Cases) == 0 {
			piUncovered++
			fmt.Fprintf(stdout, "UNCOVERED  %s\n", p.Name())
			continue
		}
		fmt.Fprintf(stdout, "%3d cases  %s  %s\n", len(p.Cases), p.Name(), strings.Join(p.Cases, " "))
	}
	fmt.Fprintf(stderr, "e-conformance: %d cases; uncovered: %d of %d requirements, %d of %d event types, %d of %d schema properties, %d of %d pi schema properties\n",
		len(cases), reqUncovered, len(conformance.Requirements()), typesUncovered, typesAll, propsUncovered, propsAll, piUncovered, piAll)
	gaps := map[string]int{"requirements": reqUncovered, "events": typesUncovered, "properties": propsUncovered, "pi-properties": piUncovered}
	status := 0
	for _, k := range strings.Split(*failUncovered, ",") {
		switch k = strings.TrimSpace(k); k {
		case "":
		case "all":
			if reqUncovered+typesUncovered+propsUncovered+piUncovered > 0 {
				status = 1
			}
		case "requirements", "events", "properties", "pi-properties":
			if gaps[k] > 0 {
				status = 1
			}
		default:
			fmt.Fprintf(stderr, "e-conformance: --fail-uncovered: unknown kind %q (requirements, events, properties, pi-properties, all)\n", k)
			return 2
		}
	}
	return status
}
