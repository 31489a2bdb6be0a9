package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// runClientKit runs e-conformance client in-process and returns the ids
// of the scenarios that did not pass, and the exit status.
func runClientKit(t *testing.T, bug string, command string, args ...string) (failed []string, code int) {
	t.Helper()
	command = "env BUG=" + bug + " " + command
	var stdout, stderr bytes.Buffer
	code = run(append([]string{"client", "--json", "--timeout-scale", "2", "--command", command}, args...), nil, &stdout, &stderr)
	dec := json.NewDecoder(&stdout)
	for dec.More() {
		var raw json.RawMessage
		var r struct {
			ID, Verdict string
		}
		if err := dec.Decode(&raw); err != nil {
			t.Fatalf("report: %v\n%s", err, stderr.String())
		}
		if err := json.Unmarshal(raw, &r); err != nil {
			t.Fatalf("report: %v\n%s", err, raw)
		}
		if r.Verdict != "PASS" {
			failed = append(failed, r.ID)
			t.Logf("%s: %s", r.ID, raw) // why, should the test fail
		}
	}
	if stderr.Len() > 0 {
		t.Logf("stderr:\n%s", stderr.String())
	}
	slices.Sort(failed)
	return failed, code
}

// Each buggy client (testdata/client.py with one bug) fails exactly the
// scenarios meant to catch its bug class, and the same client without a
// bug passes them all: the kit's scenarios can fail, and fail for the
// right reason.
func TestClientKitCatchesBuggyClients(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
	command := "python3 " + filepath.Join("testdata", "client.py")
	t.Run("correct", func(t *testing.T) {
		t.Parallel()
		failed, code := runClientKit(t, "", command)
		if len(failed) > 0 || code != 0 {
			t.Errorf("the correct client failed %v (exit %d)", failed, code)
		}
	})
	for _, tc := range []struct {
		bug  string
		want []string // the scenarios that must fail; the test runs only these
	}{
		{bug: "hang", want: []string{"server-dies"}},
		{bug: "text-errors", want: []string{"error-words"}},
		{bug: "u2028", want: []string{"unicode-separators"}},
		{bug: "strict", want: []string{"unknown-events"}},
		{bug: "output", want: []string{"error-words", "final-output", "long-stream"}},
		{bug: "no-asks", want: []string{"ask-answered", "ask-approve"}},
		{bug: "no-tools", want: []string{"tool-answered"}},
		{bug: "small-lines", want: []string{"big-lines"}},
		{bug: "ignore-errors", want: []string{"error-response", "prompt-refused"}},
	} {
		t.Run(tc.bug, func(t *testing.T) {
			t.Parallel()
			failed, code := runClientKit(t, tc.bug, command, tc.want...)
			if diff := cmp.Diff(tc.want, failed); diff != "" {
				t.Errorf("failed scenarios (-want +got):\n%s", diff)
			}
			if code != 1 {
				t.Errorf("exit status %d; want 1", code)
			}
		})
	}
}

// A scenario file extends the built-in ones; --list names what each catches.
func TestClientKitCaseFiles(t *testing.T) {
	dir := t.TempDir()
	scenario := `{"id":"custom-hello","requirements":["M1"],"catches":"clients that skip hello",
	  "task":{"prompt":"p","cwd":false},
	  "steps":[{"expect":"hello","params":{"ask":true},"error":"hello: not today","code":"internal"}],
	  "want":{"exit":1}}`
	if err := os.WriteFile(filepath.Join(dir, "custom.json"), []byte(scenario), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"client", "--cases", dir, "--list"}, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("--list: exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "custom-hello") || !strings.Contains(stdout.String(), "server-dies") {
		t.Errorf("--list shows neither the case file nor the built-ins:\n%s", stdout.String())
	}
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
	failed, code := runClientKit(t, "", "python3 "+filepath.Join("testdata", "client.py"), "--cases", dir, "custom-hello")
	if len(failed) > 0 || code != 0 {
		t.Errorf("custom-hello: failed %v, exit %d", failed, code)
	}
	// A bad scenario file is a usage problem, named.
	os.WriteFile(filepath.Join(dir, "bad.json"), []byte(`{"id":"x","stepz":[]}`), 0o644)
	stderr.Reset()
	if code := run([]string{"client", "--cases", dir, "--list"}, nil, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "bad.json") {
		t.Errorf("bad scenario: exit %d, stderr %q", code, stderr.String())
	}
}
