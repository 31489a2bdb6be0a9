package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/e-agent/e/internal/store"
	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden help pages in testdata/help")

// Every help page is held by a golden file, exits 0, and answers what a
// page should: usage, exit status, examples; the command pages also the
// environment.
func TestHelp(t *testing.T) {
	pages := []struct {
		golden string
		args   []string
		also   [][]string // other ways to ask for the same page
	}{
		{golden: "e", args: []string{"--help"}, also: [][]string{{"-h"}, {"help"}}},
		{golden: "print", args: []string{"-p", "--help"}, also: [][]string{{"help", "-p"}, {"--json", "-p", "-h"}}},
		{golden: "rpc", args: []string{"rpc", "--help"}, also: [][]string{{"help", "rpc"}, {"rpc", "--no-save", "-h"}}},
		{golden: "acp", args: []string{"acp", "--help"}, also: [][]string{{"help", "acp"}, {"acp", "--approval", "all", "-h"}}},
		{golden: "trust", args: []string{"trust", "--help"}},
		{golden: "schema", args: []string{"schema", "--help"}},
		{golden: "export", args: []string{"export", "--help"}},
		{golden: "models", args: []string{"models", "--help"}},
		{golden: "doctor", args: []string{"doctor", "--help"}},
		{golden: "pi", args: []string{"--mode", "rpc", "--help"}, also: [][]string{{"--mode", "json", "-h"}}},
		{golden: "version", args: []string{"version", "--help"}},
		{golden: "help", args: []string{"help", "--help"}},
	}
	seen := map[string]string{}
	for _, p := range pages {
		t.Run(p.golden, func(t *testing.T) {
			got := helpOutput(t, p.args)
			path := filepath.Join("testdata", "help", p.golden+".txt")
			if *update {
				os.MkdirAll(filepath.Dir(path), 0o755)
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./cmd/e -run TestHelp -update)", err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("e %s (-want +got; -update rewrites):\n%s", strings.Join(p.args, " "), diff)
			}
			for _, args := range p.also {
				if other := helpOutput(t, args); other != got {
					t.Errorf("e %s differs from e %s", strings.Join(args, " "), strings.Join(p.args, " "))
				}
			}
			if p.golden == "pi" {
				return // pi's own page (internal/pi): held by its golden file only
			}
			sections := []string{"usage:", "exit status:"}
			if p.golden != "version" && p.golden != "help" {
				sections = append(sections, "examples:")
			}
			if p.golden != "version" && p.golden != "help" && p.golden != "schema" {
				sections = append(sections, "environment:", "E_HOME")
			}
			for _, s := range sections {
				if !strings.Contains(got, s) {
					t.Errorf("the page lacks %q", s)
				}
			}
			if prev, dup := seen[got]; dup {
				t.Errorf("the page is the page of %s", prev)
			}
			seen[got] = p.golden
		})
	}
	// The pages name every settings key.
	for _, k := range store.SettingsKeys {
		if !strings.Contains(mainHelp(), k) {
			t.Errorf("e --help does not name the setting %s", k)
		}
	}
	// Every command of the table has a page here.
	for _, c := range commands {
		if _, ok := seen[c.help]; !ok {
			t.Errorf("command %s has no golden help page", c.name)
		}
	}
}

func helpOutput(t *testing.T, args []string) string {
	t.Helper()
	cmd := command(t, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || stderr.Len() > 0 {
		t.Fatalf("e %s: %v, stderr %q", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// A mistyped command or flag is a usage error (exit 2) that names the
// nearest valid one and the page to read.
func TestUsageSuggestions(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{args: []string{"trsut", "."}, want: `e: unknown command "trsut" (did you mean e trust?); run e --help for the commands`},
		{args: []string{"frob", "x", "y"}, want: `e: unknown command "frob"; run e --help for the commands`},
		{args: []string{"rpc", "--modle", "x"}, want: "e: unknown flag --modle (did you mean --model?) (see e rpc --help)"},
		{args: []string{"-p", "hi", "--jsno"}, want: "e: unknown flag --jsno (did you mean --json?) (see e -p --help)"},
		{args: []string{"trust", "--lst"}, want: "e: unknown flag --lst (did you mean --list?) (see e trust --help)"},
		{args: []string{"-p", "hi", "-x"}, want: "e: unknown flag -x (see e -p --help)"},
		{args: []string{"help", "exprt"}, want: `e help: unknown command "exprt" (did you mean export?)`},
		{args: []string{"--json", "hi"}, want: "e: no command: e -p PROMPT runs one turn (see e --help)"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			cmd := command(t, tt.args...)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if code := exitCode(err); code != 2 || len(out) > 0 {
				t.Errorf("exit %d, stdout %q; want 2 and nothing", code, out)
			}
			if got := strings.TrimSpace(stderr.String()); got != tt.want {
				t.Errorf("stderr %q, want %q", got, tt.want)
			}
		})
	}
}
