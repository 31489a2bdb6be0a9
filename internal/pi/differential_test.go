package pi

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/e-agent/e/internal/testbuild"
)

// The differential test drives real pi 1.6.0 (`node <pi cli> --mode rpc`)
// and `e --mode rpc` through the same scripted flows, each on its own copy
// of one loopback mock model (openai-completions, declared in pi's
// models.json), and compares what they write: per record its kind (event
// type, response command) and the key set and JSON types of its body,
// recursively, with the values of a few enum-like keys (compareValues).
// Every difference is either fixed in e or listed, with its reason, in
// testdata/differential-allow.txt; a listed difference that no longer
// shows fails the test too, like a survivors file. -pi-diff-update
// rewrites the list's entries (keeping the reasons of those that stay).

var piDiffUpdate = flag.Bool("pi-diff-update", false, "rewrite testdata/differential-allow.txt from this run")

var piDiffDump = flag.String("pi-diff-dump", "", "write each agent's raw lines, flow by flow, to DIR/{pi,e}.txt")

const allowFile = "testdata/differential-allow.txt"

// compareValues are the keys whose values are compared, not only their
// types: they name kinds, roles and outcomes, which both must agree on.
var compareValues = map[string]bool{
	"type": true, "role": true, "stopReason": true, "command": true, "success": true,
	"disposition": true, "cancelled": true, "willRetry": true, "aborted": true, "isError": true,
	"excludeFromContext": true, "reason": true, "method": true, "thinkingLevel": true,
	"steeringMode": true, "followUpMode": true, "isStreaming": true, "isCompacting": true,
	"autoCompactionEnabled": true, "exitCode": true, "toolName": true, "provider": true, "levels": true,
	"messageCount": true, "pendingMessageCount": true, "userMessages": true, "assistantMessages": true,
	"toolCalls": true, "toolResults": true, "totalMessages": true,
	// The test's own records (exit, check).
	"status": true, "stderrLines": true, "stderrNames": true, "requestTools": true, "systemStarts": true,
	"systemHas": true, "fileInDir": true, "fileExists": true, "sessionFileIsPath": true,
}

// ignored are the paths (in a flow, "" for every flow; a record's kind,
// then the path inside its body, "*" for any array index) that are left
// out of the comparison, with why. Everything else is compared by key set
// and type.
var ignored = []struct{ flow, kind, path, why string }{
	{"", "response get_state", ".data.sessionFile", "a path: each agent has its own session folder"},
	{"", "*", ".timestamp", "a time (anywhere); e writes JavaScript's millisecond ISO form, checked by TestEntries"},
	{"", "*", ".usage.cost", "cost numbers (anywhere): pi counts fractional cost; both are numbers when set"},
	{"", "*", ".toolsAdded[].parameters", "a system message's tool argument schemas: each agent's own tools (e's read, bash, edit, write, … are e's)"},
	{"tool-bash-long", "event tool_execution_update", ".partialResult.details", "the updates of a cut output carry its truncation bookkeeping from the first that has read past the limits on, which one depends on how the output was read (chunking)"},
	{"cross-resume", "*", ".sections", "a system message's named prompt sections: pi's own (e's prompt is one text, spec/pi.md: Events)"},
	{"cross-resume", "*", ".constrainedSampling", "a system message's tool declarations: each agent's own tools"},
	{"abort-before-run", "*", ".durationMs", "whether pi's answer of a run aborted as it starts has a duration depends on how far its fetch got (timing); e's always has one"},
}

// A record is one line of an agent's stdout, normalised.
type record struct {
	kind string   // "event TYPE" (+ role or delta type) or "response COMMAND ok|error"
	body []string // ".path type" (or "= value") lines, sorted
}

func (r record) key() string { return r.kind + "\n" + strings.Join(r.body, "\n") }

func normalise(flow string, line []byte) record {
	var v map[string]any
	if err := json.Unmarshal(line, &v); err != nil {
		return record{kind: "not json: " + string(line)}
	}
	typ, _ := v["type"].(string)
	kind := "event " + typ
	switch typ {
	case "response":
		ok := "error"
		if v["success"] == true {
			ok = "ok"
		}
		kind = fmt.Sprintf("response %v %s", v["command"], ok)
	case "message_start", "message_update", "message_end":
		if m, _ := v["message"].(map[string]any); m != nil {
			kind += " " + fmt.Sprint(m["role"])
		}
		if e, _ := v["assistantMessageEvent"].(map[string]any); e != nil {
			kind += " " + fmt.Sprint(e["type"])
		}
	case "extension_ui_request":
		kind += " " + fmt.Sprint(v["method"])
	}
	var body []string
	shape(flow, kind, "", v, &body)
	sort.Strings(body)
	body = slices.Compact(body)
	return record{kind: kind, body: body}
}

func isIgnored(flow, kind, path string) bool {
	for _, ig := range ignored {
		if ig.flow != "" && ig.flow != flow {
			continue
		}
		// ig.path names the path's end, or a subtree anywhere in it.
		if (ig.kind == "*" || ig.kind == kind) && (strings.HasSuffix(path, ig.path) || strings.Contains(path, ig.path+".") ||
			strings.Contains(path, ig.path+"[")) {
			return true
		}
	}
	return false
}

// shape appends v's paths with their JSON types (or values, for
// compareValues keys).
func shape(flow, kind, path string, v any, out *[]string) {
	if isIgnored(flow, kind, path) {
		return
	}
	last := path[strings.LastIndexAny(path, ".]")+1:]
	switch x := v.(type) {
	case map[string]any:
		if path != "" {
			*out = append(*out, path+" object")
		}
		for k, e := range x {
			shape(flow, kind, path+"."+k, e, out)
		}
	case []any:
		if compareValues[last] && !slices.ContainsFunc(x, func(e any) bool { _, ok := e.(string); return !ok }) {
			b, _ := json.Marshal(x)
			*out = append(*out, fmt.Sprintf("%s = %s", path, b))
			return
		}
		*out = append(*out, path+" array")
		// Elements are merged by their role (or type): their sequence is
		// one line, their shapes a union, so that one missing element
		// shows as itself, not as every later one shifted.
		var kinds []string
		for _, e := range x {
			k := ""
			if m, ok := e.(map[string]any); ok {
				k, _ = m["role"].(string)
				if k == "" {
					k, _ = m["type"].(string)
				}
			}
			kinds = append(kinds, k)
			shape(flow, kind, path+"["+k+"]", e, out)
		}
		if len(kinds) > 0 && kinds[0] != "" {
			*out = append(*out, fmt.Sprintf("%s kinds = %s", path, strings.Join(kinds, ",")))
		}
	case string:
		if compareValues[last] {
			*out = append(*out, fmt.Sprintf("%s = %q", path, x))
		} else {
			*out = append(*out, path+" string")
		}
	case float64:
		if compareValues[last] {
			*out = append(*out, fmt.Sprintf("%s = %v", path, x))
		} else {
			*out = append(*out, path+" number")
		}
	case bool:
		if compareValues[last] {
			*out = append(*out, fmt.Sprintf("%s = %v", path, x))
		} else {
			*out = append(*out, path+" bool")
		}
	case nil:
		*out = append(*out, path+" null")
	}
}

// collapse merges runs of identical records: how a stream is cut into
// deltas is not part of the contract.
func collapse(rs []record) []record {
	var out []record
	for _, r := range rs {
		if len(out) > 0 && out[len(out)-1].key() == r.key() {
			continue
		}
		out = append(out, r)
	}
	return out
}

// differences returns the differences between pi's records and e's, as
// allow-list keys: "-pi KIND" / "+e KIND" for a record only one has, and
// "KIND: -pi LINE" / "KIND: +e LINE" for a body line of paired records.
func differences(pi, e []record) []string {
	n, m := len(pi), len(e)
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if pi[i].kind == e[j].kind {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out []string
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && pi[i].kind == e[j].kind:
			for _, l := range only(pi[i].body, e[j].body) {
				out = append(out, pi[i].kind+": -pi "+l)
			}
			for _, l := range only(e[j].body, pi[i].body) {
				out = append(out, e[j].kind+": +e "+l)
			}
			i++
			j++
		case j < m && (i == n || lcs[i][j+1] >= lcs[i+1][j]):
			out = append(out, "+e "+e[j].kind)
			j++
		default:
			out = append(out, "-pi "+pi[i].kind)
			i++
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// only returns a's body lines that b lacks, without those below an
// object or array that b lacks altogether (the subtree's root says it).
func only(a, b []string) []string {
	var out, roots []string
	for _, l := range a {
		if slices.Contains(b, l) {
			continue
		}
		path, _, _ := strings.Cut(l, " ")
		if slices.ContainsFunc(roots, func(r string) bool {
			return strings.HasPrefix(path, r+".") || strings.HasPrefix(path, r+"[")
		}) {
			continue
		}
		if strings.HasSuffix(l, " object") || strings.HasSuffix(l, " array") {
			roots = append(roots, path)
		}
		out = append(out, l)
	}
	return out
}

// diffMock is the scripted loopback model. What it answers depends on the
// request's last message: after a tool result, "done"; otherwise on how
// the last user message starts:
//
//	call-read, call-bash  a tool call (read a.txt; bash echo one; echo two)
//	think                 reasoning deltas, then text
//	fail-once             503 the first time, then text
//	fail-hard             400, not retried
//	fail-wait             503 (without retry-after) the first time, then text
//	hold                  one delta, then waits for release (or the client to go)
//	big                   the text, with a context of 20000 prompt tokens (over the compaction threshold)
//	alias                 the text, its chunks naming the model mock-1-0601 (pi's responseModel)
//	/review               400: the prompt template review was not expanded
//	anything else         the text "w1 w2 w3 "
//
// A call whose messages mention hold-summary but whose last user message
// does not start with "big" (a compaction's summary of that history)
// waits while summaries are held (holdSummaries, until openSummaries).
type diffMock struct {
	mu        sync.Mutex
	failed    map[string]bool
	release   chan struct{}
	summaries chan struct{} // open (closed) or held
	// The last request's system prompt and tool names, for the checks of
	// the start-up flags.
	system string
	tools  []string
}

func newDiffMock() *diffMock {
	return &diffMock{failed: map[string]bool{}, release: make(chan struct{}), summaries: make(chan struct{})}
}

// openSummaries lets the held summary calls go on, and those that follow.
func (m *diffMock) openSummaries() {
	m.mu.Lock()
	close(m.summaries)
	m.mu.Unlock()
}

// holdSummaries holds the summary calls that follow.
func (m *diffMock) holdSummaries() {
	m.mu.Lock()
	m.summaries = make(chan struct{})
	m.mu.Unlock()
}

func (m *diffMock) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Function struct{ Name string } `json:"function"`
		} `json:"tools"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
		return
	}
	system, tools := "", []string{}
	for _, msg := range req.Messages {
		if msg.Role == "system" || msg.Role == "developer" {
			system = contentText(msg.Content)
			break
		}
	}
	for _, t := range req.Tools {
		tools = append(tools, t.Function.Name)
	}
	slices.Sort(tools)
	m.mu.Lock()
	m.system, m.tools = system, tools
	m.mu.Unlock()
	last, user, summary := "", "", false
	for _, msg := range req.Messages {
		last = msg.Role
		if msg.Role == "user" {
			user = contentText(msg.Content)
		}
		summary = summary || strings.Contains(contentText(msg.Content), "hold-summary")
	}
	if summary && !strings.HasPrefix(user, "big") {
		m.mu.Lock()
		gate := m.summaries
		m.mu.Unlock()
		select {
		case <-gate:
		case <-r.Context().Done():
			return
		}
	}
	if last != "tool" && strings.HasPrefix(user, "fail-hard") {
		http.Error(w, `{"error":{"message":"bad request, no retry","type":"invalid_request_error"}}`, http.StatusBadRequest)
		return
	}
	if strings.HasPrefix(user, "/review") { // a prompt template that was not expanded
		http.Error(w, `{"error":{"message":"unexpanded template"}}`, http.StatusBadRequest)
		return
	}
	if last != "tool" && (strings.HasPrefix(user, "fail-once") || strings.HasPrefix(user, "fail-wait")) {
		m.mu.Lock()
		first := !m.failed[user]
		m.failed[user] = true
		m.mu.Unlock()
		if first {
			if strings.HasPrefix(user, "fail-once") {
				w.Header().Set("retry-after", "0")
			}
			http.Error(w, `{"error":{"message":"overloaded, try again","type":"overloaded_error"}}`, http.StatusServiceUnavailable)
			return
		}
	}
	w.Header().Set("Content-Type", "text/event-stream")
	f := w.(http.Flusher)
	answering := "mock-1" // the model the chunks name
	if strings.HasPrefix(user, "alias") {
		answering = "mock-1-0601" // a dated model behind its alias, as real providers answer
	}
	chunk := func(delta string, finish string) {
		fin := "null"
		if finish != "" {
			fin = fmt.Sprintf("%q", finish)
		}
		fmt.Fprintf(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":%q,\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":%s}]}\n\n", answering, delta, fin)
	}
	text := func(words ...string) {
		for _, s := range words {
			b, _ := json.Marshal(s)
			chunk(`{"content":`+string(b)+`}`, "")
		}
	}
	call := func(name, args string) {
		b, _ := json.Marshal(args)
		chunk(fmt.Sprintf(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":%q,"arguments":""}}]}`, name), "")
		chunk(`{"tool_calls":[{"index":0,"function":{"arguments":`+string(b)+`}}]}`, "")
	}
	chunk(`{"role":"assistant","content":""}`, "")
	finish := "stop"
	switch {
	case last == "tool":
		text("done")
	case strings.HasPrefix(user, "call-read"):
		call("read", `{"path":"a.txt"}`)
		finish = "tool_calls"
	case strings.HasPrefix(user, "call-long-bash"): // past pi's 2000 lines
		call("bash", `{"command":"seq 1 2001"}`)
		finish = "tool_calls"
	case strings.HasPrefix(user, "call-bash"):
		call("bash", `{"command":"echo one; echo two"}`)
		finish = "tool_calls"
	case strings.HasPrefix(user, "think"):
		chunk(`{"reasoning_content":"pondering "}`, "")
		chunk(`{"reasoning_content":"more"}`, "")
		text("thought")
	case strings.HasPrefix(user, "hold"):
		text("w1 ")
		f.Flush()
		select {
		case <-m.release:
		case <-r.Context().Done():
			return
		}
		text("w2 ", "w3 ")
	default:
		text("w1 ", "w2 ", "w3 ")
	}
	chunk(`{}`, finish)
	prompt := 10
	if last != "tool" && strings.HasPrefix(user, "big") {
		prompt = 20000
	}
	fmt.Fprintf(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":%q,\"choices\":[],\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":3,\"total_tokens\":%d}}\n\ndata: [DONE]\n\n", answering, prompt, prompt+3)
}

// contentText is a chat message content's text: the string, or its text parts joined.
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct{ Type, Text string }
	json.Unmarshal(raw, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// diffAgent is one agent under the script: one process at a time (a flow
// may restart it with other flags), its lines in one list.
type diffAgent struct {
	t     *testing.T
	name  string
	argv  []string // the agent's command and the flags every start has
	env   []string
	work  string // its working directory
	agent string // its pi config dir (PI_CODING_AGENT_DIR)
	mock  *diffMock

	in     io.WriteCloser
	cmd    *exec.Cmd
	stderr *bytes.Buffer
	done   chan struct{} // the process's stdout ended

	mu    sync.Mutex
	lines [][]byte
	more  chan struct{}

	flow string // the flow running
	pos  int    // where wait looks from
	high int    // one past the last line a step consumed
	n    int    // command ids
}

// stepTimeout bounds each wait of a flow: pi's start included, which takes
// seconds of CPU, and lanes start several at once.
const stepTimeout = 90 * time.Second

func newDiffAgent(t *testing.T, name string, argv, env []string, work, agentDir string, mock *diffMock) *diffAgent {
	a := &diffAgent{t: t, name: name, argv: argv, env: env, work: work, agent: agentDir, mock: mock, more: make(chan struct{}, 1)}
	t.Cleanup(func() {
		if a.cmd != nil {
			a.stop()
		}
	})
	return a
}

// launch starts the agent's process with its flags and args.
func (a *diffAgent) launch(args ...string) {
	a.t.Helper()
	cmd := exec.Command(a.argv[0], slices.Concat(a.argv[1:], rpcMode, args)...)
	cmd.Dir = a.work
	cmd.Env = append(os.Environ(), a.env...)
	a.stderr = &bytes.Buffer{}
	cmd.Stderr = a.stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		a.t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		a.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		a.t.Fatalf("%s: %v", a.name, err)
	}
	a.cmd, a.in, a.done = cmd, in, make(chan struct{})
	done := a.done
	go func() {
		defer close(done)
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			a.add(bytes.Clone(sc.Bytes()))
		}
	}()
}

func (a *diffAgent) add(line []byte) {
	a.mu.Lock()
	a.lines = append(a.lines, line)
	a.mu.Unlock()
	select {
	case a.more <- struct{}{}:
	default:
	}
}

// stop ends the process (EOF on stdin) and returns its exit status and
// stderr.
func (a *diffAgent) stop() (int, string) {
	a.in.Close()
	select {
	case <-a.done:
	case <-time.After(stepTimeout):
		a.cmd.Process.Kill()
		<-a.done
	}
	a.cmd.Wait()
	code, stderr := a.cmd.ProcessState.ExitCode(), a.stderr.String()
	if a.t.Failed() {
		a.t.Logf("%s stderr:\n%s", a.name, stderr)
	}
	a.cmd = nil
	return code, stderr
}

// modelFlags are the flags every start has but restartBare's.
var modelFlags = []string{"--provider", "mock", "--model", "mock-1"}

// restart ends the process and starts it again with modelFlags and args,
// writing settings.json first when settings is not "". The old process's
// exit status is a line of its own: {"type":"exit","status":N,…}.
func (a *diffAgent) restart(settings string, args ...string) {
	a.t.Helper()
	if settings != "" {
		a.exit()
		os.WriteFile(filepath.Join(a.agent, "settings.json"), []byte(settings), 0o600)
		a.launch(append(slices.Clone(modelFlags), args...)...)
		return
	}
	a.restartBare(append(slices.Clone(modelFlags), args...)...)
}

// restartBare is restart with args alone (the flags of the model too).
func (a *diffAgent) restartBare(args ...string) {
	a.t.Helper()
	a.exit()
	a.launch(args...)
}

// startExit ends the process, then starts one with args and at once ends
// its input: the exit line of that one says its status, how many lines
// it wrote on stderr and whether they name word.
func (a *diffAgent) startExit(word string, args ...string) {
	a.t.Helper()
	a.exit()
	a.launch(args...)
	a.exitNaming(word)
}

// exitCase is one start of startExits: its args (after --mode rpc, unless
// bare), and a word its stderr may name.
type exitCase struct {
	word string
	args []string
	bare bool
}

// rpcMode is the mode every start but a bare exitCase's has.
var rpcMode = []string{"--mode", "rpc"}

// startExits is startExit for each case, the processes at once (each
// exits by itself or at the end of its empty input), their lines in the
// cases' order: what each wrote on stdout, then its exit line.
func (a *diffAgent) startExits(cases []exitCase) {
	a.t.Helper()
	a.exit()
	type run struct {
		out, stderr bytes.Buffer
		code        int
	}
	runs := make([]run, len(cases))
	var wg sync.WaitGroup
	for i, c := range cases {
		mode := rpcMode
		if c.bare {
			mode = nil
		}
		cmd := exec.Command(a.argv[0], slices.Concat(a.argv[1:], mode, c.args)...)
		cmd.Dir, cmd.Env = a.work, append(os.Environ(), a.env...)
		cmd.Stdout, cmd.Stderr = &runs[i].out, &runs[i].stderr
		if err := cmd.Start(); err != nil {
			a.t.Fatalf("%s: %v", a.name, err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd.Wait()
			runs[i].code = cmd.ProcessState.ExitCode()
		}()
	}
	wg.Wait()
	for i, c := range cases {
		for _, l := range bytes.Split(runs[i].out.Bytes(), []byte("\n")) {
			if len(bytes.TrimSpace(l)) > 0 {
				a.add(l)
			}
		}
		a.addExit(runs[i].code, runs[i].stderr.String(), c.word)
	}
}

// exit ends the process (if one runs) and adds its exit line.
func (a *diffAgent) exit() { a.exitNaming("") }

func (a *diffAgent) exitNaming(word string) {
	if a.cmd == nil {
		return
	}
	code, stderr := a.stop()
	a.addExit(code, stderr, word)
}

// addExit adds the exit line of a process that ended with code, having
// written stderr: its status, how many lines it wrote on stderr, and
// whether they name word (when word is not "").
func (a *diffAgent) addExit(code int, stderr, word string) {
	n := 0
	for _, l := range strings.Split(stderr, "\n") {
		if strings.TrimSpace(l) != "" {
			n++
		}
	}
	rec := map[string]any{"type": "exit", "status": code, "stderrLines": n}
	if word != "" {
		rec["stderrNames"] = strings.Contains(stderr, word)
	}
	b, _ := json.Marshal(rec)
	a.add(b)
	a.high = a.lenLines()
}

// check adds a record of the test's own (type "check") with what a flow
// found out, so that both agents' findings are compared.
func (a *diffAgent) check(fields map[string]any) {
	fields["type"] = "check"
	b, _ := json.Marshal(fields)
	a.add(b)
	a.high = a.lenLines()
}

// checkRequest checks what the model saw in the last request: its tools,
// and whether its system prompt starts with start and holds has.
func (a *diffAgent) checkRequest(start, has string) {
	a.mock.mu.Lock()
	system, tools := a.mock.system, slices.Clone(a.mock.tools)
	a.mock.mu.Unlock()
	rec := map[string]any{"requestTools": tools}
	if start != "" {
		rec["systemStarts"] = strings.HasPrefix(system, start)
	}
	if has != "" {
		rec["systemHas"] = strings.Contains(system, has)
	}
	a.check(rec)
}

func (a *diffAgent) lenLines() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.lines)
}

func (a *diffAgent) send(line string) {
	a.t.Helper()
	if _, err := a.in.Write([]byte(line + "\n")); err != nil {
		a.t.Fatalf("%s: send: %v", a.name, err)
	}
}

// find waits for the first line from position from that f accepts.
func (a *diffAgent) find(from int, what string, f func(map[string]any) bool) (map[string]any, int) {
	a.t.Helper()
	deadline := time.After(stepTimeout)
	for {
		a.mu.Lock()
		for i := from; i < len(a.lines); i++ {
			var v map[string]any
			if json.Unmarshal(a.lines[i], &v) == nil && f(v) {
				a.mu.Unlock()
				a.high = max(a.high, i+1)
				return v, i + 1
			}
		}
		a.mu.Unlock()
		select {
		case <-a.more:
		case <-a.processDone():
			select {
			case <-a.more:
				continue
			default:
			}
			a.t.Fatalf("%s, flow %s: stdout ended before %s; its lines since %d:\n%s", a.name, a.flow, what, from, a.since(from))
		case <-deadline:
			a.t.Fatalf("%s, flow %s: no %s within %v; its lines since %d:\n%s", a.name, a.flow, what, stepTimeout, from, a.since(from))
		}
	}
}

// processDone is closed once the running process's stdout ended (never
// when none runs).
func (a *diffAgent) processDone() <-chan struct{} {
	if a.cmd == nil {
		return nil
	}
	return a.done
}

func (a *diffAgent) since(from int) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return string(bytes.Join(a.lines[min(from, len(a.lines)):], []byte("\n")))
}

// call sends cmd with a fresh id and returns its response.
func (a *diffAgent) call(cmd map[string]any) map[string]any {
	a.t.Helper()
	a.n++
	id := fmt.Sprintf("c%d", a.n)
	cmd["id"] = id
	b, _ := json.Marshal(cmd)
	a.send(string(b))
	from := a.pos
	v, _ := a.find(from, "response "+id, func(v map[string]any) bool { return v["type"] == "response" && v["id"] == id })
	return v
}

// wait returns the next line of type typ after the last one wait found.
func (a *diffAgent) wait(typ string) map[string]any {
	a.t.Helper()
	v, next := a.find(a.pos, typ, func(v map[string]any) bool { return v["type"] == typ })
	a.pos = next
	return v
}

// releaseHold lets the held model answer go on.
func (a *diffAgent) releaseHold() {
	select {
	case a.mock.release <- struct{}{}:
	case <-time.After(stepTimeout):
		a.t.Fatalf("%s: no held model call to release", a.name)
	}
}

// cut returns the lines since the previous cut.
func (a *diffAgent) cut(start int) ([][]byte, int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	end := max(a.high, a.pos)
	a.pos = end
	return a.lines[start:end], end
}

func data(v map[string]any) map[string]any { d, _ := v["data"].(map[string]any); return d }

type diffFlow struct {
	name string
	run  func(a *diffAgent)
}

func prompt(a *diffAgent, msg string) {
	a.call(map[string]any{"type": "prompt", "message": msg})
	a.wait("agent_settled")
}

var diffFlows = []diffFlow{
	{"state-fresh", func(a *diffAgent) {
		for _, c := range []string{"get_state", "get_messages", "get_available_models", "get_available_thinking_levels",
			"get_commands", "get_session_stats", "get_entries", "get_tree", "get_last_assistant_text", "get_fork_messages",
			"clone"} { // clone before any message: refused
			a.call(map[string]any{"type": c})
		}
	}},
	{"prompt-template", func(a *diffAgent) {
		a.call(map[string]any{"type": "get_commands"})
		prompt(a, `/review "error handling"`)
		a.call(map[string]any{"type": "get_last_assistant_text"})
	}},
	{"prompt-text", func(a *diffAgent) {
		prompt(a, "hello")
		for _, c := range []string{"get_messages", "get_state", "get_session_stats", "get_last_assistant_text", "get_entries", "get_tree"} {
			a.call(map[string]any{"type": c})
		}
	}},
	{"response-model", func(a *diffAgent) {
		// The chunks name another model than the one asked for.
		prompt(a, "alias please")
		a.call(map[string]any{"type": "get_messages"})
	}},
	{"thinking", func(a *diffAgent) {
		a.call(map[string]any{"type": "set_thinking_level", "level": "high"})
		prompt(a, "think hard")
		a.call(map[string]any{"type": "get_messages"})
	}},
	{"tool-read", func(a *diffAgent) {
		prompt(a, "call-read please")
		a.call(map[string]any{"type": "get_messages"})
	}},
	{"tool-bash", func(a *diffAgent) {
		prompt(a, "call-bash please")
	}},
	{"steer-follow-up", func(a *diffAgent) {
		a.call(map[string]any{"type": "prompt", "message": "hold on"})
		a.wait("message_update")
		a.call(map[string]any{"type": "prompt", "message": "again"}) // refused: no streamingBehavior
		a.call(map[string]any{"type": "steer", "message": "steer one"})
		a.call(map[string]any{"type": "follow_up", "message": "follow one"})
		a.call(map[string]any{"type": "prompt", "message": "steer two", "streamingBehavior": "steer"})
		a.call(map[string]any{"type": "prompt", "message": "follow two", "streamingBehavior": "followUp"})
		a.releaseHold()
		a.wait("agent_settled")
		a.call(map[string]any{"type": "get_messages"})
	}},
	{"queue-modes-all", func(a *diffAgent) {
		a.call(map[string]any{"type": "set_steering_mode", "mode": "all"})
		a.call(map[string]any{"type": "set_follow_up_mode", "mode": "all"})
		a.call(map[string]any{"type": "prompt", "message": "hold on"})
		a.wait("message_update")
		a.call(map[string]any{"type": "steer", "message": "steer a"})
		a.call(map[string]any{"type": "steer", "message": "steer b"})
		a.call(map[string]any{"type": "follow_up", "message": "follow a"})
		a.call(map[string]any{"type": "follow_up", "message": "follow b"})
		a.releaseHold()
		a.wait("agent_settled")
		a.call(map[string]any{"type": "get_state"})
		a.call(map[string]any{"type": "set_steering_mode", "mode": "one-at-a-time"})
		a.call(map[string]any{"type": "set_follow_up_mode", "mode": "one-at-a-time"})
	}},
	{"clear-queue", func(a *diffAgent) {
		a.call(map[string]any{"type": "prompt", "message": "hold on"})
		a.wait("message_update")
		a.call(map[string]any{"type": "steer", "message": "never"})
		a.call(map[string]any{"type": "follow_up", "message": "nor this"})
		a.call(map[string]any{"type": "clear_queue"})
		a.releaseHold()
		a.wait("agent_settled")
	}},
	{"abort", func(a *diffAgent) {
		a.call(map[string]any{"type": "prompt", "message": "hold on"})
		a.wait("message_update")
		a.call(map[string]any{"type": "abort"})
		a.wait("agent_settled")
		a.call(map[string]any{"type": "get_state"})
		a.call(map[string]any{"type": "get_messages"})
	}},
	{"bash", func(a *diffAgent) {
		a.call(map[string]any{"type": "bash", "command": "echo from-bash"})
		a.call(map[string]any{"type": "bash", "command": "echo hidden", "excludeFromContext": true})
		a.call(map[string]any{"type": "bash", "command": "exit 3"})
		// ANSI escape sequences and carriage returns are stripped.
		a.call(map[string]any{"type": "bash", "command": `printf '\033[31mred\033[0m\r\nplain\r\n'`})
		// Past pi's 2000 lines: the last 2000 and a file with them all.
		a.call(map[string]any{"type": "bash", "command": "seq 1 2001"})
		a.call(map[string]any{"type": "get_messages"})
		a.call(map[string]any{"type": "get_state"})
	}},
	{"abort-bash", func(a *diffAgent) {
		fifo := filepath.Join(a.work, "gate")
		syscall.Mkfifo(fifo, 0o600)
		a.send(`{"id":"slow","type":"bash","command":"echo start; cat gate"}`)
		a.wait("bash_execution_update")
		a.call(map[string]any{"type": "abort_bash"})
		a.find(0, "response slow", func(v map[string]any) bool { return v["type"] == "response" && v["id"] == "slow" })
		os.Remove(fifo)
	}},
	{"prompt-during-bash", func(a *diffAgent) {
		fifo := filepath.Join(a.work, "gate2")
		syscall.Mkfifo(fifo, 0o600)
		a.send(`{"id":"bg","type":"bash","command":"echo start; cat gate2"}`)
		a.wait("bash_execution_update")
		if r := a.call(map[string]any{"type": "prompt", "message": "hello while bash runs"}); r["success"] == true {
			a.wait("agent_settled")
		}
		os.WriteFile(fifo, []byte("gate open\n"), 0o600)
		a.find(0, "response bg", func(v map[string]any) bool { return v["type"] == "response" && v["id"] == "bg" })
		a.call(map[string]any{"type": "get_messages"})
	}},
	{"bash-beside-run", func(a *diffAgent) {
		a.call(map[string]any{"type": "prompt", "message": "hold on"})
		a.wait("message_update")
		a.call(map[string]any{"type": "bash", "command": "echo beside"})
		a.call(map[string]any{"type": "bash", "command": "echo beside-hidden", "excludeFromContext": true})
		a.releaseHold()
		a.wait("agent_settled")
		a.call(map[string]any{"type": "get_messages"})
	}},
	{"retry", func(a *diffAgent) {
		a.call(map[string]any{"type": "set_auto_retry", "enabled": true})
		prompt(a, "fail-once please")
		a.call(map[string]any{"type": "get_messages"})
		a.call(map[string]any{"type": "get_session_stats"})
		a.call(map[string]any{"type": "abort_retry"})
	}},
	{"model-error", func(a *diffAgent) {
		prompt(a, "fail-hard please")
		a.call(map[string]any{"type": "get_messages"})
		a.call(map[string]any{"type": "get_last_assistant_text"})
		a.call(map[string]any{"type": "get_session_stats"})
	}},
	{"tool-bash-long", func(a *diffAgent) {
		prompt(a, "call-long-bash please")
		a.call(map[string]any{"type": "get_messages"})
	}},
	{"compact", func(a *diffAgent) {
		a.call(map[string]any{"type": "compact", "customInstructions": "keep it short"})
		a.call(map[string]any{"type": "get_messages"})
		a.call(map[string]any{"type": "get_session_stats"})
		a.call(map[string]any{"type": "set_auto_compaction", "enabled": false})
		a.call(map[string]any{"type": "get_state"})
		a.call(map[string]any{"type": "set_auto_compaction", "enabled": true})
	}},
	{"compact-before-run", func(a *diffAgent) {
		// A prompt during a manual compaction is refused.
		a.call(map[string]any{"type": "set_auto_compaction", "enabled": false})
		prompt(a, "big context hold-summary")
		a.send(`{"id":"man","type":"compact"}`)
		a.wait("compaction_start")
		a.call(map[string]any{"type": "prompt", "message": "while compacting by hand"})
		a.mock.openSummaries()
		a.find(0, "response man", func(v map[string]any) bool { return v["type"] == "response" && v["id"] == "man" })
		// A context over the threshold with auto compaction off; turned
		// on, the next prompt compacts first. Meanwhile a prompt without
		// streamingBehavior, one with followUp and a steer come.
		a.mock.holdSummaries()
		prompt(a, "big again hold-summary")
		a.call(map[string]any{"type": "set_auto_compaction", "enabled": true})
		a.send(`{"id":"pre","type":"prompt","message":"after big"}`)
		a.wait("compaction_start")
		a.call(map[string]any{"type": "prompt", "message": "while compacting"})
		a.call(map[string]any{"type": "prompt", "message": "follow while compacting", "streamingBehavior": "followUp"})
		a.call(map[string]any{"type": "steer", "message": "steer while compacting"})
		a.call(map[string]any{"type": "get_state"})
		a.mock.openSummaries()
		a.find(0, "response pre", func(v map[string]any) bool { return v["type"] == "response" && v["id"] == "pre" })
		a.wait("agent_settled")
		a.call(map[string]any{"type": "get_messages"})
	}},
	{"compact-twice", func(a *diffAgent) {
		// A second compact with nothing new: pi's "Already compacted".
		prompt(a, "some history first")
		prompt(a, "and more")
		a.call(map[string]any{"type": "compact"})
		a.call(map[string]any{"type": "compact"})
	}},
	{"compact-during-run", func(a *diffAgent) {
		// compact aborts the run first, then compacts.
		prompt(a, "some history first")
		a.call(map[string]any{"type": "prompt", "message": "hold on"})
		a.wait("message_update")
		a.send(`{"id":"c","type":"compact"}`)
		a.find(0, "response c", func(v map[string]any) bool { return v["type"] == "response" && v["id"] == "c" })
		a.call(map[string]any{"type": "get_state"})
		a.call(map[string]any{"type": "get_messages"})
	}},
	{"level-during-run", func(a *diffAgent) {
		// A level set during a run is taken at once.
		a.call(map[string]any{"type": "prompt", "message": "hold on"})
		a.wait("message_update")
		a.call(map[string]any{"type": "set_thinking_level", "level": "high"})
		a.releaseHold()
		a.wait("agent_settled")
		a.call(map[string]any{"type": "get_state"})
	}},
	{"abort-before-run", func(a *diffAgent) {
		// An abort during a prompt's compaction before its run stops the
		// compaction, and the run, once it starts; abort answers after
		// the run settled.
		a.call(map[string]any{"type": "set_auto_compaction", "enabled": false})
		a.mock.holdSummaries()
		prompt(a, "big once more hold-summary")
		a.call(map[string]any{"type": "set_auto_compaction", "enabled": true})
		a.send(`{"id":"pre","type":"prompt","message":"after big"}`)
		a.wait("compaction_start")
		a.send(`{"id":"stop","type":"abort"}`)
		a.wait("compaction_end")
		a.mock.openSummaries()
		a.find(0, "response stop", func(v map[string]any) bool { return v["type"] == "response" && v["id"] == "stop" })
		a.find(0, "response pre", func(v map[string]any) bool { return v["type"] == "response" && v["id"] == "pre" })
		a.wait("agent_settled")
		a.call(map[string]any{"type": "get_state"})
		a.call(map[string]any{"type": "get_messages"})
	}},
	{"follow-up-idle", func(a *diffAgent) {
		// A follow_up while idle is queued, as always: it goes once the
		// next prompt's answer would end the run.
		a.call(map[string]any{"type": "follow_up", "message": "idle follow"})
		a.call(map[string]any{"type": "get_state"})
		prompt(a, "after an idle follow-up")
		a.call(map[string]any{"type": "get_state"})
	}},
	{"abort-compact", func(a *diffAgent) {
		// During a compact, follow_up and steer are queued; abort stops
		// the compaction (aborted, the compact fails).
		a.call(map[string]any{"type": "set_auto_compaction", "enabled": false})
		prompt(a, "big history hold-summary")
		a.mock.holdSummaries()
		a.send(`{"id":"man2","type":"compact"}`)
		a.wait("compaction_start")
		a.call(map[string]any{"type": "follow_up", "message": "follow while compacting by hand"})
		a.call(map[string]any{"type": "steer", "message": "steer while compacting by hand"})
		a.call(map[string]any{"type": "get_state"})
		a.send(`{"id":"stop2","type":"abort"}`)
		a.find(0, "response man2", func(v map[string]any) bool { return v["type"] == "response" && v["id"] == "man2" })
		a.find(0, "response stop2", func(v map[string]any) bool { return v["type"] == "response" && v["id"] == "stop2" })
		a.call(map[string]any{"type": "get_state"})
		// A compact during a compact stops the first, then compacts.
		a.send(`{"id":"cc1","type":"compact"}`)
		a.wait("compaction_start")
		a.send(`{"id":"cc2","type":"compact"}`)
		a.find(0, "response cc1", func(v map[string]any) bool { return v["type"] == "response" && v["id"] == "cc1" })
		a.mock.openSummaries()
		a.find(0, "response cc2", func(v map[string]any) bool { return v["type"] == "response" && v["id"] == "cc2" })
		// The queued steer and follow-up go with the next prompt.
		prompt(a, "after the compactions")
		a.call(map[string]any{"type": "set_auto_compaction", "enabled": true})
	}},
	{"auto-compact-queue", func(a *diffAgent) {
		// During the compaction after a run (threshold), the run is still
		// on: a prompt without streamingBehavior is refused, a follow_up is
		// queued; an abort stops the compaction.
		a.mock.holdSummaries()
		a.send(`{"id":"big3","type":"prompt","message":"big auto hold-summary"}`)
		a.wait("compaction_start")
		a.call(map[string]any{"type": "get_state"})
		a.call(map[string]any{"type": "prompt", "message": "refused while compacting after"})
		a.call(map[string]any{"type": "follow_up", "message": "follow during auto compaction"})
		a.call(map[string]any{"type": "steer", "message": "steer during auto compaction"})
		a.mock.openSummaries()
		a.wait("agent_settled")
		a.call(map[string]any{"type": "get_state"})
		a.mock.holdSummaries()
		a.send(`{"id":"big4","type":"prompt","message":"big auto again hold-summary"}`)
		a.wait("compaction_start")
		a.send(`{"id":"stop4","type":"abort"}`)
		a.find(0, "response stop4", func(v map[string]any) bool { return v["type"] == "response" && v["id"] == "stop4" })
		a.mock.openSummaries()
		a.call(map[string]any{"type": "get_state"})
	}},
	{"reads-during-run", func(a *diffAgent) {
		// What the read commands answer while a run streams, and an abort
		// while only a user bash command runs (pi's abort leaves it be).
		a.call(map[string]any{"type": "prompt", "message": "hold on"})
		a.wait("message_update")
		for _, c := range []string{"get_state", "get_messages", "get_last_assistant_text", "get_session_stats",
			"get_fork_messages"} {
			a.call(map[string]any{"type": c})
		}
		a.call(map[string]any{"type": "set_session_name", "name": "  named while running\n"})
		a.call(map[string]any{"type": "set_session_name", "name": " \t "})
		a.releaseHold()
		a.wait("agent_settled")
		fifo := filepath.Join(a.work, "gate4")
		syscall.Mkfifo(fifo, 0o600)
		a.send(`{"id":"bg4","type":"bash","command":"echo start; cat gate4"}`)
		a.wait("bash_execution_update")
		a.call(map[string]any{"type": "abort"})
		os.WriteFile(fifo, []byte("gate open\n"), 0o600)
		a.find(0, "response bg4", func(v map[string]any) bool { return v["type"] == "response" && v["id"] == "bg4" })
	}},
	{"switch-same-session", func(a *diffAgent) {
		// switch_session to the file already open: pi opens it again, a
		// new session whose queues are empty.
		st := a.call(map[string]any{"type": "get_state"})
		file, _ := data(st)["sessionFile"].(string)
		a.call(map[string]any{"type": "steer", "message": "steer dropped by the switch"})
		a.call(map[string]any{"type": "follow_up", "message": "follow-up dropped by the switch"})
		a.call(map[string]any{"type": "switch_session", "sessionPath": file})
		a.call(map[string]any{"type": "get_state"})
		prompt(a, "after the switch")
	}},
	{"models", func(a *diffAgent) {
		a.call(map[string]any{"type": "set_model", "provider": "mock", "modelId": "mock-2"})
		// Round the models twice, past the last to the first each time:
		// six calls end where they began for pi's two models and e's three
		// (its offline model too, listed below), so the flows after agree.
		for range 6 {
			a.call(map[string]any{"type": "cycle_model"})
		}
		a.call(map[string]any{"type": "cycle_thinking_level"})
		a.call(map[string]any{"type": "set_thinking_level", "level": "low"})
		a.call(map[string]any{"type": "get_available_thinking_levels"})
		a.call(map[string]any{"type": "get_state"})
	}},
	{"session-ops", func(a *diffAgent) {
		a.call(map[string]any{"type": "set_session_name", "name": "named"})
		st := a.call(map[string]any{"type": "get_state"})
		file, _ := data(st)["sessionFile"].(string)
		fm := a.call(map[string]any{"type": "get_fork_messages"})
		msgs, _ := data(fm)["messages"].([]any)
		entry := ""
		if len(msgs) > 1 {
			entry, _ = msgs[1].(map[string]any)["entryId"].(string)
		}
		a.call(map[string]any{"type": "fork", "entryId": entry})
		a.call(map[string]any{"type": "get_messages"})
		a.call(map[string]any{"type": "clone"})
		a.call(map[string]any{"type": "get_state"})
		a.call(map[string]any{"type": "new_session"})
		a.call(map[string]any{"type": "get_state"})
		a.call(map[string]any{"type": "switch_session", "sessionPath": file})
		a.call(map[string]any{"type": "get_state"})
		a.call(map[string]any{"type": "get_session_stats"})
		a.call(map[string]any{"type": "export_html", "outputPath": filepath.Join(a.work, "out.html")})
	}},
	{"errors", func(a *diffAgent) {
		a.send(`{not json`)
		a.call(map[string]any{"type": "no_such_command"})
		a.call(map[string]any{"type": "set_thinking_level", "level": "bogus"})
		a.call(map[string]any{"type": "set_model", "provider": "mock", "modelId": "nope"})
		a.call(map[string]any{"type": "fork", "entryId": "nope"})
		a.call(map[string]any{"type": "switch_session", "sessionPath": filepath.Join(a.work, "missing.jsonl")})
		a.call(map[string]any{"type": "set_steering_mode", "mode": "bogus"})
		a.send(`{"type":"get_last_assistant_text"}`)
		a.find(a.high, "id-less response", func(v map[string]any) bool {
			return v["type"] == "response" && v["command"] == "get_last_assistant_text" && v["id"] == nil
		})
	}},
	{"busy-commands", func(a *diffAgent) {
		// A compact beside a user bash command; new_session during a run
		// (pi's teardown aborts it first) and during a compact. First the
		// model, level and mode the flows before changed (pi took the bogus
		// steering mode), in a new session.
		a.call(map[string]any{"type": "set_model", "provider": "mock", "modelId": "mock-1"})
		a.call(map[string]any{"type": "set_thinking_level", "level": "medium"})
		a.call(map[string]any{"type": "set_steering_mode", "mode": "one-at-a-time"})
		a.call(map[string]any{"type": "new_session"})
		prompt(a, "some history")
		fifo := filepath.Join(a.work, "gate3")
		syscall.Mkfifo(fifo, 0o600)
		a.send(`{"id":"bg3","type":"bash","command":"echo start; cat gate3"}`)
		a.wait("bash_execution_update")
		a.call(map[string]any{"type": "compact"})
		a.call(map[string]any{"type": "get_state"})
		os.WriteFile(fifo, []byte("gate open\n"), 0o600)
		a.find(0, "response bg3", func(v map[string]any) bool { return v["type"] == "response" && v["id"] == "bg3" })
		a.call(map[string]any{"type": "prompt", "message": "hold on"})
		a.wait("message_update")
		a.call(map[string]any{"type": "new_session"})
		a.wait("agent_settled") // the aborted run's, before new_session's response
		a.call(map[string]any{"type": "get_state"})
		prompt(a, "big fresh hold-summary")
		prompt(a, "more history hold-summary")
		a.mock.holdSummaries()
		a.send(`{"id":"man5","type":"compact"}`)
		a.wait("compaction_start")
		a.call(map[string]any{"type": "new_session"})
		a.find(0, "response man5", func(v map[string]any) bool { return v["type"] == "response" && v["id"] == "man5" })
		a.mock.openSummaries()
		a.call(map[string]any{"type": "get_state"})
	}},
}

// diffSettings is pi's settings.json of the flows: quick retries, and one
// token of recent messages kept by a compaction (the flows' history is far
// smaller than pi's default 20000, which leaves nothing to summarise).
const diffSettings = `{"retry":{"enabled":true,"maxRetries":2,"baseDelayMs":1},"compaction":{"keepRecentTokens":1}}`

// runFlows restart the agent for runs of their own (a retry wait of a
// minute, a session switched during a run), each in a lane of its own, as
// soloFlows.
var runFlows = []diffFlow{
	{"abort-retry-wait", func(a *diffAgent) {
		// abort_retry while a retry waits cancels the wait only: the run
		// settles, not aborted; with something queued, pi's run goes on at
		// once (the model call again, then the follow-up). Both wait
		// retry.baseDelayMs, a minute.
		a.restart(strings.Replace(diffSettings, `"baseDelayMs":1`, `"baseDelayMs":60000`, 1))
		a.call(map[string]any{"type": "prompt", "message": "fail-wait please"})
		a.wait("auto_retry_start")
		a.call(map[string]any{"type": "abort_retry"})
		a.wait("agent_settled")
		a.call(map[string]any{"type": "prompt", "message": "fail-wait again"})
		a.wait("auto_retry_start")
		a.call(map[string]any{"type": "follow_up", "message": "after the cancelled retry"})
		a.call(map[string]any{"type": "abort_retry"})
		a.wait("agent_settled")
		a.call(map[string]any{"type": "get_state"})
		a.call(map[string]any{"type": "get_messages"})
		a.call(map[string]any{"type": "get_session_stats"})
		// A steer queued while a retry waits: abort_retry goes on with it,
		// the steer before the call; that call fails too (its user message
		// is new to the mock), and its retry counts from 1 again.
		a.call(map[string]any{"type": "prompt", "message": "fail-wait a third time"})
		a.wait("auto_retry_start")
		a.call(map[string]any{"type": "steer", "message": "fail-wait steered"})
		a.call(map[string]any{"type": "abort_retry"})
		a.wait("auto_retry_start")
		a.call(map[string]any{"type": "abort_retry"})
		a.wait("agent_settled")
		a.call(map[string]any{"type": "get_messages"})
	}},
	{"switch-during-run", func(a *diffAgent) {
		// switch_session during a run stops it first; the session opened
		// again (its own file, then back from another) has what was
		// saved of it.
		a.restart(diffSettings)
		prompt(a, "some history")
		file, _ := data(a.call(map[string]any{"type": "get_state"}))["sessionFile"].(string)
		a.call(map[string]any{"type": "prompt", "message": "hold on"})
		a.wait("message_update")
		a.call(map[string]any{"type": "switch_session", "sessionPath": file})
		a.call(map[string]any{"type": "get_messages"})
		a.call(map[string]any{"type": "get_state"})
		a.pos = a.lenLines() // past the stopped run's last updates
		a.call(map[string]any{"type": "prompt", "message": "hold on again"})
		a.wait("message_update")
		a.call(map[string]any{"type": "new_session"})
		a.call(map[string]any{"type": "switch_session", "sessionPath": file})
		a.call(map[string]any{"type": "get_messages"})
		a.call(map[string]any{"type": "get_entries"})
	}},
}

// sessionFlows restart the agent on the sessions it saved, in one lane:
// each finds those of the flows before.
var sessionFlows = []diffFlow{
	{"session-path", func(a *diffAgent) {
		// --session PATH of the agent's own saved file: the same session,
		// which goes on.
		a.restart(diffSettings)
		prompt(a, "remember this")
		file, _ := data(a.call(map[string]any{"type": "get_state"}))["sessionFile"].(string)
		a.restart("", "--session", file)
		a.call(map[string]any{"type": "get_state"})
		a.call(map[string]any{"type": "get_messages"})
		prompt(a, "after the resume")
		a.call(map[string]any{"type": "get_messages"})
	}},
	{"session-id", func(a *diffAgent) {
		// --session ID, whole and as a prefix, finds the saved session.
		id, _ := data(a.call(map[string]any{"type": "get_state"}))["sessionId"].(string)
		a.restart("", "--session", id)
		a.call(map[string]any{"type": "get_messages"})
		a.restart("", "--session", id[:len(id)-2])
		a.call(map[string]any{"type": "get_messages"})
		a.startExit("no-such-session", append(slices.Clone(modelFlags), "--session", "no-such-session")...)
	}},
	{"continue", func(a *diffAgent) {
		// -c opens the newest session of the folder.
		a.restart("", "-c")
		a.call(map[string]any{"type": "get_messages"})
		prompt(a, "continued")
		a.restart("", "--continue")
		a.call(map[string]any{"type": "get_messages"})
	}},
}

// soloFlows restart the agent as they need it (start-up flags, settings),
// each in a lane of its own.
var soloFlows = []diffFlow{
	{"session-new-file", func(a *diffAgent) {
		// --session PATH of a file that does not exist yet: a new session
		// saved there.
		file := filepath.Join(filepath.Dir(a.work), "fresh", "new.jsonl")
		a.restart("", "--session", file)
		st := a.call(map[string]any{"type": "get_state"})
		a.check(map[string]any{"sessionFileIsPath": data(st)["sessionFile"] == file})
		prompt(a, "saved where asked")
		a.call(map[string]any{"type": "get_messages"})
		a.check(map[string]any{"fileExists": isFile(file)})
	}},
	{"session-dir", func(a *diffAgent) {
		// --session-dir DIR keeps the sessions in DIR itself; -c finds
		// them there.
		dir := filepath.Join(filepath.Dir(a.work), "elsewhere")
		a.restart("", "--session-dir", dir)
		prompt(a, "kept elsewhere")
		file, _ := data(a.call(map[string]any{"type": "get_state"}))["sessionFile"].(string)
		a.check(map[string]any{"fileInDir": filepath.Dir(file) == dir})
		a.restart("", "--session-dir", dir, "-c")
		a.call(map[string]any{"type": "get_messages"})
	}},
	{"no-session", func(a *diffAgent) {
		// --no-session: an empty session kept in memory; -c beside it is
		// ignored.
		a.restart("", "--no-session")
		a.call(map[string]any{"type": "get_state"})
		prompt(a, "not saved")
		a.call(map[string]any{"type": "get_messages"})
		a.restart("", "--no-session", "-c")
		a.call(map[string]any{"type": "get_messages"})
	}},
	{"pi-file", func(a *diffAgent) {
		// --session of a file pi 1.6.0 wrote (testdata/pi-session.jsonl:
		// a name, a level, a read call, a user bash command, a model
		// change), without --model: its model and level.
		file := piSessionFixture(a.t, filepath.Join(filepath.Dir(a.work), "pi-written.jsonl"), a.work)
		a.restartBare("--session", file)
		a.call(map[string]any{"type": "get_state"})
		a.call(map[string]any{"type": "get_messages"})
		prompt(a, "after the pi file")
		a.call(map[string]any{"type": "get_messages"})
	}},
	{"model-flags", func(a *diffAgent) {
		a.restartBare("--model", "mock/mock-1:high")
		a.call(map[string]any{"type": "get_state"})
		a.restartBare("--provider", "mock", "--model", "mock-2", "--thinking", "high") // no reasoning: off
		a.call(map[string]any{"type": "get_state"})
		a.restartBare("--model", "mock-1:low", "--thinking", "minimal") // --thinking wins
		a.call(map[string]any{"type": "get_state"})
	}},
	{"tool-flags", func(a *diffAgent) {
		// (The default selection: the system-prompt flow's.)
		for _, args := range [][]string{{"--tools", "read,bash,nope"}, {"--no-tools"}, {"--tools", "-bash,+grep", "--exclude-tools", "wr*"}} {
			a.restart("", args...)
			prompt(a, "hello tools")
			a.checkRequest("", "")
		}
	}},
	{"json-mode", func(a *diffAgent) {
		// --mode json one-shot runs, as pi's subagent example
		// (examples/extensions/subagent) spawns them: -p, --no-session,
		// --model, --thinking, --tools and --append-system-prompt FILE;
		// then two prompts of one run, and a model error.
		appendix := filepath.Join(filepath.Dir(a.work), "subagent.md")
		os.WriteFile(appendix, []byte("You are a subagent."), 0o600)
		a.startExits([]exitCase{
			{bare: true, args: []string{"--mode", "json", "-p", "--no-session", "--model", "mock/mock-1", "--thinking", "high",
				"--tools", "read,bash", "--append-system-prompt", appendix, "call-read please"}},
			{bare: true, args: slices.Concat([]string{"--mode", "json", "--no-session"}, modelFlags, []string{"think first", "Task: hello"})},
			{bare: true, args: slices.Concat([]string{"--mode", "json", "--no-session"}, modelFlags, []string{"fail-hard please"})},
		})
	}},
	{"images", func(a *diffAgent) {
		// A prompt, a steer and a follow-up with images (mock-1 takes no
		// image input: the model gets pi's placeholder text).
		img := []map[string]any{{"type": "image", "data": pngPixel, "mimeType": "image/png"}}
		a.restart("")
		a.call(map[string]any{"type": "prompt", "message": "hold on, see this", "images": img})
		a.wait("message_update")
		a.call(map[string]any{"type": "steer", "message": "steer with a picture", "images": img})
		a.call(map[string]any{"type": "follow_up", "message": "follow with a picture", "images": img})
		a.releaseHold()
		a.wait("agent_settled")
		a.call(map[string]any{"type": "get_messages"})
	}},
	{"default-tools", func(a *diffAgent) {
		// settings.json's defaultTools, then --tools edits of it.
		a.restart(strings.Replace(diffSettings, "{", `{"defaultTools":["-edit","+grep","-write"],`, 1))
		prompt(a, "hello tools")
		a.checkRequest("", "")
		a.restart("", "--tools", "+ls,-read")
		prompt(a, "hello tools")
		a.checkRequest("", "")
	}},
	{"system-prompt", func(a *diffAgent) {
		a.restart("", "--system-prompt", "You are TESTBOT.", "--append-system-prompt", "Always say OK.")
		prompt(a, "hello prompt")
		a.checkRequest("You are TESTBOT.", "Always say OK.")
		appendix := filepath.Join(filepath.Dir(a.work), "appendix.md")
		os.WriteFile(appendix, []byte("From a file."), 0o600)
		a.restart("", "--append-system-prompt", appendix)
		prompt(a, "hello prompt")
		a.checkRequest("", "From a file.")
	}},
	{"bad-flags", func(a *diffAgent) {
		// Options pi refuses (exit status, a line on stderr naming it) and
		// those it takes in rpc mode.
		cases := []exitCase{
			{word: "--bogus", args: []string{"--bogus=1"}},
			{word: "-z", args: []string{"-z"}},
			{word: "file", args: []string{"@file"}},
			{word: "bogus", args: []string{"--mode", "bogus"}},
			{word: "nope", args: []string{"--model", "mock/nope"}},
			// Taken in rpc mode: an unknown level (a warning), prompt
			// arguments, --print.
			{word: "bogus", args: []string{"--thinking", "bogus", "hello", "--print"}},
		}
		for i := range cases {
			cases[i].args = append(slices.Clone(modelFlags), cases[i].args...)
		}
		a.startExits(cases)
	}},
}

// A diffLane is flows that one agent runs one after the other, in its own
// folders with its own mock model. Lanes run at once (pi starts slowly, and
// most restart flows need nothing of the flows before them), each agent of
// each lane in its own process; launch starts the agent before the first
// flow (the others start it themselves).
type diffLane struct {
	flows  []diffFlow
	launch bool
}

var diffLanes = lanes()

// lanes are the lanes of the test: the flows of one running agent, then
// the restart flows, each alone but those that need the ones before.
func lanes() []diffLane {
	out := []diffLane{{diffFlows, true}, {sessionFlows, false}}
	for _, f := range slices.Concat(runFlows, soloFlows) {
		out = append(out, diffLane{[]diffFlow{f}, false})
	}
	return out
}

// pngPixel is a 1×1 PNG, base64.
const pngPixel = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="

// piSessionFixture writes testdata/pi-session.jsonl, a session file pi
// 1.6.0 wrote, to path with its cwd set to cwd (pi refuses a session whose
// cwd is gone) and its docs paths to the installed pi package: pi compares
// the system prompt sections the file holds with its own before each
// request, and a section that differs (the package under another
// E_TEST_CACHE, as CI's) adds a system message.
func piSessionFixture(t *testing.T, path, cwd string) string {
	b, err := os.ReadFile("testdata/pi-session.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	pkg := filepath.Join(piCache(), "pi", "node_modules", "@earendil-works", "pi-coding-agent")
	b = bytes.ReplaceAll(bytes.ReplaceAll(b, []byte("@CWD@"), []byte(cwd)), []byte("@PIPKG@"), []byte(pkg))
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestDifferential compares e --mode rpc with real pi 1.6.0 flow by flow.
func TestDifferential(t *testing.T) {
	cache := piCache()
	node := filepath.Join(cache, "node", "bin", "node")
	cli := filepath.Join(cache, "pi", "node_modules", "@earendil-works", "pi-coding-agent", "dist", "cli.js")
	for _, p := range []string{node, cli} {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("Node 22 and pi 1.6.0 are not installed (%s is missing): run scripts/pi-client-setup.sh", p)
		}
	}
	if testing.Short() {
		t.Skip("-short: the differential test runs real pi (Node)")
	}
	bin := testbuild.Command(t, "github.com/e-agent/e/cmd/e", false)
	// run runs lane's flows on one agent and returns its records by flow,
	// and its raw lines for -pi-diff-dump.
	run := func(name string, argv []string, lane diffLane) (map[string][]record, []byte) {
		mock := newDiffMock()
		srv := httptest.NewServer(mock)
		defer srv.Close()
		agentDir, work, env := diffDirs(t, srv.URL)
		a := newDiffAgent(t, name, argv, env, work, agentDir, mock)
		if lane.launch {
			a.launch(modelFlags...)
		}
		flows := map[string][]record{}
		var dump bytes.Buffer
		start := 0
		for _, f := range lane.flows {
			began := time.Now()
			a.flow = f.name
			f.run(a)
			var lines [][]byte
			lines, start = a.cut(start)
			var rs []record
			fmt.Fprintf(&dump, "== %s\n", f.name)
			for _, l := range lines {
				dump.Write(l)
				dump.WriteByte('\n')
				rs = append(rs, normalise(f.name, l))
			}
			flows[f.name] = collapse(rs)
			t.Logf("%s: flow %s: %v", name, f.name, time.Since(began).Round(time.Millisecond))
		}
		a.exit()
		return flows, dump.Bytes()
	}
	agents := []struct {
		name string
		argv []string
	}{{"pi", []string{node, cli}}, {"e", []string{bin}}}
	// Every lane of both agents at once; a failing step ends its own
	// goroutine (Fatalf) and fails the test.
	type result struct {
		flows map[string][]record
		dump  []byte
	}
	results := make([][]result, len(diffLanes))
	// A few lanes at a time: Node's start is CPU-bound.
	slots := make(chan struct{}, runtime.NumCPU()+2)
	var wg sync.WaitGroup
	for i, lane := range diffLanes {
		results[i] = make([]result, len(agents))
		for j, ag := range agents {
			wg.Add(1)
			go func() {
				defer wg.Done()
				slots <- struct{}{}
				defer func() { <-slots }()
				r := &results[i][j]
				r.flows, r.dump = run(ag.name, slices.Clone(ag.argv), lane)
			}()
		}
	}
	wg.Wait()
	if *piDiffDump != "" {
		for j, ag := range agents {
			var dump []byte
			for i := range diffLanes {
				dump = append(dump, results[i][j].dump...)
			}
			os.WriteFile(filepath.Join(*piDiffDump, ag.name+".txt"), dump, 0o644)
		}
	}
	if t.Failed() {
		return
	}
	var got []string
	for i, lane := range diffLanes {
		for _, f := range lane.flows {
			for _, d := range differences(results[i][0].flows[f.name], results[i][1].flows[f.name]) {
				got = append(got, f.name+" | "+d)
			}
		}
	}
	allowed, reasons := readAllow(t)
	var unexplained, gone []string
	for _, d := range got {
		if !allowed[d] {
			unexplained = append(unexplained, d)
		}
	}
	for d := range allowed {
		if !slices.Contains(got, d) {
			gone = append(gone, d)
		}
	}
	slices.Sort(gone)
	if *piDiffUpdate {
		writeAllow(t, got, reasons)
		return
	}
	if len(unexplained) > 0 {
		t.Errorf("e differs from pi 1.6.0 (fix e, or list with a reason in %s):\n%s", allowFile, strings.Join(unexplained, "\n"))
	}
	if len(gone) > 0 {
		t.Errorf("listed in %s but no longer different (remove them):\n%s", allowFile, strings.Join(gone, "\n"))
	}
}

// diffDirs makes an agent's folders (its pi config dir with models.json
// naming the mock at url and diffSettings, a working directory with a.txt,
// e's home and HOME) and its environment.
func diffDirs(t *testing.T, url string) (agentDir, work string, env []string) {
	dir := t.TempDir()
	agentDir = filepath.Join(dir, "pi-agent")
	work = filepath.Join(dir, "work")
	for _, d := range []string{agentDir, work, filepath.Join(dir, "e-home"), filepath.Join(dir, "home")} {
		os.MkdirAll(d, 0o700)
	}
	models := fmt.Sprintf(`{"providers":{"mock":{"baseUrl":%q,"api":"openai-completions","apiKey":"test-key","models":[`+
		`{"id":"mock-1","contextWindow":32000,"reasoning":true},{"id":"mock-2","contextWindow":32000}]}}}`, url+"/v1")
	os.WriteFile(filepath.Join(agentDir, "models.json"), []byte(models), 0o600)
	os.WriteFile(filepath.Join(agentDir, "settings.json"), []byte(diffSettings), 0o600)
	os.WriteFile(filepath.Join(work, "a.txt"), []byte("alpha\n"), 0o600)
	os.Mkdir(filepath.Join(agentDir, "prompts"), 0o700)
	os.WriteFile(filepath.Join(agentDir, "prompts", "review.md"),
		[]byte("---\ndescription: Review the change\nargument-hint: \"[focus]\"\n---\nReview it. Focus on ${1:-correctness}.\n"), 0o600)
	env = []string{"PI_CODING_AGENT_DIR=" + agentDir, "E_HOME=" + filepath.Join(dir, "e-home"), "HOME=" + filepath.Join(dir, "home"),
		"PI_OFFLINE=1", "PI_SKIP_VERSION_CHECK=1", "PI_TELEMETRY=0", "OPENAI_API_KEY=", "ANTHROPIC_API_KEY=",
		"TMPDIR=" + t.TempDir()} // each agent's pi-bash-*.log files (the bash flow)
	return agentDir, work, env
}

// readAllow reads the allow-list: blocks of "# reason" lines followed by
// the differences they explain.
func readAllow(t *testing.T) (map[string]bool, map[string]string) {
	b, err := os.ReadFile(allowFile)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	allowed, reasons := map[string]bool{}, map[string]string{}
	var reason []string
	inBlock := false
	for _, l := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(l, "##"):
		case strings.HasPrefix(l, "#"):
			if inBlock {
				reason, inBlock = nil, false
			}
			reason = append(reason, l)
		case strings.TrimSpace(l) == "":
		default:
			if len(reason) == 0 {
				t.Fatalf("%s: %q has no reason (a # line above it)", allowFile, l)
			}
			inBlock = true
			allowed[l] = true
			reasons[l] = strings.Join(reason, "\n")
		}
	}
	return allowed, reasons
}

const allowHeader = `## Differences between e --mode rpc and real pi 1.6.0 that TestDifferential accepts, each
## listed under its reason (the # lines above it). A listed line that no longer differs fails
## the test. Lines: FLOW | -pi/+e KIND (a record only one agent wrote), or
## FLOW | KIND: -pi/+e PATH TYPE (a path of paired records only one has). Regenerate the
## entries with: go test ./internal/pi -run TestDifferential -pi-diff-update (reasons kept).

`

func writeAllow(t *testing.T, got []string, reasons map[string]string) {
	var b strings.Builder
	b.WriteString(allowHeader)
	groups := map[string][]string{}
	var order []string
	for _, d := range got {
		r := reasons[d]
		if r == "" {
			r = "# TODO: reason"
		}
		if groups[r] == nil {
			order = append(order, r)
		}
		groups[r] = append(groups[r], d)
	}
	for _, r := range order {
		b.WriteString(r + "\n" + strings.Join(groups[r], "\n") + "\n\n")
	}
	if err := os.WriteFile(allowFile, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}
