package main

import (
	stdcmp "cmp"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/e-agent/e/conformance"
	"github.com/e-agent/e/internal/statusline"
	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden help pages in testdata/help")

// Every command has a help page held by a golden file; --help exits 0.
func TestHelp(t *testing.T) {
	names := []string{""}
	for name := range subcommands {
		names = append(names, name)
	}
	seen := map[string]bool{}
	for _, name := range names {
		t.Run("page "+name, func(t *testing.T) {
			page, ok := helpPages[name]
			if !ok {
				t.Fatalf("subcommand %q has no help page", name)
			}
			args := []string{"--help"}
			if name != "" {
				args = []string{name, "--help"}
			}
			var out, errOut strings.Builder
			if code := run(args, strings.NewReader(""), &out, &errOut); code != 0 || errOut.Len() > 0 || out.String() != page {
				t.Errorf("%v: exit %d, stderr %q, stdout is the page: %v", args, code, errOut.String(), out.String() == page)
			}
			golden := filepath.Join("testdata", "help", stdcmp.Or(name, "e-conformance")+".txt")
			if *update {
				os.MkdirAll(filepath.Dir(golden), 0o755)
				os.WriteFile(golden, []byte(page), 0o644)
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (go test ./cmd/e-conformance -run TestHelp -update)", err)
			}
			if diff := cmp.Diff(string(want), page); diff != "" {
				t.Errorf("(-want +got; -update rewrites):\n%s", diff)
			}
			for _, s := range []string{"usage:", "exit status:", "examples:"} {
				if !strings.Contains(page, s) {
					t.Errorf("the page lacks %q", s)
				}
			}
			if seen[page] {
				t.Errorf("the page repeats another")
			}
			seen[page] = true
		})
	}
}

// A mistyped command or flag is exit 2 with the nearest valid one.
func TestUsageSuggestions(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{args: []string{"recrod"}, want: `e-conformance: unknown command "recrod" (did you mean e-conformance record?)`},
		{args: []string{"--servr", "x"}, want: "e-conformance: unknown flag --servr (did you mean --server?) (see e-conformance --help)"},
		{args: []string{"coverage", "--cses", "x"}, want: "e-conformance coverage: unknown flag --cses (did you mean --cases?) (see e-conformance coverage --help)"},
	} {
		var out, errOut strings.Builder
		if code := run(tt.args, strings.NewReader(""), &out, &errOut); code != 2 || strings.TrimSpace(errOut.String()) != tt.want {
			t.Errorf("%v: exit %d, stderr %q; want 2, %q", tt.args, code, errOut.String(), tt.want)
		}
	}
}

// The status line counts cases and names the running ones; it is erased
// before each report.
func TestCaseProgress(t *testing.T) {
	var b strings.Builder
	p := &caseProgress{total: 3}
	p.bar = statusline.New(&b, 200, "xterm", true)
	p.start("a")
	p.start("b")
	p.finished(&conformance.Result{ID: "a", Verdict: conformance.Fail})
	b.WriteString("REPORT a\n")
	p.show()
	p.clear()
	want := "e-conformance: 0/3 cases, 0 failed, running a" + "\r\x1b[K" + "e-conformance: 0/3 cases, 0 failed, running a and 1 more" +
		"\r\x1b[K" + "REPORT a\n" + "e-conformance: 1/3 cases, 1 failed, running b" + "\r\x1b[K"
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	var none *caseProgress // not a terminal: every method is a no-op
	none.start("x")
	none.finished(&conformance.Result{})
	none.show()
	none.clear()
}
