package conformance

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	// Re-run as a fake server: never fall through to the tests, which would
	// run the whole suite again in the child.
	if len(os.Args) >= 3 && os.Args[1] == "conformance-fake" {
		switch {
		case os.Args[2] == "-p":
			os.Exit(fakePrint(os.Args[3:]))
		case os.Args[2] == "trust":
			os.Exit(0) // the runner's `e trust CWD`: the fakes trust everything
		case len(os.Args) == 3:
			os.Exit(fakeServer(os.Args[2]))
		case len(os.Args) == 4 && os.Args[3] == "acp":
			os.Exit(fakeACP(os.Args[2])) // "conformance-fake MODE rpc" as an acp case derives it
		case len(os.Args) == 5 && os.Args[3] == "--mode":
			os.Exit(fakePi(os.Args[2]))
		}
		os.Exit(2)
	}
	// Re-run as the client-side kit's relay (TestClientKit).
	if len(os.Args) == 3 && os.Args[1] == "conformance-relay" {
		os.Exit(Relay(os.Args[2], os.Stdin, os.Stdout))
	}
	// Re-run as the mutation proxy: conformance-proxy --mutant NAME -- CMD…
	if len(os.Args) >= 5 && os.Args[1] == "conformance-proxy" && os.Args[2] == "--mutant" && os.Args[4] == "--" {
		code, err := Proxy(context.Background(), os.Args[3], os.Args[5:], os.Stdin, os.Stdout)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
		os.Exit(code)
	}
	quickRaceExit()
	os.Exit(m.Run())
}

// quickRaceExit stops the -race builds this test binary starts (the
// servers, their `e trust`, itself re-run as fake or proxy) from sleeping
// a second before they exit (GORACE atexit_sleep_ms, 1000 by default):
// each golden case starts two, so the sleeps were most of the package's
// time. A race is still reported, and fails its case by exit status 66
// or stderr, when it happens; the sleep only gives a report other
// goroutines are writing at exit the time to finish.
func quickRaceExit() {
	if g := os.Getenv("GORACE"); !strings.Contains(g, "atexit_sleep_ms") {
		os.Setenv("GORACE", strings.TrimSpace(g+" atexit_sleep_ms=0"))
	}
}

func fakeOptions(mode string) Options {
	return Options{Server: []string{os.Args[0], "conformance-fake", mode}, TimeoutScale: timeoutScale()}
}

func loadTestCase(t *testing.T, path string) *Case {
	t.Helper()
	c, err := LoadCase(path)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestFakeServerPasses(t *testing.T) {
	paths, _ := filepath.Glob("testdata/*.txtar")
	if len(paths) == 0 {
		t.Fatal("no testdata cases")
	}
	for _, p := range paths {
		c := loadTestCase(t, p)
		t.Run(c.ID, func(t *testing.T) {
			t.Parallel()
			r := Run(context.Background(), c, fakeOptions(fakeGood))
			if r.Verdict != Pass {
				var b strings.Builder
				r.Report(&b)
				t.Fatalf("want PASS against the good fake:\n%s", b.String())
			}
		})
	}
}

// The suite can fail: each broken fake, or broken case, must fail the
// case that covers the defect, with a message that names it.
func TestBrokenServersFail(t *testing.T) {
	tests := []struct {
		mode, file string
		want       []string // substrings of the divergence report
	}{
		{mode: fakeDropSession, file: "testdata/fake-prompt.txtar", want: []string{"/session", "missing"}},
		{mode: fakeAnswerTwice, file: "testdata/fake-hello.txtar", want: []string{"answered twice", "F2"}},
		{mode: fakeLateEvent, file: "testdata/fake-prompt.txtar", want: []string{"the expected turn_end event has not arrived", "S2"}},
		{mode: fakeLateEvent, file: "testdata/fake-prompt-result.txtar", want: []string{"turn_end event of request \"p1\" after the response", "S2"}},
		{mode: fakeToolModeFalse, file: "testdata/fake-create-validation.txtar", want: []string{"/error", "missing"}},
		{mode: fakeNoisy, file: "testdata/fake-hello.txtar", want: []string{"not a JSON object", "starting fake server"}},
		{mode: fakeBadExit, file: "testdata/fake-hello.txtar", want: []string{"exit status 3"}},
		{mode: fakeEarlyNotice, file: "testdata/fake-hello.txtar", want: []string{"unexpected notice event", "process stream"}},
		{mode: fakeGood, file: "testdata/neg/fake-tape-mismatch.txtar", want: []string{"model call 1", "/messages/0/content", "say bye"}},
		{mode: fakeGood, file: "testdata/neg/fake-unused-tape.txtar", want: []string{"1 of 2 tape entries were never requested"}},
		{mode: fakeGood, file: "testdata/neg/fake-optional-mismatch.txtar", want: []string{"expect line 9", "/result/protocol", `"three"`}},
		{mode: fakeAnswerTwice, file: "testdata/fake-optional.txtar", want: []string{"answered twice", "F2"}},
		{mode: fakeGood, file: "testdata/neg/fake-wrong-text.txtar", want: []string{"joined deltas", "/delta", `"Hello world"`}},
	}
	for _, tt := range tests {
		t.Run(tt.mode+"/"+filepath.Base(tt.file), func(t *testing.T) {
			t.Parallel()
			c := loadTestCase(t, tt.file)
			r := Run(context.Background(), c, fakeOptions(tt.mode))
			var b strings.Builder
			r.Report(&b)
			if r.Verdict != Fail {
				t.Fatalf("verdict %s, want FAIL:\n%s", r.Verdict, b.String())
			}
			for _, w := range tt.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("report lacks %q:\n%s", w, b.String())
				}
			}
		})
	}
}

func TestServerThatWillNotStartIsError(t *testing.T) {
	c := loadTestCase(t, "testdata/fake-hello.txtar")
	r := Run(context.Background(), c, Options{Server: []string{filepath.Join(t.TempDir(), "no-such-server")}})
	if r.Verdict != Error || !strings.Contains(r.Divergence.Message, "no-such-server") {
		t.Fatalf("got %s %v, want ERROR naming the command", r.Verdict, r.Divergence)
	}
}

func TestTimeoutKillsServer(t *testing.T) {
	c := loadTestCase(t, "testdata/fake-hello.txtar")
	c.TimeoutMS = 300
	// sleep never answers: the case must time out and its group die.
	r := Run(context.Background(), c, Options{Server: []string{"sh", "-c", "sleep 30 & sleep 30"}})
	if r.Verdict != Fail || !strings.Contains(r.Divergence.Message, "timed out") {
		t.Fatalf("got %s %v, want FAIL timed out", r.Verdict, r.Divergence)
	}
	if r.Duration.Seconds() > 5 {
		t.Fatalf("took %v; the timeout did not stop the run", r.Duration)
	}
}

// A case waiting for a line the server is known never to print
// (Options.never: a self-test mutant drops it) fails as soon as it waits,
// not at its timeout; a line that may still come is waited for.
func TestNeverFailsAtOnce(t *testing.T) {
	tests := []struct {
		name  string
		never func(exp map[string]any, method string) bool
		want  string
	}{
		{name: "the awaited response is dropped", never: func(exp map[string]any, method string) bool { return isResponse(exp) && method == "hello" },
			want: "expected line never arrives"},
		{name: "another method's response is dropped", never: func(exp map[string]any, method string) bool { return isResponse(exp) && method == "shutdown" },
			want: "timed out"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := loadTestCase(t, "testdata/fake-hello.txtar")
			c.TimeoutMS = 500
			// cat answers nothing and exits at EOF.
			r := Run(context.Background(), c, Options{Server: []string{"sh", "-c", "cat >/dev/null"}, NoTrust: true, never: tt.never})
			if r.Verdict != Fail || !strings.Contains(r.Divergence.Message, tt.want) {
				t.Fatalf("got %s %v, want FAIL %s", r.Verdict, r.Divergence, tt.want)
			}
			if tt.want != "timed out" && r.Duration >= 500*time.Millisecond {
				t.Errorf("took %v: it waited for the timeout", r.Duration)
			}
		})
	}
}

// timeoutScale lets slow CI (-race) stretch case timeouts.
func timeoutScale() float64 {
	if os.Getenv("E_CONFORMANCE_TIMEOUT_SCALE") != "" || raceEnabled {
		return 3 // a -race server is several times slower
	}
	return 1
}

// A case whose fixture needs a command that is not on PATH reports SKIP,
// naming it, instead of failing for a reason unrelated to the server.
func TestRequiresMissingCommand(t *testing.T) {
	paths, _ := filepath.Glob("testdata/*.txtar")
	c := loadTestCase(t, paths[0])
	c.Requires = []string{"no-such-interpreter-e2e"}
	r := Run(context.Background(), c, fakeOptions(fakeGood))
	if r.Verdict != Skip || r.Divergence == nil || !strings.Contains(r.Divergence.Message, "no-such-interpreter-e2e") {
		t.Errorf("verdict %v %+v, want SKIP naming the command", r.Verdict, r.Divergence)
	}
}

// Chat Completions allows text content as a string or as text parts; tape
// expectations written with strings match both.
func TestTextContentForms(t *testing.T) {
	got := textContent(map[string]any{"messages": []any{
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "a"}, map[string]any{"type": "text", "text": "b"}}},
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "image_url", "image_url": map[string]any{}}}},
		map[string]any{"role": "user", "content": "plain"},
	}})
	msgs := got.(map[string]any)["messages"].([]any)
	if c := msgs[0].(map[string]any)["content"]; c != "ab" {
		t.Errorf("text parts became %v, want \"ab\"", c)
	}
	if _, ok := msgs[1].(map[string]any)["content"].([]any); !ok {
		t.Errorf("image parts were rewritten: %v", msgs[1])
	}
	if c := msgs[2].(map[string]any)["content"]; c != "plain" {
		t.Errorf("string content changed: %v", c)
	}
}

// A server's temp files go to the case's own directory (TMPDIR), removed
// with it, not to the runner's.
func TestServerTempDir(t *testing.T) {
	c, err := parseCase([]byte(`-- case.json --
{"id": "tmpdir", "level": "MUST", "requirements": ["F1"]}
-- client --
{"id":1,"method":"hello"}
-- expect --
{"id":1,"result":{"tmp":"$regexp:^/.+/e-conformance-[0-9]+/tmp$"}}
`))
	if err != nil {
		t.Fatal(err)
	}
	script := `read line; printf '{"id":1,"result":{"tmp":"%s"}}\n' "$TMPDIR"; [ -d "$TMPDIR" ] || exit 3`
	r := Run(context.Background(), c, Options{Server: []string{"sh", "-c", script}})
	if r.Verdict != Pass {
		var b strings.Builder
		r.Report(&b)
		t.Fatalf("want PASS:\n%s", b.String())
	}
}
