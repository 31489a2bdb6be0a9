package conformance

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"iter"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
)

// SelfTestOptions configure SelfTest.
type SelfTestOptions struct {
	Server []string // the reference server, e.g. {"/path/e", "rpc"}
	// Proxy is the command prefix that runs Proxy: SelfTest runs
	// Proxy + {"--mutant", NAME, "--"} + Server, e.g. {"e-conformance", "proxy"}.
	Proxy        []string
	Cases        []*Case
	Jobs         int               // mutants tried at once; 0 means 1
	TimeoutScale float64           // as in Options
	Survivors    map[string]string // mutant → why no case can catch it
	Mutants      []*Mutant         // nil: all
	Progress     io.Writer         // one line per mutant, when not nil

	run func(context.Context, *Case, Options) *Result // Run; tests replace it
}

// MutantResult is what the suite did to one mutant.
type MutantResult struct {
	Name     string `json:"name"`
	Class    string `json:"class"`
	Control  bool   `json:"control"`
	Cases    int    `json:"cases"`               // cases it changes
	Tried    int    `json:"tried"`               // cases run
	Killed   bool   `json:"killed"`              // a case failed (controls: must be false)
	KilledBy string `json:"killed_by,omitempty"` // the first failing case
	Detail   string `json:"detail,omitempty"`    // its divergence
	// Unconfirmed names a case that failed with a listed survivor once
	// but passed when run again, and how it failed: timing, not the
	// mutant (see confirmRuns).
	Unconfirmed string        `json:"unconfirmed,omitempty"`
	Listed      string        `json:"listed,omitempty"` // the survivors file's reason
	Duration    time.Duration `json:"duration_ns"`
}

// SelfTestReport is the outcome of SelfTest.
type SelfTestReport struct {
	Results  []MutantResult `json:"results"`
	Killed   int            `json:"killed"`
	Mutants  int            `json:"mutants"`
	Controls int            `json:"controls"`
	// Problems are what fails the self-test: a control failing a case, a
	// mutant surviving unlisted, a listed one caught, a case failing
	// without any mutant.
	Problems []string      `json:"problems,omitempty"`
	Wall     time.Duration `json:"wall_ns"`
}

// Score is the share of mutants killed.
func (r *SelfTestReport) Score() float64 {
	if r.Mutants == 0 {
		return 1
	}
	return float64(r.Killed) / float64(r.Mutants)
}

// SelfTest proves the suite's strength: it runs the cases against the
// server as it is (all must pass), then through the proxy with each
// control (all must still pass: additive changes, other encodings, other
// timing), then with each mutant, one defect at a time, on the cases the
// mutant changes (fastest first, until one fails). Every mutant must be
// caught unless listed in Survivors with a reason.
func SelfTest(ctx context.Context, o SelfTestOptions) (*SelfTestReport, error) {
	start := time.Now()
	ms := o.Mutants
	if ms == nil {
		ms = Mutants()
	}
	jobs := max(o.Jobs, 1)
	run := o.run
	if run == nil {
		run = Run
	}
	opts := func(server []string) Options {
		return Options{Server: server, Validator: SchemaValidator{}, TimeoutScale: o.TimeoutScale, trust: o.Server}
	}
	// The baseline: every case, no proxy. Each mutant edits the lines of
	// the dialects it names (Mutant.Dialects) and is tried on their cases.
	base := make([]*Result, len(o.Cases))
	parallel(jobs, len(o.Cases), func(i int) {
		base[i] = run(ctx, o.Cases[i], opts(o.Server))
	})
	rep := &SelfTestReport{}
	var live []int // cases that ran and passed, fastest first
	for i, r := range base {
		switch r.Verdict {
		case Pass:
			live = append(live, i)
		case Fail, Error:
			rep.Problems = append(rep.Problems, fmt.Sprintf("baseline: %s %s without any mutant: fix the case or the server first", r.ID, r.Verdict))
		}
	}
	sort.SliceStable(live, func(a, b int) bool { return base[live[a]].Duration < base[live[b]].Duration })
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	results := make([]MutantResult, len(ms))
	var progress sync.Mutex
	try := func(mi int) {
		if ctx.Err() != nil {
			return
		}
		m := ms[mi]
		t0 := time.Now()
		res := MutantResult{Name: m.Name, Class: m.Class, Control: m.Control, Listed: o.Survivors[m.Name]}
		server := append(append(append([]string{}, o.Proxy...), "--mutant", m.Name, "--"), o.Server...)
		mopts := opts(server)
		mopts.never = m.never
		var cands []int
		for _, i := range live {
			if m.speaks(dialectOfCase(o.Cases[i])) && m.Applies(base[i].Transcript) {
				cands = append(cands, i)
			}
		}
		res.Cases = len(cands)
		if m.Control {
			// Every case must pass: run them all, jobs at a time.
			var mu sync.Mutex
			parallel(jobs, len(cands), func(k int) {
				if ctx.Err() != nil {
					return
				}
				r := run(ctx, o.Cases[cands[k]], opts(server))
				// Once more: a case that times out on a loaded machine
				// is not the control's doing.
				failed := r.Verdict != Pass && persists(ctx, run, o.Cases[cands[k]], opts(server), 1, func(v Verdict) bool { return v != Pass })
				mu.Lock()
				defer mu.Unlock()
				res.Tried++
				if failed && !res.Killed {
					res.Killed, res.KilledBy = true, r.ID
					if r.Divergence != nil {
						res.Detail = r.Divergence.Step + ": " + r.Divergence.Message
					}
				}
			})
		} else {
			for i := range tryOrder(m, o.Cases, base, cands) {
				if ctx.Err() != nil {
					break
				}
				r := run(ctx, o.Cases[i], mopts)
				res.Tried++
				if r.Verdict != Fail {
					continue
				}
				detail := r.Divergence.Step + ": " + r.Divergence.Message
				if res.Listed != "" && !persists(ctx, run, o.Cases[i], opts(server), confirmRuns, func(v Verdict) bool { return v == Fail }) {
					// A listed survivor caught fails the self-test, so
					// the catch must be the mutant's doing: a case that
					// failed by timing (a timeout under load) and then
					// passes is reported, not counted.
					res.Unconfirmed = r.ID + ": " + detail
					continue
				}
				res.Killed, res.KilledBy, res.Detail = true, r.ID, detail
				break
			}
		}
		res.Duration = time.Since(t0)
		results[mi] = res
		if o.Progress != nil {
			progress.Lock()
			fmt.Fprintln(o.Progress, res.line())
			progress.Unlock()
		}
	}
	// Controls run their cases in parallel themselves; mutants run in
	// parallel with each other.
	var mutIdx []int
	for i, m := range ms {
		if m.Control {
			try(i)
		} else {
			mutIdx = append(mutIdx, i)
		}
	}
	parallel(jobs, len(mutIdx), func(k int) { try(mutIdx[k]) })
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	for _, r := range results {
		if r.Control {
			rep.Controls++
			if r.Killed {
				rep.Problems = append(rep.Problems, fmt.Sprintf("control %s fails %s: a conforming server would fail the suite (%s)", r.Name, r.KilledBy, r.Detail))
			}
			continue
		}
		rep.Mutants++
		switch {
		case r.Killed:
			rep.Killed++
			if r.Listed != "" {
				rep.Problems = append(rep.Problems, fmt.Sprintf("mutant %s is listed as a survivor but %s catches it (%s): remove it from the survivors file", r.Name, r.KilledBy, r.Detail))
			}
		case r.Listed == "":
			why := fmt.Sprintf("no case fails (%d of %d cases it changes tried)", r.Tried, r.Cases)
			if r.Cases == 0 {
				why = "no case produces what it changes"
			}
			rep.Problems = append(rep.Problems, fmt.Sprintf("mutant %s survives: %s; add a case, or list it with a reason in the survivors file", r.Name, why))
		}
	}
	for name := range o.Survivors {
		found := false
		for _, m := range ms {
			found = found || m.Name == name
		}
		if !found && o.Mutants == nil {
			rep.Problems = append(rep.Problems, fmt.Sprintf("the survivors file lists %s, which is no mutant", name))
		}
	}
	sort.Strings(rep.Problems)
	rep.Results = results
	rep.Wall = time.Since(start)
	return rep, nil
}

// tryOrder yields the cases cands (indexes into cases, fastest first) a
// mutant is tried on: first those where replaying the case's run through
// the mutant's edits predicts a failure (predictsFailure), then the
// others, so every case the mutant changes is still tried until one
// fails, the likely ones first. Predictions are made as the cases come,
// and stop with the first kill.
func tryOrder(m *Mutant, cases []*Case, base []*Result, cands []int) iter.Seq[int] {
	return func(yield func(int) bool) {
		var later []int
		for _, i := range cands {
			if !predictsFailure(m, cases[i], base[i]) {
				later = append(later, i)
			} else if !yield(i) {
				return
			}
		}
		for _, i := range later {
			if !yield(i) {
				return
			}
		}
	}
}

// confirmRuns is how many more times a case that caught a listed
// survivor runs: it caught it only if it fails every time.
const confirmRuns = 2

// persists reports whether c's verdict stays bad in n more runs: a
// verdict that decides the self-test (a control failing, a listed
// survivor caught) is confirmed by running again, since one run on a
// loaded machine can fail by timing alone.
func persists(ctx context.Context, run func(context.Context, *Case, Options) *Result, c *Case, o Options, n int, bad func(Verdict) bool) bool {
	for range n {
		if ctx.Err() != nil || !bad(run(ctx, c, o).Verdict) {
			return false
		}
	}
	return true
}

func (r MutantResult) line() string {
	switch {
	case r.Control && !r.Killed:
		return fmt.Sprintf("control  %-50s passes %d cases", r.Name, r.Tried)
	case r.Control:
		return fmt.Sprintf("CONTROL FAILS %s: %s: %s", r.Name, r.KilledBy, r.Detail)
	case r.Killed:
		return fmt.Sprintf("killed   %-50s by %s (%d tried)", r.Name, r.KilledBy, r.Tried)
	case r.Listed != "":
		return fmt.Sprintf("survives %-50s (listed: %s)", r.Name, r.Listed)
	}
	return fmt.Sprintf("SURVIVES %-50s (%d cases change, %d tried)", r.Name, r.Cases, r.Tried)
}

// Write prints the report: survivors first, then the score.
func (r *SelfTestReport) Write(w io.Writer) {
	for _, m := range r.Results {
		if !m.Control && !m.Killed {
			fmt.Fprintln(w, m.line())
		}
	}
	for _, m := range r.Results {
		if m.Unconfirmed != "" && !m.Killed {
			fmt.Fprintf(w, "note: with the listed survivor %s, a case failed once and passed when run again (timing, not the mutant): %s\n", m.Name, m.Unconfirmed)
		}
	}
	for _, p := range r.Problems {
		fmt.Fprintln(w, "PROBLEM:", p)
	}
	listed := 0
	for _, m := range r.Results {
		if !m.Control && !m.Killed && m.Listed != "" {
			listed++
		}
	}
	fmt.Fprintf(w, "mutation score: %d of %d mutants killed (%.1f%%), %d listed survivors; %d controls; %s\n",
		r.Killed, r.Mutants, 100*r.Score(), listed, r.Controls, r.Wall.Round(time.Second))
}

// ReadSurvivors reads a survivors file: one mutant name per line, then
// "#" and the reason it cannot be caught, which is required.
func ReadSurvivors(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("conformance: %w", err)
	}
	defer f.Close()
	return ParseSurvivors(f, path)
}

// ParseSurvivors reads a survivors file's content; name is for errors.
func ParseSurvivors(r io.Reader, name string) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(r)
	n := 0
	for sc.Scan() {
		n++
		l := strings.TrimSpace(sc.Text())
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		id, why, _ := strings.Cut(l, "#")
		id, why = strings.TrimSpace(id), strings.TrimSpace(why)
		if why == "" {
			return nil, fmt.Errorf("conformance: %s:%d: %s has no reason (write: NAME # why no case can catch it)", name, n, id)
		}
		out[id] = why
	}
	return out, sc.Err()
}

// parallel calls f(0..n-1), at most jobs at a time.
func parallel(jobs, n int, f func(i int)) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, max(jobs, 1))
	for i := 0; i < n; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			f(i)
		}()
	}
	wg.Wait()
}
