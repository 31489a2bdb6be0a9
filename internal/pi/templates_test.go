package pi

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseArgs(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string
	}{
		{name: "words", in: "a  b\tc", want: []string{"a", "b", "c"}},
		{name: "double quotes", in: `"API compatibility" next`, want: []string{"API compatibility", "next"}},
		{name: "single quotes", in: `'one two'`, want: []string{"one two"}},
		{name: "apostrophe inside a word", in: "doesn't work", want: []string{"doesn't", "work"}},
		{name: "escaped quote", in: `"the \"fast\" path"`, want: []string{`the "fast" path`}},
		{name: "other backslashes kept", in: `"a\b" c\d`, want: []string{`a\b`, `c\d`}},
		{name: "empty quoted argument", in: `"" x`, want: []string{"", "x"}},
		{name: "unclosed quote is text", in: `"open and more`, want: []string{`"open`, "and", "more"}},
		{name: "none", in: "   ", want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, parseArgs(tt.in)); diff != "" {
				t.Errorf("parseArgs(%q) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestSubstituteArgs(t *testing.T) {
	args := []string{"a", "b c", "d"}
	tests := []struct {
		name, content string
		args          []string
		want          string
	}{
		{name: "positional", content: "$1|$2|$3|$4", args: args, want: "a|b c|d|"},
		{name: "all", content: "$@ / $ARGUMENTS", args: args, want: "a b c d / a b c d"},
		{name: "default used", content: "${4:-none} ${@:-all}", args: nil, want: "none all"},
		{name: "default not used", content: "${1:-none} ${ARGUMENTS:-all}", args: args, want: "a a b c d"},
		{name: "empty argument takes the default", content: "${1:-dflt}", args: []string{""}, want: "dflt"},
		{name: "slice", content: "${@:2}|${@:2:1}|${@:0}|${@:9}", args: args, want: "b c d|b c|a b c d|"},
		{name: "no recursion", content: "$1", args: []string{"$2"}, want: "$2"},
		{name: "two digits", content: "$10", args: args, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := substituteArgs(tt.content, tt.args); got != tt.want {
				t.Errorf("substituteArgs(%q, %q) = %q, want %q", tt.content, tt.args, got, tt.want)
			}
		})
	}
}

func TestTemplates(t *testing.T) {
	dir := t.TempDir()
	agent, cwd := filepath.Join(dir, "agent"), filepath.Join(dir, "work")
	for path, body := range map[string]string{
		"agent/prompts/review.md": "---\r\ndescription: \"Review staged changes\"\r\nargument-hint: \"[focus]\"\r\n---\r\nFocus on ${1:-correctness}.\r\n",
		"agent/prompts/long.md":   "\n\nA first line that is longer than sixty characters, so it is cut off here.\nmore",
		"agent/prompts/notes.txt": "not a template",
		"work/.pi/prompts/fix.md": "Fix $1",
	} {
		p := filepath.Join(dir, path)
		os.MkdirAll(filepath.Dir(p), 0o700)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ts := LoadTemplates(agent, cwd, false)
	var names []string
	for _, tm := range ts {
		names = append(names, tm.Name+": "+tm.Description)
	}
	want := []string{"long: A first line that is longer than sixty characters, so it is ...", "review: Review staged changes"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("user templates (-want +got):\n%s", diff)
	}
	if got := Expand("/review  concurrency please", ts); got != "Focus on concurrency." {
		t.Errorf("expanded %q", got)
	}
	if got := Expand("/review", ts); got != "Focus on correctness." {
		t.Errorf("expanded without arguments %q", got)
	}
	for _, text := range []string{"/unknown x", "review x", "/fix tests"} {
		if got := Expand(text, ts); got != text {
			t.Errorf("Expand(%q) = %q, want it unchanged", text, got)
		}
	}
	all := LoadTemplates(agent, cwd, true) // a trusted project's templates too
	if len(all) != 3 || all[2].Name != "fix" || all[2].Scope != "project" || Expand("/fix tests", all) != "Fix tests" {
		t.Errorf("with the project's: %+v", all)
	}
}
