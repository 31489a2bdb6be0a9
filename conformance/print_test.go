package conformance

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// printOptions runs print cases against the fake: its command ends in rpc,
// which the runner replaces by the case's args.
func printOptions() Options {
	return Options{Server: []string{os.Args[0], "conformance-fake", "rpc"}, Validator: SchemaValidator{}, TimeoutScale: timeoutScale(), NoTrust: true}
}

// P1, P2, P4, P7: print cases pass against a fake e -p that behaves.
func TestPrintFakePasses(t *testing.T) {
	paths, _ := filepath.Glob("testdata/print/*.txtar")
	if len(paths) == 0 {
		t.Fatal("no testdata/print cases")
	}
	for _, p := range paths {
		c := loadTestCase(t, p)
		t.Run(c.ID, func(t *testing.T) {
			t.Parallel()
			r := Run(context.Background(), c, printOptions())
			if r.Verdict != Pass {
				var b strings.Builder
				r.Report(&b)
				t.Fatalf("want PASS against the fake e -p:\n%s", b.String())
			}
		})
	}
}

// Each print-mode check can fail, with a message that names the defect.
func TestPrintChecksFail(t *testing.T) {
	tests := []struct {
		file string
		want []string
	}{
		{file: "testdata/neg/fake-print-no-result.txtar", want: []string{"no {\"type\":\"result\"", "P7"}},
		{file: "testdata/neg/fake-print-after-result.txtar", want: []string{"after the result line", "P7"}},
		{file: "testdata/neg/fake-print-wrong-stdout.txtar", want: []string{"stdout differs", `"Goodbye\n"`, `"Hello world\n"`}},
		{file: "testdata/neg/fake-print-files-mode.txtar", want: []string{"files line", "mode 0600, want 0644"}},
		{file: "testdata/neg/fake-print-secret.txtar", want: []string{"1.jsonl contains \"say hi\""}},
		{file: "testdata/neg/fake-print-stderr-re.txtar", want: []string{"stderr.re", "unknown option"}},
	}
	for _, tt := range tests {
		t.Run(filepath.Base(tt.file), func(t *testing.T) {
			t.Parallel()
			r := Run(context.Background(), loadTestCase(t, tt.file), printOptions())
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

func TestPrintSkippedWithoutRPC(t *testing.T) {
	c := loadTestCase(t, "testdata/print/fake-print-text.txtar")
	r := Run(context.Background(), c, fakeOptions(fakeGood))
	if r.Verdict != Skip || !strings.Contains(r.Divergence.Message, "does not end in rpc") {
		t.Fatalf("got %s %v, want SKIP saying the command does not end in rpc", r.Verdict, r.Divergence)
	}
}

func TestCaseModeLint(t *testing.T) {
	const head = "d\n-- case.json --\n"
	tests := []struct {
		name, txtar, want string
	}{
		{name: "print with client", want: "no client section",
			txtar: head + `{"id":"x","level":"MUST","requirements":["P1"],"mode":"print","args":["-p","x"]}` + "\n-- client --\n{}\n"},
		{name: "print without args", want: "args",
			txtar: head + `{"id":"x","level":"MUST","requirements":["P1"],"mode":"print"}` + "\n"},
		{name: "print with server_args", want: "server_args",
			txtar: head + `{"id":"x","level":"MUST","requirements":["P1"],"mode":"print","args":["-p"],"server_args":["--nt"]}` + "\n"},
		{name: "rpc with args", want: "args",
			txtar: head + `{"id":"x","level":"MUST","requirements":["P1"],"args":["-p"]}` + "\n-- client --\n"},
		{name: "rpc with stdout", want: "section stdout is for print cases",
			txtar: head + `{"id":"x","level":"MUST","requirements":["P1"]}` + "\n-- client --\n-- stdout --\n"},
		{name: "expect and stdout", want: "one of expect",
			txtar: head + `{"id":"x","level":"MUST","requirements":["P1"],"mode":"print","args":["-p"]}` + "\n-- expect --\n-- stdout --\n"},
		{name: "print expect with request", want: "without \"request\"",
			txtar: head + `{"id":"x","level":"MUST","requirements":["P1"],"mode":"print","args":["-p"]}` + "\n-- expect --\n" + `{"type":"text","request":1}` + "\n"},
		{name: "files unknown field", want: "files",
			txtar: head + `{"id":"x","level":"MUST","requirements":["P1"]}` + "\n-- client --\n-- files --\n" + `{"glob":"home/x","size":3}` + "\n"},
		{name: "files glob outside the root", want: "files",
			txtar: head + `{"id":"x","level":"MUST","requirements":["P1"]}` + "\n-- client --\n-- files --\n" + `{"glob":"/etc/passwd"}` + "\n"},
		{name: "bad stderr.re", want: "stderr.re",
			txtar: head + `{"id":"x","level":"MUST","requirements":["P1"]}` + "\n-- client --\n-- stderr.re --\n(\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseCase([]byte(tt.txtar))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("parseCase error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestGlobMatch(t *testing.T) {
	tests := []struct {
		pattern, name string
		want          bool
	}{
		{pattern: "home/sessions/*/*.jsonl", name: "home/sessions/a/1.jsonl", want: true},
		{pattern: "home/sessions/*/*.jsonl", name: "home/sessions/a/b/1.jsonl", want: false},
		{pattern: "home/**/*.jsonl", name: "home/1.jsonl", want: true},
		{pattern: "home/**/*.jsonl", name: "home/sessions/a/1.jsonl", want: true},
		{pattern: "**", name: "cwd/a.txt", want: true},
		{pattern: "cwd/**", name: "home/a.txt", want: false},
		{pattern: "home/*.jsonl.errors.jsonl", name: "home/1.jsonl", want: false},
	}
	for _, tt := range tests {
		t.Run(tt.pattern+" "+tt.name, func(t *testing.T) {
			if got := globMatch(strings.Split(tt.pattern, "/"), strings.Split(tt.name, "/")); got != tt.want {
				t.Errorf("globMatch(%q, %q) = %v, want %v", tt.pattern, tt.name, got, tt.want)
			}
		})
	}
}
