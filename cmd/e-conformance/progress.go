package main

import (
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/e-agent/e/conformance"
	"github.com/e-agent/e/internal/statusline"
)

// caseProgress is the status line of a run on a terminal: cases done of
// all, failures, the cases running. Its methods are called under the run's
// print lock; a nil *caseProgress shows nothing.
type caseProgress struct {
	bar               *statusline.Line
	total, done, fail int
	running           []string
}

// newCaseProgress returns the run's status line, nil unless stderr is a
// terminal.
func newCaseProgress(stderr io.Writer, total int) *caseProgress {
	f, ok := stderr.(*os.File)
	if !ok {
		return nil
	}
	term, width := statusline.Terminal(f)
	if !term {
		return nil
	}
	return &caseProgress{bar: statusline.New(stderr, width, os.Getenv("TERM"), os.Getenv("NO_COLOR") != ""), total: total}
}

func (p *caseProgress) start(id string) {
	if p == nil {
		return
	}
	p.running = append(p.running, id)
	p.show()
}

// finished erases the line (the case's report follows) and counts r.
func (p *caseProgress) finished(r *conformance.Result) {
	if p == nil {
		return
	}
	p.bar.Clear()
	p.done++
	if r.Verdict == conformance.Fail || r.Verdict == conformance.Error {
		p.fail++
	}
	if i := slices.Index(p.running, r.ID); i >= 0 {
		p.running = slices.Delete(p.running, i, i+1)
	}
}

func (p *caseProgress) show() {
	if p == nil {
		return
	}
	s := fmt.Sprintf("e-conformance: %d/%d cases, %d failed", p.done, p.total, p.fail)
	if len(p.running) > 0 {
		s += ", running " + p.running[0]
		if n := len(p.running) - 1; n > 0 {
			s += fmt.Sprintf(" and %d more", n)
		}
	}
	p.bar.Show(s)
}

func (p *caseProgress) clear() {
	if p != nil {
		p.bar.Clear()
	}
}
