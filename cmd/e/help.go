package main

import (
	"fmt"
	"strings"
)

// The help pages. Each says what the command does, its flags, the
// environment it reads, its exit statuses, where settings live and a few
// examples; testdata/help holds their golden copies.

// mainHelp is e --help: the commands from the table, then what they share.
func mainHelp() string {
	var b strings.Builder
	b.WriteString(`e is a coding agent without a terminal: e -p runs one turn from a script or a pipe,
e rpc serves many sessions to a program over JSON Lines.

usage:
  e -p PROMPT [flags]    run one turn
  e COMMAND [args]       run a command
  e COMMAND --help       the help of a command
  e --mode rpc|json …    speak pi 1.6.0's RPC protocol or JSON stream (e --mode rpc --help)

commands:
`)
	fmt.Fprintf(&b, "  %-9s %s\n", printCommand.name, printCommand.summary)
	for _, c := range commands {
		fmt.Fprintf(&b, "  %-9s %s\n", c.name, c.summary)
	}
	b.WriteString(`
` + environmentHelp + `
` + settingsHelp + `
exit status:
  0 success, 1 a failure (said on stderr), 2 a usage problem; each command's page has more.

examples:
  e -p "what does this repo do"
  git diff | e -p "review this diff" -m anthropic/claude-sonnet-4-5
  e rpc --log ~/e-rpc.log
`)
	return b.String()
}

const runFlagsHelp = `  -m, --model ID           model, e.g. openai/gpt-5.5 (default: default_model in settings,
                           else a model whose key is set, else the offline model e/offline)
  --ef, --effort LEVEL     reasoning effort of the model (e.g. low, medium, high)
  --nt, --no-tools         offer the model no tools
  --ne, --no-extensions    load no extensions
  --no-save                keep sessions in memory: write no session log
  --approval POLICY        which tool calls need the client's approval: never (default),
                           writes or all (e -p has no one to ask: such calls are denied)
  --system-prompt TEXT     replace e's own system prompt text (the environment, tool
                           guidance and AGENTS.md are still added); settings: system_prompt
  --append-system-prompt TEXT
                           add TEXT at the end of the system prompt, after settings'
                           append_system_prompt
  --log FILE               append the operator log (JSON lines: model and tool calls,
                           sessions, errors; never keys or prompt text) to FILE
  --log-content            put prompt text and tool arguments in the log too (redacted)
  --max-model-calls N, --max-tokens N, --max-cost-usd USD, --max-duration-ms MS
                           every turn's budget (settings: the same names; a session's or
                           prompt's own replaces it): reached, the turn stops before its
                           next model call with that stop reason; --max-cost-usd needs a
                           model with prices
  --sandbox MODE           confine every command a session runs (bash, shell): off (default),
                           workspace-write (write only the cwd, --writable-root dirs and a
                           private TMPDIR) or read-only; no network unless --sandbox-network;
                           settings: sandbox. Sessions may narrow it, never widen it
  --writable-root DIR      a directory commands may also write under workspace-write
                           (repeatable); settings: writable_roots
  --sandbox-network        sandboxed commands may reach the network; settings: sandbox_network
`

const environmentHelp = `environment:
  E_HOME              e's home: settings, sessions, trust list (default ~/.e)
  OPENAI_API_KEY      key of the openai provider
  ANTHROPIC_API_KEY   key of the anthropic provider
                      (a provider declared in settings names its own key variable: api_key_env)
  E_LOG               the operator log's file when --log is not given
  E_SANDBOX_KERNEL_LIMIT
                      take the kernel as less capable than it is (landlock=N, userns=0,
                      seccomp=0), to test refusals of sandboxes; it can only take away
  NO_COLOR            e -p's status line is not dimmed (TERM=dumb: no escape sequences)
  GOGC                the Go collector's target; e uses 200 (less CPU, a little more memory)
                      unless it is set
  OTEL_EXPORTER_OTLP_ENDPOINT
                      export OpenTelemetry traces (a span per turn, model call and tool call)
                      over OTLP/HTTP; also OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, _HEADERS,
                      _TIMEOUT, OTEL_TRACES_EXPORTER=none, OTEL_SERVICE_NAME (spec/operations.md)
  TRACEPARENT         e -p: the caller's W3C trace, which the turn joins; providers get it
`

const settingsHelp = `settings:
  $E_HOME/settings.json: default_model, providers, extensions, mcp_servers, tool_concurrency,
  compact_threshold, stall_timeout_ms, max_attempts, system_prompt,
  append_system_prompt, max_model_calls, max_tokens, max_cost_usd, max_duration_ms,
  sandbox, writable_roots, sandbox_network (spec/persistence.md). Sessions are saved under
  $E_HOME/sessions.
`

const printHelp = `e -p runs one turn and exits. The prompt is the argument, or piped stdin, or both (the
argument, a blank line, then stdin). The reply streams to stdout; warnings and the error go
to stderr. The session is saved under $E_HOME/sessions unless --no-save.

usage:
  e -p PROMPT [flags]
  COMMAND | e -p [PROMPT] [flags]

flags:
  -p, --print              run one turn (required)
  --json                   print every event as a JSON line, then a {"type":"result",…} line
  --image PATH             attach an image (PNG, JPEG, GIF, WebP; repeatable)
  --resume LOG|ID          continue a saved session: its log's path, or its id (looked up in
                           $E_HOME/sessions); with --no-save a read-only copy, said on stderr
  --output-schema FILE     the reply must be one JSON value valid against the JSON Schema
                           in FILE: stdout gets just that value (after at most one
                           corrective model call), exit 0 only when it is valid
  -v, --verbose            one line on stderr per step (model call, tool call, retry,
                           compaction), wherever stderr goes
  -q, --quiet              no progress on stderr (warnings and the error still, but for
                           the offline model's)
                           By default a terminal stderr shows one status line, erased as
                           the reply streams; a piped stderr shows none. stdout only ever
                           carries the reply.
` + runFlagsHelp + `
` + environmentHelp + `
` + settingsHelp + `
exit status:
  0  the turn completed
  1  the turn failed (the error is on stderr; with --json in the result line too), was
     interrupted (Ctrl-C, SIGTERM: "e: interrupted" on stderr), was stopped by a budget
     (e: stopped: max_cost_usd 0.50 reached ($0.52 spent)) or its reply stayed invalid
     against --output-schema
  2  a usage problem: unknown flag, empty prompt, bad --image

examples:
  e -p "what does this repo do"
  git diff | e -p "review this diff" --no-save
  e -p "and now the tests" --resume 01J9ZX3K8Q
  e -p "/text hello from e" --json        # the offline model: no key needed
  e -p "fix the failing test" --append-system-prompt "$(cat review-rules.md)"
  git diff | e -p --output-schema review.json --max-cost-usd 0.50 "review this diff"
`

const rpcHelp = `e rpc serves sessions over JSON Lines: one request per line on stdin, responses, events
and asks on stdout, nothing else on stdout. It runs until stdin ends, a shutdown request,
SIGTERM, SIGHUP or SIGINT. The protocol is spec/protocol.md; e schema prints its JSON Schemas.

usage:
  e rpc [flags]

flags:
` + runFlagsHelp + `
` + environmentHelp + `
` + settingsHelp + `
exit status:
  0  stdin ended or shutdown was requested
  1  start-up failed (bad settings, unknown --model), or a line too long to resynchronise
  2  a usage problem
  129, 130, 143  ended by SIGHUP, SIGINT, SIGTERM

examples:
  e rpc
  echo '{"id":1,"method":"session.create","params":{}}' | e rpc --no-save
  e rpc -m openai/gpt-5.5 --ne --log /var/log/e/rpc.jsonl
`

const acpHelp = `e acp is an Agent Client Protocol (ACP v1) agent for editors (Zed, JetBrains, Neovim
plugins …): JSON-RPC 2.0, one message per line on stdin and stdout, nothing else on stdout.
Sessions are saved, so session/load and session/list find them. Tool calls that write or run
commands ask the editor first (session/request_permission) unless --approval says otherwise.
The mapping is spec/acp.md.

usage:
  e acp [flags]

flags:
` + runFlagsHelp + `  (e acp's default --approval is writes)

` + environmentHelp + `
` + settingsHelp + `
exit status:
  0  stdin ended
  1  start-up failed (bad settings, unknown --model), or a line too long to resynchronise
  2  a usage problem

examples:
  e acp                                  # as the agent command of an editor
  e acp --approval all -m anthropic/claude-sonnet-4-5
`

const trustHelp = `e trust records that a directory's AGENTS.md may be used: a session in an untrusted
directory that has an AGENTS.md (in it or a parent) is refused. Trust covers the
directory's subdirectories. The list is $E_HOME/trust.json.

usage:
  e trust DIR              trust DIR (its real path: symlinks resolved)
  e trust --revoke DIR     forget DIR
  e trust --list           print the trusted directories, one per line

flags:
  --list                   print the list
  --revoke                 remove DIR from the list

environment:
  E_HOME              where trust.json lives (default ~/.e)

exit status:
  0  done
  1  DIR is not a directory, or trust.json could not be read or written
  2  a usage problem

examples:
  e trust .
  e trust --list
  e trust --revoke ~/src/old
`

const schemaHelp = `e schema prints the JSON Schemas (draft 2020-12) of the protocol from the binary, so a
client can generate its types: all of them as one document, or one by name as a
self-contained document, or one file per schema into a directory.

usage:
  e schema                 every schema, one document with $defs
  e schema NAME            one schema, e.g. session.create.params, events/text
  e schema index           the names
  e schema --out DIR       one self-contained file per schema in DIR

flags:
  --out DIR                write the files into DIR (created when missing)

exit status:
  0  printed
  1  DIR could not be written
  2  an unknown schema name, or a usage problem

examples:
  e schema session.prompt.params
  e schema index
  e schema --out schemas-out
`

const modelsHelp = `e models lists the models e knows, as models.list does over e rpc: the built-in ones and
those of settings.json's providers. MODEL is the name -m, session.create's model and
default_model take; AVAILABLE says whether its provider's key variable is set (e doctor names
the variables); CONTEXT is the context window in tokens; EFFORT the effort levels it takes.

usage:
  e models [--json]

flags:
  --json    print models.list's result ({default, models}) as one JSON line

environment:
  E_HOME    settings.json lives in $E_HOME (default ~/.e)

exit status:
  0  listed
  1  settings.json could not be read
  2  a usage problem

examples:
  e models
  e models --json | jq -r '.models[] | select(.available) | .model'
`

const exportHelp = `e export writes a saved session as one self-contained HTML page: markdown rendered,
code highlighted, each tool call with its result, usage and cost, errors and interrupts
where they happened, edits as diffs; light or dark as the reader's system prefers. The
page has no script and fetches nothing. LOG is a log's path or a session's id (looked up
in every directory of $E_HOME/sessions). Without OUT the page goes beside the log (LOG
with .html for .jsonl). It prints the page's path.

usage:
  e export LOG.jsonl|ID [OUT.html]

environment:
  E_HOME              sessions live in $E_HOME/sessions/<dir>/<id>.jsonl

exit status:
  0  written
  1  LOG could not be found or read, or OUT could not be written
  2  a usage problem

examples:
  e export ~/.e/sessions/--home-me-src--/01J9ZX3K8Q.jsonl
  e export 01J9ZX3K8Q
  e export session.jsonl /tmp/session.html
`

const doctorHelp = `e doctor prints what e would use in this directory and checks it: the home, the settings
file, each provider with its API and address and whether its key variable is set (never
the key), the default model, the trusted directories and this directory's standing, and
the extensions found. Every problem of the settings file is listed, not the first alone. It
starts no extension and calls no model, unless --probe.

usage:
  e doctor [--probe]

flags:
  --probe    call each configured provider once (GET its models list: no tokens spent) and
             report what answers: an unreachable address, a refused key (naming its
             variable), the provider's request id. A built-in provider without its key is
             skipped

` + environmentHelp + `
exit status:
  0  no problem found
  1  a problem (each is a line starting with PROBLEM): bad settings, a default model that
     is unknown or lacks its key, an unreadable trust list, an extension whose command is
     missing, a home that cannot be written, a provider that failed its --probe
  2  a usage problem

examples:
  e doctor
  e doctor --probe
  E_HOME=/srv/e e doctor
`

const versionHelp = `e version prints e's version, release channel and commit.

usage:
  e version
  e --version

exit status:
  0  printed
`

const helpHelp = `e help shows the help of e, or of one command.

usage:
  e help [COMMAND]
  e COMMAND --help

exit status:
  0  shown
  2  an unknown command

examples:
  e help rpc
  e -p --help
`
