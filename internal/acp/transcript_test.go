package acp

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/e-agent/e/internal/mcp/mcptest"
)

// TestTranscripts replays the ACP transcripts in testdata/transcripts: each
// txtar file has a client section (lines to send; "#wait L" waits for the
// expected line labelled @L) and an expect section (lines e acp must write,
// in this order, matched as subsets; other lines may come between them;
// "!none LINE" says that from here on no line matching LINE may come).
// "{{name}}" in an expected line binds the value it meets; in a client line
// it is replaced by it. The conformance runner does not speak ACP yet, so
// ACP's golden transcripts live here.
func TestTranscripts(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "transcripts", "*.txtar"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no transcripts: %v", err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txtar"), func(t *testing.T) {
			t.Parallel()
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			runTranscript(t, parseArchive(string(b)))
		})
	}
}

type expectLine struct {
	label string
	none  bool // a !none line
	want  any
}

// parseArchive splits a txtar file into its sections' non-blank lines.
func parseArchive(s string) map[string][]string {
	out := map[string][]string{}
	cur := "" // the comment before the first section
	for _, l := range strings.Split(s, "\n") {
		if name, ok := strings.CutPrefix(l, "-- "); ok && strings.HasSuffix(name, " --") {
			cur = strings.TrimSuffix(name, " --")
			continue
		}
		if cur != "" && strings.TrimSpace(l) != "" {
			out[cur] = append(out[cur], l)
		}
	}
	return out
}

func runTranscript(t *testing.T, a map[string][]string) {
	p := start(t, Options{})
	var expect []expectLine
	for _, l := range a["expect"] {
		l = strings.ReplaceAll(l, "{{cwd}}", p.cwd) // inside longer strings too
		var e expectLine
		switch {
		case strings.HasPrefix(l, "@"):
			e.label, l, _ = strings.Cut(l[1:], " ")
		case strings.HasPrefix(l, "!none "):
			e.none, l = true, l[len("!none "):]
		}
		if err := json.Unmarshal([]byte(l), &e.want); err != nil {
			t.Fatalf("expect line %q: %v", l, err)
		}
		expect = append(expect, e)
	}
	exe, _, err := mcptest.Command()
	if err != nil {
		t.Fatal(err)
	}
	bound := map[string]any{"cwd": p.cwd, "mcptest": exe}
	next := 0      // the next expected line to meet
	var none []any // lines that may no longer come
	// take checks one received line against the expectations.
	take := func(m map[string]any) {
		for _, n := range none {
			if match(n, m, nil) {
				t.Errorf("line after its !none: %v", m)
			}
		}
		for next < len(expect) && expect[next].none {
			none = append(none, expect[next].want)
			next++
		}
		if next < len(expect) && match(expect[next].want, m, bound) {
			next++
			for next < len(expect) && expect[next].none {
				none = append(none, expect[next].want)
				next++
			}
		}
	}
	met := func(label string) bool {
		for i := range next {
			if expect[i].label == label {
				return true
			}
		}
		return false
	}
	for _, l := range a["client"] {
		if label, ok := strings.CutPrefix(l, "#wait "); ok {
			for !met(label) {
				take(p.next())
			}
			continue
		}
		for name, v := range bound {
			b, _ := json.Marshal(v)
			l = strings.ReplaceAll(l, `"{{`+name+`}}"`, string(b))
		}
		if strings.Contains(l, "{{") {
			t.Fatalf("client line %q has an unbound placeholder: add a #wait", l)
		}
		p.send(l)
	}
	// Every expected line comes before EOF, which ends the turns in flight.
	for next < len(expect) && !(next == len(expect)-1 && expect[next].none) {
		if expect[next].none {
			none = append(none, expect[next].want)
			next++
			continue
		}
		take(p.next())
	}
	p.in.Close()
	for line := range p.lines {
		validate(t, line)
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("not a JSON object: %s", line)
		}
		p.mu.Lock()
		p.seen = append(p.seen, line)
		p.mu.Unlock()
		take(m)
	}
	for next < len(expect) && expect[next].none {
		next++
	}
	if next < len(expect) {
		b, _ := json.Marshal(expect[next].want)
		var got []string
		for _, l := range p.seen {
			got = append(got, string(l))
		}
		t.Errorf("expected line %d never came: %s\nreceived:\n%s", next+1, b, strings.Join(got, "\n"))
	}
}
