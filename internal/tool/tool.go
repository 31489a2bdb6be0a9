package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/e-agent/e/internal/sandbox"
)

// Spec describes a built-in tool offered to the model.
type Spec struct {
	Name        string
	Description string
	Parameters  json.RawMessage // JSON Schema (draft 2020-12) of the arguments object
	Category    string          // "read", "write", "execute", "search", "wait"
	// Target names the argument tool_batch reports as a call's target ("" when
	// none); TargetDefault is reported when that argument is absent.
	Target, TargetDefault string
}

// Env is what a call runs against.
type Env struct {
	Cwd    string             // the session's working directory (absolute)
	Output func(chunk string) // receives streamed output (bash stdout+stderr as it arrives); may be nil
	Procs  *Procs             // process tracker of the process; required for bash
	// Started, when set, is called once as the call begins, before any
	// Output: at once for most tools, once its command runs for bash (so
	// a stop after it always finds the command running and kills it). A
	// call that a stop ends before it began does not call it.
	Started func()
	// SpillOutput makes bash keep pi's part of a long output (the last 2000
	// lines or 50 KB, whichever limit is hit first) in place of e's last
	// 64 KiB, with the whole of it in a new temp file that the result
	// names, in pi's words (e --mode rpc).
	SpillOutput bool
	// SpillUpdate, with SpillOutput, receives bash's output so far as pi's bash
	// tool reports it in an update (its tail and, once cut, its
	// details), right before each chunk goes to Output.
	SpillUpdate func(OutputSnapshot)
	// Sandbox confines bash's commands (W1, W3); the zero value is off.
	// TempDir is the session's private temp dir, their TMPDIR when
	// sandboxed. write and edit, confined to Cwd already, write nothing
	// under read-only.
	Sandbox sandbox.Policy
	TempDir string
}

func (e *Env) started() {
	if e != nil && e.Started != nil {
		e.Started()
	}
}

// Result is the outcome of one call. At most one of Failed and Stopped is set.
type Result struct {
	Content string // what the model sees
	Summary string // one short human line, e.g. "12 lines", "exit 0", "wrote 40 bytes"
	Failed  bool   // the call failed (bad arguments, missing file, non-zero exit, timeout, ...)
	Stopped bool   // the call ended because ctx was cancelled (interrupt, or steer for sleep)
	Elapsed time.Duration
	// Shell is how a bash call's command ended, when it exited by itself
	// (nil otherwise and for other tools), for front ends that show the
	// result as data beside Content (the pi dialect's structuredContent).
	Shell *ShellResult
	// Details are pi's details of a bash result whose output was cut
	// (SpillOutput, a command that exited by itself): {truncation,
	// fullOutputPath} in pi's shape, nil otherwise.
	Details json.RawMessage

	timed bool // the tool measured Elapsed itself (sleep: its content names the same ms)
}

// builtin is a tool's definition: its spec, its parameters (from which the
// schema is generated and against which arguments are validated) and its code.
type builtin struct {
	spec   Spec
	params []param
	// target names the parameter Describe reports; dflt is reported when it is absent.
	target, dflt string
	run          func(ctx context.Context, env *Env, a args) Result
	// reportsStop: run itself answers an already ended ctx, in words the
	// spec fixes (sleep: "stopped after N ms").
	reportsStop bool
	// startsLate: run calls env.Started itself, once its work runs.
	startsLate bool
}

var builtins = map[string]*builtin{}

func register(b *builtin) {
	b.spec.Parameters = schema(b.params)
	b.spec.Target, b.spec.TargetDefault = b.target, b.dflt
	builtins[b.spec.Name] = b
}

func init() {
	for _, b := range []*builtin{bashTool, editTool, findTool, grepTool, lsTool, readTool, sleepTool, writeTool} {
		register(b)
	}
}

// Builtins returns every built-in tool, sorted by name.
func Builtins() []Spec {
	specs := make([]Spec, 0, len(builtins))
	for _, name := range Names() {
		specs = append(specs, builtins[name].spec)
	}
	return specs
}

// Names returns the names of the built-in tools, sorted.
func Names() []string {
	names := make([]string, 0, len(builtins))
	for name := range builtins {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// Lookup returns the spec of the named built-in tool.
func Lookup(name string) (Spec, bool) {
	b, ok := builtins[name]
	if !ok {
		return Spec{}, false
	}
	return b.spec, true
}

// Describe returns the category and target (the path or the command, "" when
// none) of a call, for tool_batch. It never fails: malformed args give target "",
// an unknown tool gives category "".
func Describe(name string, args json.RawMessage) (category, target string) {
	b, ok := builtins[name]
	if !ok {
		return "", ""
	}
	if b.target == "" {
		return b.spec.Category, ""
	}
	var m map[string]any
	if err := json.Unmarshal(nonNull(args), &m); err != nil {
		return b.spec.Category, ""
	}
	switch v := m[b.target].(type) {
	case string:
		return b.spec.Category, v
	case nil:
		return b.spec.Category, b.dflt
	}
	return b.spec.Category, ""
}

// Paths returns the absolute paths a call names, resolved against cwd, for
// ordering calls on the same file (L3). Symbolic links in the existing part of
// a path are resolved, so two names of one file give the same path. A directory
// (ls, find, grep) stands for everything beneath it. bash and sleep name none;
// malformed arguments name none.
func Paths(cwd, name string, args json.RawMessage) []string {
	b, ok := builtins[name]
	if !ok || !slices.ContainsFunc(b.params, func(p param) bool { return p.name == "path" }) {
		return nil
	}
	_, p := Describe(name, args)
	if p == "" {
		return nil
	}
	if !filepath.IsAbs(p) {
		p = cwd + string(filepath.Separator) + p
	}
	if real, err := realPath(p); err == nil {
		return []string{real}
	}
	return []string{filepath.Clean(p)}
}

// Run runs a built-in tool. Arguments are validated against the tool's schema
// first; a violation gives a one-line error in Content and Failed. Cancelling
// ctx stops the call promptly, with Stopped set.
func Run(ctx context.Context, env *Env, name string, args json.RawMessage) Result {
	start := time.Now()
	if env != nil && env.Started != nil {
		e, once := *env, sync.OnceFunc(env.Started)
		e.Started = once
		env = &e
	}
	r := run(ctx, env, name, args)
	if !r.Stopped {
		env.started() // a call refused before it began (its arguments) still ran
	}
	if !r.timed {
		r.Elapsed = time.Since(start)
	}
	return r
}

func run(ctx context.Context, env *Env, name string, raw json.RawMessage) Result {
	b, ok := builtins[name]
	if !ok {
		return failure("unknown tool", "unknown tool %q", name)
	}
	if !b.startsLate {
		env.started()
	}
	a, err := validate(name, b.params, raw)
	if err != nil {
		return failure("invalid arguments", "%v", err)
	}
	if env == nil || !filepath.IsAbs(env.Cwd) {
		var cwd string
		if env != nil {
			cwd = env.Cwd
		}
		return failure("no working directory", "%s: the session directory %q is not an absolute path", name, cwd)
	}
	if ctx.Err() != nil && !b.reportsStop {
		return notStarted(name)
	}
	return b.run(ctx, env, a)
}

// failure is a failed Result whose Content is one line.
func failure(summary, format string, a ...any) Result {
	return Result{Content: fmt.Sprintf(format, a...), Summary: summary, Failed: true}
}

// notStarted is the Result of a call whose context ended before it began.
func notStarted(name string) Result {
	return Result{Content: name + ": stopped before it started", Summary: "stopped", Stopped: true}
}

// stopped is the Result of a call cut short by its context.
func stopped(content string) Result {
	return Result{Content: content, Summary: "stopped", Stopped: true}
}
