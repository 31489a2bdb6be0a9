package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// L2, L3: nextWave bounds the wave and keeps calls on one file in
// provider order.
func TestNextWave(t *testing.T) {
	tests := []struct {
		name     string
		paths    [][]string // per call, in provider order; ids are 1, 2, …
		size     int
		wantWave []int
		wantRest []int
	}{
		{
			name:     "bounded by size",
			paths:    [][]string{nil, nil, nil, nil, nil},
			size:     2,
			wantWave: []int{1, 2},
			wantRest: []int{3, 4, 5},
		},
		{
			name:     "same file waits for the earlier call",
			paths:    [][]string{{"/w/a"}, {"/w/b"}, {"/w/a"}, {"/w/c"}},
			size:     8,
			wantWave: []int{1, 2, 4},
			wantRest: []int{3},
		},
		{
			name:     "a chain on one file runs one by one",
			paths:    [][]string{{"/w/a"}, {"/w/a"}, {"/w/a"}},
			size:     8,
			wantWave: []int{1},
			wantRest: []int{2, 3},
		},
		{
			name:     "a waiting call still holds its file",
			paths:    [][]string{{"/w/a"}, {"/w/a"}, {"/w/b"}, {"/w/a"}},
			size:     8,
			wantWave: []int{1, 3},
			wantRest: []int{2, 4},
		},
		{
			name:     "a directory covers the files beneath it",
			paths:    [][]string{{"/w/d/x.go"}, {"/w/d"}, {"/w/e"}, {"/w/dd"}},
			size:     8,
			wantWave: []int{1, 3, 4},
			wantRest: []int{2},
		},
		{
			name:     "calls without paths run freely",
			paths:    [][]string{{"/w/a"}, nil, {"/w/a"}, nil},
			size:     8,
			wantWave: []int{1, 2, 4},
			wantRest: []int{3},
		},
	}
	ids := func(ps []*pending) []int {
		var out []int
		for _, p := range ps {
			out = append(out, p.call.ID)
		}
		return out
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var todo []*pending
			for i, p := range tt.paths {
				todo = append(todo, &pending{call: Call{ID: i + 1}, paths: p})
			}
			wave, rest := nextWave(todo, tt.size)
			if diff := cmp.Diff(tt.wantWave, ids(wave)); diff != "" {
				t.Errorf("wave (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantRest, ids(rest)); diff != "" {
				t.Errorf("rest (-want +got):\n%s", diff)
			}
		})
	}
}

// L3 end to end: writes to one file take effect in provider order, and
// each starts only after the previous one ended.
func TestSameFileRunsInOrder(t *testing.T) {
	s := testSession(t, testEngine(t), nil)
	var lines []string
	for i := 1; i <= 6; i++ {
		lines = append(lines, fmt.Sprintf(`/tool write {"path":"f.txt","content":"%d"}`, i))
	}
	lines = append(lines, `/tool write {"path":"other.txt","content":"x"}`)
	res, rec := prompt(t, s, strings.Join(lines, "\n"))
	if res.Tools != (ToolCounts{Calls: 7}) {
		t.Errorf("tools = %+v, want 7 calls, no failures", res.Tools)
	}
	b, err := os.ReadFile(filepath.Join(s.Cwd(), "f.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != "6" {
		t.Errorf("f.txt = %q, want the last write, 6", b)
	}
	// Among calls 1–6, each tool_start comes after the previous tool_end.
	var order []string
	for _, ev := range rec.all() {
		switch e := ev.(type) {
		case ToolStart:
			if e.ID <= 6 {
				order = append(order, fmt.Sprintf("start %d", e.ID))
			}
		case ToolEnd:
			if e.ID <= 6 {
				order = append(order, fmt.Sprintf("end %d", e.ID))
			}
		}
	}
	var want []string
	for i := 1; i <= 6; i++ {
		want = append(want, fmt.Sprintf("start %d", i), fmt.Sprintf("end %d", i))
	}
	if diff := cmp.Diff(want, order); diff != "" {
		t.Errorf("same-file calls (-want +got):\n%s", diff)
	}
}

// L2: a batch of 20 with ToolConcurrency 4 never has more than 4 calls
// running at once.
func TestWaveBound(t *testing.T) {
	eng := testEngine(t)
	eng.ToolConcurrency = 4
	s := testSession(t, eng, nil)
	var mu sync.Mutex
	running, most := 0, 0
	rec := &recorder{hook: func(ev Event) {
		mu.Lock()
		defer mu.Unlock()
		switch ev.(type) {
		case ToolStart:
			running++
			most = max(most, running)
		case ToolEnd:
			running--
		}
	}}
	prompt := strings.Repeat("/tool sleep {\"ms\":5}\n", 20)
	res := promptWith(t, s, prompt, rec)
	if res.Tools != (ToolCounts{Calls: 20}) {
		t.Errorf("tools = %+v, want 20 calls, no failures", res.Tools)
	}
	if got := len(ofType[ToolStart](rec)); got != 20 {
		t.Errorf("%d tool_start, want 20", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if most > 4 || most < 1 {
		t.Errorf("at most %d calls ran at once, want 1 to 4", most)
	}
}

// C3, C4: a call to a tool that was not offered fails with tool_end, gets
// no tool_start and never runs.
func TestToolNotOffered(t *testing.T) {
	tests := []struct {
		name  string
		tools []string
	}{
		{name: "no tools", tools: nil},
		{name: "narrowed to read", tools: []string{"read"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := testSession(t, testEngine(t), func(o *Options) { o.Tools = tt.tools })
			res, rec := prompt(t, s, "/tool write {\"path\":\"x.txt\",\"content\":\"hi\"}\n/then\n/text ok")
			if _, err := os.Stat(filepath.Join(s.Cwd(), "x.txt")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("x.txt: %v; want it never written", err)
			}
			if got := ofType[ToolStart](rec); len(got) != 0 {
				t.Errorf("tool_start for a tool not offered: %v", got)
			}
			want := []ToolEnd{{ID: 1, Outcome: "failed", Summary: "not offered",
				Content: `tool "write" is not available in this session`}}
			if diff := cmp.Diff(want, ofType[ToolEnd](rec)); diff != "" {
				t.Errorf("tool_end (-want +got):\n%s", diff)
			}
			if res.Tools != (ToolCounts{Calls: 1, Failures: 1}) || res.FinalOutput != "ok" {
				t.Errorf("tools %+v, final %q; want 1 failed call and the turn to go on", res.Tools, res.FinalOutput)
			}
			checkHistory(t, s)
		})
	}
}
