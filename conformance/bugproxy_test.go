package conformance

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	bugproxy     = flag.Bool("bugproxy", false, "run TestPlantedDefects (7 minutes on two cores: .ci/run and scripts/bugproxy-check ask for it)")
	bugproxyFull = flag.Bool("bugproxy.full", false, "TestPlantedDefects: run each control on every case, not a sample (scripts/bugproxy-check)")
	bugproxyOnly = flag.String("bugproxy.only", "", "TestPlantedDefects: comma-separated prefixes of the modes to run (default: all)")
)

// plantedMode is one line of bugproxy.py --list.
type plantedMode struct {
	Name    string   `json:"name"`
	Dialect string   `json:"dialect"` // erpc, print, pi, pijson, acp, all
	Kind    string   `json:"kind"`    // bug or control
	Hint    []string `json:"hint"`    // the cases expected to catch it, tried first
	Desc    string   `json:"desc"`
}

// plantedVerdict is what the suite did with one mode.
type plantedVerdict struct {
	mode   plantedMode
	tried  int
	failed *Result // a bug: the case that caught it; a control: a case it failed
}

// TestPlantedDefects runs the golden cases against e behind
// testdata/bugproxy.py, a planted-defect proxy written apart from the
// self-test's mutants (another language, no shared code), as an outside
// checker would: every defect must fail some case, every control must
// pass every case it is tried on. A defect is tried on the cases its mode
// names first, then on the other cases of its front end until one fails;
// a control on controlSample (every case with -bugproxy.full). The verdicts, with the case that caught each defect,
// are logged; spec/conformance.md §3 lists what the modes are.
func TestPlantedDefects(t *testing.T) {
	if !*bugproxy {
		t.Skip("runs the suite through the proxy once per mode, minutes: asked for with -bugproxy (.ci/run does)")
	}
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("bugproxy.py needs python3")
	}
	proxy, err := filepath.Abs(filepath.Join("testdata", "bugproxy.py"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("python3", proxy, "--list").Output()
	if err != nil {
		t.Fatalf("bugproxy.py --list: %v", err)
	}
	var all, modes []plantedMode
	for sc := bufio.NewScanner(bytes.NewReader(out)); sc.Scan(); {
		var m plantedMode
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("bugproxy.py --list: %q: %v", sc.Text(), err)
		}
		all = append(all, m)
		if *bugproxyOnly == "" || slices.ContainsFunc(strings.Split(*bugproxyOnly, ","), func(p string) bool { return strings.HasPrefix(m.Name, p) }) {
			modes = append(modes, m)
		}
	}
	cases, err := LoadDir(goldenDir)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]*Case{}
	for _, c := range cases {
		byID[c.ID] = c
	}
	for _, m := range all {
		for _, h := range m.Hint {
			if byID[h] == nil {
				t.Errorf("bugproxy.py: mode %s names %s, which is no case", m.Name, h)
			}
		}
	}
	if t.Failed() {
		return
	}
	e := buildServer(t, false)
	server := func(m plantedMode) []string {
		return append([]string{"python3", proxy, m.Name, "--"}, e...)
	}
	run := func(c *Case, m plantedMode) *Result {
		// A generous timeout: the proxy is an interpreter, and a control
		// must not fail by the machine's load.
		return Run(context.Background(), c, Options{Server: server(m), Validator: SchemaValidator{}, TimeoutScale: max(timeoutScale(), 3)})
	}
	// The cases a control runs on: a sample that takes every front end
	// and kind of line through the proxy (all of them with -bugproxy.full).
	var sample []*Case
	for _, id := range controlSample {
		if byID[id] == nil {
			t.Fatalf("controlSample names %s, which is no case", id)
		}
		sample = append(sample, byID[id])
	}
	if *bugproxyFull {
		sample = cases
	}
	verdicts := make([]plantedVerdict, len(modes))
	left := make([]int, len(modes)) // a control's cases still running
	var mu sync.Mutex
	jobs := make(chan func(), 1)
	var wg sync.WaitGroup
	for range plantedJobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for f := range jobs {
				f()
			}
		}()
	}
	start := time.Now()
	for i, m := range modes {
		v := &verdicts[i]
		v.mode = m
		if m.Kind == "control" {
			left[i] = len(sample)
			for _, c := range sample {
				jobs <- func() {
					r := run(c, m)
					if r.Verdict == Fail || r.Verdict == Error {
						// Once more: a timeout on a loaded machine is not
						// the control's doing.
						r = run(c, m)
					}
					mu.Lock()
					defer mu.Unlock()
					v.tried++
					if (r.Verdict == Fail || r.Verdict == Error) && v.failed == nil {
						v.failed = r
					}
					if left[i]--; left[i] == 0 {
						t.Log(v.line())
					}
				}
			}
			continue
		}
		jobs <- func() {
			for _, c := range candidates(m, cases, byID) {
				r := run(c, m)
				v.tried++
				if r.Verdict == Fail && timedOut(r) {
					// A timeout on a loaded machine is not a catch
					// unless it comes again: the defect stalls the case.
					r = run(c, m)
				}
				if r.Verdict == Fail {
					v.failed = r
					break
				}
			}
			t.Log(v.line())
		}
	}
	close(jobs)
	wg.Wait()

	caught, bugs, passed, controls := 0, 0, 0, 0
	for _, v := range verdicts {
		switch {
		case v.mode.Kind == "control" && v.failed == nil:
			controls++
			passed++
		case v.mode.Kind == "control":
			controls++
			t.Errorf("control %s (%s) fails %s: a conforming server would fail the suite:\n%s", v.mode.Name, v.mode.Desc, v.failed.ID, report(v.failed))
		case v.failed != nil:
			bugs++
			caught++
		default:
			bugs++
			t.Errorf("defect %s (%s) survives: no case fails (%d tried); add or strengthen a case", v.mode.Name, v.mode.Desc, v.tried)
		}
	}
	t.Logf("planted defects: %d of %d caught, %d of %d controls pass, %s", caught, bugs, passed, controls, time.Since(start).Round(time.Second))
}

// line is the verdict on one line.
func (v *plantedVerdict) line() string {
	switch {
	case v.mode.Kind == "control" && v.failed == nil:
		return fmt.Sprintf("control %-48s passes %d cases", v.mode.Name, v.tried)
	case v.mode.Kind == "control":
		return fmt.Sprintf("CONTROL FAILS %s: %s: %s", v.mode.Name, v.failed.ID, firstLine(v.failed.Divergence.Message))
	case v.failed != nil:
		return fmt.Sprintf("caught  %-48s by %s (%d tried): %s", v.mode.Name, v.failed.ID, v.tried, firstLine(v.failed.Divergence.Message))
	}
	return fmt.Sprintf("SURVIVES %s (%d tried)", v.mode.Name, v.tried)
}

// controlSample are the cases TestPlantedDefects runs each control on
// (scripts/bugproxy-check: every case): deltas, tools, reasoning, asks
// and approvals, two sessions, one-shot lines, ids, U+2028, CRLF, a
// steer, signals, shutdown, errors, e -p's text and JSON, and pi's and
// ACP's prompts, tools, dialogs, cancels and signals.
var controlSample = []string{"prompt-text", "prompt-tool-read", "prompt-reasoning", "ext-ask-reply-result", "approval-allow",
	"sessions-concurrent", "oneshot-basic", "framing-id-exact-text", "framing-u2028-in-strings", "framing-crlf",
	"steer-reaches-next-model-call", "sigterm-during-bash", "shutdown-exits-without-eof", "error-code-unknown-session",
	"print-text", "print-json-result", "print-model-error", "pi-prompt-text", "pi-tool-call", "pi-extension-ui",
	"pi-json-mode", "pi-sigterm-idle", "acp-prompt-text", "acp-permission-allow", "acp-cancel", "acp-sigterm-idle"}

// plantedJobs is how many cases run at once: a case mostly waits.
const plantedJobs = 4

// candidates are the cases a defect is tried on, in order: its hints,
// then the other cases of its front end (tried only when no hint fails).
func candidates(m plantedMode, cases []*Case, byID map[string]*Case) []*Case {
	var out []*Case
	for _, h := range m.Hint {
		out = append(out, byID[h])
	}
	var rest []*Case
	for _, c := range cases {
		if !slices.Contains(out, c) && speaksPlanted(m.Dialect, c) {
			rest = append(rest, c)
		}
	}
	sort.SliceStable(rest, func(i, j int) bool { return rest[i].ID < rest[j].ID })
	return append(out, rest...)
}

// speaksPlanted reports whether case c runs the front end a mode of
// dialect d plants its defect in.
func speaksPlanted(d string, c *Case) bool {
	pi := c.Dialect == DialectPi
	switch d {
	case "erpc":
		return !c.printMode() && !pi && c.Dialect != DialectACP
	case "print":
		return c.printMode() && !pi
	case "pi":
		return !c.printMode() && pi
	case "pijson":
		return c.printMode() && pi
	case "acp":
		return c.Dialect == DialectACP
	}
	return true
}

// timedOut reports whether r failed by its timeout.
func timedOut(r *Result) bool {
	return r.Divergence != nil && strings.Contains(r.Divergence.Message, "timed out")
}

func report(r *Result) string {
	var b strings.Builder
	r.Report(&b)
	return b.String()
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return shorten(s)
}
