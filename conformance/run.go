package conformance

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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
	// Lines is every line the server printed, in order (not in JSON reports).
	Lines   []string       `json:"-"`
	labelAt map[int]string // for Update: which line each label matched
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

// command is the argv of the case's process: the server command with the
// case's server_args for an rpc case; for a print case, the server command
// with its trailing "rpc" replaced by the case's args ("e rpc" → "e -p …").
func (r *run) command() ([]string, error) {
	srv := r.o.Server
	if !r.c.printMode() {
		return append(append([]string{}, srv...), r.c.ServerArgs...), nil
	}
	if srv[len(srv)-1] != "rpc" {
		return nil, skipError(fmt.Sprintf("print case: the server command %q does not end in rpc, so there is no e -p to derive from it", strings.Join(srv, " ")))
	}
	return append(append([]string{}, srv[:len(srv)-1]...), r.c.Args...), nil
}

// trust records the case's cwd as trusted with the product's own command,
// `e trust DIR` (C9), derived from the server command like e -p, so that a
// server refusing every untrusted directory can run the cases. Cases about
// trust opt out with "untrusted". A failure is left for the case to show.
func (r *run) trust(cwd, home string) {
	srv := r.o.Server
	if r.o.NoTrust || r.c.Untrusted || srv[len(srv)-1] != "rpc" {
		return
	}
	argv := append(append([]string{}, srv[:len(srv)-1]...), "trust", cwd)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = cwd
	cmd.Env = serverEnv(home, r.c.Env)
	ownGroup(cmd)
	cmd.WaitDelay = time.Second
	_ = cmd.Run()
}

type run struct {
	cmd       *exec.Cmd
	signalled bool // the client section sent a #signal
	c         *Case
	o         Options
	stderr    tailBuffer

	mu         sync.Mutex // guards what the tape's handlers share with the loop
	m          *matcher
	streams    map[string]*stream
	matched    map[string]bool   // labels seen
	methods    map[string]string // stream key → method of the request sent
	received   []string
	labelAt    map[int]string // received line index → label it matched
	sawResult  bool           // print mode: the result line has arrived
	stdoutText string         // print mode with text output: all of stdout
	tapeDivs   []*Divergence
	notes      []string
	wake       chan struct{} // one pending signal: lines or tape news
	lineQueue  [][]byte
	eof        bool
	readErr    error
}

type stream struct {
	key       string
	exp       []*expectation
	pos       int
	types     map[string]bool
	pending   map[string]any // a text/reasoning/tool_output run being joined
	pendStep  string
	pendIdx   int
	responded bool
}

func newRun(c *Case, o Options) *run {
	r := &run{c: c, o: o, m: &matcher{bindings: map[string]any{}},
		streams: map[string]*stream{}, matched: map[string]bool{}, methods: map[string]string{}, labelAt: map[int]string{},
		wake: make(chan struct{}, 1)}
	for _, e := range joinExpected(c.expect) {
		s := r.stream(e.stream)
		s.exp = append(s.exp, e)
		if t, ok := e.value["type"].(string); ok {
			s.types[t] = true
		}
	}
	return r
}

func (r *run) stream(key string) *stream {
	s := r.streams[key]
	if s == nil {
		s = &stream{key: key, types: map[string]bool{}}
		r.streams[key] = s
	}
	return s
}

// joinExpected joins adjacent expected deltas of one stream, as received
// ones are joined, so that a case may split text however it likes.
func joinExpected(exp []*expectation) []*expectation {
	var out []*expectation
	last := map[string]*expectation{}
	for _, e := range exp {
		if p := last[e.stream]; p != nil && !p.optional && !e.optional && (p.label == "" || e.label == "") && sameRun(p.value, e.value) {
			pd, ok1 := p.value["delta"].(string)
			ed, ok2 := e.value["delta"].(string)
			if ok1 && ok2 && !isPattern(pd) && !isPattern(ed) {
				joined := *p
				joined.value = cloneMap(p.value)
				joined.value["delta"] = pd + ed
				if e.label != "" {
					joined.label = e.label
				}
				*p = joined
				continue
			}
		}
		c := *e
		out = append(out, &c)
		last[e.stream] = &c
	}
	return out
}

// sameRun reports whether b continues the delta run of a.
func sameRun(a, b map[string]any) bool {
	ta, _ := a["type"].(string)
	tb, _ := b["type"].(string)
	if ta != tb {
		return false
	}
	switch ta {
	case "text", "reasoning":
		return true
	case "tool_output":
		return canon(a["id"]) == canon(b["id"])
	}
	return false
}

func mergeable(t string) bool { return t == "text" || t == "reasoning" || t == "tool_output" }

func (r *run) signal() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
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
			nb := map[string]any{}
			mm := r.m.match("", want, got, true, nb)
			if mm == nil {
				r.m.commit(nb)
			}
			return mm
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

	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = cwd
	cmd.Env = serverEnv(home, r.c.Env)
	ownGroup(cmd)
	r.cmd = cmd
	cmd.Stderr = &r.stderr
	cmd.WaitDelay = time.Second
	var stdin io.WriteCloser
	if r.c.printMode() {
		cmd.Stdin = bytes.NewReader(r.c.stdin) // a pipe: EOF after the section's bytes
	} else if stdin, err = cmd.StdinPipe(); err != nil {
		return nil, fmt.Errorf("conformance: %w", err)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("conformance: %w", err)
	}
	cmd.Stdout = pw
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		return nil, fmt.Errorf("conformance: starting %q: %w", strings.Join(argv, " "), err)
	}
	pw.Close()

	timeout := time.Duration(r.c.TimeoutMS) * time.Millisecond
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	if r.o.TimeoutScale > 0 {
		timeout = time.Duration(float64(timeout) * r.o.TimeoutScale)
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	killer := time.AfterFunc(timeout+time.Second, func() { killGroup(cmd) })
	defer killer.Stop()

	var readers sync.WaitGroup
	readers.Add(1)
	go func() {
		defer readers.Done()
		if r.c.printMode() && !r.c.jsonOutput() {
			r.readText(pr)
		} else {
			r.read(pr)
		}
	}()
	defer func() {
		// Whatever happened, the process group goes, the reader ends
		// and the process is reaped.
		killGroup(cmd)
		closed := make(chan struct{})
		go func() { readers.Wait(); close(closed) }()
		select {
		case <-closed:
		case <-time.After(2 * time.Second):
			pr.Close() // a detached grandchild still holds stdout
			<-closed
		}
		pr.Close()
		cmd.Wait()
	}()

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
	if r.signalled {
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
	case c.jsonOutput() && !r.sawResult:
		return &Divergence{Step: "stdout", Message: `e -p --json printed no {"type":"result",…} line: it must end with one (P7)`}
	case c.stdout != nil && r.stdoutText != *c.stdout:
		return &Divergence{Step: "stdout", Message: "stdout differs from the stdout section", Expected: strconv.Quote(shorten(*c.stdout)), Got: strconv.Quote(shorten(r.stdoutText))}
	case c.stdoutRE != nil && !c.stdoutRE.MatchString(r.stdoutText):
		return &Divergence{Step: "stdout", Message: "stdout does not match the stdout.re section", Expected: c.stdoutRE.String(), Got: strconv.Quote(shorten(r.stdoutText))}
	}
	return nil
}

// play sends the client section.
func (r *run) play(p *pump, stdin io.Writer, closeStdin func()) *Divergence {
	for _, s := range r.c.client {
		step := fmt.Sprintf("client line %d", s.line)
		var data []byte
		switch s.kind {
		case "wait":
			what := "@" + strings.Join(s.labels, " @")
			if div := p.until(what, func() bool { return r.labelsDone(s.labels) }); div != nil {
				return div
			}
			continue
		case "close":
			closeStdin()
			continue
		case "signal":
			if err := r.cmd.Process.Signal(signals[string(s.text)]); err != nil {
				return &Divergence{Step: step, Message: "signalling the server: " + err.Error()}
			}
			r.signalled = true
			continue
		case "raw":
			data = s.text
		case "pad":
			data = append(bytes.Replace(s.text, []byte("$pad"), bytes.Repeat([]byte("x"), s.size-len(s.text)+4), 1), '\n')
		case "send":
			r.mu.Lock()
			line, err := substitute(s.text, r.m.bindings)
			r.mu.Unlock()
			if err != nil {
				return &Divergence{Step: step, Message: err.Error()}
			}
			r.noteRequest(line)
			data = append(line, '\n')
		}
		if _, err := stdin.Write(data); err != nil {
			// The server went away; what it printed decides the verdict.
			return nil
		}
		// Look at what arrived meanwhile so failures are reported early.
		if div := p.drain(); div != nil {
			return div
		}
	}
	return nil
}

// noteRequest remembers the method of a request, for schema validation.
func (r *run) noteRequest(line []byte) {
	v, err := decode(line)
	obj, ok := v.(map[string]any)
	if err != nil || !ok {
		return
	}
	id, ok := obj["id"]
	if !ok {
		return
	}
	method, _ := obj["method"].(string)
	if _, has := obj["method"]; !has {
		method = "oneshot"
	}
	r.mu.Lock()
	r.methods["r:"+canon(id)] = method
	r.mu.Unlock()
}

// substitute replaces "{{name}}" (a whole JSON string) by the bound JSON
// value, and {{name}} inside a longer string by the bound string.
func substitute(line []byte, b map[string]any) ([]byte, error) {
	var missing string
	value := func(p string) (any, bool) {
		v, ok := b[p[2:len(p)-2]]
		if !ok && missing == "" {
			missing = p
		}
		return v, ok
	}
	s := quotedPlaceholderRE.ReplaceAllStringFunc(string(line), func(q string) string {
		if v, ok := value(q[1 : len(q)-1]); ok {
			return canon(v)
		}
		return q
	})
	s = placeholderRE.ReplaceAllStringFunc(s, func(p string) string {
		v, ok := value(p)
		if !ok {
			return p
		}
		str, isStr := v.(string)
		if !isStr {
			str = canon(v)
		}
		q, _ := json.Marshal(str)
		return string(q[1 : len(q)-1])
	})
	if missing != "" {
		return nil, fmt.Errorf("placeholder %s is not bound yet: add a #wait for the line that binds it", missing)
	}
	return []byte(s), nil
}

var quotedPlaceholderRE = regexp.MustCompile(`"\{\{[A-Za-z_][A-Za-z0-9_.-]*\}\}"`)

type pump struct {
	r        *run
	deadline <-chan time.Time
	ctx      context.Context
	timeout  time.Duration
	expired  bool
}

// until feeds received lines to the matcher until done holds, the server
// closes stdout, or the case times out.
func (p *pump) until(what string, done func() bool) *Divergence {
	for {
		if div := p.drain(); div != nil {
			return div
		}
		p.r.mu.Lock()
		ok, eof := done(), p.r.eof
		p.r.mu.Unlock()
		if ok {
			return nil
		}
		if eof {
			if strings.HasPrefix(what, "@") {
				return &Divergence{Step: "wait " + what, Message: "the server closed stdout before " + what + " was seen"}
			}
			return nil // missing lines are reported by finish
		}
		if p.expired {
			return &Divergence{Step: "wait", Message: fmt.Sprintf("timed out after %v waiting for %s", p.timeout, what)}
		}
		select {
		case <-p.r.wake:
		case <-p.deadline:
			p.expired = true
		case <-p.ctx.Done():
			return &Divergence{Step: "wait", Message: "cancelled: " + p.ctx.Err().Error()}
		}
	}
}

// drain feeds every queued line.
func (p *pump) drain() *Divergence {
	r := p.r
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.tapeDivs) > 0 {
		return r.tapeDivs[0]
	}
	for len(r.lineQueue) > 0 {
		l := r.lineQueue[0]
		r.lineQueue = r.lineQueue[1:]
		if div := r.feed(l); div != nil {
			return div
		}
	}
	if r.readErr != nil {
		return &Divergence{Step: "stdout", Message: r.readErr.Error()}
	}
	return nil
}

// readText keeps the whole of stdout (print mode with text output).
func (r *run) readText(f io.Reader) {
	b, err := io.ReadAll(f)
	r.mu.Lock()
	r.stdoutText = string(b)
	if err != nil {
		r.readErr = err
	}
	r.eof = true
	r.mu.Unlock()
	r.signal()
}

// read queues the server's stdout lines until EOF.
func (r *run) read(f io.Reader) {
	br := bufio.NewReaderSize(f, 1<<16)
	for {
		line, err := br.ReadBytes('\n')
		r.mu.Lock()
		if len(line) > 0 {
			if line[len(line)-1] == '\n' {
				r.lineQueue = append(r.lineQueue, line[:len(line)-1])
			} else if err == io.EOF {
				r.readErr = fmt.Errorf("the last stdout line %q has no LF: output lines must be complete (F5)", shorten(string(line)))
			}
		}
		if err != nil {
			r.eof = true
		}
		r.mu.Unlock()
		r.signal()
		if err != nil {
			return
		}
	}
}

// feed matches one received line; r.mu is held.
func (r *run) feed(raw []byte) *Divergence {
	r.received = append(r.received, string(raw))
	step := fmt.Sprintf("server line %d", len(r.received))
	v, err := decode(raw)
	obj, ok := v.(map[string]any)
	if err != nil || !ok {
		return &Divergence{Step: step, Message: "stdout line is not a JSON object: nothing but protocol lines may reach stdout (F5)", Got: shorten(string(raw))}
	}
	_, isEvent := obj["type"]
	if r.c.printMode() {
		return r.feedPrint(raw, obj, step)
	}
	var key string
	switch req, hasReq := obj["request"]; {
	case isEvent && hasReq:
		key = "r:" + canon(req)
	case isEvent:
		key = "process"
	default:
		id, ok := obj["id"]
		if !ok {
			return &Divergence{Step: step, Message: `line has neither "type" (an event) nor "id" (a response) (F3)`, Got: shorten(string(raw))}
		}
		key = "r:" + canon(id)
	}
	if r.o.Validator != nil {
		method := ""
		if !isEvent {
			method = r.methods[key]
		}
		if div := r.validate(raw, method, step); div != nil {
			return div
		}
	}
	s := r.stream(key)
	if isEvent {
		typ, _ := obj["type"].(string)
		if key != "process" && s.responded {
			return &Divergence{Step: step, Message: fmt.Sprintf("%s event of request %s after the response to that request: a prompt's events come before its response (S2)", typ, key[2:]), Got: shorten(string(raw))}
		}
		if !s.types[typ] && (!r.c.Strict && key != "process" || !knownEventType(typ)) {
			// The case does not constrain this type here; a type no
			// schema knows never counts unless expected (P8).
			return nil
		}
		return r.event(s, typ, obj, step)
	}
	if key != "r:null" && s.responded {
		return &Divergence{Step: step, Message: fmt.Sprintf("request %s answered twice: every request gets exactly one response (F2)", key[2:]), Got: shorten(string(raw))}
	}
	s.responded = true
	if div := r.flush(s); div != nil {
		return div
	}
	return r.next(s, obj, step, len(r.received)-1)
}

// validate checks a line against the schemas, keeping the validator's
// notes; r.mu is held.
func (r *run) validate(raw []byte, method, step string) *Divergence {
	notes, err := r.o.Validator.ValidateLine(raw, method)
	for _, n := range notes {
		r.notes = append(r.notes, step+": "+n)
	}
	if err != nil {
		return &Divergence{Step: step, Message: "line fails the protocol schema: " + err.Error(), Got: shorten(string(raw))}
	}
	return nil
}

// feedPrint matches one line of e -p --json: an event, or the result line
// that must come last (P7); r.mu is held.
func (r *run) feedPrint(raw []byte, obj map[string]any, step string) *Divergence {
	typ, ok := obj["type"].(string)
	if !ok {
		return &Divergence{Step: step, Message: `e -p --json line without a string "type": every line is an event or the result line (P7)`, Got: shorten(string(raw))}
	}
	if r.sawResult {
		return &Divergence{Step: step, Message: "a line after the result line: the result line is the last (P7)", Got: shorten(string(raw))}
	}
	r.sawResult = typ == "result"
	if r.o.Validator != nil {
		if div := r.validate(raw, MethodPrint, step); div != nil {
			return div
		}
	}
	s := r.stream(printStream)
	if !s.types[typ] && (!r.c.Strict || !knownEventType(typ)) {
		return nil
	}
	return r.event(s, typ, obj, step)
}

// event matches one event of stream s: text-like deltas of one run are
// joined before matching, so chunking never matters; r.mu is held.
func (r *run) event(s *stream, typ string, obj map[string]any, step string) *Divergence {
	if mergeable(typ) {
		if s.pending != nil && sameRun(s.pending, obj) {
			a, ok1 := s.pending["delta"].(string)
			b, ok2 := obj["delta"].(string)
			if ok1 && ok2 {
				s.pending["delta"] = a + b
				return nil
			}
		}
		if div := r.flush(s); div != nil {
			return div
		}
		s.pending, s.pendStep, s.pendIdx = obj, step, len(r.received)-1
		return nil
	}
	if div := r.flush(s); div != nil {
		return div
	}
	return r.next(s, obj, step, len(r.received)-1)
}

func (r *run) flush(s *stream) *Divergence {
	if s.pending == nil {
		return nil
	}
	obj, step := s.pending, s.pendStep
	s.pending = nil
	return r.next(s, obj, step+" (joined deltas)", s.pendIdx)
}

// next matches obj against the next expectation of its stream.
func (r *run) next(s *stream, obj map[string]any, step string, idx int) *Divergence {
	_, isEvent := obj["type"]
	if s.pos >= len(s.exp) {
		what := "response"
		if isEvent {
			what = fmt.Sprintf("%v event", obj["type"])
		}
		msg := fmt.Sprintf("unexpected %s: the case expects no more lines of %s", what, streamName(s.key))
		if len(s.exp) == 0 {
			msg = fmt.Sprintf("unexpected %s: the case expects no lines of %s", what, streamName(s.key))
		}
		return &Divergence{Step: step, Message: msg, Got: shorten(canon(obj))}
	}
	e := s.exp[s.pos]
	if e.optional {
		if r.m.match("", e.value, obj, true, map[string]any{}) != nil {
			s.pos++ // the optional line is absent
			return r.next(s, obj, step, idx)
		}
	}
	if e.event && !isEvent {
		return &Divergence{Step: e.step(), Message: fmt.Sprintf("%s is the response to request %s, but the expected %v event has not arrived: a prompt's events come before its response (S2)",
			step, strings.TrimPrefix(s.key, "r:"), e.value["type"]), Expected: e.raw, Got: shorten(canon(obj))}
	}
	nb := map[string]any{}
	if mm := r.m.match("", e.value, obj, true, nb); mm != nil {
		return &Divergence{Step: e.step(), Message: fmt.Sprintf("%s does not match the next expected line of %s: %s", step, streamName(s.key), mm.reason),
			Pointer: mm.pointer, Expected: mm.want, Got: mm.got}
	}
	r.m.commit(nb)
	s.pos++
	if e.label != "" {
		r.matched[e.label] = true
		r.labelAt[idx] = e.label
	}
	return nil
}

// end is the index after the stream's last required expectation: the
// optional lines after it may never come.
func (s *stream) end() int {
	n := len(s.exp)
	for n > s.pos && s.exp[n-1].optional {
		n--
	}
	return n
}

// required is the stream's next expectation that is not optional, or nil.
func (s *stream) required() *expectation {
	for _, e := range s.exp[min(s.pos, len(s.exp)):] {
		if !e.optional {
			return e
		}
	}
	return nil
}

func (e *expectation) step() string {
	s := fmt.Sprintf("expect line %d", e.line)
	if e.label != "" {
		s += " (@" + e.label + ")"
	}
	return s
}

func streamName(key string) string {
	switch key {
	case "process":
		return "the process stream"
	case printStream:
		return "the e -p --json output"
	}
	return "request " + strings.TrimPrefix(key, "r:")
}

// pendingMatches reports whether a stream's joined-so-far deltas would
// match its next expectation (and that expectation is the last or labelled).
func (r *run) pendingMatches(s *stream) (*expectation, bool) {
	if s.pending == nil || s.pos >= len(s.exp) {
		return nil, false
	}
	e := s.exp[s.pos]
	return e, r.m.match("", e.value, s.pending, true, map[string]any{}) == nil
}

func (r *run) labelsDone(labels []string) bool {
	for _, l := range labels {
		if r.matched[l] {
			continue
		}
		found := false
		for _, s := range r.streams {
			if e, ok := r.pendingMatches(s); ok && e.label == l {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func (r *run) allMatched() bool {
	for _, s := range r.streams {
		left := s.end() - s.pos
		if left <= 0 {
			continue
		}
		if _, ok := r.pendingMatches(s); left == 1 && ok {
			continue
		}
		return false
	}
	return true
}

// firstUnmatched is the earliest expectation (by line) not yet met.
func (r *run) firstUnmatched() *expectation {
	var first *expectation
	for _, s := range r.streams {
		if e := s.required(); e != nil && (first == nil || e.line < first.line) {
			first = e
		}
	}
	return first
}

// finish flushes joined deltas and reports the first expectation never met.
func (r *run) finish(tape *tapeServer) *Divergence {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.tapeDivs) > 0 {
		return r.tapeDivs[0]
	}
	var first *expectation
	var firstStream *stream
	for _, s := range r.streams {
		if div := r.flush(s); div != nil {
			return div
		}
		if e := s.required(); e != nil && (first == nil || e.line < first.line) {
			first, firstStream = e, s
		}
	}
	if first != nil {
		return &Divergence{Step: first.step(), Message: fmt.Sprintf("expected line never arrived (%d of %s's %d expected lines matched)",
			firstStream.pos, streamName(firstStream.key), len(firstStream.exp)), Expected: first.raw, Got: "(nothing)"}
	}
	if n := tape.unused(); n > 0 {
		return &Divergence{Step: "tape", Message: fmt.Sprintf("%d of %d tape entries were never requested", n, len(r.c.tape))}
	}
	return nil
}

func (r *run) checkExit(werr error) *Divergence {
	code := 0
	var ee *exec.ExitError
	if errors.As(werr, &ee) {
		code = ee.ExitCode()
	} else if werr != nil {
		return &Divergence{Step: "exit", Message: werr.Error()}
	}
	want := r.c.Exit
	if want == "" {
		want = "0"
	}
	switch {
	case want == "0" && code != 0 && r.c.printMode():
		return &Divergence{Step: "exit", Message: fmt.Sprintf("exit status %d, want 0: the turn completed (P4)", code)}
	case want == "0" && code != 0:
		return &Divergence{Step: "exit", Message: fmt.Sprintf("exit status %d, want 0 after EOF on stdin or shutdown (D1, M16)", code)}
	case want == "nonzero" && code == 0:
		return &Divergence{Step: "exit", Message: "exit status 0, want non-zero"}
	case want != "nonzero" && want != "any" && want != strconv.Itoa(code):
		if code == -1 {
			return &Divergence{Step: "exit", Message: fmt.Sprintf("killed by a signal (%v), want exit status %s", werr, want)}
		}
		return &Divergence{Step: "exit", Message: fmt.Sprintf("exit status %d, want %s", code, want)}
	}
	stderr := r.stderr.String()
	for _, s := range r.c.Stderr {
		if !strings.Contains(stderr, s) {
			return &Divergence{Step: "stderr", Message: fmt.Sprintf("stderr does not contain %q", s), Got: shorten(stderr)}
		}
	}
	if re := r.c.stderrRE; re != nil && !re.MatchString(stderr) {
		return &Divergence{Step: "stderr", Message: "stderr does not match the stderr.re section", Expected: re.String(), Got: shorten(stderr)}
	}
	return nil
}

func writeFixtures(c *Case, cwd, home, baseURL string) error {
	settings := any(tapeSettings(baseURL, c.Model))
	for _, d := range []string{cwd, home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("conformance: %w", err)
		}
	}
	for _, f := range c.files {
		dir, rel, _ := strings.Cut(f.name, "/")
		root := cwd
		if dir == "home" {
			root = home
		}
		if dir == "home" && rel == "settings.json" {
			v, err := decode(f.data)
			if err != nil {
				return fmt.Errorf("conformance: %s: home/settings.json: %w", c.File, err)
			}
			settings = mergeJSON(settings, v)
			continue
		}
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("conformance: %w", err)
		}
		if strings.HasSuffix(rel, "/") {
			continue // an empty directory
		}
		perm := os.FileMode(0o644)
		if dir == "home" && strings.HasPrefix(rel, "extensions/") {
			perm = 0o755 // extensions are the executables in $E_HOME/extensions
		}
		if err := os.WriteFile(p, f.data, perm); err != nil {
			return fmt.Errorf("conformance: %w", err)
		}
	}
	b, err := json.MarshalIndent(settings, "", "  ")
	if err != nil {
		return fmt.Errorf("conformance: settings: %w", err)
	}
	return os.WriteFile(filepath.Join(home, "settings.json"), b, 0o644)
}

// serverEnv is the runner's environment without the user's e
// configuration, plus the case's.
func serverEnv(home string, extra map[string]string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "E_") || k == "OPENAI_API_KEY" || k == "ANTHROPIC_API_KEY" {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "E_HOME="+home, "E_TAPE_API_KEY="+tapeKey)
	for _, k := range sortedKeys(extra) {
		env = append(env, k+"="+extra[k])
	}
	return env
}

// tailBuffer keeps the last 16 KiB written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > 16<<10 {
		t.buf = t.buf[len(t.buf)-16<<10:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

func tail(s []string, n int) []string {
	if len(s) > n {
		s = s[len(s)-n:]
	}
	out := make([]string, len(s))
	for i, l := range s {
		out[i] = shorten(l)
	}
	return out
}

func shorten(s string) string {
	if len(s) > 400 {
		return s[:400] + "…"
	}
	return s
}
