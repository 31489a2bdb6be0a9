package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/e-agent/e/internal/agent"
	"github.com/e-agent/e/internal/statusline"
)

// progress shows what a text-mode e -p turn is doing, on stderr only
// (P3: stdout carries the reply alone). On a terminal it keeps one status
// line, rewritten in place and erased before anything else is written;
// with --verbose it writes one plain line per event instead, wherever
// stderr goes; otherwise, and with --quiet, it shows nothing. Lines it
// must say (warnings, the error) go through say, so they never land in the
// middle of the status line.
type progress struct {
	w    io.Writer
	mode progressMode
	// breakLine, when set, reports whether a line on stderr must first end
	// an unfinished line of the reply (stdout and stderr one file).
	breakLine func() bool
	bar       *statusline.Line
	now       func() time.Time

	model   string
	calls   map[int]agent.Call
	started map[int]time.Time
	pending int  // tool calls of the batch not ended yet
	texting bool // reply text is streaming: no status line over it
	began   time.Time
	tools   int
	failed  int
}

type progressMode int

const (
	progressNone    progressMode = iota
	progressStatus               // one updating line on a terminal
	progressVerbose              // one plain line per event
)

func newProgress(w io.Writer, mode progressMode, width int, term string, noColor bool, model string) *progress {
	return &progress{w: w, mode: mode, bar: statusline.New(w, width, term, noColor),
		now: time.Now, model: model, calls: map[int]agent.Call{}, started: map[int]time.Time{}}
}

// event updates the progress for one event of the turn.
func (p *progress) event(ev agent.Event) {
	if p.mode == progressNone {
		return
	}
	switch ev := ev.(type) {
	case agent.TurnStart:
		p.began = p.now()
		p.step("model " + p.model)
	case *agent.Text:
		if !p.texting {
			p.clear()
			p.texting = true
		}
	case agent.ToolBatch:
		p.texting = false
		for _, c := range ev.Calls {
			p.calls[c.ID] = c
		}
		p.pending = len(ev.Calls)
	case agent.ToolStart:
		p.started[ev.ID] = p.now()
		p.step("tool " + callText(p.calls[ev.ID]))
	case agent.ToolEnd:
		p.pending--
		p.tools++
		c := p.calls[ev.ID]
		took := ""
		if t, ok := p.started[ev.ID]; ok {
			took = " in " + seconds(p.now().Sub(t))
		}
		if ev.Outcome != "completed" {
			p.failed++
		}
		p.line(fmt.Sprintf("tool %s %s%s: %s", c.Name, ev.Outcome, took, ev.Summary))
		if p.pending == 0 {
			p.step("model " + p.model)
		} else {
			p.status(fmt.Sprintf("tools: %d running", p.pending))
		}
	case agent.Retry:
		p.texting = false
		p.step(fmt.Sprintf("retry %d in %s: %s", ev.Attempt, seconds(time.Duration(ev.DelayMS)*time.Millisecond), ev.Reason))
	case agent.Recovered:
		p.line(fmt.Sprintf("model recovered after %d attempts", ev.Attempts))
	case agent.Compacting:
		p.texting = false
		p.step(fmt.Sprintf("compacting (%s, %d tokens)", ev.Reason, ev.TokensBefore))
	case agent.Compacted:
		p.line(fmt.Sprintf("compacted: %d → %d tokens", ev.TokensBefore, ev.TokensAfter))
	case agent.TurnEnd:
		if p.mode == progressVerbose {
			p.line(fmt.Sprintf("turn done in %s; tool calls: %d, failed: %d", seconds(p.now().Sub(p.began)), p.tools, p.failed))
		}
		p.clear()
	}
}

// step is a new state: a line with --verbose, the status line otherwise.
func (p *progress) step(s string) {
	if p.mode == progressVerbose {
		p.say("e: " + s)
		return
	}
	p.status(s)
}

// line is a finished event: said with --verbose only.
func (p *progress) line(s string) {
	if p.mode == progressVerbose {
		p.say("e: " + s)
	}
}

// status rewrites the status line, unless reply text is streaming.
func (p *progress) status(s string) {
	if p.mode == progressStatus && !p.texting {
		if p.breakLine != nil && p.breakLine() {
			fmt.Fprintln(p.w) // the status line would overwrite the reply's last line
		}
		p.bar.Show("e: " + s + "…")
	}
}

// clear erases the status line.
func (p *progress) clear() { p.bar.Clear() }

// say writes a whole line to stderr, the status line erased first (the
// next event shows it again).
func (p *progress) say(s string) {
	p.clear()
	if p.breakLine != nil && p.breakLine() {
		s = "\n" + s
	}
	fmt.Fprintln(p.w, s)
}

// callText is a tool call as a person reads it: its name and target.
func callText(c agent.Call) string {
	if c.Target == "" {
		return c.Name
	}
	return c.Name + " " + strings.Join(strings.Fields(c.Target), " ")
}

func seconds(d time.Duration) string {
	if d < time.Second {
		return fmt.Sprintf("%d ms", d.Milliseconds())
	}
	return fmt.Sprintf("%.1f s", d.Seconds())
}
