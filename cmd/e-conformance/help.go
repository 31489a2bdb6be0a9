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

// helpPages are the help of e-conformance ("") and of each subcommand;
// testdata/help holds their golden copies (go test ./cmd/e-conformance
// -run TestHelp -update). A subcommand without a page fails that test.
var helpPages = map[string]string{
	"": `e-conformance runs the golden conformance cases (golden/*.txtar, built into this binary)
against any implementation of e rpc and e -p, and reports PASS, FAIL, SKIP or ERROR per
case with the divergence and a command that reproduces it. On a terminal a status line
shows the cases done, failed and running.

usage:
  e-conformance [flags] [CASE-GLOB …]   run the cases (all by default)
  e-conformance COMMAND --help          the help of a command

commands:
  record     record a client session against a server as a draft case
  coverage   the requirements, event types and schema properties, and the cases covering them
  selftest   the mutation self-test: every planted defect caught, every control passing
  proxy      a server behind the mutation proxy, with one planted defect
  mutants    the self-test's mutants and controls
  client     judge a client of e rpc against scripted scenarios

flags:
  --server CMD          server command, e.g. "./e rpc" (default: e next to this binary or
                        on PATH, with rpc); print cases run it with rpc replaced by -p …
  --cases DIR           a directory of *.txtar cases instead of the built-in ones
  -j N                  cases run in parallel (default: the CPUs)
  --level LIST          levels to run, e.g. MUST,SHOULD (default MUST,SHOULD,MAY)
  --strict              fail fields and event types no schema describes (default: notes)
  --json                one JSON object per case on stdout, with its transcript
  --junit FILE          also write a JUnit XML report (strict Ant schema)
  --html FILE           also write a self-contained HTML report: verdicts by requirement,
                        each failure's first divergence and transcript
  --known-failing FILE  case ids expected to fail; such a case passing fails the run
  --timeout-scale F     multiply every case's timeout (slow machines, -race builds)

environment:
  NO_COLOR              no dimmed status line (TERM=dumb: no escape sequences)
  Each case runs the server with a fresh E_HOME and cwd, E_TAPE_API_KEY and the case's env.

exit status:
  0  every case passed (or failed as listed in --known-failing)
  1  a case failed, or a known-failing case passed
  2  a usage problem, a broken case, or a case the runner could not judge (ERROR)

examples:
  e-conformance --server "./e rpc"
  e-conformance --server "./e rpc" 'session-create-*' --level MUST
  e-conformance --junit report.xml golden/prompt-text.txtar
`,
	"record": `e-conformance record proxies a client session to a fresh server (cwd/ and home/ like a
case, the tape provider of spec/conformance.md §4) and writes it as a draft case: the
client lines, the server's lines as expectations, the model calls as a tape. Model calls
go to --upstream (recorded) or to the offline model. Signals it gets (TERM, HUP, INT) go
to the server and into the case as #signal; it exits as the server did. Any dialect:
e rpc, e --mode rpc (pi-rpc) and e acp sessions record alike. Its first stderr line names
the session's directory ("e-conformance record: cwd DIR"), which ACP's session/new needs.

usage:
  e-conformance record --out FILE [--model M] [--upstream URL] [--here] [--no-trust] [--like CASE] [--dialect D] -- CMD ARGS

flags:
  --out FILE            the case file to write, e.g. golden/new-case.txtar (required); its
                        name is the case id: lowercase letters, digits, dots and hyphens
  --model M             the default model when there is no upstream (default e/offline)
  --upstream URL        an OpenAI-compatible base URL to forward model calls to
  --here                record in the current directory and $E_HOME as they are, model calls
                        forwarded to the tape provider of $E_HOME/settings.json: the recorder
                        as a case's server re-records it
  --no-trust            do not run "e trust CWD" first
  --like CASE           take the description, header, fixtures and checks of CASE
  --dialect D           e-rpc, pi-rpc or acp (default: CASE's, else the one CMD names)

environment:
  E_RECORD_API_KEY      the upstream's key (sent upstream, never written to the case)

exit status:
  the server's (its signal's, when one ended it); 1 when the recording failed; 2 a usage problem

examples:
  e-conformance record --out golden/my-case.txtar -- ./e rpc
  e-conformance record --out golden/acp-my-case.txtar -- ./e acp
  e-conformance --server "e-conformance record --here --no-trust --like golden/prompt-text.txtar --out /tmp/re.txtar -- ./e rpc" prompt-text
  E_RECORD_API_KEY=… e-conformance record --out golden/real.txtar --upstream https://api.openai.com/v1 -- ./e rpc
`,
	"coverage": `e-conformance coverage lists every requirement of REQUIREMENTS.md with the cases that
cite it, then every event type and every property of every params, result and event
schema (derived from the schemas) with the cases that send or check it, UNCOVERED first,
then every property of the pi dialect's schemas (schemas/pi) with the pi-rpc cases; the
counts of uncovered ones go to stderr.

usage:
  e-conformance coverage [--cases DIR] [--fail-uncovered KINDS]

flags:
  --cases DIR             a directory of *.txtar cases instead of the built-in ones
  --fail-uncovered KINDS  exit 1 when something of these kinds has no case: a comma-separated
                          list of requirements, events, properties, pi-properties, or all

exit status:
  0  listed (and nothing of --fail-uncovered's kinds is uncovered)
  1  something of --fail-uncovered's kinds has no case
  2  a usage problem, or a case that does not load

examples:
  e-conformance coverage
  e-conformance coverage --fail-uncovered requirements,events,properties
  e-conformance coverage --cases golden | grep UNCOVERED
`,
	"selftest": `e-conformance selftest proves the suite's strength: it runs the cases against a reference
server as it is (all must pass), then through a byte-transparent proxy with each control
(unknown fields, unknown event types, re-encoded JSON, slow chunked lines: all must still
pass), then with each mutant, one planted defect at a time (every event type dropped,
every field dropped or falsified, every method answered without being performed, every
optional parameter ignored, lines duplicated or reordered, wrong stamps, noise on stdout,
wrong exit status), on the cases the mutant changes, until one fails. It prints the
survivors and the mutation score.

usage:
  e-conformance selftest [flags]

flags:
  --server CMD          the reference server (default: e next to this binary or on PATH, with rpc)
  --cases DIR           a directory of *.txtar cases instead of the built-in ones
  --survivors FILE      mutants no case can catch, NAME # reason per line (default: the
                        built-in golden/survivors.txt)
  --only PREFIXES       comma-separated prefixes of the mutants to try (default: all)
  -j N                  mutants tried at once (default: the CPUs)
  --timeout-scale F     multiply every case's timeout
  --json                the report as JSON
  -v                    a line per mutant on stderr as it is judged

exit status:
  0  every mutant caught (or listed), every control passing
  1  a mutant survives unlisted, a listed one is caught, a control fails, or a case fails
     without any mutant
  2  a usage problem

examples:
  e-conformance selftest --server "./e rpc" -j 2
  e-conformance selftest --server "./e rpc" --only drop-event/,noop/ -v
`,
	"proxy": `e-conformance proxy runs a server behind the mutation proxy with one planted defect (or
none: identity). Lines the mutant leaves alone pass byte for byte; SIGTERM, SIGHUP and
SIGINT are forwarded; the server's exit status (or killing signal) becomes the proxy's.

usage:
  e-conformance proxy [--mutant NAME] -- CMD ARGS

flags:
  --mutant NAME         the defect to plant (e-conformance mutants lists them; default identity)

exit status:
  the server's, unless the mutant changes it; 2 a usage problem

examples:
  e-conformance --server "e-conformance proxy --mutant drop-event/steered -- ./e rpc" 'steer-*'
`,
	"mutants": `e-conformance mutants lists the self-test's controls and mutants, one per line: kind,
class and name.

usage:
  e-conformance mutants

exit status:
  0  listed

examples:
  e-conformance mutants | grep noop/
`,
	"client": `e-conformance client judges a client of e rpc: the kit plays the server through scripted
scenarios (a client started with E_RPC set spawns it) and checks what the client sends
and how it handles what it gets (spec/conformance.md §6).

usage:
  e-conformance client --command "CLIENT ARGS" [flags] [SCENARIO-GLOB …]

flags:
  --command CMD         the client's command line (required)
  --cases DIR           *.json scenarios added to (or replacing by id) the built-in ones
  --list                list the scenarios and the client bugs each catches
  -j N                  scenarios run in parallel
  --json                one JSON object per scenario
  --junit FILE          also write a JUnit XML report
  --timeout-scale F     multiply every timeout

environment:
  E_RPC                 set for the client: the server command it must start

exit status:
  0  every scenario passed
  1  a scenario failed
  2  a usage problem

examples:
  e-conformance client --list
  e-conformance client --command "python3 -m e_client.task"
`,
	"client-relay": `e-conformance client-relay is the server command a client under test starts (E_RPC): it
relays the client's lines to the kit's socket and back. e-conformance client starts it;
people do not.

usage:
  e-conformance client-relay SOCKET

exit status:
  0  the client closed its stdin
  2  a usage problem

examples:
  (started by e-conformance client)
`,
}

// parseFlags parses args into fs; on an error it says so in one line,
// with the nearest flag for an unknown one, and reports false.
func parseFlags(fs *flag.FlagSet, args []string, stderr io.Writer) bool {
	// One line of our own instead of flag's usage dump; the command's
	// Usage stays for its other usage errors.
	usage, out := fs.Usage, fs.Output()
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.Usage = usage
	fs.SetOutput(out)
	if err == nil {
		return true
	}
	msg := cli.FlagMessage(fs, err)
	if errors.Is(err, flag.ErrHelp) {
		msg = "bad help flag"
	}
	fmt.Fprintf(stderr, "%s: %s (see %s --help)\n", fs.Name(), msg, fs.Name())
	return false
}

// unknownCommand reports a first word that is no command but nearly one,
// before it is taken for a case glob that matches nothing.
func unknownCommand(word string, stderr io.Writer) bool {
	if strings.ContainsAny(word, "-*?[/.") {
		return false // a flag, a glob or a path
	}
	var names []string
	for name := range subcommands {
		names = append(names, name)
	}
	slices.Sort(names)
	near, ok := suggest.Nearest(word, names)
	if !ok {
		return false
	}
	fmt.Fprintf(stderr, "e-conformance: unknown command %q (did you mean e-conformance %s?)\n", word, near)
	return true
}
