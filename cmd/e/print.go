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

	"github.com/e-agent/e/internal/agent"
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
	prompt, err := promptText(strings.Join(pos, " "), stdin)
	if err != nil {
		if f, ok := stdin.(*os.File); ok && isTerminal(f) {
			// Someone at a terminal typed e -p alone: show them how.
			fmt.Fprintf(stderr, "e: %v\n\n%s", err, printHelp)
			return 2
		}
		return usageError(stderr, err)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	// With SIGPIPE caught, a write to a stdout nobody reads any more fails
	// with EPIPE instead of killing e silently, so it can say why it stops.
	pipe := make(chan os.Signal, 1)
	signal.Notify(pipe, syscall.SIGPIPE)
	defer signal.Stop(pipe)
	ctx, stopTurn := context.WithCancel(ctx)
	defer stopTurn()
	env, err := sessionEnv()
	if err != nil {
		fmt.Fprintf(stderr, "e: %v\n", err)
		return 1
	}
	// Images are checked before anything is created: a bad one leaves no
	// saved session behind.
	if _, err := agent.LoadImages(env.Cwd, images); err != nil {
		fmt.Fprintf(stderr, "e: --image: %v\n", err)
		return 2
	}
	opts, closeLog, err := f.sessionOptions()
	if err != nil {
		return usageError(stderr, err)
	}
	defer closeLog()
	defer startTracing(env.Getenv, stderr, "e")()
	// The caller's trace (W1): TRACEPARENT, as other agents' CLIs take it.
	if tp := env.Getenv("TRACEPARENT"); tp != "" {
		if err := trace.CheckTraceparent(tp); err != nil {
			fmt.Fprintf(stderr, "e: warning: TRACEPARENT ignored: %v\n", err)
		} else {
			ctx = trace.WithParent(ctx, tp)
		}
	}
	host, err := session.Start(ctx, opts, env, printUI{stderr})
	if err != nil {
		return startFailed(opts.Log, stderr, "e", err)
	}
	defer host.Shutdown()
	sess, err := host.Create(ctx, session.Spec{Save: !f.noSave})
	if err != nil {
		fmt.Fprintf(stderr, "e: %v\n", err)
		return 1
	}
	prog := printProgress(stderr, jsonOut, verbose, quiet, sess.Info().Model)
	out := &lineWriter{w: stdout, failed: func(err error) {
		prog.say(fmt.Sprintf("e: writing stdout: %v; stopping the turn", err))
		stopTurn()
	}}
	text := &reply{write: out.text, note: prog.say}
	turn, err := sess.Prompt(ctx, prompt, images, func(ev agent.Event) {
		switch ev := ev.(type) {
		case agent.Warning:
			prog.say("e: warning: " + ev.Message)
		}
		prog.event(ev)
		if jsonOut {
			b, _ := agent.Marshal(ev)
			out.line(b)
			return
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
		fmt.Fprintf(stderr, "e: %v\n", err)
		return 1
	}
	<-turn.Done()
	res := turn.Result()
	if res.Path == nil {
		res.Session = nil // a memory-only session is named by nothing the caller can use
	}
	if jsonOut {
		b, _ := json.Marshal(res)
		out.line(append([]byte(`{"type":"result",`), b[1:]...))
	} else if res.Output != "" && !strings.HasSuffix(res.Output, "\n") {
		out.text("\n")
	}
	if res.Error != nil {
		fmt.Fprintf(stderr, "e: %s\n", *res.Error)
	}
	if out.err != nil || res.Error != nil || res.Aborted {
		return 1
	}
	return 0
}

// printProgress chooses how e -p shows progress: --quiet or --json
// nothing, --verbose a line per event, a terminal on stderr a status line.
func printProgress(stderr io.Writer, jsonOut, verbose, quiet bool, model string) *progress {
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
	return newProgress(stderr, mode, width, os.Getenv("TERM"), os.Getenv("NO_COLOR") != "", model)
}

// promptText joins the argument and piped stdin (P2): the argument is the
// instruction, then a blank line, then the piped text.
func promptText(arg string, stdin io.Reader) (string, error) {
	piped := ""
	if f, ok := stdin.(*os.File); !ok || isPipe(f) {
		b, err := io.ReadAll(stdin)
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
}

func (l *lineWriter) text(s string) {
	if l.err == nil {
		_, l.err = io.WriteString(l.w, s)
		l.check()
	}
}

func (l *lineWriter) line(b []byte) {
	if l.err == nil {
		_, l.err = l.w.Write(append(b, '\n'))
		l.check()
	}
}

func (l *lineWriter) check() {
	if l.err != nil {
		l.failed(l.err)
	}
}
