package conformance

import (
	"context"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// proxyPrefix runs this test binary as the mutation proxy (TestMain).
func proxyPrefix() []string { return []string{os.Args[0], "conformance-proxy"} }

// The proxy is transparent: with the identity mutant, a sample of golden
// cases (framing, signals, exit codes, print mode, the pi and acp
// dialects) passes against the real server as it does without the proxy,
// and so do a few of them with every other control; and a sample of
// mutants is caught. The whole self-test (every mutant, every case) is
// `e-conformance selftest`, which .ci/run runs.
func TestSelfTestSample(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the server many times")
	}
	all, err := LoadDir(goldenDir)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"framing-crlf": true, "framing-id-exact-text": true, "framing-u2028-in-strings": true,
		"sigterm-during-bash": true, "print-json-result": true,
		"oneshot-basic": true, "steer-reaches-next-model-call": true, "event-error-details-400": true,
		"shutdown-exits-without-eof": true, "framing-oversized-line": true,
		"pi-prompt-text": true, "acp-prompt-text": true}
	var cases, few []*Case
	for _, c := range all {
		if want[c.ID] {
			cases = append(cases, c)
		}
		if controlCases[c.ID] {
			few = append(few, c)
		}
	}
	if len(cases) != len(want) || len(few) != len(controlCases) {
		t.Fatalf("found %d of the %d sample cases, %d of the %d control cases", len(cases), len(want), len(few), len(controlCases))
	}
	var identity, ms, controls []*Mutant
	for _, m := range Mutants() {
		switch {
		case m.Name == "identity":
			identity = append(identity, m)
		case m.Control:
			controls = append(controls, m)
		case m.Name == "drop-event/steered", m.Name == "falsify/steered/text", m.Name == "noop/session.steer",
			m.Name == "drop/error_details/details/request_id", m.Name == "exit/zero-becomes-one",
			m.Name == "noop/shutdown", m.Name == "noise/log-line-at-start", m.Name == "dup/response",
			m.Name == "stamp/response-id-as-string", m.Name == "exit/signals-ignored", m.Name == "falsify/oneshot/output",
			m.Name == "reorder/swap-adjacent-events",
			m.Name == "drop-event/pi/agent_end", m.Name == "falsify/pi/message_update.text_delta/delta",
			m.Name == "drop-event/acp/agent_message_chunk", m.Name == "noop/acp/session/prompt":
			ms = append(ms, m)
		}
	}
	// A plain build of e, as .ci/run's full self-test uses: what is under
	// test is the proxy and the suite, and a -race server would make every
	// mutant caught only by a timeout wait three times as long (TestGolden
	// runs the cases against the -race server). The proxy is this -race
	// test binary, so its goroutines (both directions, signals, exit
	// codes, delays) run under the race detector. Identity and the
	// mutants run on every sample case; the other controls, which .ci/run
	// tries on every golden case, on the few that take each of the
	// proxy's paths, at the same time: most of a mutant's time is a wait
	// for the timeout that catches it, which the controls fill.
	server := buildServer(t, false)
	runs := []SelfTestOptions{{Cases: cases, Jobs: 3, Mutants: ms}, {Cases: cases, Jobs: 2, Mutants: identity}, {Cases: few, Jobs: 2, Mutants: controls}}
	reps := make([]*SelfTestReport, len(runs))
	var wg sync.WaitGroup
	for i, o := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o.Server, o.Proxy, o.TimeoutScale = server, proxyPrefix(), 1
			rep, err := SelfTest(context.Background(), o)
			if err != nil {
				t.Error(err)
				return
			}
			reps[i] = rep
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	var b strings.Builder
	for _, rep := range reps {
		rep.Write(&b)
		for _, p := range rep.Problems {
			t.Error(p)
		}
	}
	t.Log("\n" + b.String())
	if n := reps[1].Controls + reps[2].Controls; n < 7 || reps[0].Mutants < 16 {
		t.Errorf("%d controls, %d mutants: the sample lost members", n, reps[0].Mutants)
	}
}

// controlCases are the sample cases every control but identity runs on:
// CRLF framing, escapes (re-encoded), a signal, an exit on shutdown, a
// print case (the derived command), and the pi and acp dialects (their
// unknown-event forms).
var controlCases = map[string]bool{"framing-crlf": true, "framing-u2028-in-strings": true, "sigterm-during-bash": true,
	"shutdown-exits-without-eof": true, "print-json-result": true, "pi-prompt-text": true, "acp-prompt-text": true}

// The survivors file parses, every entry names a mutant and gives a reason.
func TestSurvivorsFile(t *testing.T) {
	surv, err := ReadSurvivors(goldenDir + "/survivors.txt")
	if err != nil {
		t.Fatal(err)
	}
	for name := range surv {
		if _, ok := MutantNamed(name); !ok {
			t.Errorf("survivors.txt lists %s, which is no mutant", name)
		}
	}
	if _, err := ParseSurvivors(strings.NewReader("drop-event/text\n"), "x"); err == nil {
		t.Error("a survivor without a reason was accepted")
	}
}

// Every canned answer of the noop mutants passes its method's result
// schema, so a noop mutant is caught for not performing, never for its
// shape.
func TestCannedResults(t *testing.T) {
	for m, f := range cannedResults {
		line := canonNoEscape(map[string]any{"id": 1, "result": f(map[string]any{"session": "s1", "path": "/tmp/x.html"})})
		if _, err := (SchemaValidator{Strict: true}).ValidateLine([]byte(line), m); err != nil {
			t.Errorf("%s: %v", m, err)
		}
	}
}

// re-encoding keeps the value: a control must change bytes, not meaning.
func TestReencode(t *testing.T) {
	in := `{"a":"x/y é 😀 \"q\" \\ \u0001","n":[1,1.5,-0,1e400],"o":{"k":null,"t":true}}`
	v, err := decode([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	out := reencode(v)
	if string(out) == in || !strings.Contains(string(out), `\/`) || !strings.Contains(string(out), `\ud83d\ude00`) {
		t.Errorf("reencode did not change the spelling: %s", out)
	}
	back, err := decode(out)
	if err != nil {
		t.Fatalf("reencoded line does not parse: %v\n%s", err, out)
	}
	if canon(back) != canon(v) {
		t.Errorf("value changed:\n%s\n%s", canon(back), canon(v))
	}
}

// A case that catches a listed survivor fails the self-test only when it
// catches it every time: one failure that does not come again is timing
// (a case timing out under load), reported as a note, not a catch. A
// mutant that is not listed is killed by its first failure.
func TestSelfTestConfirmsListedCatches(t *testing.T) {
	var mu sync.Mutex
	runs := map[string]int{} // mutant → runs of its case
	fake := func(_ context.Context, c *Case, o Options) *Result {
		name := mutantOf(o)
		mu.Lock()
		runs[name]++
		n := runs[name]
		mu.Unlock()
		fail := map[string]bool{"x/steady": true, "x/plain": true, "x/flaky": n == 1}[name]
		if !fail {
			return &Result{ID: c.ID, Verdict: Pass}
		}
		return &Result{ID: c.ID, Verdict: Fail, Divergence: &Divergence{Step: "exit", Message: "boom"}}
	}
	rep, err := SelfTest(context.Background(), SelfTestOptions{
		Server: []string{"server"}, Proxy: []string{"proxy"}, Cases: []*Case{{ID: "c"}},
		Mutants:   []*Mutant{{Name: "x/flaky"}, {Name: "x/steady"}, {Name: "x/plain"}},
		Survivors: map[string]string{"x/flaky": "why", "x/steady": "why"},
		run:       fake,
	})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]MutantResult{}
	for _, r := range rep.Results {
		r.Duration = 0
		got[r.Name] = r
	}
	want := map[string]MutantResult{
		"x/flaky":  {Name: "x/flaky", Cases: 1, Tried: 1, Listed: "why", Unconfirmed: "c: exit: boom"},
		"x/steady": {Name: "x/steady", Cases: 1, Tried: 1, Listed: "why", Killed: true, KilledBy: "c", Detail: "exit: boom"},
		"x/plain":  {Name: "x/plain", Cases: 1, Tried: 1, Killed: true, KilledBy: "c", Detail: "exit: boom"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	wantRuns := map[string]int{"": 1, "x/flaky": 2, "x/steady": 1 + confirmRuns, "x/plain": 1}
	if diff := cmp.Diff(wantRuns, runs); diff != "" {
		t.Errorf("runs per mutant (-want +got):\n%s", diff)
	}
	wantProblems := []string{"mutant x/steady is listed as a survivor but c catches it (exit: boom): remove it from the survivors file"}
	if diff := cmp.Diff(wantProblems, rep.Problems); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
	var b strings.Builder
	rep.Write(&b)
	if !strings.Contains(b.String(), "note: with the listed survivor x/flaky, a case failed once and passed when run again (timing, not the mutant): c: exit: boom") {
		t.Errorf("the report does not note the unconfirmed catch:\n%s", b.String())
	}
}

// A control runs on the cases it changes something in (a case where it
// changes nothing is the identity's, which runs on every case); every case
// trusts its directory with the reference server, not through the proxy;
// and a mutant's never (the lines it drops) reaches the runner, so that a
// case waiting for such a line fails at once.
func TestSelfTestControlCasesAndOptions(t *testing.T) {
	transcripts := map[string][]Exchange{
		"deltas": {{Dir: "received", Line: `{"type":"text","delta":"hello","session":"s","request":"p"}`}, {Dir: "received", Line: `{"id":"p","result":{}}`}},
		"plain":  {{Dir: "sent", Line: `{"id":"i","method":"session.info","params":{}}`}, {Dir: "received", Line: `{"id":"i","result":{}}`}},
	}
	var mu sync.Mutex
	ran := map[string][]string{} // mutant → the cases it ran
	var trusts [][]string
	nevers := map[string]bool{} // mutant → its runs had a never
	fake := func(_ context.Context, c *Case, o Options) *Result {
		name := mutantOf(o)
		mu.Lock()
		defer mu.Unlock()
		ran[name] = append(ran[name], c.ID)
		trusts = append(trusts, o.trust)
		nevers[name] = o.never != nil
		return &Result{ID: c.ID, Verdict: Pass, Transcript: transcripts[c.ID]}
	}
	var ms []*Mutant
	for _, name := range []string{"identity", "control/deltas-resplit", "drop-response/session.info"} {
		m, ok := MutantNamed(name)
		if !ok {
			t.Fatalf("no mutant %s", name)
		}
		ms = append(ms, m)
	}
	_, err := SelfTest(context.Background(), SelfTestOptions{
		Server: []string{"e", "rpc"}, Proxy: []string{"proxy"}, Cases: []*Case{{ID: "deltas"}, {ID: "plain"}},
		Mutants: ms, Survivors: map[string]string{"drop-response/session.info": "a test"}, run: fake,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range ran {
		slices.Sort(l)
	}
	want := map[string][]string{"": {"deltas", "plain"}, "identity": {"deltas", "plain"}, "control/deltas-resplit": {"deltas"},
		"drop-response/session.info": {"plain"}}
	if diff := cmp.Diff(want, ran); diff != "" {
		t.Errorf("cases run per mutant (-want +got):\n%s", diff)
	}
	for _, tr := range trusts {
		if diff := cmp.Diff([]string{"e", "rpc"}, tr); diff != "" {
			t.Errorf("trusted with (-want +got):\n%s", diff)
		}
	}
	if want := map[string]bool{"": false, "identity": false, "control/deltas-resplit": false, "drop-response/session.info": true}; !maps.Equal(want, nevers) {
		t.Errorf("runs with a never: %v, want %v", nevers, want)
	}
}

// mutantOf is the mutant a fake run's proxy command plants ("": none).
func mutantOf(o Options) string {
	for i, a := range o.Server[:max(len(o.Server)-1, 0)] {
		if a == "--mutant" {
			return o.Server[i+1]
		}
	}
	return ""
}
