package main

import (
	"strings"
	"testing"
	"time"

	"github.com/e-agent/e/internal/agent"
	"github.com/google/go-cmp/cmp"
)

// A turn's events as the progress sees them: a tool batch of two calls
// (one fails), a retry, then the answer.
var progressTurn = []agent.Event{
	agent.TurnStart{},
	agent.ToolBatch{Calls: []agent.Call{{ID: 1, Name: "bash", Target: "go  test ./..."}, {ID: 2, Name: "read", Target: "a.txt"}}},
	agent.ToolStart{ID: 1}, agent.ToolStart{ID: 2},
	agent.ToolEnd{ID: 2, Outcome: "completed", Summary: "3 lines"},
	agent.ToolEnd{ID: 1, Outcome: "failed", Summary: "exit 1"},
	agent.Retry{Attempt: 2, DelayMS: 1500, Reason: "model: x: HTTP 503"},
	agent.Recovered{Attempts: 2},
	&agent.Text{Delta: "fixed"}, &agent.Text{Delta: " it"},
	agent.Compacting{Reason: "auto", TokensBefore: 9000},
	agent.Compacted{TokensBefore: 9000, TokensAfter: 800},
	agent.TurnEnd{},
}

func renderProgress(mode progressMode, term string, noColor bool) string {
	var b strings.Builder
	p := newProgress(&b, mode, 40, term, noColor, "m/x")
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p.now = func() time.Time { clock = clock.Add(250 * time.Millisecond); return clock }
	for _, ev := range progressTurn {
		p.event(ev)
	}
	return b.String()
}

func TestProgress(t *testing.T) {
	tests := []struct {
		name    string
		mode    progressMode
		term    string
		noColor bool
		want    string
	}{
		{name: "none", mode: progressNone, want: ""},
		{name: "verbose", mode: progressVerbose, want: `e: model m/x
e: tool bash go test ./...
e: tool read a.txt
e: tool read completed in 250 ms: 3 lines
e: tool bash failed in 750 ms: exit 1
e: model m/x
e: retry 2 in 1.5 s: model: x: HTTP 503
e: model recovered after 2 attempts
e: compacting (auto, 9000 tokens)
e: compacted: 9000 → 800 tokens
e: turn done in 1.2 s; tool calls: 2, failed: 1
`},
		// Each state replaces the last in place; the line is erased before
		// the answer streams and at the end; long lines are cut to the width.
		{name: "status", mode: progressStatus, term: "xterm", noColor: true,
			want: "e: model m/x…" + "\r\x1b[K" + "e: tool bash go test ./...…" + "\r\x1b[K" + "e: tool read a.txt…" +
				"\r\x1b[K" + "e: tools: 1 running…" + "\r\x1b[K" + "e: model m/x…" +
				"\r\x1b[K" + "e: retry 2 in 1.5 s: model: x: HTTP 50…" + "\r\x1b[K" +
				"e: compacting (auto, 9000 tokens)…" + "\r\x1b[K"},
		{name: "status, colour", mode: progressStatus, term: "xterm", want: "\x1b[2me: model m/x…\x1b[0m\r\x1b[K"},
		{name: "status, dumb terminal", mode: progressStatus, term: "dumb", want: "e: model m/x…\r             \r"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := renderProgress(tt.mode, tt.term, tt.noColor)
			if tt.name == "status, colour" || tt.name == "status, dumb terminal" {
				got = got[:min(len(got), len(tt.want))]
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
