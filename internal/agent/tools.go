package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/e-agent/e/internal/model"
	"github.com/e-agent/e/internal/store"
	"github.com/e-agent/e/internal/tool"
	"github.com/e-agent/e/internal/trace"
)

// pending is one tool call of a batch.
type pending struct {
	call    Call
	part    model.Part
	paths   []string
	result  model.Part
	failed  bool
	run     store.ToolRun
	start   time.Time         // when it began running; zero when it never ran
	shell   *tool.ShellResult // a bash call's end (tool.Result.Shell)
	details json.RawMessage   // tool.Result.Details
}

// runTools runs a batch in waves (L2, L3) and records every result. It
// reports whether the turn was interrupted. With stop set no call runs:
// each ends with a result saying the budget stopped it.
func (t *turn) runTools(parts []model.Part, stop *StoppedError) (interrupted bool) {
	s := t.s
	batch := make([]*pending, len(parts))
	calls := make([]Call, len(parts))
	s.mu.Lock()
	for i, p := range parts {
		cat, target := Describe(p.Name, p.Arguments)
		if m, ok := t.mcp[p.Name]; ok {
			cat, target = "mcp", m.client.Server()+"/"+m.remote
		}
		if t.client[p.Name] {
			cat, target = CategoryClient, ""
		}
		c := Call{ID: s.nextCall, Name: p.Name, Arguments: jsonOr(p.Arguments), Category: cat, Target: target}
		s.nextCall++
		batch[i] = &pending{call: c, part: p, paths: tool.Paths(s.cwd, p.Name, p.Arguments)}
		calls[i] = c
	}
	s.mu.Unlock()
	t.emit(ToolBatch{Calls: calls})

	var todo []*pending
	for _, p := range batch {
		switch {
		case stop != nil: // a budget stopped the turn (N1)
			t.end(p, "interrupted", "not run", "not run: "+stop.Message)
			continue
		case !t.offered[p.part.Name]:
			t.end(p, "failed", "not offered", fmt.Sprintf("tool %q is not available in this session", p.part.Name))
			continue
		case t.s.eng.Ext != nil:
			if ok, reason := t.s.eng.Ext.Gate(t.ctx, s.id, p.part.Name, p.part.Arguments); !ok {
				t.end(p, "denied", "denied", "denied: "+reason)
				continue
			}
		}
		if outcome, reason := t.approve(p.call); outcome != "" {
			t.end(p, outcome, outcome, outcome+": "+reason)
			continue
		}
		todo = append(todo, p)
	}

	size := s.eng.ToolConcurrency
	if size <= 0 {
		size = 8
	}
	for len(todo) > 0 && t.ctx.Err() == nil {
		wave, rest := nextWave(todo, size)
		var wg sync.WaitGroup
		for _, p := range wave {
			wg.Add(1)
			go func() {
				defer wg.Done()
				t.runOne(p)
			}()
		}
		wg.Wait()
		todo = rest
	}
	for _, p := range todo {
		t.end(p, "interrupted", "not run", "interrupted before it ran")
	}

	msg := model.Message{Role: model.RoleTool}
	runs := make([]store.ToolRun, len(batch))
	for i, p := range batch {
		msg.Content = append(msg.Content, p.result)
		runs[i] = p.run
	}
	if _, err := s.appendEntry(msg, store.Entry{Runs: runs}); err != nil {
		t.warn(err.Error())
	}
	if t.ctx.Err() != nil {
		_ = s.append(store.Entry{Type: store.TypeInterrupted})
		return true
	}
	return false
}

// Describe returns a call's category and target as tool_batch announces
// them; a tool that is not built in is an extension's.
func Describe(name string, args json.RawMessage) (category, target string) {
	if _, ok := tool.Lookup(name); ok {
		return tool.Describe(name, args)
	}
	return "extension", ""
}

// nextWave takes up to size calls in provider order, skipping any that names
// a file an earlier waiting call names, so those keep their order (L3). A
// directory (ls, find, grep) names every file beneath it.
func nextWave(todo []*pending, size int) (wave, rest []*pending) {
	var busy []string
	for _, p := range todo {
		free := len(wave) < size
		for _, path := range p.paths {
			if slices.ContainsFunc(busy, func(b string) bool { return overlaps(b, path) }) {
				free = false
			}
		}
		busy = append(busy, p.paths...)
		if free {
			wave = append(wave, p)
		} else {
			rest = append(rest, p)
		}
	}
	return wave, rest
}

// overlaps reports whether the absolute paths a and b are one file or one
// lies beneath the other.
func overlaps(a, b string) bool {
	sep := string(filepath.Separator)
	return a == b || strings.HasPrefix(b, strings.TrimSuffix(a, sep)+sep) || strings.HasPrefix(a, strings.TrimSuffix(b, sep)+sep)
}

func (t *turn) runOne(p *pending) {
	p.start = time.Now()
	s := t.s
	// A built-in tool says when it has begun (bash: once its command
	// runs), so an interrupt after tool_start always finds it running;
	// one stopped before that ends without tool_start.
	started := sync.OnceFunc(func() {
		t.emit(ToolStart{ID: p.call.ID})
		if s.eng.Ext != nil {
			s.eng.Ext.Notify("tool.call", map[string]any{"session": s.id, "id": p.call.ID, "name": p.part.Name,
				"arguments": p.call.Arguments})
		}
	})
	// Tools e did not build: an MCP server's, or an extension's.
	var call func() (string, bool)
	if m, ok := t.mcp[p.part.Name]; ok {
		call = func() (string, bool) { return m.client.Call(t.ctx, m.remote, p.part.Arguments) }
	} else if c := t.clientCall(p); c != nil {
		call = c
	} else if t.extension[p.part.Name] {
		call = func() (string, bool) { return s.eng.Ext.CallTool(t.ctx, s.id, p.part.Name, p.part.Arguments) }
	}
	if call != nil {
		started()
		content, failed := call()
		outcome := "completed"
		switch {
		case t.ctx.Err() != nil:
			outcome = "interrupted"
		case failed:
			outcome = "failed"
		}
		t.end(p, outcome, summary(content), content)
		return
	}
	ctx := t.ctx
	if p.part.Name == "sleep" {
		var stop context.CancelFunc
		ctx, stop = context.WithCancel(t.ctx)
		defer stop()
		s.mu.Lock()
		if s.stopSleep == nil {
			s.stopSleep = map[int]context.CancelFunc{}
		}
		s.stopSleep[p.call.ID] = stop
		if len(s.steers) > 0 {
			stop() // a steer is already waiting: do not sleep past it
		}
		s.mu.Unlock()
		defer func() {
			s.mu.Lock()
			delete(s.stopSleep, p.call.ID)
			s.mu.Unlock()
		}()
	}
	var snap *tool.OutputSnapshot // the update SpillUpdate gave for the chunk Output gets next
	env := s.toolEnv()
	env.Started = started
	env.Output = func(chunk string) {
		t.emit(ToolOutput{ID: p.call.ID, Delta: chunk, Snapshot: snap})
		snap = nil
	}
	env.SpillUpdate = func(u tool.OutputSnapshot) { snap = &u }
	r := tool.Run(ctx, &env, p.part.Name, p.part.Arguments)
	outcome := "completed"
	switch {
	case r.Stopped && t.ctx.Err() != nil:
		outcome = "interrupted"
	case r.Failed:
		outcome = "failed"
	}
	if p.part.Name == "sleep" && !r.Failed { // a sleep refused for its arguments never slept
		ms := r.Elapsed.Milliseconds()
		switch {
		case !r.Stopped:
			t.emit(Slept{ID: p.call.ID, MS: ms})
		case t.ctx.Err() != nil:
			t.emit(SleepStopped{ID: p.call.ID, MS: ms, Reason: "interrupt"})
		default:
			t.emit(SleepStopped{ID: p.call.ID, MS: ms, Reason: "steer"})
		}
	}
	p.shell, p.details = r.Shell, r.Details
	t.end(p, outcome, r.Summary, r.Content)
}

// end records a call's result and emits its tool_end.
func (t *turn) end(p *pending, outcome, sum, content string) {
	p.failed = outcome != "completed"
	var took time.Duration
	if !p.start.IsZero() {
		took = time.Since(p.start)
	}
	p.run = store.ToolRun{CallID: p.part.ID, Outcome: outcome, DurationMS: took.Milliseconds(), Details: p.details}
	if o := t.s.eng.Observer; o != nil {
		o.ToolCall(ToolCallRecord{Session: t.s.id, ID: p.call.ID, Name: p.part.Name, Category: p.call.Category,
			Outcome: outcome, Summary: sum, Duration: took, Arguments: p.call.Arguments})
	}
	start := p.start
	if start.IsZero() { // denied or stopped before it ran
		start = time.Now()
	}
	trace.RecordToolCall(t.ctx, p.call.ID, p.part.Name, p.call.Category, outcome, sum, start)
	p.result = model.Part{Type: model.PartToolResult, CallID: p.part.ID, Text: content, IsError: p.failed}
	t.sinkMu.Lock()
	t.res.Tools.Calls++
	if p.failed {
		t.res.Tools.Failures++
	}
	t.sinkMu.Unlock()
	t.emit(ToolEnd{ID: p.call.ID, Outcome: outcome, Summary: sum, Content: content, Shell: p.shell, Details: p.details})
	if t.s.eng.Ext != nil {
		t.s.eng.Ext.Notify("tool.result", map[string]any{"session": t.s.id, "id": p.call.ID, "name": p.part.Name,
			"failed": p.failed, "content": content})
	}
}

func summary(content string) string {
	lines := 1
	for _, c := range content {
		if c == '\n' {
			lines++
		}
	}
	switch {
	case content == "":
		return "no output"
	case lines == 1:
		return "1 line"
	}
	return fmt.Sprintf("%d lines", lines)
}
