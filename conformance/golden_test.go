package conformance

import (
	"context"
	"errors"
	"flag"
	"github.com/e-agent/e/internal/testbuild"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the expect sections of the golden cases from what the server prints")

const goldenDir = "../golden"

// Every golden case parses and passes the case schema and lint (the ids,
// the requirement IDs, the matchers, the waits' labels).
func TestGoldenLint(t *testing.T) {
	cases, err := LoadDir(goldenDir)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, c := range cases {
		if c.Description == "" {
			t.Errorf("%s: the case has no description (the txtar comment)", c.File)
		}
		ids[c.ID] = true
	}
	known, err := goldenKnownFailing()
	if err != nil {
		t.Fatal(err)
	}
	for id := range known {
		if !ids[id] {
			t.Errorf("known-failing.txt lists %s, which is no case", id)
		}
	}
}

// TestGolden runs every golden case against the server named by
// E_CONFORMANCE_SERVER ("/path/e rpc"), or else against ./cmd/e built now.
// Cases listed in golden/known-failing.txt must fail; one that passes must
// be removed from the list.
func TestGolden(t *testing.T) {
	cases, err := LoadDir(goldenDir)
	if err != nil {
		t.Fatal(err)
	}
	argv := goldenServer(t)
	known, err := goldenKnownFailing()
	if err != nil {
		t.Fatal(err)
	}
	// Strict: e's own suite holds e to printing nothing its schemas do
	// not describe; other servers get the additive default.
	opts := Options{Server: argv, Validator: SchemaValidator{Strict: true}, TimeoutScale: timeoutScale()}
	// A case spends most of its time waiting (a server's start, delays,
	// sleeps, held tape entries), so more of them run at once than
	// -test.parallel (GOMAXPROCS) would let; t.Run may be called from
	// several goroutines, and returns when its subtest is done.
	sem := make(chan struct{}, goldenJobs)
	var wg sync.WaitGroup
	defer wg.Wait()
	for _, c := range cases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			t.Run(c.ID, func(t *testing.T) { goldenCase(t, c, opts, known) })
		}()
	}
}

// goldenJobs is how many golden cases TestGolden runs at once.
const goldenJobs = 8

// goldenCase runs one case and judges it against known-failing.txt.
func goldenCase(t *testing.T, c *Case, opts Options, known map[string]bool) {
	r := Run(context.Background(), c, opts)
	var b strings.Builder
	r.Report(&b)
	// -update rewrites by e rpc's framing; other dialects' cases are
	// judged as they are.
	if *update && r.Verdict != Skip && r.Verdict != Error && (c.Dialect == "" || c.Dialect == DialectERPC) {
		if err := Update(c, r); err != nil {
			t.Fatalf("update: %v", err)
		}
		t.Logf("rewrote %s", c.File)
		return
	}
	switch {
	case known[c.ID] && r.Verdict == Pass:
		t.Fatalf("%s passes but is listed in golden/known-failing.txt: remove it", c.ID)
	case known[c.ID]:
		t.Logf("known failing:\n%s", b.String())
	case r.Verdict == Fail || r.Verdict == Error:
		t.Fatalf("\n%s", b.String())
	case r.Verdict == Skip:
		t.Skip(r.Divergence.Message) // e.g. a fixture's interpreter is missing here
	}
}

func goldenKnownFailing() (map[string]bool, error) {
	known, err := ReadKnownFailing(filepath.Join(goldenDir, "known-failing.txt"))
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]bool{}, nil
	}
	return known, err
}

func goldenServer(t *testing.T) []string {
	t.Helper()
	return buildServer(t, raceEnabled)
}

// buildServer builds ./cmd/e, with -race when race is set, unless
// E_CONFORMANCE_SERVER names a server.
func buildServer(t *testing.T, race bool) []string {
	t.Helper()
	if s := os.Getenv("E_CONFORMANCE_SERVER"); s != "" {
		argv, err := SplitCommand(s)
		if err != nil || len(argv) == 0 {
			t.Fatalf("E_CONFORMANCE_SERVER=%q: %v", s, err)
		}
		return argv
	}
	return []string{testbuild.Command(t, "github.com/e-agent/e/cmd/e", race), "rpc"}
}

// Every requirement ID (e rpc, e -p, acp, the pi dialect), every event
// type and every property of every params, result and event schema is
// exercised by some golden case (the list is derived from the schemas: a
// new field needs a case; a new requirement ID too).
func TestGoldenCoverage(t *testing.T) {
	cases, err := LoadDir(goldenDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range CoverageOf(cases) {
		if len(r.Cases) == 0 {
			t.Errorf("requirement %s (%s): no case cites it", r.ID, r.Text)
		}
	}
	for _, p := range PropertyCoverageOf(cases) {
		if len(p.Cases) == 0 {
			t.Errorf("%s: no case sends or checks it", p.Name())
		}
	}
}
