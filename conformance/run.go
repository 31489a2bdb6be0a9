package conformance

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Verdict is the outcome of one case.
type Verdict string

const (
	Pass  Verdict = "PASS"
	Fail  Verdict = "FAIL"  // the server diverged from the case
	Error Verdict = "ERROR" // the case could not be judged (bad case, server would not start)
	Skip  Verdict = "SKIP"
)

// Divergence is the first place a run departed from its case.
type Divergence struct {
	Step     string `json:"step"` // "expect line 12 (@done)", "client line 3", "model call 2", "exit" …
	Message  string `json:"message"`
	Pointer  string `json:"pointer,omitempty"` // JSON pointer into the line
	Expected string `json:"expected,omitempty"`
	Got      string `json:"got,omitempty"`
}

func (d *Divergence) String() string {
	s := d.Step + ": " + d.Message
	if d.Pointer != "" || d.Expected != "" || d.Got != "" {
		ptr := d.Pointer
		if ptr == "" {
			ptr = "(root)"
		}
		s += "\n  at " + ptr + "\n  expected: " + d.Expected + "\n  got:      " + d.Got
	}
	return s
}

// Result is the report of one case.
type Result struct {
	ID           string         `json:"id"`
	File         string         `json:"file"`
	Level        string         `json:"level"`
	Requirements []string       `json:"requirements"`
	Verdict      Verdict        `json:"verdict"`
	Divergence   *Divergence    `json:"divergence,omitempty"`
	Bindings     map[string]any `json:"bindings,omitempty"`
	LastLines    []string       `json:"last_lines,omitempty"` // the tail of what the server printed
	Stderr       string         `json:"stderr,omitempty"`     // the tail of the server's stderr, on failure
	Duration     time.Duration  `json:"duration_ns"`
	Repro        string         `json:"repro,omitempty"`
	// Notes are what the server printed that the case and the schemas
	// ignored: unknown fields and event types (additive, P8).
	Notes []string `json:"notes,omitempty"`
	// Transcript is the whole conversation both ways, in order, with
	// times; JSON reports carry it for cases that did not pass.
	Transcript []Exchange `json:"transcript,omitempty"`
	// Lines is every line the server printed, in order (not in JSON reports).
	Lines   []string       `json:"-"`
	labelAt map[int]string // for Update: which line each label matched
	// status, signaled and stderr are how the process ended (run.status,
	// run.signaled) and the tail of its stderr, for the self-test's
	// predictions.
	status   int
	signaled bool
	stderr   string
}

// Exchange is one line of a transcript.
type Exchange struct {
	At   time.Time `json:"at"`
	Dir  string    `json:"dir"` // "sent" (client → server), "received" (server stdout), "model" (a model call's body), "signal"
	Line string    `json:"line"`
}

// LineValidator checks one line the server printed against the protocol's
// schemas. method is the method of the request a response answers: "" for
// events and process lines and for responses whose request is unknown,
// "oneshot" for the answer to a v1 one-shot line, MethodPrint for a line of
// e -p --json.
// It returns notes on what it ignored (fields and event types no schema
// describes, which the protocol's additivity allows).
type LineValidator interface {
	ValidateLine(line []byte, method string) (notes []string, err error)
}

// MethodPrint is the method LineValidator is given for the lines of e -p
// --json: unstamped events and the final result line.
const MethodPrint = "e -p --json"

// Options configure Run.
type Options struct {
	Server       []string      // the server command: argv, e.g. {"e", "rpc"}
	Validator    LineValidator // nil: lines are only checked to be JSON objects
	TimeoutScale float64       // multiplies every case's timeout; 0 means 1
	// NoTrust skips `e trust CWD` before each case, for servers that need
	// no trust (the runner's own fakes).
	NoTrust bool
	// trust is the command `e trust DIR` is derived from (its trailing rpc
	// replaced); nil: Server. The self-test trusts with the reference
	// server itself: through the mutation proxy it would start one more
	// proxy process per case, and no mutant changes what trust does.
	trust []string
	// never reports whether the server prints no line that could match
	// the expected line exp (method: the method of the request an
	// expected response answers, else ""): the self-test's mutant drops
	// every such line. A case waiting while an expected line no line can
	// meet is left fails at once instead of at its timeout: it could only
	// time out.
	never func(exp map[string]any, method string) bool
}

// SplitCommand splits a command line on blanks, honouring single and
// double quotes and backslash escapes (no expansions).
func SplitCommand(s string) ([]string, error) {
	var args []string
	var cur strings.Builder
	inArg, quote := false, rune(0)
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		c := rs[i]
		switch {
		case quote != 0 && c == quote:
			quote = 0
		case quote == '\'':
			cur.WriteRune(c)
		case c == '\\' && i+1 < len(rs) && quote != '\'':
			i++
			cur.WriteRune(rs[i])
			inArg = true
		case quote == '"':
			cur.WriteRune(c)
		case c == '\'' || c == '"':
			quote, inArg = c, true
		case c == ' ' || c == '\t' || c == '\n':
			if inArg {
				args = append(args, cur.String())
				cur.Reset()
				inArg = false
			}
		default:
			cur.WriteRune(c)
			inArg = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("conformance: unterminated %c quote in %q", quote, s)
	}
	if inArg {
		args = append(args, cur.String())
	}
	return args, nil
}

// DefaultTimeout applies to cases without timeout_ms.
const DefaultTimeout = 10 * time.Second

// Run plays c against a fresh server process in fresh temporary
// directories and returns its verdict. It never panics on a bad server.
func Run(ctx context.Context, c *Case, o Options) *Result {
	res := &Result{ID: c.ID, File: c.File, Level: c.Level, Requirements: c.Requirements}
	if c.Skip != "" {
		res.Verdict, res.Divergence = Skip, &Divergence{Step: "case", Message: c.Skip}
		return res
	}
	for _, cmd := range c.Requires {
		if _, err := exec.LookPath(cmd); err != nil {
			res.Verdict, res.Divergence = Skip, &Divergence{Step: "case", Message: "needs " + cmd + " on PATH (a fixture extension runs with it)"}
			return res
		}
	}
	start := time.Now()
	r := newRun(c, o)
	div, err := r.exec(ctx)
	res.Duration = time.Since(start)
	res.Lines = r.received
	res.labelAt = r.labelAt
	res.Bindings = r.m.bindings
	res.Notes = r.notes
	res.Transcript = r.transcript
	res.status, res.signaled, res.stderr = r.status, r.signaled, r.stderr.String()
	var skip skipError
	switch {
	case errors.As(err, &skip):
		res.Verdict, res.Divergence = Skip, &Divergence{Step: "case", Message: string(skip)}
		return res
	case err != nil:
		res.Verdict, res.Divergence = Error, &Divergence{Step: "setup", Message: err.Error()}
	case div != nil:
		res.Verdict, res.Divergence = Fail, div
	default:
		res.Verdict = Pass
	}
	if res.Verdict != Pass {
		res.LastLines = tail(r.received, 8)
		if r.c.printMode() && !r.c.jsonOutput() {
			res.LastLines = tail(strings.Split(strings.TrimSuffix(r.stdoutText, "\n"), "\n"), 8)
		}
		res.Stderr = r.stderr.String()
	}
	return res
}

// skipError is a reason why a case cannot apply to the server under test.
type skipError string

func (e skipError) Error() string { return string(e) }

type run struct {
	cmd       *exec.Cmd
	readers   sync.WaitGroup // the stdout reader, waited for by teardown
	signalled bool           // the client section sent a #signal
	exited    bool           // the client section waited for the exit (#exit)
	c         *Case
	d         dialect
	o         Options
	stderr    tailBuffer

	mu         sync.Mutex // guards what the tape's handlers share with the loop
	m          *matcher
	streams    map[string]*stream
	matched    map[string]bool   // labels seen
	methods    map[string]string // request id (canonical) → method of the request sent
	answered   map[string]int    // request id (canonical) → responses to it so far
	asked      map[string]int    // request id (canonical) → requests sent with it (a client may reuse one)
	received   []string
	labelAt    map[int]string // received line index → label it matched
	sawResult  bool           // print mode: the result line has arrived
	stdoutText string         // print mode with text output: all of stdout
	tapeDivs   []*Divergence
	notes      []string
	transcript []Exchange
	wake       chan struct{} // one pending signal: lines or tape news
	lineQueue  [][]byte
	eof        bool
	readErr    error
	killed     bool // the runner killed the server past the case's timeout
	status     int  // the exit status, 128+N for signal N (exitStatus); -1 before the exit
	signaled   bool // a signal killed the process
}

func newRun(c *Case, o Options) *run {
	r := &run{c: c, d: dialectOf(c), o: o, m: &matcher{bindings: map[string]any{}}, status: -1,
		streams: map[string]*stream{}, matched: map[string]bool{}, methods: map[string]string{}, answered: map[string]int{}, asked: map[string]int{},
		labelAt: map[int]string{}, wake: make(chan struct{}, 1)}
	for _, e := range joinExpected(r.d, c.expect) {
		s := r.stream(e.stream)
		if e.float {
			s.floats, s.floated = append(s.floats, e), append(s.floated, false)
		} else {
			s.exp = append(s.exp, e)
		}
		if lc, err := r.d.classify(e.value, c, nil); err == nil && lc.typ != "" && !isPattern(lc.typ) {
			s.types[lc.typ] = true
		}
	}
	return r
}

func (r *run) exec(ctx context.Context) (div *Divergence, err error) {
	if len(r.o.Server) == 0 {
		return nil, errors.New("conformance: no server command")
	}
	argv, err := r.command()
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "e-conformance-")
	if err != nil {
		return nil, fmt.Errorf("conformance: %w", err)
	}
	defer os.RemoveAll(tmp)
	if tmp, err = filepath.EvalSymlinks(tmp); err != nil {
		return nil, fmt.Errorf("conformance: %w", err)
	}
	cwd, home := filepath.Join(tmp, "cwd"), filepath.Join(tmp, "home")
	r.m.bindings["cwd"], r.m.bindings["home"] = cwd, home
	r.m.roots = []string{tmp}

	tape := &tapeServer{entries: r.c.tape, stop: make(chan struct{}),
		check: func(want, got any) *mismatch {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.transcript = append(r.transcript, Exchange{At: time.Now(), Dir: "model", Line: canon(got)})
			if want == nil {
				return nil
			}
			nb := map[string]any{}
			mm := r.m.match("", want, got, true, nb)
			if mm == nil {
				r.m.commit(nb)
			}
			return mm
		},
		keyed: func(key, got any) bool {
			r.mu.Lock()
			defer r.mu.Unlock()
			return r.m.match("", key, got, true, map[string]any{}) == nil // selects; binds nothing
		},
		report: func(d *Divergence) {
			r.mu.Lock()
			r.tapeDivs = append(r.tapeDivs, d)
			r.mu.Unlock()
			r.signal()
		}}
	baseURL, err := tape.start()
	if err != nil {
		return nil, err
	}
	defer tape.close()
	if err := writeFixtures(r.c, cwd, home, baseURL); err != nil {
		return nil, err
	}
	r.trust(cwd, home)

	stdin, pr, err := r.start(argv, cwd, home)
	if err != nil {
		return nil, err
	}
	cmd := r.cmd

	timeout := time.Duration(r.c.TimeoutMS) * time.Millisecond
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	if r.o.TimeoutScale > 0 {
		timeout = time.Duration(float64(timeout) * r.o.TimeoutScale)
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	killer := time.AfterFunc(timeout+time.Second, func() {
		r.mu.Lock()
		r.killed = true // a line it cuts short is the timeout's, reported as such
		r.mu.Unlock()
		killGroup(cmd)
	})
	defer killer.Stop()

	defer r.teardown(pr)

	p := &pump{r: r, deadline: deadline.C, ctx: ctx, timeout: timeout}
	if r.c.printMode() {
		return r.finishPrint(p, tape, tmp), nil
	}
	closeStdin := sync.OnceFunc(func() { stdin.Close() })
	if div := r.play(p, stdin, closeStdin); div != nil {
		return div, nil
	}
	// All sent: wait for the remaining expectations, then end the
	// session the way a client does, by closing stdin (D1).
	if div := p.until("the remaining expected lines", r.allMatched); div != nil {
		r.mu.Lock()
		if e := r.firstUnmatched(); e != nil && strings.HasPrefix(div.Message, "timed out") {
			div.Step, div.Expected, div.Got = e.step(), e.raw, "(nothing yet)"
		}
		r.mu.Unlock()
		return div, nil
	}
	what := "the server to exit after stdin was closed (D1)"
	if r.exited {
		what = "the server to exit (#exit)"
	} else if r.signalled {
		// Closing stdin now would race the signal: let the signal end it.
		what = "the server to exit after the signal (D2)"
	} else {
		closeStdin()
	}
	if div := p.until(what, func() bool { return r.eof }); div != nil {
		return div, nil
	}
	werr := cmd.Wait()
	if div := r.finish(tape); div != nil {
		return div, nil
	}
	if div := r.checkExit(werr); div != nil {
		return div, nil
	}
	return checkFiles(r.c.fileExp, tmp, r.m.bindings), nil
}

// finishPrint judges a print case: the process runs on its own until it
// closes stdout; then its lines or text, its exit status, its stderr and
// the files it left are checked.
func (r *run) finishPrint(p *pump, tape *tapeServer, root string) *Divergence {
	if div := p.until("the process to exit", func() bool { return r.eof }); div != nil {
		return div
	}
	werr := r.cmd.Wait()
	if div := r.finish(tape); div != nil {
		return div
	}
	r.mu.Lock()
	div := r.checkPrintOutput()
	r.mu.Unlock()
	if div != nil {
		return div
	}
	if div := r.checkExit(werr); div != nil {
		return div
	}
	return checkFiles(r.c.fileExp, root, r.m.bindings)
}

// checkPrintOutput checks what only print mode has: the result line that
// ends --json output (P7), or the text stdout; r.mu is held.
func (r *run) checkPrintOutput() *Divergence {
	switch c := r.c; {
	case c.jsonOutput() && !r.sawResult && c.Dialect != DialectPi:
		return &Divergence{Step: "stdout", Message: `e -p --json printed no {"type":"result",…} line: it must end with one (P7)`}
	case c.stdout != nil && r.stdoutText != *c.stdout:
		return &Divergence{Step: "stdout", Message: "stdout differs from the stdout section", Expected: strconv.Quote(shorten(*c.stdout)), Got: strconv.Quote(shorten(r.stdoutText))}
	case c.stdoutRE != nil && !c.stdoutRE.MatchString(r.stdoutText):
		return &Divergence{Step: "stdout", Message: "stdout does not match the stdout.re section", Expected: c.stdoutRE.String(), Got: strconv.Quote(shorten(r.stdoutText))}
	}
	return nil
}
