// Command e is a coding agent without a terminal.
//
//	e -p PROMPT [flags]     run one turn and exit (P1–P8)
//	e rpc [flags]           serve sessions over JSON Lines on stdin/stdout
//	e trust [--list | --revoke] [DIR]
//	e schema [NAME | --out DIR]  print the protocol's JSON Schemas
//	e export LOG [OUT]      write a saved session as one HTML page
//	e --version
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"

	"github.com/e-agent/e/internal/agent"
	"github.com/e-agent/e/internal/sandbox"
	"github.com/e-agent/e/internal/session"
	"github.com/e-agent/e/internal/store"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "0.1.0-dev"

func main() {
	if err := sandbox.Main(); err != nil { // e was the launcher of a sandboxed command, which could not start
		fmt.Fprintln(os.Stderr, "e:", err)
		os.Exit(sandbox.ExitLaunch)
	}
	if os.Getenv("GOGC") == "" {
		// A streaming turn's garbage is short-lived event buffers: collecting
		// at 3x the live heap rather than 2x halves the collections, whose
		// stack scans spin when the machine is busy, for about 1 MB more at
		// the peak of a 200,000-event turn. GOGC, when set, decides.
		debug.SetGCPercent(200)
	}
	os.Exit(run(argsOf(os.Args), os.Stdin, os.Stdout, os.Stderr))
}

// runFlags are the options every run mode shares (L1, P6).
type runFlags struct {
	model, effort          string
	noTools, noExt, noSave bool
	help, version          bool
	approval               string
	system, appendSystem   string
	log                    string
	logContent             bool
	budget                 agent.Budget // every turn's (N1)
	sandbox                string
	writableRoots          rootList
	sandboxNetwork         bool
}

// rootList collects a repeatable flag's values.
type rootList []string

func (l *rootList) String() string     { return strings.Join(*l, ",") }
func (l *rootList) Set(v string) error { *l = append(*l, v); return nil }

func (f *runFlags) register(fs *flag.FlagSet) {
	for _, n := range []string{"m", "model"} {
		fs.StringVar(&f.model, n, "", "model id")
	}
	for _, n := range []string{"ef", "effort"} {
		fs.StringVar(&f.effort, n, "", "reasoning effort")
	}
	for _, n := range []string{"nt", "no-tools"} {
		fs.BoolVar(&f.noTools, n, false, "offer no tools")
	}
	for _, n := range []string{"ne", "no-extensions"} {
		fs.BoolVar(&f.noExt, n, false, "load no extensions")
	}
	fs.BoolVar(&f.noSave, "no-save", false, "keep sessions memory-only")
	fs.StringVar(&f.approval, "approval", "", "approval policy: never, writes or all")
	fs.StringVar(&f.system, "system-prompt", "", "replace e's own system prompt text")
	fs.StringVar(&f.appendSystem, "append-system-prompt", "", "add to the system prompt")
	fs.StringVar(&f.log, "log", "", "append the operator log to this file")
	fs.BoolVar(&f.logContent, "log-content", false, "put prompt text and tool arguments in the log")
	fs.Int64Var(&f.budget.MaxModelCalls, "max-model-calls", 0, "stop a turn after this many model calls")
	fs.Int64Var(&f.budget.MaxTokens, "max-tokens", 0, "stop a turn after this many tokens")
	fs.Float64Var(&f.budget.MaxCostUSD, "max-cost-usd", 0, "stop a turn after this cost in USD")
	fs.Int64Var(&f.budget.MaxDurationMS, "max-duration-ms", 0, "stop a turn after this many ms")
	fs.StringVar(&f.sandbox, "sandbox", "", "sandbox of commands: off, workspace-write or read-only")
	fs.Var(&f.writableRoots, "writable-root", "a directory commands may write besides the cwd (repeatable)")
	fs.BoolVar(&f.sandboxNetwork, "sandbox-network", false, "sandboxed commands may reach the network")
	fs.BoolVar(&f.help, "help", false, "show usage")
	fs.BoolVar(&f.help, "h", false, "show usage")
	fs.BoolVar(&f.version, "version", false, "show the version")
}

func (f *runFlags) options() session.Options {
	return session.Options{Model: f.model, Effort: f.effort, NoTools: f.noTools, NoExtensions: f.noExt,
		NoSave: f.noSave, Approval: f.approval, SystemPrompt: f.system, AppendSystemPrompt: f.appendSystem,
		Budget: f.budget, Version: version, Channel: channel(), Commit: commit(),
		Sandbox: f.sandbox, WritableRoots: f.writableRoots, SandboxNetwork: f.sandboxNetwork}
}

// parse parses flags that may stand before or after positional arguments:
// the standard library's flag stops at the first positional, so parsing
// resumes after each one. "--" ends the flags.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, explainFlagError(fs, err)
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if n := len(args); n > 0 && args[0] != "--" {
			pos = append(pos, args[0])
			args = args[1:]
			continue
		}
		return append(pos, args[1:]...), nil
	}
}

func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // one usage line of our own, not flag's dump
	return fs
}

// usageError reports a usage problem (exit 2) and where help is.
func usageError(stderr io.Writer, err error) int {
	fmt.Fprintf(stderr, "e: %v (see %s)\n", err, helpName(err))
	return 2
}

// sessionEnv is the process's environment for the session layer.
func sessionEnv() (session.Env, error) {
	cwd, err := os.Getwd()
	if err != nil {
		return session.Env{}, err
	}
	home, err := store.Home()
	if err != nil {
		return session.Env{}, err
	}
	return session.Env{Cwd: cwd, Home: home, Getenv: os.Getenv}, nil
}

func channel() string {
	if strings.Contains(version, "-dev") {
		return "dev"
	}
	return "stable"
}

// commit is the VCS revision from the build info, or "unknown".
func commit() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				return s.Value
			}
		}
	}
	return "unknown"
}
