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
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"

	"github.com/e-agent/e/internal/session"
	"github.com/e-agent/e/internal/store"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "0.1.0-dev"

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

const usage = `usage:
  e -p PROMPT [--json] [run options]   run one turn (prompt from the argument and/or piped stdin)
  e rpc [run options]                  serve sessions over JSON Lines on stdin/stdout
  e trust [--list | --revoke] [DIR]    record that DIR's AGENTS.md may be used
  e schema [NAME | --out DIR]          print the JSON Schemas of the protocol, or write them for generators
  e export LOG.jsonl [OUT.html]        write a saved session as one HTML page
  e --version

run options:
  -m, --model ID         model (see models.list); default from settings or the offline model
  --ef, --effort LEVEL   reasoning effort
  --nt, --no-tools       offer no tools
  --ne, --no-extensions  load no extensions
  --no-save              keep sessions memory-only
  --approval POLICY      ask before tool calls run: never (default), writes (writes, commands,
                         extension and MCP tools) or all; e -p has nobody to ask, so it denies them
  --image PATH           attach an image to the prompt (e -p; repeatable)
`

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "rpc":
		return runRPC(args[1:], stdin, stdout, stderr)
	case "trust":
		return runTrust(args[1:], stdout, stderr)
	case "schema":
		return runSchema(args[1:], stdout, stderr)
	case "export":
		return runExport(args[1:], stdout, stderr)
	case "--version", "-version", "version":
		fmt.Fprintf(stdout, "e %s (%s, commit %s)\n", version, channel(), commit())
		return 0
	case "-h", "--help", "-help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	return runPrint(args, stdin, stdout, stderr)
}

// runFlags are the options every run mode shares (L1, P6).
type runFlags struct {
	model, effort          string
	noTools, noExt, noSave bool
	help, version          bool
	approval               string
}

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
	fs.BoolVar(&f.help, "help", false, "show usage")
	fs.BoolVar(&f.help, "h", false, "show usage")
	fs.BoolVar(&f.version, "version", false, "show the version")
}

func (f *runFlags) options() session.Options {
	return session.Options{Model: f.model, Effort: f.effort, NoTools: f.noTools, NoExtensions: f.noExt,
		NoSave: f.noSave, Approval: f.approval, Version: version, Channel: channel(), Commit: commit()}
}

// parse parses flags that may stand before or after positional arguments:
// the standard library's flag stops at the first positional, so parsing
// resumes after each one. "--" ends the flags.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
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

func usageError(stderr io.Writer, err error) int {
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stderr, usage)
		return 2
	}
	fmt.Fprintf(stderr, "e: %v (see e --help)\n", err)
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
