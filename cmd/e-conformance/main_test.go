package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The test binary doubles as a tiny server: it answers every request
// line with {"id":…,"result":{"ok":true}} and exits 0 at EOF.
func TestMain(m *testing.M) {
	if len(os.Args) == 3 && os.Args[1] == "client-relay" { // the client kit's relay (client.go)
		os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	if len(os.Args) == 2 && os.Args[1] == "fake-echo-server" {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			var req struct{ ID json.RawMessage }
			json.Unmarshal(sc.Bytes(), &req)
			os.Stdout.WriteString(`{"id":` + string(req.ID) + `,"result":{"ok":true}}` + "\n")
		}
		os.Exit(0)
	}
	// This -race test binary re-run as a fake server or relay would
	// otherwise sleep a second before exiting (GORACE atexit_sleep_ms),
	// once per case it serves.
	if g := os.Getenv("GORACE"); !strings.Contains(g, "atexit_sleep_ms") {
		os.Setenv("GORACE", strings.TrimSpace(g+" atexit_sleep_ms=0"))
	}
	os.Exit(m.Run())
}

const caseFmt = `%s
-- case.json --
{"id":"%s","level":"MUST","requirements":["F2"],"timeout_ms":5000}
-- client --
{"id":1,"method":"x.echo"}
-- expect --
{"id":1,"result":{"ok":%s}}
`

func writeCases(t *testing.T) string {
	dir := t.TempDir()
	for id, ok := range map[string]string{"good-one": "true", "bad-one": "false"} {
		data := strings.NewReplacer("%s\n", "A case.\n").Replace(caseFmt)
		data = strings.Replace(data, `"%s"`, `"`+id+`"`, 1)
		data = strings.Replace(data, `"ok":%s`, `"ok":`+ok, 1)
		if err := os.WriteFile(filepath.Join(dir, id+".txtar"), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestExitStatus(t *testing.T) {
	dir := writeCases(t)
	server := `'` + os.Args[0] + `' fake-echo-server`
	known := filepath.Join(dir, "known.txt")
	os.WriteFile(known, []byte("bad-one # fails on purpose\n"), 0o644)
	knownGood := filepath.Join(dir, "known-good.txt")
	os.WriteFile(knownGood, []byte("good-one\n"), 0o644)
	tests := []struct {
		name   string
		args   []string
		status int
		out    string // substring of stdout
		errOut string // substring of stderr
	}{
		{name: "one passes", args: []string{"good-one"}, status: 0, out: "PASS  good-one"},
		{name: "one fails", args: []string{"bad-one"}, status: 1, out: "fake-echo-server' --cases /"},
		{name: "all with a failure", args: nil, status: 1, errOut: "2 cases: 1 passed, 1 failed"},
		{name: "known failing", args: []string{"--known-failing", known}, status: 0, errOut: "1 failed (1 known)"},
		{name: "known failing passes", args: []string{"--known-failing", knownGood}, status: 1, errOut: "good-one is listed"},
		{name: "level skipped", args: []string{"--level", "SHOULD"}, status: 0, out: "SKIP"},
		{name: "no match", args: []string{"nothing-*"}, status: 2, errOut: "no case matches"},
		{name: "bad flag", args: []string{"--nope"}, status: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			args := append([]string{"--server", server, "--cases", dir}, tt.args...)
			if got := run(args, strings.NewReader(""), &out, &errOut); got != tt.status {
				t.Errorf("status %d, want %d\nstdout:\n%s\nstderr:\n%s", got, tt.status, out.String(), errOut.String())
			}
			if !strings.Contains(out.String(), tt.out) || !strings.Contains(errOut.String(), tt.errOut) {
				t.Errorf("output lacks %q / %q\nstdout:\n%s\nstderr:\n%s", tt.out, tt.errOut, out.String(), errOut.String())
			}
		})
	}
}

func TestJSONAndJUnit(t *testing.T) {
	dir := writeCases(t)
	junit := filepath.Join(t.TempDir(), "report.xml")
	var out, errOut bytes.Buffer
	run([]string{"--server", `'` + os.Args[0] + `' fake-echo-server`, "--cases", dir, "--json", "--junit", junit}, strings.NewReader(""), &out, &errOut)
	verdicts := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var r struct{ ID, Verdict string }
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("--json line %q: %v", line, err)
		}
		verdicts[r.ID] = r.Verdict
	}
	if verdicts["good-one"] != "PASS" || verdicts["bad-one"] != "FAIL" {
		t.Errorf("verdicts %v", verdicts)
	}
	data, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Suites []struct {
			Tests    int `xml:"tests,attr"`
			Failures int `xml:"failures,attr"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(data, &doc); err != nil || len(doc.Suites) != 1 || doc.Suites[0].Tests != 2 || doc.Suites[0].Failures != 1 {
		t.Errorf("junit %+v, %v:\n%s", doc, err, data)
	}
}

func TestCoverageCommand(t *testing.T) {
	dir := writeCases(t)
	var out, errOut bytes.Buffer
	if got := run([]string{"coverage", "--cases", dir}, nil, &out, &errOut); got != 0 {
		t.Fatalf("status %d: %s", got, errOut.String())
	}
	lines := strings.Split(out.String(), "\n")
	if !strings.Contains(lines[0], "UNCOVERED") || !strings.Contains(out.String(), "F2    2 cases") ||
		!strings.Contains(out.String(), "UNCOVERED  events/steered") || !strings.Contains(out.String(), "UNCOVERED  session.create.params#tools") {
		t.Errorf("coverage output:\n%s", out.String())
	}
	if !strings.Contains(errOut.String(), " event types, ") {
		t.Errorf("coverage summary: %s", errOut.String())
	}
	if got := run([]string{"coverage", "--cases", dir, "--fail-uncovered", "all"}, nil, &out, &errOut); got != 1 {
		t.Errorf("--fail-uncovered with gaps: status %d, want 1", got)
	}
	if got := run([]string{"coverage", "--fail-uncovered", "events,properties"}, nil, &out, &errOut); got != 0 {
		t.Errorf("--fail-uncovered on the golden cases: status %d, want 0: %s", got, errOut.String())
	}
}

// A relative --server is resolved against the caller's directory, not the
// case's temp dir; the repro line names it absolutely, so that it works
// from anywhere; without --cases the embedded golden cases load.
func TestRelativeServer(t *testing.T) {
	dir := writeCases(t)
	bin := filepath.Join(t.TempDir(), "srv")
	if err := os.Symlink(os.Args[0], filepath.Join(filepath.Dir(bin), "srv")); err != nil {
		t.Fatal(err)
	}
	t.Chdir(filepath.Dir(bin))
	var out, errOut bytes.Buffer
	if got := run([]string{"--server", "./srv fake-echo-server", "--cases", dir}, nil, &out, &errOut); got != 1 {
		t.Fatalf("status %d, want 1 (one case fails)\nstdout:\n%s\nstderr:\n%s", got, out.String(), errOut.String())
	}
	if !strings.Contains(errOut.String(), "1 passed, 1 failed") {
		t.Errorf("stderr: %s", errOut.String())
	}
	if want := "--server '" + bin + " fake-echo-server'"; !strings.Contains(out.String(), want) {
		t.Errorf("repro line lacks %q:\n%s", want, out.String())
	}
	cases, err := loadCases("")
	if err != nil || len(cases) < 100 {
		t.Errorf("embedded cases: %d, %v", len(cases), err)
	}
}

// A relative path among the server command's arguments is the caller's
// too: a wrapper's script ("sh ./wrap.sh", "python3 ./proxy.py -- ./e
// rpc") runs in each case's temp dir, where the path would not name it.
// Arguments that name nothing there, or have no slash, stay as given.
func TestRelativeServerArguments(t *testing.T) {
	dir := writeCases(t)
	here := t.TempDir()
	wrap := "#!/bin/sh\n[ \"$1\" = keep/me ] || { echo \"wrap.sh: got $1\" >&2; exit 3; }\nexec \"$2\" fake-echo-server\n"
	if err := os.WriteFile(filepath.Join(here, "wrap.sh"), []byte(wrap), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(os.Args[0], filepath.Join(here, "srv")); err != nil {
		t.Fatal(err)
	}
	t.Chdir(here)
	var out, errOut bytes.Buffer
	if got := run([]string{"--server", "sh ./wrap.sh keep/me ./srv", "--cases", dir, "good-one"}, nil, &out, &errOut); got != 0 {
		t.Fatalf("status %d, want 0\nstdout:\n%s\nstderr:\n%s", got, out.String(), errOut.String())
	}
	got, err := absCommand([]string{"sh", "./wrap.sh", "keep/me", "rpc", "./srv"})
	if err != nil {
		t.Fatal(err)
	}
	sh, _ := exec.LookPath("sh")
	want := []string{sh, filepath.Join(here, "wrap.sh"), "keep/me", "rpc", filepath.Join(here, "srv")}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("absCommand (-want +got):\n%s", diff)
	}
}
