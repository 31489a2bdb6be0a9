package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/e-agent/e/internal/cli"
	"github.com/e-agent/e/internal/suggest"
)

// subcommand is one command of e. Adding one is one entry here: its name,
// its line in e --help, its help page and its run function (which receives
// the arguments after the name). Every page has a golden file in
// testdata/help (go test ./cmd/e -run TestHelp -update).
type subcommand struct {
	name, summary string
	help          string
	run           func(args []string, stdin io.Reader, stdout, stderr io.Writer) int
}

// printCommand is e -p, which is a flag rather than a word: e -m MODEL -p
// PROMPT is as good as e -p PROMPT -m MODEL.
var printCommand = subcommand{name: "-p", summary: "run one turn: prompt from the argument and/or piped stdin, reply on stdout",
	help: printHelp, run: runPrint}

// commands is set in init: help looks the table up.
var commands []subcommand

func init() {
	commands = []subcommand{
		{name: "rpc", summary: "serve sessions over JSON Lines on stdin/stdout", help: rpcHelp, run: runRPC},
		{name: "acp", summary: "be an Agent Client Protocol agent for editors on stdin/stdout", help: acpHelp, run: runACP},
		{name: "trust", summary: "record that a directory's AGENTS.md may be used", help: trustHelp,
			run: func(args []string, _ io.Reader, stdout, stderr io.Writer) int { return runTrust(args, stdout, stderr) }},
		{name: "schema", summary: "print the protocol's JSON Schemas", help: schemaHelp,
			run: func(args []string, _ io.Reader, stdout, stderr io.Writer) int { return runSchema(args, stdout, stderr) }},
		{name: "models", summary: "list the models e knows (models.list): the names -m takes, which have a key", help: modelsHelp,
			run: func(args []string, _ io.Reader, stdout, stderr io.Writer) int { return runModels(args, stdout, stderr) }},
		{name: "export", summary: "write a saved session as one HTML page", help: exportHelp,
			run: func(args []string, _ io.Reader, stdout, stderr io.Writer) int { return runExport(args, stdout, stderr) }},
		{name: "doctor", summary: "show what e would use here (home, settings, providers, keys, trust, extensions) and check it", help: doctorHelp,
			run: func(args []string, _ io.Reader, stdout, stderr io.Writer) int { return runDoctor(args, stdout, stderr) }},
		{name: "version", summary: "print the version", help: versionHelp,
			run: func(_ []string, _ io.Reader, stdout, _ io.Writer) int { return printVersion(stdout) }},
		{name: "help", summary: "show the help of e or of a command", help: helpHelp, run: runHelp},
	}
}

func lookup(name string) (subcommand, bool) {
	i := slices.IndexFunc(commands, func(c subcommand) bool { return c.name == name })
	if i < 0 {
		return subcommand{}, false
	}
	return commands[i], true
}

func commandNames() []string {
	var names []string
	for _, c := range commands {
		names = append(names, c.name)
	}
	return names
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, mainHelp())
		return 2
	}
	if piMode(args) {
		return runPi(args, stdin, stdout, stderr)
	}
	switch args[0] {
	case "-h", "--help", "-help":
		fmt.Fprint(stdout, mainHelp())
		return 0
	case "--version", "-version":
		return printVersion(stdout)
	}
	if c, ok := lookup(args[0]); ok {
		if cli.WantsHelp(args[1:]) {
			fmt.Fprint(stdout, c.help)
			return 0
		}
		return c.run(args[1:], stdin, stdout, stderr)
	}
	if !strings.HasPrefix(args[0], "-") && !slices.Contains(args, "-p") && !slices.Contains(args, "--print") {
		msg := fmt.Sprintf("e: unknown command %q", args[0])
		if near, ok := suggest.Nearest(args[0], commandNames()); ok {
			msg += fmt.Sprintf(" (did you mean e %s?)", near)
		}
		fmt.Fprintf(stderr, "%s; run e --help for the commands\n", msg)
		return 2
	}
	if cli.WantsHelp(args) {
		fmt.Fprint(stdout, printHelp)
		return 0
	}
	return runPrint(args, stdin, stdout, stderr)
}

func runHelp(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	switch {
	case len(args) == 0:
		fmt.Fprint(stdout, mainHelp())
		return 0
	case len(args) > 1:
		return usageError(stderr, fmt.Errorf("help takes one command"))
	case args[0] == "-p" || args[0] == "--print" || args[0] == "print":
		fmt.Fprint(stdout, printHelp)
		return 0
	}
	if c, ok := lookup(args[0]); ok {
		fmt.Fprint(stdout, c.help)
		return 0
	}
	msg := fmt.Sprintf("e help: unknown command %q", args[0])
	if near, ok := suggest.Nearest(args[0], commandNames()); ok {
		msg += fmt.Sprintf(" (did you mean %s?)", near)
	}
	fmt.Fprintln(stderr, msg)
	return 2
}

func printVersion(stdout io.Writer) int {
	fmt.Fprintf(stdout, "e %s (%s, commit %s)\n", version, channel(), commit())
	return 0
}

// flagError is a flag parsing failure of command cmd, with the nearest
// defined flag when the flag was unknown.
type flagError struct {
	cmd string
	err error
}

func (e *flagError) Error() string { return e.err.Error() }
func (e *flagError) Unwrap() error { return e.err }

// explainFlagError turns the flag package's error into one that names the
// nearest flag fs defines.
func explainFlagError(fs *flag.FlagSet, err error) error {
	return &flagError{cmd: fs.Name(), err: errors.New(cli.FlagMessage(fs, err))}
}

// helpName is how a usage error points at the right help page.
func helpName(err error) string {
	var fe *flagError
	if errors.As(err, &fe) {
		if fe.cmd == "e" { // e -p's flags
			return "e -p --help"
		}
		return "e " + fe.cmd + " --help"
	}
	return "e --help"
}
