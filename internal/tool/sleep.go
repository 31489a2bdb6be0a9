package tool

import (
	"context"
	"fmt"
	"time"
)

var sleepTool = &builtin{
	spec: Spec{
		Name:     "sleep",
		Category: "wait",
		Description: "Wait before continuing, e.g. for a build or a server started in the background. " +
			"A message from the user ends the wait early.",
	},
	params: []param{
		{name: "ms", kind: kInteger, required: true, min: 1, max: 3_600_000, desc: "Milliseconds to wait (1 to 3600000)."},
	},
	run:         runSleep,
	reportsStop: true,
}

func runSleep(ctx context.Context, env *Env, a args) Result {
	ms := a.integer("ms", 0)
	start := time.Now()
	if ctx.Err() == nil {
		t := time.NewTimer(time.Duration(ms) * time.Millisecond)
		defer t.Stop()
		select {
		case <-t.C:
			// The event's ms is the content's: the wait asked for, which
			// the timer gave (it fires no earlier); not a measurement a
			// scheduler makes a little longer each time.
			s := fmt.Sprintf("slept %d ms", ms)
			return Result{Content: s, Summary: s, Elapsed: time.Duration(ms) * time.Millisecond, timed: true}
		case <-ctx.Done():
		}
	}
	// Stopped, perhaps before the wait began: the content and the event's
	// ms are one measurement (spec/engine.md).
	d := time.Since(start)
	r := stopped(fmt.Sprintf("stopped after %d ms", d.Milliseconds()))
	r.Elapsed, r.timed = d, true
	return r
}
