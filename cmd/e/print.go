package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/e-agent/e/internal/agent"
	"github.com/e-agent/e/internal/model"
	"github.com/e-agent/e/internal/session"
	"github.com/e-agent/e/internal/statusline"
	"github.com/e-agent/e/internal/trace"
)

// printUI refuses every question at once (X5: e -p has no one to ask) and
// reports extension notices on stderr.
type printUI struct{ stderr io.Writer }

func (printUI) Ask(context.Context, string, string, json.RawMessage) (json.RawMessage, error) {
	return nil, session.ErrNoUI
}

func (u printUI) Notice(n session.Notice) {
	fmt.Fprintf(u.stderr, "e: %s: %s\n", n.Extension, n.Message)
}

type imageList []string

func (l *imageList) String() string     { return strings.Join(*l, ",") }
func (l *imageList) Set(v string) error { *l = append(*l, v); return nil }

// runPrint is e -p (P1–P8).
func runPrint(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var f runFlags
	var printMode, jsonOut bool
	var images imageList
	fs := newFlagSet("e", stderr)
	f.register(fs)
	fs.BoolVar(&printMode, "p", false, "run one turn")
	fs.BoolVar(&printMode, "print", false, "run one turn")
	fs.BoolVar(&jsonOut, "json", false, "print events as JSON lines")
	fs.Var(&images, "image", "attach an image")
	var resume string
	fs.StringVar(&resume, "resume", "", "continue a saved session: its log's path or its id")
	var schemaFile string
	fs.StringVar(&schemaFile, "output-schema", "", "the reply must be a JSON value of this schema")
	var verbose, quiet bool
	for _, n := range []string{"v", "verbose"} {
		fs.BoolVar(&verbose, n, false, "one line on stderr per step")
	}
	for _, n := range []string{"q", "quiet"} {
		fs.BoolVar(&quiet, n, false, "no progress on stderr")
	}
	pos, err := parse(fs, args)
	if err != nil {
		return usageError(stderr, err)
	}
	if f.help {
		fmt.Fprint(stdout, printHelp)
		return 0
	}
	if f.version {
		fmt.Fprintf(stdout, "e %s\n", version)
		return 0
	}
	if !printMode {
		return usageError(stderr, fmt.Errorf("no command: e -p PROMPT runs one turn"))
	}
	prompt, err := promptText(strings.Join(pos, " "), stdin, stderr, stdinHint)
	if err != nil {
		if f, ok := stdin.(*os.File); ok && isTerminal(f) {
			// Someone at a terminal typed e -p alone: show them how.
			fmt.Fprintf(stderr, "e: %v\n\n%s", err, printHelp)
			return 2
		}
		return usageError(stderr, err)
	}

	sigCtx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	// With SIGPIPE caught, a write to a stdout nobody reads any more fails
	// with EPIPE instead of killing e silently, so it can say why it stops.
	pipe := make(chan os.Signal, 1)
	signal.Notify(pipe, syscall.SIGPIPE)
	defer signal.Stop(pipe)
	ctx, stopTurn := context.WithCancel(sigCtx)
	defer stopTurn()
	prog := printProgress(stderr, jsonOut, verbose, quiet)
	out := &lineWriter{w: stdout, failed: func(err error) {
		prog.say(fmt.Sprintf("e: writing stdout: %v; stopping the turn", err))
		stopTurn()
	}}
	prog.breakLine = out.breakLine(sameFile(stdout, stderr))
	// fail ends a run refused after its flags were read (P4): the error on
	// stderr, and with --json a result line saying it (P7), so a reader of
	// stdout always gets one.
	fail := func(err error) int {
		res := agent.Result{Model: f.model, Effort: f.effort, Warnings: []string{}, StopReason: agent.StopError}
		msg := err.Error()
		if sigCtx.Err() != nil {
			msg, res.Aborted, res.StopReason = "interrupted", true, agent.StopInterrupted
		} else {
			res.Error = &msg
		}
		if jsonOut {
			b, _ := json.Marshal(res)
			out.line(append([]byte(`{"type":"result",`), b[1:]...))
		}
		prog.say("e: " + msg)
		return 1
	}
	env, err := sessionEnv()
	if err != nil {
		return fail(err)
	}
	// Images are checked before anything is created: a bad one leaves no
	// saved session behind.
	if _, err := agent.LoadImages(env.Cwd, images); err != nil {
		fmt.Fprintf(stderr, "e: --image: %v\n", err)
		return 2
	}
	var popts session.PromptOptions
	if schemaFile != "" {
		b, err := os.ReadFile(schemaFile)
		if err != nil {
			fmt.Fprintf(stderr, "e: --output-schema: %v\n", err)
			return 2
		}
		if _, err := agent.NewOutputSchema(b); err != nil {
			fmt.Fprintf(stderr, "e: --output-schema %s: %v\n", schemaFile, err)
			return 2
		}
		popts.OutputSchema = b
	}
	opts, closeLog, err := f.sessionOptions()
	if err != nil {
		return usageError(stderr, err)
	}
	defer closeLog()
	defer startTracing(env.Getenv, stderr, "e")()
	// The caller's trace (Z1): TRACEPARENT, as other agents' CLIs take it.
	if tp := env.Getenv("TRACEPARENT"); tp != "" {
		if err := trace.CheckTraceparent(tp); err != nil {
			fmt.Fprintf(stderr, "e: warning: TRACEPARENT ignored: %v\n", err)
		} else {
			ctx = trace.WithParent(ctx, tp)
		}
	}
	ui := printUI{stderr} // the process's and the session's: e -p has one of each
	host, err := session.Start(ctx, opts, env, ui)
	if err != nil {
		logStartFailure(opts.Log, err)
		return fail(err)
	}
	defer host.Shutdown()
	sess, err := host.Create(ctx, session.Spec{Save: !f.noSave, Resume: resume, UI: ui})
	if err != nil {
		return fail(err)
	}
	prog.model = sess.Info().Model
	if w := sess.Info().Warning; w != "" && resume != "" {
		prog.say("e: warning: " + w)
	}
	text := &reply{write: out.text, note: prog.say, midLine: func() bool { return out.mid }}
	structured := popts.OutputSchema != nil
	turn, err := sess.PromptWith(ctx, prompt, images, popts, func(ev agent.Event) {
		switch ev := ev.(type) {
		case agent.Warning:
			// -q keeps the one warning a person who chose the offline model
			// on purpose (a demo, a test) would see on every run.
			if !quiet || ev.Message != model.OfflineWarning {
				prog.say("e: warning: " + ev.Message)
			}
		}
		prog.event(ev)
		if jsonOut {
			b, _ := agent.Marshal(ev)
			out.line(b)
			return
		}
		if structured {
			return // stdout gets the value alone, once it is valid
		}
		switch ev := ev.(type) {
		case *agent.Text:
			text.text(ev.Delta)
		case agent.Discarded:
			if ev.Reason == "retry" {
				text.discard()
			}
		case agent.UsageEvent:
			text.callDone()
		}
	})
	if err != nil {
		return fail(err)
	}
	<-turn.Done()
	res := turn.Result()
	if res.Path == nil {
		res.Session = nil // a memory-only session is named by nothing the caller can use
	}
	if jsonOut {
		b, _ := json.Marshal(res)
		out.line(append([]byte(`{"type":"result",`), b[1:]...))
	} else if structured {
		if res.StructuredOutput != nil {
			out.line(res.StructuredOutput)
		}
	} else if out.mid {
		out.text("\n")
	}
	switch {
	case res.Error != nil:
		prog.say("e: " + *res.Error)
	case res.Aborted && sigCtx.Err() != nil:
		// The page's exit table: an interrupted turn is status 1, said in
		// words so it is not taken for a failure with nothing to say.
		prog.say("e: interrupted")
	}
	if out.err != nil || res.Error != nil || res.Aborted {
		return 1
	}
	return 0
}

// sameFile reports whether stdout and stderr are one file (a terminal both
// write to, 2>&1 into a pipe), where a line on stderr after a reply that
// ends mid-line would otherwise continue that line.
func sameFile(stdout, stderr io.Writer) bool {
	a, ok1 := stdout.(*os.File)
	b, ok2 := stderr.(*os.File)
	if !ok1 || !ok2 {
		return false
	}
	sa, err1 := a.Stat()
	sb, err2 := b.Stat()
	return err1 == nil && err2 == nil && os.SameFile(sa, sb)
}

// printProgress chooses how e -p shows progress: --quiet or --json
// nothing, --verbose a line per event, a terminal on stderr a status line.
func printProgress(stderr io.Writer, jsonOut, verbose, quiet bool) *progress {
	mode, width := progressNone, 0
	if f, ok := stderr.(*os.File); ok {
		var term bool
		if term, width = statusline.Terminal(f); term {
			mode = progressStatus
		}
	}
	switch {
	case quiet || jsonOut:
		mode = progressNone
	case verbose:
		mode = progressVerbose
	}
	return newProgress(stderr, mode, width, os.Getenv("TERM"), os.Getenv("NO_COLOR") != "", "")
}

// stdinHint is how long e -p waits for piped stdin to close before it
// says what it is waiting for.
const stdinHint = 2 * time.Second

// promptText joins the argument and piped stdin (P2): the argument is the
// instruction, then a blank line, then the piped text. A pipe still open
// after hint gets a line on stderr: a writer that never closes (sleep 6 |
// e -p …, a parent that leaves stdin open) would otherwise look like a hang.
func promptText(arg string, stdin io.Reader, stderr io.Writer, hint time.Duration) (string, error) {
	piped := ""
	if f, ok := stdin.(*os.File); !ok || isPipe(f) {
		t := time.AfterFunc(hint, func() {
			fmt.Fprintln(stderr, "e: waiting for stdin to close (e -p reads piped input to its end; use </dev/null for none)")
		})
		b, err := io.ReadAll(stdin)
		t.Stop()
		if err != nil {
			return "", fmt.Errorf("reading stdin: %w", err)
		}
		piped = string(b)
	}
	switch {
	case strings.TrimSpace(arg) != "" && strings.TrimSpace(piped) != "":
		return arg + "\n\n" + piped, nil
	case strings.TrimSpace(arg) != "":
		return arg, nil
	case strings.TrimSpace(piped) != "":
		return piped, nil
	}
	return "", fmt.Errorf("empty prompt: give it as an argument or on piped stdin")
}

// isPipe reports whether f is a pipe or a file, not a terminal.
func isPipe(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice == 0
}

// isTerminal reports whether f is a terminal: /dev/null (cron, CI) is a
// character device but no one is there to read a help page.
func isTerminal(f *os.File) bool {
	term, _ := statusline.Terminal(f)
	return term
}

// lineWriter writes to stdout and remembers the first failure, which it
// reports to failed once.
type lineWriter struct {
	w      io.Writer
	failed func(error)
	err    error
	mid    bool // the last text written did not end a line
}

func (l *lineWriter) text(s string) {
	if l.err == nil && s != "" {
		_, l.err = io.WriteString(l.w, s)
		l.mid = s[len(s)-1] != '\n'
		l.check()
	}
}

func (l *lineWriter) line(b []byte) {
	if l.err == nil {
		_, l.err = l.w.Write(append(b, '\n'))
		l.mid = false
		l.check()
	}
}

// breakLine returns what progress asks before a line on stderr: whether
// to end stdout's unfinished line first. Only a stderr that is stdout's
// own file needs it; the break then ends stdout's line too.
func (l *lineWriter) breakLine(shared bool) func() bool {
	return func() bool {
		if !shared || !l.mid {
			return false
		}
		l.mid = false
		return true
	}
}

func (l *lineWriter) check() {
	if l.err != nil {
		l.failed(l.err)
	}
}
