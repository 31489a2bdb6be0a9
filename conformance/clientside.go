package conformance

import (
	"bufio"
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/e-agent/e/schemas"
)

// Client-side conformance: the kit plays e rpc from a scripted scenario and
// judges a client (spec/conformance.md, "Client conformance").
//
// The kit starts the client once per scenario with E_RPC, the command of
// the server it must spawn (a relay: e-conformance client-relay SOCKET,
// which pipes the client's stdin and stdout to the kit over a Unix socket),
// and E_TASK, the task as JSON. Every line the client sends is validated
// against the request schemas; the scenario's steps say what the kit
// expects and answers; the verdict compares the client's exit status and
// last stdout line with the scenario's.

//go:embed clientcases/*.json
var clientCases embed.FS

// Scenario is one client-side case, read from a JSON file.
type Scenario struct {
	ID           string   `json:"id"`
	Level        string   `json:"level"`
	Requirements []string `json:"requirements"`
	// Catches names the client bugs the scenario exists to catch.
	Catches string `json:"catches"`
	Task    struct {
		Prompt string `json:"prompt"`
		// Cwd: when true the task carries a temp directory as its cwd,
		// which session.create must name; else null.
		Cwd  bool                       `json:"cwd"`
		Asks map[string]json.RawMessage `json:"asks"`
		// ClientTools, when set, are the tools the client provides: it
		// passes them to session.create as client_tools and answers each
		// tool_call with tool.result, content ToolResults[name] (G1).
		ClientTools json.RawMessage   `json:"client_tools,omitempty"`
		ToolResults map[string]string `json:"tool_results,omitempty"`
	} `json:"task"`
	// Steps are the kit's side, in order.
	Steps []Step `json:"steps"`
	Want  struct {
		Exit int `json:"exit"` // 0, or 1 for "exits non-zero"
		// Stdout is the last stdout line when Exit is 0; StdoutBytes, when
		// set, asks for that many "x" instead (big lines).
		Stdout      string `json:"stdout"`
		StdoutBytes int    `json:"stdout_bytes"`
	} `json:"want"`
	// TimeoutMS bounds the whole scenario (default 20000); after the kit
	// ends the stream, the client must exit within 5 s (scaled).
	TimeoutMS int    `json:"timeout_ms"`
	File      string `json:"-"`
}

// Step is one thing the kit does. Exactly one of its fields is set.
type Step struct {
	// Expect waits for a request of this method (other methods in between
	// fail the step, ask.reply excepted when no ask waits for it). Params
	// are matched as a subset; "$CWD", "$SESSION", "$PROMPT" stand for the
	// task's values. Reply is the result written back (placeholders too),
	// or Error and Code an error response.
	Expect string          `json:"expect,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	// Absent lists params members the request must not carry (or carry as null).
	Absent []string        `json:"absent,omitempty"`
	Reply  json.RawMessage `json:"reply,omitempty"`
	Error  string          `json:"error,omitempty"`
	Code   string          `json:"code,omitempty"`
	// Raw lines are written verbatim after the placeholders ($ID: the
	// current request's id as sent, $SESSION, $CWD) are replaced. Event
	// adds the session and request stamps to an event object.
	Raw   []string        `json:"raw,omitempty"`
	Event json.RawMessage `json:"event,omitempty"`
	// Stream writes Count text events, each with Delta.
	Stream *struct {
		Count int    `json:"count"`
		Delta string `json:"delta"`
	} `json:"stream,omitempty"`
	// BigText writes one text event of this many "x".
	BigText int `json:"big_text,omitempty"`
	// Result answers the current request with a turn result made of these
	// members over a default one; FinalBytes sets final_output to that many "x".
	Result     json.RawMessage `json:"result,omitempty"`
	FinalBytes int             `json:"final_bytes,omitempty"`
	// Ask writes an ask line (number N from 1) and, with Answer, waits
	// for its ask.reply, whose result must equal Answer ("absent": none or
	// null). Cancel instead writes the notice that cancels it at once and
	// answers a later ask.reply with an unknown_ask error.
	Ask    json.RawMessage `json:"ask,omitempty"`
	Answer json.RawMessage `json:"answer,omitempty"`
	Cancel bool            `json:"cancel,omitempty"`
	// Die ends the stream mid-turn: the server is gone.
	Die bool `json:"die,omitempty"`
	// ToolCalls writes a tool_call line for each (numbered from 1 across
	// the scenario, stamped with session and request) and waits for a
	// tool.result for each, in any order, whose content is the task's
	// tool_results for its name. With Cancel it writes a
	// tool_call_cancelled line for each at once instead, and answers a
	// later tool.result with an unknown_call error.
	ToolCalls []ToolCallStep `json:"tool_calls,omitempty"`
}

// ToolCallStep is one tool_call line of a ToolCalls step.
type ToolCallStep struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// ClientOptions configure RunClient.
type ClientOptions struct {
	Client       []string // the client's command line
	Relay        []string // the command that relays: Relay + [SOCKET] is E_RPC
	TimeoutScale float64
}

// LoadScenarios reads the built-in scenarios, or those of dir (*.json)
// over them when dir is not "": a file with a built-in id replaces it.
func LoadScenarios(dir string) ([]*Scenario, error) {
	byID := map[string]*Scenario{}
	load := func(fsys fs.FS, root string) error {
		names, err := fs.Glob(fsys, root+"/*.json")
		if err != nil {
			return err
		}
		for _, name := range names {
			b, err := fs.ReadFile(fsys, name)
			if err != nil {
				return err
			}
			var s Scenario
			dec := json.NewDecoder(bytes.NewReader(b))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&s); err != nil {
				return fmt.Errorf("conformance: scenario %s: %w", name, err)
			}
			if s.ID == "" {
				s.ID = strings.TrimSuffix(filepath.Base(name), ".json")
			}
			if s.Level == "" {
				s.Level = "MUST"
			}
			s.File = name
			byID[s.ID] = &s
		}
		return nil
	}
	if err := load(clientCases, "clientcases"); err != nil {
		return nil, err
	}
	if dir != "" {
		if err := load(os.DirFS(dir), "."); err != nil {
			return nil, err
		}
	}
	var out []*Scenario
	for _, s := range byID {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b *Scenario) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// errFail marks a divergence of the client; other errors are the kit's.
type clientFail struct {
	step string
	msg  string
}

func (f *clientFail) Error() string { return f.step + ": " + f.msg }

func failf(step, format string, args ...any) error {
	return &clientFail{step: step, msg: fmt.Sprintf(format, args...)}
}

// RunClient runs one scenario against the client.
func RunClient(ctx context.Context, s *Scenario, opts ClientOptions) *Result {
	start := time.Now()
	r := &Result{ID: s.ID, File: s.File, Level: s.Level, Requirements: s.Requirements}
	k, err := runKit(ctx, s, opts)
	r.Duration = time.Since(start)
	if k != nil {
		r.LastLines = k.tail()
		k.mu.Lock()
		r.Stderr = k.stderr.String()
		k.mu.Unlock()
	}
	var f *clientFail
	switch {
	case err == nil:
		r.Verdict = Pass
	case errors.As(err, &f):
		r.Verdict = Fail
		r.Divergence = &Divergence{Step: f.step, Message: f.msg}
		if s.Catches != "" {
			r.Notes = append(r.Notes, "this scenario catches: "+s.Catches)
		}
	default:
		r.Verdict = Error
		r.Divergence = &Divergence{Step: "kit", Message: err.Error()}
	}
	return r
}

// kit is one run of a scenario.
type kit struct {
	s       *Scenario
	scale   float64
	conn    net.Conn
	w       *bufio.Writer
	lines   chan []byte // what the client sent, validated
	bad     chan error  // the first invalid line
	mu      sync.Mutex
	sent    []string // the client's lines, for the report
	stdout  bytes.Buffer
	stderr  bytes.Buffer
	cwd     string
	session string
	id      json.RawMessage // the current request's id
	nextAsk int
	waitErr error // the client's exit, once exited is closed
	// cancelled asks, whose late ask.reply gets an error.
	cancelled map[int64]bool
	// nextCall numbers tool_call lines; cancelledCalls are those whose
	// late tool.result gets an error.
	nextCall       int
	cancelledCalls map[int64]bool
	// open holds the ids of the client's requests the kit has not answered
	// yet, with their methods: a new request must not reuse one (F2).
	open map[string]string
}

func (k *kit) tail() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []string
	for _, l := range k.sent[max(0, len(k.sent)-5):] {
		out = append(out, "client: "+shorten(l))
	}
	return out
}

func (k *kit) timeout(ms int) time.Duration {
	return time.Duration(float64(ms) * max(k.scale, 1) * float64(time.Millisecond))
}

func runKit(ctx context.Context, s *Scenario, opts ClientOptions) (*kit, error) {
	dir, err := os.MkdirTemp("", "e-conformance-client-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	k := &kit{s: s, scale: opts.TimeoutScale, lines: make(chan []byte, 64), bad: make(chan error, 1),
		session: "kit-session-1", cancelled: map[int64]bool{}, cancelledCalls: map[int64]bool{}, open: map[string]string{}}
	total := k.timeout(orDefault(s.TimeoutMS, 20000))
	ctx, cancel := context.WithTimeout(ctx, total)
	defer cancel()

	sock := filepath.Join(dir, "s")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		return nil, err
	}
	defer ln.Close()
	task := map[string]any{"prompt": s.Task.Prompt, "cwd": nil, "asks": s.Task.Asks}
	if s.Task.Asks == nil {
		task["asks"] = map[string]any{}
	}
	if s.Task.ClientTools != nil {
		task["client_tools"], task["tool_results"] = s.Task.ClientTools, s.Task.ToolResults
	}
	if s.Task.Cwd {
		k.cwd = filepath.Join(dir, "work")
		if err := os.Mkdir(k.cwd, 0o755); err != nil {
			return nil, err
		}
		task["cwd"] = k.cwd
	}
	taskJSON, _ := json.Marshal(task)
	if len(opts.Client) == 0 || len(opts.Relay) == 0 {
		return nil, errors.New("conformance: no client or relay command")
	}
	cmd := exec.Command(opts.Client[0], opts.Client[1:]...)
	cmd.Env = append(os.Environ(), "E_RPC="+joinCommand(append(slices.Clone(opts.Relay), sock)), "E_TASK="+string(taskJSON))
	// Files, not pipes: the relay inherits the client's stderr, and the
	// client's exit must not wait for the relay's.
	outF, err := os.Create(filepath.Join(dir, "stdout"))
	if err != nil {
		return nil, err
	}
	defer outF.Close()
	errF, err := os.Create(filepath.Join(dir, "stderr"))
	if err != nil {
		return nil, err
	}
	defer errF.Close()
	cmd.Stdout, cmd.Stderr = outF, errF
	ownGroup(cmd)
	if err := cmd.Start(); err != nil {
		return k, fmt.Errorf("conformance: start client: %w", err)
	}
	exited := make(chan struct{}) // closed when the client has exited; then waitErr is set
	go func() {
		k.waitErr = cmd.Wait()
		k.collect(outF, errF)
		close(exited)
	}()
	defer func() {
		select {
		case <-exited:
		default:
			killGroup(cmd)
			<-exited
		}
	}()

	// The client must spawn the server.
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c
		}
		close(accepted)
	}()
	select {
	case c, ok := <-accepted:
		if !ok {
			return k, errors.New("conformance: accept failed")
		}
		k.conn = c
	case <-exited:
		return k, failf("spawn", "the client exited (%v) without spawning $E_RPC", k.waitErr)
	case <-ctx.Done():
		return k, failf("spawn", "the client did not spawn $E_RPC within %v", total)
	}
	defer k.conn.Close()
	// A client that stops reading must not block the kit past the scenario.
	k.conn.SetWriteDeadline(time.Now().Add(total))
	k.w = bufio.NewWriterSize(k.conn, 1<<20)
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		k.read()
	}()

	died := false
	for i, st := range s.Steps {
		if st.Die {
			died = true
			break
		}
		if err := k.step(ctx, i, st, exited); err != nil {
			return k, err
		}
	}
	if died {
		// The server is gone: stop reading and writing at once.
		k.conn.Close()
		grace := k.timeout(5000)
		select {
		case <-exited:
			if k.waitErr == nil {
				return k, failf("exit", "the client exited 0 after the server died mid-turn; want non-zero")
			}
			return k, nil
		case <-time.After(grace):
			return k, failf("exit", "the client did not exit within %v after the server died mid-turn (it hangs)", grace)
		}
	}
	// The script is done: the client should exit now. Requests it sends
	// meanwhile (session.close, shutdown) get {}; when it closes the
	// server's stdin, the kit ends its stream like e rpc at EOF.
	lines := k.lines
wait:
	for {
		select {
		case <-exited:
			break wait
		case line, ok := <-lines:
			if !ok {
				k.conn.Close()
				lines = nil
				continue
			}
			req := parseRequest(line)
			if err := k.opened("exit", req); err != nil {
				return k, err
			}
			if k.late(req) {
				continue
			}
			k.answered(req.ID)
			k.writeLine([]byte(`{"id":` + string(req.ID) + `,"result":{}}`))
			if req.Method == "shutdown" {
				k.conn.Close()
			}
		case err := <-k.bad:
			return k, err
		case <-ctx.Done():
			return k, failf("exit", "the client did not exit within %v of the scenario's start", total)
		}
	}
	k.conn.Close()
	<-readDone
	code := 0
	var ee *exec.ExitError
	if errors.As(k.waitErr, &ee) {
		code = ee.ExitCode()
	} else if k.waitErr != nil {
		return k, fmt.Errorf("conformance: wait for client: %w", k.waitErr)
	}
	return k, k.judge(code)
}

func orDefault(v, dflt int) int {
	if v > 0 {
		return v
	}
	return dflt
}

func (k *kit) judge(code int) error {
	want := k.s.Want
	if want.Exit == 0 {
		if code != 0 {
			return failf("exit", "the client exited %d; want 0 (stderr: %s)", code, shorten(lastLine(k.stderr.String())))
		}
		out := strings.TrimSuffix(k.stdout.String(), "\n")
		last := out[strings.LastIndexByte(out, '\n')+1:]
		// A final output with newlines is printed whole: compare the tail.
		wantOut := want.Stdout
		if want.StdoutBytes > 0 {
			wantOut = strings.Repeat("x", want.StdoutBytes)
		}
		if strings.Contains(wantOut, "\n") {
			last = out[max(0, len(out)-len(wantOut)):]
		}
		if last != wantOut {
			return failf("stdout", "last stdout line %s; want the turn's final_output %s", quoteShort(last), quoteShort(wantOut))
		}
		return nil
	}
	if code == 0 {
		return failf("exit", "the client exited 0; want non-zero (the turn or a request failed)")
	}
	if strings.TrimSpace(k.stderr.String()) == "" {
		return failf("stderr", "the client exited %d but said nothing on stderr; want the error", code)
	}
	return nil
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	return s[strings.LastIndexByte(s, '\n')+1:]
}

func quoteShort(s string) string {
	if len(s) > 80 {
		return fmt.Sprintf("%q… (%d bytes)", s[:60], len(s))
	}
	return fmt.Sprintf("%q", s)
}

// read validates each client line against the request schemas and queues it.
func (k *kit) read() {
	defer close(k.lines)
	br := bufio.NewReaderSize(k.conn, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			line = bytes.TrimRight(line, "\r\n")
			k.mu.Lock()
			k.sent = append(k.sent, string(line))
			n := len(k.sent)
			k.mu.Unlock()
			if verr := validateClientLine(line); verr != nil {
				select {
				case k.bad <- failf(fmt.Sprintf("client line %d", n), "%v: %s", verr, shorten(string(line))):
				default:
				}
				return
			}
			k.lines <- line
		}
		if err != nil {
			return
		}
	}
}

// validateClientLine checks a line against envelope/request and the
// method's params schema (or oneshot/request for a line without method).
func validateClientLine(line []byte) error {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(line, &obj); err != nil {
		return fmt.Errorf("not a JSON object: %v", err)
	}
	raw, ok := obj["method"]
	if !ok {
		return schemas.ValidateOneShot(line)
	}
	var method string
	if err := json.Unmarshal(raw, &method); err != nil || method == "" {
		return fmt.Errorf("request: method: expected a non-empty string")
	}
	return schemas.ValidateParams(method, obj["params"])
}

type request struct {
	ID     json.RawMessage
	Method string
	Params map[string]any
}

// parseRequest decodes a validated request line.
func parseRequest(line []byte) *request {
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params map[string]any  `json:"params"`
	}
	json.Unmarshal(line, &req)
	if req.ID == nil {
		req.ID = json.RawMessage("null")
	}
	return &request{ID: req.ID, Method: req.Method, Params: req.Params}
}

// collect reads what the client printed (files, after it exited).
func (k *kit) collect(outF, errF *os.File) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, f := range []struct {
		f *os.File
		b *bytes.Buffer
	}{{outF, &k.stdout}, {errF, &k.stderr}} {
		if _, err := f.f.Seek(0, io.SeekStart); err == nil {
			io.Copy(f.b, io.LimitReader(f.f, 64<<20))
		}
	}
}

// next returns the client's next request, or fails when the client
// exits, the stream ends or time runs out.
func (k *kit) next(ctx context.Context, step string, exited <-chan struct{}) (*request, error) {
	select {
	case line, ok := <-k.lines:
		if !ok {
			select {
			case err := <-k.bad:
				return nil, err
			default:
			}
			return nil, failf(step, "the client closed the server's stdin instead")
		}
		req := parseRequest(line)
		if err := k.opened(step, req); err != nil {
			return nil, err
		}
		return req, nil
	case err := <-k.bad:
		return nil, err
	case <-exited:
		return nil, failf(step, "the client exited (%v, stderr: %s) instead", k.waitErr, shorten(lastLine(k.stderr.String())))
	case <-ctx.Done():
		return nil, failf(step, "nothing came from the client in time (it hangs)")
	}
}

func (k *kit) subst(s string) string {
	return strings.NewReplacer("$SESSION", k.session, "$CWD", k.cwd, "$PROMPT", k.s.Task.Prompt, "$ID", string(k.id)).Replace(s)
}

func (k *kit) writeLine(b []byte) error {
	if _, err := k.w.Write(append(b, '\n')); err != nil {
		return err
	}
	return k.w.Flush()
}

// writeObj writes v as a line, U+2028 and U+2029 raw as e rpc writes them
// (encoding/json escapes them), so that every kind of line carries them as
// the server's do (F5).
func (k *kit) writeObj(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return k.writeLine(rawSeparators(b))
}

// rawSeparators turns the escapes \u2028 and \u2029 of encoded JSON back
// into the characters; every other escape is kept.
func rawSeparators(b []byte) []byte {
	if !bytes.Contains(b, []byte(`\u202`)) {
		return b
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 == len(b) {
			out = append(out, b[i])
			continue
		}
		switch string(b[i:min(len(b), i+6)]) {
		case `\u2028`:
			out = append(out, "\u2028"...)
			i += 5
			continue
		case `\u2029`:
			out = append(out, "\u2029"...)
			i += 5
			continue
		}
		out = append(out, b[i], b[i+1]) // an escape: its second byte is never a new one's start
		i++
	}
	return out
}

// opened records the client's new request as open, and fails the step
// when its id is that of a request still waiting for its response: the
// client could not tell the two responses apart.
func (k *kit) opened(step string, req *request) error {
	id := string(compact(req.ID))
	if id == "null" {
		return nil
	}
	if m, ok := k.open[id]; ok {
		return failf(step, "the client reused id %s for %s while its %s with that id is still open (no response yet): "+
			"each response echoes its request's id (F2), so give every open request its own id", id, req.Method, m)
	}
	k.open[id] = req.Method
	return nil
}

// answered closes the request of this id: the kit wrote its response.
func (k *kit) answered(id json.RawMessage) {
	delete(k.open, string(compact(id)))
}

// stamped writes an event with the session and request stamps.
func (k *kit) stamped(ev map[string]any) error {
	ev["session"] = k.session
	ev["request"] = k.id
	return k.writeObj(ev)
}

func (k *kit) step(ctx context.Context, i int, st Step, exited <-chan struct{}) error {
	name := fmt.Sprintf("step %d", i+1)
	var err error
	switch {
	case st.Expect != "":
		name += " (" + st.Expect + ")"
		var req *request
		for {
			if req, err = k.next(ctx, name+": waiting for "+st.Expect, exited); err != nil {
				return err
			}
			if k.late(req) {
				continue
			}
			break
		}
		if req.Method != st.Expect {
			return failf(name, "the client sent %s; want %s", req.Method, st.Expect)
		}
		k.id = req.ID
		if err := k.checkParams(name, st, req.Params); err != nil {
			return err
		}
		switch {
		case st.Error != "":
			k.answered(req.ID)
			line := map[string]any{"id": json.RawMessage(req.ID), "error": k.subst(st.Error)}
			if st.Code != "" {
				line["code"] = st.Code
			}
			err = k.writeObj(line)
		case st.Reply != nil:
			k.answered(req.ID)
			err = k.writeLine([]byte(`{"id":` + string(req.ID) + `,"result":` + k.subst(string(compact(st.Reply))) + `}`))
		}
	case st.Raw != nil:
		for _, l := range st.Raw {
			line := []byte(k.subst(l))
			var resp struct {
				ID     json.RawMessage `json:"id"`
				Result json.RawMessage `json:"result"`
				Error  json.RawMessage `json:"error"`
			}
			if json.Unmarshal(line, &resp) == nil && resp.ID != nil && (resp.Result != nil || resp.Error != nil) {
				k.answered(resp.ID)
			}
			if err = k.writeLine(line); err != nil {
				break
			}
		}
	case st.Event != nil:
		var ev map[string]any
		if err := json.Unmarshal([]byte(k.subst(string(st.Event))), &ev); err != nil {
			return fmt.Errorf("conformance: %s: event: %w", k.s.File, err)
		}
		err = k.stamped(ev)
	case st.Stream != nil:
		for n := 0; n < st.Stream.Count && err == nil; n++ {
			err = k.stamped(map[string]any{"type": "text", "delta": st.Stream.Delta})
		}
	case st.BigText > 0:
		err = k.stamped(map[string]any{"type": "text", "delta": strings.Repeat("x", st.BigText)})
	case st.Result != nil || st.FinalBytes > 0:
		err = k.writeResult(st)
	case st.Ask != nil:
		err = k.ask(ctx, name, st, exited)
	case st.ToolCalls != nil:
		err = k.toolCalls(ctx, name, st, exited)
	default:
		return fmt.Errorf("conformance: %s: %s does nothing", k.s.File, name)
	}
	if err != nil {
		var f *clientFail
		if errors.As(err, &f) {
			return err
		}
		// The client closed the server's stdout early: that is its divergence.
		return failf(name, "the client stopped reading the server's output (%v)", err)
	}
	return nil
}

func compact(b []byte) []byte {
	var out bytes.Buffer
	if json.Compact(&out, b) != nil {
		return b
	}
	return out.Bytes()
}

// checkParams matches the request's params against the step's subset.
func (k *kit) checkParams(name string, st Step, got map[string]any) error {
	for _, a := range st.Absent {
		if v, ok := got[a]; ok && v != nil {
			return failf(name, "params.%s is %v; want it absent or null", a, v)
		}
	}
	if st.Params == nil {
		return nil
	}
	want, err := decode([]byte(k.subst(string(st.Params))))
	if err != nil {
		return fmt.Errorf("conformance: %s: params: %w", k.s.File, err)
	}
	gotB, _ := json.Marshal(got)
	gotV, _ := decode(gotB)
	for key, wv := range want.(map[string]any) {
		gv, ok := gotV.(map[string]any)[key]
		wb, _ := json.Marshal(wv)
		gb, _ := json.Marshal(gv)
		if !ok || !bytes.Equal(wb, gb) {
			return failf(name, "params.%s is %s; want %s", key, gb, wb)
		}
	}
	return nil
}

// writeResult answers the current request with a turn result.
func (k *kit) writeResult(st Step) error {
	res := map[string]any{
		"output": "", "final_output": "", "model": "kit/model", "effort": "", "aborted": false,
		"error": nil, "error_details": nil, "warnings": []any{},
		"usage":    map[string]any{"input_tokens": 1, "output_tokens": 1, "cache_read_tokens": 0, "cache_write_5m_tokens": 0, "cache_write_1h_tokens": 0, "prompt_tokens": 1},
		"cost_usd": nil, "tools": map[string]any{"calls": 0, "failures": 0}, "session": k.session, "path": nil,
	}
	if st.Result != nil {
		var over map[string]any
		if err := json.Unmarshal([]byte(k.subst(string(st.Result))), &over); err != nil {
			return fmt.Errorf("conformance: %s: result: %w", k.s.File, err)
		}
		for key, v := range over {
			res[key] = v
		}
	}
	if st.FinalBytes > 0 {
		res["final_output"] = strings.Repeat("x", st.FinalBytes)
		res["output"] = res["final_output"]
	}
	k.answered(k.id)
	return k.writeObj(map[string]any{"id": k.id, "result": res})
}

// ask writes an ask line and waits for its reply, or cancels it.
func (k *kit) ask(ctx context.Context, name string, st Step, exited <-chan struct{}) error {
	k.nextAsk++
	n := k.nextAsk
	var line map[string]any
	if err := json.Unmarshal([]byte(k.subst(string(st.Ask))), &line); err != nil {
		return fmt.Errorf("conformance: %s: ask: %w", k.s.File, err)
	}
	line["type"], line["ask"] = "ask", n
	if err := k.writeObj(line); err != nil {
		return err
	}
	if st.Cancel {
		k.cancelled[int64(n)] = true
		return k.writeObj(map[string]any{"type": "notice", "extension": line["extension"], "level": "warning",
			"message": fmt.Sprintf("ask %d timed out: the question is withdrawn", n), "ask": n, "session": line["session"]})
	}
	name = fmt.Sprintf("%s (ask %d, %v)", name, n, line["method"])
	// An unanswered ask blocks a real turn for good; 5 s (scaled) is plenty.
	ctx, cancel := context.WithTimeout(ctx, k.timeout(5000))
	defer cancel()
	req, err := k.next(ctx, name+": waiting for its ask.reply", exited)
	if err != nil {
		return err
	}
	if req.Method != "ask.reply" {
		return failf(name, "the client sent %s; want ask.reply for ask %d", req.Method, n)
	}
	if got, _ := json.Marshal(req.Params["ask"]); string(got) != fmt.Sprint(n) {
		return failf(name, "ask.reply names ask %s; want %d", got, n)
	}
	result, has := req.Params["result"]
	if string(st.Answer) == `"absent"` {
		if has && result != nil {
			b, _ := json.Marshal(result)
			return failf(name, "ask.reply carries result %s; the task has no answer for this method, want none", b)
		}
	} else {
		want, _ := decode(st.Answer)
		wb, _ := json.Marshal(want)
		gb, _ := json.Marshal(result)
		if !has || !bytes.Equal(wb, gb) {
			return failf(name, "ask.reply result is %s; want the task's answer %s", gb, wb)
		}
	}
	k.answered(req.ID)
	return k.writeLine([]byte(`{"id":` + string(req.ID) + `,"result":{}}`))
}

// lateReply answers an ask.reply for a cancelled ask with the error e rpc
// gives; it reports whether req was one.
func (k *kit) lateReply(req *request) bool {
	n, _ := req.Params["ask"].(float64)
	if !k.cancelled[int64(n)] {
		return false
	}
	delete(k.cancelled, int64(n))
	k.answered(req.ID)
	k.writeObj(map[string]any{"id": json.RawMessage(req.ID), "error": fmt.Sprintf("ask.reply: ask %d is not waiting (it timed out)", int64(n)), "code": "unknown_ask"})
	return true
}

// late answers an ask.reply or tool.result for what the kit cancelled as
// e rpc does; it reports whether req was one.
func (k *kit) late(req *request) bool {
	return req.Method == "ask.reply" && k.lateReply(req) || req.Method == "tool.result" && k.lateResult(req)
}

// toolCalls writes a step's tool_call lines and waits for their
// tool.results, in any order, or cancels them at once.
func (k *kit) toolCalls(ctx context.Context, name string, st Step, exited <-chan struct{}) error {
	want := map[int64]string{} // call → the tool's name
	for _, c := range st.ToolCalls {
		k.nextCall++
		n := int64(k.nextCall)
		want[n] = c.Name
		args := c.Arguments
		if args == nil {
			args = json.RawMessage(`{}`)
		}
		if err := k.writeObj(map[string]any{"type": "tool_call", "call": n, "session": k.session, "request": k.id,
			"id": n, "name": c.Name, "arguments": args}); err != nil {
			return err
		}
	}
	if st.Cancel {
		for n := int64(k.nextCall - len(st.ToolCalls) + 1); n <= int64(k.nextCall); n++ {
			k.cancelledCalls[n] = true
			if err := k.writeObj(map[string]any{"type": "tool_call_cancelled", "call": n, "session": k.session, "reason": "timeout"}); err != nil {
				return err
			}
		}
		return nil
	}
	name = fmt.Sprintf("%s (%d tool calls)", name, len(want))
	// An unanswered call holds a real turn until it times out; 5 s (scaled) is plenty.
	ctx, cancel := context.WithTimeout(ctx, k.timeout(5000))
	defer cancel()
	for len(want) > 0 {
		req, err := k.next(ctx, name+": waiting for a tool.result", exited)
		if err != nil {
			return err
		}
		if k.late(req) {
			continue
		}
		if req.Method != "tool.result" {
			return failf(name, "the client sent %s; want tool.result", req.Method)
		}
		n, _ := req.Params["call"].(float64)
		tool, ok := want[int64(n)]
		if !ok {
			b, _ := json.Marshal(req.Params["call"])
			return failf(name, "tool.result names call %s, which is not pending", b)
		}
		delete(want, int64(n))
		if got, wantC := req.Params["content"], k.s.Task.ToolResults[tool]; got != wantC {
			return failf(name, "tool.result for call %d (%s) has content %v; want the task's %q", int64(n), tool, got, wantC)
		}
		k.answered(req.ID)
		if err := k.writeLine([]byte(`{"id":` + string(req.ID) + `,"result":{}}`)); err != nil {
			return err
		}
	}
	return nil
}

// lateResult answers a tool.result for a cancelled call with the error e
// rpc gives; it reports whether req was one.
func (k *kit) lateResult(req *request) bool {
	n, _ := req.Params["call"].(float64)
	if !k.cancelledCalls[int64(n)] {
		return false
	}
	delete(k.cancelledCalls, int64(n))
	k.answered(req.ID)
	k.writeObj(map[string]any{"id": json.RawMessage(req.ID), "error": fmt.Sprintf("tool.result: params.call: call %d was already cancelled", int64(n)), "code": "unknown_call"})
	return true
}

// joinCommand quotes argv for SplitCommand and POSIX shells.
func joinCommand(argv []string) string {
	var out []string
	for _, a := range argv {
		if a != "" && !strings.ContainsAny(a, " \t\n'\"\\$`") {
			out = append(out, a)
			continue
		}
		out = append(out, "'"+strings.ReplaceAll(a, "'", `'\''`)+"'")
	}
	return strings.Join(out, " ")
}

// Relay is e-conformance client-relay SOCKET: the server a client under
// test spawns. It pipes stdin to the kit and the kit to stdout, and exits
// when the kit ends the stream (status 1 when it ended it mid-way, the
// "server died" case: the kit closes without the client having closed
// stdin).
func Relay(socket string, stdin io.Reader, stdout io.Writer) int {
	conn, err := net.Dial("unix", socket)
	if err != nil {
		fmt.Fprintf(os.Stderr, "e-conformance client-relay: %v\n", err)
		return 2
	}
	defer conn.Close()
	stdinDone := make(chan struct{})
	go func() {
		io.Copy(conn, stdin)
		if uc, ok := conn.(*net.UnixConn); ok {
			uc.CloseWrite()
		}
		close(stdinDone)
	}()
	io.Copy(stdout, conn)
	select {
	case <-stdinDone:
		return 0
	default:
		return 1
	}
}
