package conformance

import (
	"bufio"
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// A recorded session replays as a passing case: the session id becomes a
// placeholder bound by a wait, the model call becomes a tape entry.
func TestRecordRoundTrip(t *testing.T) {
	upstream := &tapeServer{entries: []tapeEntry{{Text: chunks{"Hi ", "there"}, Usage: &tapeUsage{PromptTokens: 5, CompletionTokens: 2}}},
		stop: make(chan struct{}), check: func(any, any) *mismatch { return nil },
		report: func(d *Divergence) { t.Errorf("upstream: %v", d) }}
	url, err := upstream.start()
	if err != nil {
		t.Fatal(err)
	}
	defer upstream.close()

	out := filepath.Join(t.TempDir(), "new", "recorded.txtar") // record makes the directory
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		_, err := Record(context.Background(), RecordOptions{
			Server: fakeOptions(fakeGood).Server, Out: out, Upstream: url, APIKey: tapeKey,
			Stdin: inR, Stdout: outW, Stderr: io.Discard,
		})
		done <- err
		outW.Close()
	}()
	lines := bufio.NewScanner(outR)
	io.WriteString(inW, `{"id":"c","method":"session.create","params":{}}`+"\n")
	if !lines.Scan() || !strings.Contains(lines.Text(), `"sess-1"`) {
		t.Fatalf("create answered %q", lines.Text())
	}
	io.WriteString(inW, `{"id":"p","method":"session.prompt","params":{"session":"sess-1","prompt":"hi"}}`+"\n")
	for lines.Scan() && !strings.HasPrefix(lines.Text(), `{"id":"p"`) {
	}
	inW.Close()
	go io.Copy(io.Discard, outR)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(out)
	for _, want := range []string{`"session":"{{s1}}"`, "#wait l1", `"text":"Hi there"`, `"delta":"Hi there"`, `"cwd":"{{cwd}}"`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("recorded case lacks %s:\n%s", want, data)
		}
	}
	c := loadTestCase(t, out)
	if r := Run(context.Background(), c, fakeOptions(fakeGood)); r.Verdict != Pass {
		var b strings.Builder
		r.Report(&b)
		t.Fatalf("the recorded case does not pass against the server it was recorded from:\n%s\n%s", b.String(), data)
	}
}

// An --out whose directory cannot be made fails before the server runs,
// rather than after the session it would have recorded.
func TestRecordOutUnwritable(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(dir, "server-ran")
	_, err := Record(context.Background(), RecordOptions{
		Server: []string{"/bin/sh", "-c", "touch " + marker}, Out: filepath.Join(file, "case.txtar"),
		Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: io.Discard,
	})
	if err == nil || !strings.Contains(err.Error(), file) {
		t.Errorf("Record = %v, want an error naming %s", err, file)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the server ran though the case could not be written")
	}
}

// Update rewrites expectations exactly, keeps labels and placeholder names,
// and the result passes.
func TestUpdate(t *testing.T) {
	src, err := os.ReadFile("testdata/fake-prompt.txtar")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "fake-prompt.txtar")
	os.WriteFile(p, src, 0o644)
	c := loadTestCase(t, p)
	r := Run(context.Background(), c, fakeOptions(fakeGood))
	if err := Update(c, r); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(p)
	for _, want := range []string{`@created {"id":"c","result":{"cwd":"{{cwd}}"`, `"session":"{{s}}"`, `"delta":"Hello, world! This is a longer reply."`, "-- tape.json --"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("updated case lacks %s:\n%s", want, data)
		}
	}
	c = loadTestCase(t, p)
	if r := Run(context.Background(), c, fakeOptions(fakeGood)); r.Verdict != Pass {
		var b strings.Builder
		r.Report(&b)
		t.Fatalf("updated case fails:\n%s", b.String())
	}
}

// A session against the real server, recorded and replayed in another
// temp dir: saves, tool writes, sleeps, an error quoting an id, a fork,
// an export, messages, a resume by the log path, a list, a one-shot line,
// and shutdown, after which the recorder exits with the server (#exit).
// Every volatile value (ids, entry ids, log paths and their slug, times,
// durations, token estimates) must have become a placeholder or matcher.
func TestRecordReplayRealServer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the server")
	}
	server := goldenServer(t)
	out := filepath.Join(t.TempDir(), "replayed.txtar")
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		_, err := Record(context.Background(), RecordOptions{Server: server, Out: out, Stdin: inR, Stdout: outW, Stderr: io.Discard})
		done <- err
		outW.Close()
	}()
	lines := bufio.NewScanner(outR)
	lines.Buffer(nil, 1<<20)
	wait := func(id string) map[string]any {
		t.Helper()
		for lines.Scan() {
			if obj := jsonObject(lines.Bytes()); obj != nil && obj["id"] == id {
				return obj
			}
		}
		t.Fatalf("no response to %s", id)
		return nil
	}
	send := func(line string) { io.WriteString(inW, line+"\n") }
	send(`{"id":"c","method":"session.create","params":{"save":true}}`)
	res := wait("c")["result"].(map[string]any)
	sid, path := res["session"].(string), res["path"].(string)
	for _, l := range []string{
		`{"id":"p","method":"session.prompt","params":{"session":"SID","prompt":"/tool write {\"path\":\"f.txt\",\"content\":\"x\"}\n/then\n/text written"}}`,
		`{"id":"p2","method":"session.prompt","params":{"session":"SID","prompt":"/tool sleep {\"ms\":3}"}}`,
		`{"id":"bad","method":"session.info","params":{"session":"nope-SID"}}`,
		`{"id":"f","method":"session.fork","params":{"session":"SID"}}`,
		`{"id":"x","method":"session.export","params":{"session":"SID"}}`,
		`{"id":"m","method":"session.messages","params":{"session":"SID"}}`,
		`{"id":"k","method":"session.compact","params":{"session":"SID"}}`,
		`{"id":"q","method":"session.close","params":{"session":"SID"}}`,
		`{"id":"r","method":"session.create","params":{"resume":"PATH","save":true}}`,
		`{"id":"l","method":"session.list","params":{}}`,
		`{"id":"o","prompt":"/text one shot","save":true}`,
		`{"id":"bye","method":"shutdown"}`,
	} {
		l = strings.ReplaceAll(strings.ReplaceAll(l, "SID", sid), "PATH", path)
		send(l)
		wait(jsonObject([]byte(l))["id"].(string))
	}
	if err := <-done; err != nil { // the server exited: Record returns with stdin still open
		t.Fatal(err)
	}
	inW.Close()
	c, err := LoadCase(out)
	if err != nil {
		b, _ := os.ReadFile(out)
		t.Fatalf("%v\n%s", err, b)
	}
	r := Run(context.Background(), c, Options{Server: server, Validator: SchemaValidator{Strict: true}, TimeoutScale: timeoutScale()})
	if r.Verdict != Pass {
		var b strings.Builder
		r.Report(&b)
		data, _ := os.ReadFile(out)
		t.Fatalf("the recording does not replay:\n%s\n%s", b.String(), data)
	}
}

// The client's EOF is a #close where it came, except after a TERM or HUP
// that ended the server (a replay sending it would race the signal).
func TestCloseAt(t *testing.T) {
	line := recorded{client: true, line: `{"id":1}`}
	closed := recorded{client: true, directive: "#close"}
	term := recorded{client: true, directive: "#signal TERM"}
	hup := recorded{client: true, directive: "#signal HUP"}
	intr := recorded{client: true, directive: "#signal INT"}
	answer := recorded{line: `{"id":1,"result":{}}`}
	tests := []struct {
		name     string
		log      []recorded
		eofAt    int
		exit     string
		want     []recorded
		wantExit string
	}{
		{name: "plain EOF", log: []recorded{line, answer}, eofAt: 1, exit: "0", want: []recorded{line, closed, answer}, wantExit: "0"},
		{name: "EOF after TERM that ended the server", log: []recorded{line, term, answer}, eofAt: 2, exit: "143", want: []recorded{line, term, answer}, wantExit: "143"},
		{name: "EOF after HUP that ended the server", log: []recorded{hup}, eofAt: 1, exit: "129", want: []recorded{hup}, wantExit: "129"},
		{name: "EOF won the race with TERM", log: []recorded{term, answer}, eofAt: 1, exit: "0", want: []recorded{term, closed, answer}, wantExit: "any"},
		{name: "EOF before TERM", log: []recorded{line, term}, eofAt: 1, exit: "143", want: []recorded{line, closed, term}, wantExit: "143"},
		{name: "INT: EOF as always", log: []recorded{intr, answer}, eofAt: 1, exit: "0", want: []recorded{intr, closed, answer}, wantExit: "0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, exit := closeAt(slices.Clone(tt.log), tt.eofAt, tt.exit)
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(recorded{})); diff != "" {
				t.Errorf("log (-want +got):\n%s", diff)
			}
			if exit != tt.wantExit {
				t.Errorf("exit %q, want %q", exit, tt.wantExit)
			}
		})
	}
}

// builderOf is a builder holding lines in dialect d: a "?* " prefix makes
// a line a repeat one, and the line equal to labelled gets label l1.
func builderOf(t *testing.T, d dialect, lines []string, labelled string) *expectBuilder {
	t.Helper()
	b := &expectBuilder{d: d}
	for _, l := range lines {
		rest, star := strings.CutPrefix(l, "?* ")
		v, err := decode([]byte(rest))
		if err != nil {
			t.Fatal(err)
		}
		b.add(v.(map[string]any))
		if star {
			b.opt[len(b.lines)-1] = "?* "
		}
		if l == labelled {
			b.labels[len(b.lines)-1] = "l1"
		}
	}
	return b
}

// A recording drops the per-call tool lines of a request whose batch has
// two calls or more (their order varies from run to run), keeps them for a
// one-call batch, and keeps them where a #wait names one of them.
func TestDropConcurrentTools(t *testing.T) {
	two := []string{
		`{"type":"tool_batch","calls":[{"id":1},{"id":2}],"request":"p"}`,
		`{"type":"tool_start","id":2,"request":"p"}`,
		`{"type":"tool_end","id":2,"request":"p"}`,
		`{"type":"tool_start","id":1,"request":"p"}`,
		`{"type":"tool_output","id":1,"delta":"x","request":"p"}`,
		`{"type":"tool_end","id":1,"request":"p"}`,
		`{"id":"p","result":{}}`,
	}
	one := []string{
		`{"type":"tool_batch","calls":[{"id":1}],"request":"q"}`,
		`{"type":"tool_start","id":1,"request":"q"}`,
		`{"type":"tool_end","id":1,"request":"q"}`,
		`{"id":"q","result":{}}`,
	}
	tests := []struct {
		name     string
		lines    []string
		labelled string // the line a #wait names, or ""
		want     []string
	}{
		{name: "two calls: per-call lines dropped", lines: two, want: []string{two[0], two[6]}},
		{name: "one call: kept", lines: one, want: one},
		{name: "a wait names a tool line: kept", lines: two, labelled: two[1], want: two},
		{name: "streams apart", lines: append(append([]string{}, two...), one...), want: append([]string{two[0], two[6]}, one...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := builderOf(t, nil, tt.lines, tt.labelled)
			got.dropConcurrentTools()
			if diff := cmp.Diff(builderOf(t, nil, tt.want, tt.labelled).String(), got.String()); diff != "" {
				t.Errorf("expect section (-want +got):\n%s", diff)
			}
		})
	}
}

// A recording turns each run of lines that repeat a running tool's output
// so far (pi's tool_execution_update, ACP's tool_call_update with content
// and no status) into one "?*" line: how many come and what each holds
// depends on how the output was chunked. A line a #wait names stays, and
// so do the tool's other lines.
func TestDropPartialOutput(t *testing.T) {
	pi := []string{
		`{"type":"tool_execution_start","toolCallId":"c1"}`,
		`{"type":"tool_execution_update","toolCallId":"c1","partialResult":{"content":[]}}`,
		`{"type":"tool_execution_update","toolCallId":"c1","partialResult":{"content":[{"type":"text","text":"one\n"}]}}`,
		`{"type":"tool_execution_end","toolCallId":"c1","result":{"content":[{"type":"text","text":"one\ntwo\n"}]}}`,
	}
	acp := []string{
		`{"method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"1","status":"in_progress"}}}`,
		`{"method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"1","content":[{"type":"content","content":{"type":"text","text":"one"}}]}}}`,
		`{"method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"1","status":"completed","content":[{"type":"content","content":{"type":"text","text":"one two"}}]}}}`,
	}
	piAny := `?* {"type":"tool_execution_update"}`
	acpAny := `?* {"method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","status":"$absent"}}}`
	out := `{"type":"tool_output","id":1,"delta":"x","request":"p"}`
	tests := []struct {
		name     string
		d        dialect
		lines    []string
		labelled string // the line a #wait names, or ""
		want     []string
	}{
		{name: "pi: updates become one ?* line", d: piDialect{}, lines: pi, want: []string{pi[0], piAny, pi[3]}},
		{name: "pi: a wait names an update", d: piDialect{}, lines: pi, labelled: pi[2], want: []string{pi[0], piAny, pi[2], pi[3]}},
		{name: "acp: content updates become one ?* line", d: acpDialect{}, lines: acp, want: []string{acp[0], acpAny, acp[2]}},
		{name: "e rpc: nothing dropped", d: erpcDialect{}, lines: []string{out}, want: []string{out}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := builderOf(t, tt.d, tt.lines, tt.labelled)
			got.dropPartialOutput()
			if diff := cmp.Diff(builderOf(t, tt.d, tt.want, tt.labelled).String(), got.String()); diff != "" {
				t.Errorf("expect section (-want +got):\n%s", diff)
			}
		})
	}
}

// A recording in which the client stopped work ends its tape with an
// optional held entry without a key (on another run the stop may come
// after a call it came before here, whichever); one without a stop adds
// nothing, and a held entry without a key already last is not doubled. A
// cancelled call is optional wherever it is (the stop may come before it).
func TestTapeAfterStop(t *testing.T) {
	text := map[string]any{"text": "hi"}
	held := map[string]any{"hold": true}
	optionalHeld := map[string]any{"hold": true, "optional": true}
	tests := []struct {
		name    string
		d       dialect // e rpc when nil
		entries []map[string]any
		client  []recorded
		want    []map[string]any
	}{
		{name: "no stop", entries: []map[string]any{text}, client: []recorded{{client: true, line: `{"id":"p","method":"session.prompt"}`}}, want: []map[string]any{text}},
		{name: "interrupt", entries: []map[string]any{text}, client: []recorded{{client: true, line: `{"id":"i","method":"session.interrupt"}`}}, want: []map[string]any{text, optionalHeld}},
		{name: "shutdown, empty tape", client: []recorded{{client: true, line: `{"id":"x","method":"shutdown"}`}}, want: []map[string]any{optionalHeld}},
		{name: "signal", entries: []map[string]any{text}, client: []recorded{{client: true, directive: "#signal TERM"}}, want: []map[string]any{text, optionalHeld}},
		{name: "held call already last", entries: []map[string]any{text, held}, client: []recorded{{client: true, line: `{"id":"i","method":"session.interrupt"}`}}, want: []map[string]any{text, optionalHeld}},
		{name: "held call with a key last", entries: []map[string]any{text, {"hold": true, "key": "k"}}, client: []recorded{{client: true, line: `{"id":"i","method":"session.interrupt"}`}},
			want: []map[string]any{text, {"hold": true, "optional": true, "key": "k"}, optionalHeld}},
		{name: "held call before others", entries: []map[string]any{held, text}, client: []recorded{{client: true, line: `{"id":"p","method":"session.prompt"}`}}, want: []map[string]any{optionalHeld, text}},
		{name: "a server line naming the method is not a stop", entries: []map[string]any{text}, client: []recorded{{line: `{"id":"i","method":"shutdown"}`}}, want: []map[string]any{text}},
		// pi's commands that replace the session or compact it stop the
		// run first, as ACP's session/close does: on another run the
		// stopped prompt's call is made.
		{name: "pi abort", d: piDialect{}, entries: []map[string]any{text}, client: []recorded{{client: true, line: `{"id":"a","type":"abort"}`}}, want: []map[string]any{text, optionalHeld}},
		{name: "pi switch_session", d: piDialect{}, entries: []map[string]any{text}, client: []recorded{{client: true, line: `{"id":"s","type":"switch_session","sessionPath":"x.jsonl"}`}}, want: []map[string]any{text, optionalHeld}},
		{name: "pi new_session", d: piDialect{}, entries: []map[string]any{text}, client: []recorded{{client: true, line: `{"id":"n","type":"new_session"}`}}, want: []map[string]any{text, optionalHeld}},
		{name: "pi fork", d: piDialect{}, entries: []map[string]any{text}, client: []recorded{{client: true, line: `{"id":"f","type":"fork","entryId":"e1"}`}}, want: []map[string]any{text, optionalHeld}},
		{name: "pi clone", d: piDialect{}, entries: []map[string]any{text}, client: []recorded{{client: true, line: `{"id":"c","type":"clone"}`}}, want: []map[string]any{text, optionalHeld}},
		{name: "pi compact", d: piDialect{}, entries: []map[string]any{text}, client: []recorded{{client: true, line: `{"id":"c","type":"compact"}`}}, want: []map[string]any{text, optionalHeld}},
		{name: "acp session/cancel", d: acpDialect{}, entries: []map[string]any{text}, client: []recorded{{client: true, line: `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}`}}, want: []map[string]any{text, optionalHeld}},
		{name: "acp session/close", d: acpDialect{}, entries: []map[string]any{text}, client: []recorded{{client: true, line: `{"jsonrpc":"2.0","id":3,"method":"session/close","params":{"sessionId":"s"}}`}}, want: []map[string]any{text, optionalHeld}},
		{name: "acp session/prompt is not a stop", d: acpDialect{}, entries: []map[string]any{text}, client: []recorded{{client: true, line: `{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s"}}`}}, want: []map[string]any{text}},
		{name: "pi prompt is not a stop", d: piDialect{}, entries: []map[string]any{text}, client: []recorded{{client: true, line: `{"id":"p","type":"prompt","message":"hi"}`}}, want: []map[string]any{text}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.d == nil {
				tt.d = erpcDialect{}
			}
			rc := &recorder{}
			for _, e := range tt.entries {
				c := map[string]any{}
				for k, v := range e {
					c[k] = v
				}
				rc.entries = append(rc.entries, c)
			}
			if diff := cmp.Diff(tt.want, rc.tape(stopsWork(tt.d, tt.client)), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("tape (-want +got):\n%s", diff)
			}
		})
	}
}

// A client line waits for the latest line of every stream that got lines
// since the last wait, not only for the latest line: another run may
// interleave the streams differently (here p's result may come after q's
// event, and the line sent after both must wait for p's result). A wait
// never names a per-call line of a batch of two calls (their order varies,
// and the recording drops them): it names the batch.
func TestRecordWaitsEveryStream(t *testing.T) {
	log := []recorded{
		{client: true, line: `{"id":"p","method":"session.prompt","params":{"session":"S1"}}`},
		{client: true, line: `{"id":"q","method":"session.prompt","params":{"session":"S2"}}`},
		{line: `{"id":"p","result":{}}`},
		{line: `{"type":"text","delta":"a","request":"q"}`},
		{client: true, line: `{"id":"r","method":"session.list"}`},
		{line: `{"type":"text","delta":"b","request":"q"}`},
		{line: `{"id":"r","result":{}}`},
		{client: true, line: `{"id":"t","method":"session.prompt","params":{"session":"S3"}}`},
		{line: `{"type":"tool_batch","calls":[{"id":1},{"id":2}],"request":"t"}`},
		{line: `{"type":"tool_start","id":2,"request":"t"}`},
		{client: true, directive: "#close"},
		{line: `{"type":"tool_start","id":1,"request":"t"}`},
		{line: `{"id":"t","result":{}}`},
	}
	out, err := draftCase(&Case{ID: "x", Level: "MUST"}, log, nil, map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	a := parseArchive(out)
	var got string
	for _, f := range a.files {
		if f.name == "client" || f.name == "expect" {
			got += "-- " + f.name + " --\n" + string(f.data)
		}
	}
	want := `-- client --
{"id":"p","method":"session.prompt","params":{"session":"S1"}}
{"id":"q","method":"session.prompt","params":{"session":"S2"}}
#wait l1 l2
{"id":"r","method":"session.list"}
#wait l2 l3
{"id":"t","method":"session.prompt","params":{"session":"S3"}}
#wait l4
#close
-- expect --
@l1 {"id":"p","result":{}}
@l2 {"type":"text","delta":"$prefix:ab","request":"q"}
~ @l3 {"id":"r"}
@l4 {"type":"tool_batch","calls":[{"id":1},{"id":2}],"request":"t"}
?* {"type":"$string","request":"q"}
?* {"type":"$string","request":"t"}
{"id":"t","result":{}}
`
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("recording (-want +got):\n%s", diff)
	}
}

// A delta run still streaming when the client stopped work is expected to
// start with the text received before the stop, as are the texts that
// hold it after it (the result's output, a tool_end's content): how much
// more comes before the stop lands depends on the machine's speed. Runs
// of other sessions, and a run that ended before the stop, stay exact.
func TestRecordCutRuns(t *testing.T) {
	log := []recorded{
		{client: true, line: `{"id":"p","method":"session.prompt","params":{"session":"S1"}}`},
		{client: true, line: `{"id":"q","method":"session.prompt","params":{"session":"S2"}}`},
		{line: `{"type":"text","delta":"hel","session":"S1","request":"p"}`},
		{line: `{"type":"text","delta":"x","session":"S2","request":"q"}`},
		{client: true, line: `{"id":"i","method":"session.interrupt","params":{"session":"S1"}}`},
		{line: `{"type":"text","delta":"lo","session":"S1","request":"p"}`},
		{line: `{"type":"text","delta":"y","session":"S2","request":"q"}`},
		{line: `{"id":"p","result":{"aborted":true,"output":"hello","final_output":"hello"}}`},
		{line: `{"id":"q","result":{"output":"xy"}}`},
		{line: `{"id":"i","result":{}}`},
	}
	out, err := draftCase(&Case{ID: "x", Level: "MUST"}, log, nil, map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	var got string
	for _, f := range parseArchive(out).files {
		if f.name == "expect" {
			got = string(f.data)
		}
	}
	want := `@l1 {"type":"text","delta":"$prefix:hel","session":"{{s1}}","request":"p"}
@l2 {"type":"text","delta":"xy","session":"{{s2}}","request":"q"}
?* {"type":"$string","request":"p"}
{"id":"p","result":{"aborted":true,"final_output":"$prefix:hel","output":"$prefix:hel"}}
{"id":"q","result":{"output":"xy"}}
{"id":"i","result":{}}
`
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("expect section (-want +got):\n%s", diff)
	}
}

// expectOf is the client and expect sections of a recording.
func sectionsOf(t *testing.T, out []byte) string {
	t.Helper()
	var got string
	for _, f := range parseArchive(out).files {
		if f.name == "case.json" || f.name == "client" || f.name == "expect" {
			got += "-- " + f.name + " --\n" + string(f.data)
		}
	}
	return got
}

// A pi session records with pi's framing: responses in their own streams
// and events in the process stream (the waits name both), the text
// deltas of one content block joined and cut at the abort (so are the
// texts holding the run after it), session and entry ids (also those
// with a suffix, also in client lines) as placeholders, and the message
// clock (timestamp) and durations volatile.
func TestRecordPi(t *testing.T) {
	log := []recorded{
		{client: true, line: `{"id":"1","type":"get_state"}`},
		{line: `{"id":"1","type":"response","command":"get_state","success":true,"data":{"sessionId":"01M8SNJQ30ZX6X92FB33HP47FD"}}`},
		{client: true, line: `{"id":"2","type":"get_tree"}`},
		{line: `{"id":"2","type":"response","command":"get_tree","success":true,"data":{"leafId":"7209d0a54c4bf9949177a0f5f7b7309c.1","tree":[{"entry":{"id":"01M8SNJQ30ZX6X92FB33HP47FD.model","parentId":null,"timestamp":"2026-12-01T20:43:44.096Z"}}]}}`},
		{client: true, line: `{"id":"3","type":"fork","entryId":"7209d0a54c4bf9949177a0f5f7b7309c.1"}`},
		{client: true, line: `{"id":"4","type":"prompt","message":"/long 9"}`},
		{line: `{"id":"4","type":"response","command":"prompt","success":true}`},
		{line: `{"type":"message_update","assistantMessageEvent":{"type":"text_delta","contentIndex":0,"delta":"w1"}}`},
		{line: `{"type":"message_update","assistantMessageEvent":{"type":"text_delta","contentIndex":0,"delta":" w2"}}`},
		{client: true, line: `{"id":"5","type":"abort"}`},
		{line: `{"type":"message_update","assistantMessageEvent":{"type":"text_delta","contentIndex":0,"delta":" w3"}}`},
		{line: `{"type":"message_update","assistantMessageEvent":{"type":"text_end","contentIndex":0,"content":"w1 w2 w3"}}`},
		{line: `{"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"w1 w2 w3"}],"stopReason":"aborted","timestamp":1796157824123,"durationMs":4}}`},
		{line: `{"id":"5","type":"response","command":"abort","success":true}`},
	}
	out, err := draftCase(&Case{ID: "x", Level: "MUST", Dialect: DialectPi}, log, nil, map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	want := `-- case.json --
{"dialect":"pi-rpc","exit":"","id":"x","level":"MUST","requirements":null,"timeout_ms":10000}
-- client --
{"id":"1","type":"get_state"}
#wait l1
{"id":"2","type":"get_tree"}
#wait l2
{"id":"3","type":"fork","entryId":"{{e1}}"}
{"id":"4","type":"prompt","message":"/long 9"}
#wait l3 l4
{"id":"5","type":"abort"}
-- expect --
@l1 {"type":"response","id":"1","command":"get_state","data":{"sessionId":"{{s1}}"},"success":true}
@l2 {"type":"response","id":"2","command":"get_tree","data":{"leafId":"{{e1}}","tree":[{"entry":{"id":"{{e2}}","parentId":null,"timestamp":"$datetime"}}]},"success":true}
@l3 {"type":"response","id":"4","command":"prompt","success":true}
@l4 {"type":"message_update","assistantMessageEvent":{"contentIndex":0,"delta":"$prefix:w1 w2","type":"text_delta"}}
?* {"type":"$string"}
{"type":"response","id":"5","command":"abort","success":true}
`
	if diff := cmp.Diff(want, sectionsOf(t, out)); diff != "" {
		t.Errorf("recording (-want +got):\n%s", diff)
	}
}

// An ACP session records with ACP's framing: a session's updates, the
// agent's requests about it and the responses to the client's requests
// naming it are one stream (so one wait names the latest of them), the
// session id is a placeholder wherever it appears, message chunks are
// joined, and session/cancel cuts the run of its own session only.
func TestRecordACP(t *testing.T) {
	log := []recorded{
		{client: true, line: `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}`},
		{line: `{"jsonrpc":"2.0","id":1,"result":{"sessionId":"01M8SP0NR2ZXZS3GS98HCGD9K9"}}`},
		{client: true, line: `{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}`},
		{line: `{"jsonrpc":"2.0","id":2,"result":{"sessionId":"01M8SP0NR2ZXZS3GS98HCGD9K8"}}`},
		{client: true, line: `{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"01M8SP0NR2ZXZS3GS98HCGD9K9","prompt":[]}}`},
		{client: true, line: `{"jsonrpc":"2.0","id":4,"method":"session/prompt","params":{"sessionId":"01M8SP0NR2ZXZS3GS98HCGD9K8","prompt":[]}}`},
		{line: `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"01M8SP0NR2ZXZS3GS98HCGD9K9","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a"}}}}`},
		{line: `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"01M8SP0NR2ZXZS3GS98HCGD9K8","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}}}`},
		{line: `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"01M8SP0NR2ZXZS3GS98HCGD9K9","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"b"}}}}`},
		{client: true, line: `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"01M8SP0NR2ZXZS3GS98HCGD9K9"}}`},
		{line: `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"01M8SP0NR2ZXZS3GS98HCGD9K9","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"c"}}}}`},
		{line: `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"01M8SP0NR2ZXZS3GS98HCGD9K8","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"y"}}}}`},
		{line: `{"jsonrpc":"2.0","id":3,"result":{"stopReason":"cancelled"}}`},
		{line: `{"jsonrpc":"2.0","id":4,"result":{"stopReason":"end_turn"}}`},
		{client: true, line: `{"jsonrpc":"2.0","id":5,"method":"session/list","params":{}}`},
		{line: `{"jsonrpc":"2.0","id":5,"error":{"code":-32603,"message":"session 01M8SP0NR2ZXZS3GS98HCGD9K9: broken"}}`},
	}
	out, err := draftCase(&Case{ID: "x", Level: "MUST", Dialect: DialectACP}, log, nil, map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	want := `-- case.json --
{"dialect":"acp","exit":"","id":"x","level":"MUST","requirements":null,"timeout_ms":10000}
-- client --
{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}
#wait l1
{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}
#wait l2
{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"{{s1}}","prompt":[]}}
{"jsonrpc":"2.0","id":4,"method":"session/prompt","params":{"sessionId":"{{s2}}","prompt":[]}}
#wait l3 l4
{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"{{s1}}"}}
#wait l5 l6
{"jsonrpc":"2.0","id":5,"method":"session/list","params":{}}
-- expect --
@l1 {"id":1,"jsonrpc":"2.0","result":{"sessionId":"{{s1}}"}}
@l2 {"id":2,"jsonrpc":"2.0","result":{"sessionId":"{{s2}}"}}
@l3 {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"{{s1}}","update":{"content":{"text":"$prefix:ab","type":"text"},"sessionUpdate":"agent_message_chunk"}}}
@l4 {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"{{s2}}","update":{"content":{"text":"xy","type":"text"},"sessionUpdate":"agent_message_chunk"}}}
?* {"method":"session/update","params":{"sessionId":"{{s1}}"}}
@l5 {"id":3,"jsonrpc":"2.0","result":{"stopReason":"cancelled"}}
@l6 {"id":4,"jsonrpc":"2.0","result":{"stopReason":"end_turn"}}
{"id":5,"jsonrpc":"2.0","error":{"code":-32603,"message":"session {{s1}}: broken"}}
`
	if diff := cmp.Diff(want, sectionsOf(t, out)); diff != "" {
		t.Errorf("recording (-want +got):\n%s", diff)
	}
}

// The recorder takes the dialect from the server command, and derives
// "e trust" from the e rpc command the dialect's is derived from.
func TestRecordDialectOf(t *testing.T) {
	tests := []struct {
		argv    []string
		dialect string
		rpc     []string
	}{
		{argv: []string{"e", "rpc", "--x"}, dialect: DialectERPC, rpc: []string{"e", "rpc"}},
		{argv: []string{"go", "run", "./cmd/e", "acp", "--model", "m"}, dialect: DialectACP, rpc: []string{"go", "run", "./cmd/e", "rpc"}},
		{argv: []string{"/bin/e", "--mode", "rpc", "--no-session"}, dialect: DialectPi, rpc: []string{"/bin/e", "rpc"}},
		{argv: []string{"/bin/e", "--mode=rpc"}, dialect: DialectPi, rpc: []string{"/bin/e", "rpc"}},
		{argv: []string{"other-server"}, dialect: DialectERPC, rpc: []string{"other-server"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.argv, " "), func(t *testing.T) {
			d := DialectOf(tt.argv)
			if d != tt.dialect {
				t.Errorf("DialectOf = %q, want %q", d, tt.dialect)
			}
			if diff := cmp.Diff(tt.rpc, rpcCommand(tt.argv, d)); diff != "" {
				t.Errorf("rpcCommand (-want +got):\n%s", diff)
			}
		})
	}
}

// What a stopped stream prints between the stop and the stopped work's end
// (a tool's end, a usage, the next step's start: how far the server got
// before the stop landed depends on the machine's speed) becomes one "?*"
// line, in every dialect; the end stays required, its counts matched by
// type. Other streams and a stream whose work had ended stay exact; in pi's
// and ACP's session streams, so do lines after the next client line and a
// window a wait names a line of.
func TestRecordStopWindows(t *testing.T) {
	tests := []struct {
		name, dialect string
		log           []recorded
		want          string
	}{
		{name: "e rpc interrupt", log: []recorded{
			{client: true, line: `{"id":"p","method":"session.prompt","params":{"session":"S1"}}`},
			{client: true, line: `{"id":"q","method":"session.prompt","params":{"session":"S2"}}`},
			{line: `{"type":"tool_start","id":1,"session":"S1","request":"p"}`},
			{line: `{"type":"tool_start","id":1,"session":"S2","request":"q"}`},
			{client: true, line: `{"id":"i","method":"session.interrupt","params":{"session":"S1"}}`},
			{line: `{"type":"tool_end","id":1,"outcome":"ok","session":"S1","request":"p"}`},
			{line: `{"type":"usage","usage":{"input_tokens":5},"session":"S1","request":"p"}`},
			{line: `{"type":"tool_end","id":1,"outcome":"ok","session":"S2","request":"q"}`},
			{line: `{"type":"turn_end","aborted":true,"session":"S1","request":"p"}`},
			{line: `{"id":"p","result":{"aborted":true,"tools":{"calls":1,"failures":0},"usage":{"input_tokens":5}}}`},
			{line: `{"id":"i","result":{}}`},
			{line: `{"id":"q","result":{"aborted":false}}`},
			{client: true, line: `{"id":"j","method":"session.interrupt","params":{"session":"S1"}}`},
			{line: `{"id":"j","result":{}}`},
		}, want: `@l1 {"type":"tool_start","id":1,"session":"{{s1}}","request":"p"}
@l2 {"type":"tool_start","id":1,"session":"{{s2}}","request":"q"}
?* {"type":"$string","request":"p"}
{"type":"tool_end","id":1,"outcome":"ok","session":"{{s2}}","request":"q"}
{"type":"turn_end","aborted":true,"session":"{{s1}}","request":"p"}
@l3 {"id":"p","result":{"aborted":true,"tools":{"calls":"$number","failures":"$number"},"usage":{"input_tokens":"$number"}}}
@l4 {"id":"i","result":{}}
@l5 {"id":"q","result":{"aborted":false}}
{"id":"j","result":{}}
`},
		// An e rpc request's lines are a stream of their own: no later
		// client line adds to it, so its window lasts until the work
		// ends, and a wait does not name a line of it (another run may
		// not print it, or print it otherwise).
		{name: "e rpc: the next client line does not end the window", log: []recorded{
			{client: true, line: `{"id":"p","method":"session.prompt","params":{"session":"S1"}}`},
			{line: `{"type":"tool_start","id":1,"session":"S1","request":"p"}`},
			{client: true, directive: "#signal TERM"},
			{client: true, line: `{"id":"x","method":"session.list"}`},
			{line: `{"type":"usage","usage":{"input_tokens":5},"session":"S1","request":"p"}`},
		}, want: `@l1 {"type":"tool_start","id":1,"session":"{{s1}}","request":"p"}
?* {"type":"$string","request":"p"}
`},
		{name: "e rpc: a wait does not name a line of the window", log: []recorded{
			{client: true, line: `{"id":"p","method":"session.prompt","params":{"session":"S1"}}`},
			{line: `{"type":"tool_start","id":1,"session":"S1","request":"p"}`},
			{client: true, line: `{"id":"i","method":"session.interrupt","params":{"session":"S1"}}`},
			{line: `{"type":"tool_end","id":1,"outcome":"ok","session":"S1","request":"p"}`},
			{client: true, line: `{"id":"x","method":"session.list"}`},
			{line: `{"type":"turn_end","aborted":true,"session":"S1","request":"p"}`},
			{line: `{"id":"p","result":{"aborted":true,"usage":{"input_tokens":5}}}`},
		}, want: `@l1 {"type":"tool_start","id":1,"session":"{{s1}}","request":"p"}
?* {"type":"$string","request":"p"}
{"type":"turn_end","aborted":true,"session":"{{s1}}","request":"p"}
{"id":"p","result":{"aborted":true,"usage":{"input_tokens":"$number"}}}
`},
		// A stop sent before the work showed can land after it ended, as
		// here, or in time on another run: the whole of it is the
		// timing's, and so are the end's aborted and texts.
		{name: "e rpc: a stop before the work shows", log: []recorded{
			{client: true, line: `{"id":"p","method":"session.prompt","params":{"session":"S1","prompt":"hi"}}`},
			{client: true, line: `{"id":"i","method":"session.interrupt","params":{"session":"S1"}}`},
			{line: `{"type":"turn_start","session":"S1","request":"p"}`},
			{line: `{"type":"text","delta":"hello","session":"S1","request":"p"}`},
			{line: `{"type":"turn_end","aborted":false,"session":"S1","request":"p"}`},
			{line: `{"id":"p","result":{"aborted":false,"output":"hello","session":"S1"}}`},
			{line: `{"id":"i","result":{}}`},
		}, want: `?* {"type":"$string","request":"p"}
{"type":"turn_end","aborted":"$bool","session":"{{s1}}","request":"p"}
{"id":"p","result":{"aborted":"$bool","output":"$string","session":"{{s1}}"}}
{"id":"i","result":{}}
`},
		// A compaction a stop cut may finish first on another run, and
		// one that finished may be cut: its answer keeps its id only.
		{name: "e rpc: a stopped compaction's answer", log: []recorded{
			{client: true, line: `{"id":"c","method":"session.compact","params":{"session":"S1"}}`},
			{line: `{"type":"compacting","reason":"manual","session":"S1","request":"c"}`},
			{client: true, line: `{"id":"i","method":"session.interrupt","params":{"session":"S1"}}`},
			{line: `{"id":"c","error":"session.compact: compaction interrupted; the history is unchanged","code":"interrupted"}`},
			{line: `{"id":"i","result":{}}`},
		}, want: `@l1 {"type":"compacting","reason":"manual","session":"{{s1}}","request":"c"}
?* {"type":"$string","request":"c"}
{"id":"c"}
{"id":"i","result":{}}
`},
		{name: "e rpc: a steer and a stop before the work shows", log: []recorded{
			{client: true, line: `{"id":"p","method":"session.prompt","params":{"session":"S1","prompt":"hi"}}`},
			{client: true, line: `{"id":"s","method":"session.steer","params":{"session":"S1","text":"more"}}`},
			{client: true, line: `{"id":"i","method":"session.interrupt","params":{"session":"S1"}}`},
			{line: `{"id":"s","result":{"held":true}}`},
			{line: `{"type":"turn_start","session":"S1","request":"p"}`},
			{line: `{"type":"turn_end","aborted":true,"session":"S1","request":"p"}`},
			{line: `{"id":"p","result":{"aborted":true,"output":"","session":"S1"}}`},
			{line: `{"id":"i","result":{}}`},
		}, want: `?* {"type":"$string","request":"p"}
~ {"id":"s"}
{"type":"turn_end","aborted":"$bool","session":"{{s1}}","request":"p"}
?* {"type":"$string","request":"p"}
{"id":"p","result":{"aborted":"$bool","output":"$string","session":"{{s1}}"}}
{"id":"i"}
`},
		{name: "pi abort", dialect: DialectPi, log: []recorded{
			{client: true, line: `{"id":"1","type":"prompt","message":"m"}`},
			{line: `{"id":"1","type":"response","command":"prompt","success":true}`},
			{line: `{"type":"agent_start"}`},
			{line: `{"type":"tool_execution_start","toolCallId":"c1"}`},
			{client: true, line: `{"id":"2","type":"abort"}`},
			{line: `{"type":"tool_execution_end","toolCallId":"c1","isError":false}`},
			{line: `{"type":"agent_end","messages":[]}`},
			{line: `{"type":"agent_settled","aborted":true}`},
			{line: `{"id":"2","type":"response","command":"abort","success":true}`},
			{client: true, line: `{"id":"3","type":"abort"}`},
			{line: `{"id":"3","type":"response","command":"abort","success":true}`},
		}, want: `@l1 {"type":"response","id":"1","command":"prompt","success":true}
{"type":"agent_start"}
@l2 {"type":"tool_execution_start","toolCallId":"c1"}
?* {"type":"$string"}
@l3 {"type":"agent_settled","aborted":true}
@l4 {"type":"response","id":"2","command":"abort","success":true}
{"type":"response","id":"3","command":"abort","success":true}
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, draftExpect(t, tt.dialect, tt.log)); diff != "" {
				t.Errorf("expect section (-want +got):\n%s", diff)
			}
		})
	}
}

// draftExpect is the expect section of the case draftCase writes for log.
func draftExpect(t *testing.T, dialect string, log []recorded) string {
	t.Helper()
	out, err := draftCase(&Case{ID: "x", Level: "MUST", Dialect: dialect}, log, nil, map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range parseArchive(out).files {
		if f.name == "expect" {
			return string(f.data)
		}
	}
	return ""
}

// A call that began after the client's latest line stopped work is
// optional on the tape: on another run the stop can land before the
// server makes it. Calls a later line caused are not.
func TestTapeLateCalls(t *testing.T) {
	rc := &recorder{}
	rc.sent(false)
	rc.entries, rc.late = append(rc.entries, map[string]any{"text": "a"}), append(rc.late, rc.stopped)
	rc.sent(true)
	rc.entries, rc.late = append(rc.entries, map[string]any{"text": "b"}), append(rc.late, rc.stopped)
	rc.sent(false)
	rc.entries, rc.late = append(rc.entries, map[string]any{"text": "c"}), append(rc.late, rc.stopped)
	want := []map[string]any{{"text": "a"}, {"text": "b", "optional": true}, {"text": "c"}}
	if diff := cmp.Diff(want, rc.tape(false)); diff != "" {
		t.Errorf("tape (-want +got):\n%s", diff)
	}
}

// Re-recording like a case, a placeholder its expected lines bind binds
// what the server made, not a value the client had sent before (a title
// taken from the prompt), which stays literal in the client lines.
func TestLearnFromExpect(t *testing.T) {
	like, err := parseCase([]byte(`-- case.json --
{"id": "like", "level": "MUST", "requirements": ["F1"]}
-- client --
{"id":"p","method":"session.prompt","params":{"session":"{{s}}","prompt":"hello"}}
-- expect --
{"type":"session_name","name":"{{title}}","session":"{{s}}","request":"p"}
`))
	if err != nil {
		t.Fatal(err)
	}
	log := []recorded{
		{client: true, line: `{"id":"c","method":"session.create"}`},
		{line: `{"id":"c","result":{"session":"01M8SNJQ30ZX6X92FB33HP47FD"}}`},
		{client: true, line: `{"id":"p","method":"session.prompt","params":{"session":"01M8SNJQ30ZX6X92FB33HP47FD","prompt":"hello"}}`},
		{line: `{"type":"session_name","name":"hello","session":"01M8SNJQ30ZX6X92FB33HP47FD","request":"p"}`},
	}
	bindings := map[string]any{}
	learnFromExpect(like, log, bindings)
	want := map[string]any{"s": "01M8SNJQ30ZX6X92FB33HP47FD"}
	if diff := cmp.Diff(want, bindings); diff != "" {
		t.Errorf("bindings (-want +got):\n%s", diff)
	}
}

// ACP: the tool_call_update lines of a batch of two calls or more go, a
// "?*" line in their place (calls run at once and report in any order);
// the permission requests among them stay, each expected, and a batch of
// one call stays exact.
func TestRecordACPConcurrentCalls(t *testing.T) {
	const sid = "01M8SP0NR2ZXZS3GS98HCGD9K9"
	up := func(u string) recorded {
		return recorded{line: `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"` + sid + `","update":` + u + `}}`}
	}
	log := []recorded{
		{client: true, line: `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}`},
		{line: `{"jsonrpc":"2.0","id":1,"result":{"sessionId":"` + sid + `"}}`},
		{client: true, line: `{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"` + sid + `","prompt":[]}}`},
		up(`{"sessionUpdate":"tool_call","toolCallId":"call_1","status":"pending"}`),
		up(`{"sessionUpdate":"tool_call","toolCallId":"call_2","status":"pending"}`),
		up(`{"sessionUpdate":"tool_call_update","toolCallId":"call_2","status":"in_progress"}`),
		{line: `{"jsonrpc":"2.0","id":1,"method":"session/request_permission","params":{"sessionId":"` + sid + `","toolCall":{"toolCallId":"call_1"}}}`},
		{client: true, line: `{"jsonrpc":"2.0","id":1,"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}`},
		up(`{"sessionUpdate":"tool_call_update","toolCallId":"call_1","status":"in_progress"}`),
		up(`{"sessionUpdate":"tool_call_update","toolCallId":"call_2","status":"completed"}`),
		up(`{"sessionUpdate":"tool_call_update","toolCallId":"call_1","status":"completed"}`),
		up(`{"sessionUpdate":"tool_call","toolCallId":"call_3","status":"pending"}`),
		up(`{"sessionUpdate":"tool_call_update","toolCallId":"call_3","status":"completed"}`),
		up(`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"done"}}`),
		{line: `{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}`},
	}
	want := `@l1 {"id":1,"jsonrpc":"2.0","result":{"sessionId":"{{s1}}"}}
{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"{{s1}}","update":{"sessionUpdate":"tool_call","status":"pending","toolCallId":"call_1"}}}
{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"{{s1}}","update":{"sessionUpdate":"tool_call","status":"pending","toolCallId":"call_2"}}}
?* {"method":"session/update","params":{"sessionId":"{{s1}}","update":{"sessionUpdate":"tool_call_update"}}}
@l2 {"id":1,"jsonrpc":"2.0","method":"session/request_permission","params":{"sessionId":"{{s1}}","toolCall":{"toolCallId":"call_1"}}}
?* {"method":"session/update","params":{"sessionId":"{{s1}}","update":{"sessionUpdate":"tool_call_update"}}}
{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"{{s1}}","update":{"sessionUpdate":"tool_call","status":"pending","toolCallId":"call_3"}}}
{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"{{s1}}","update":{"sessionUpdate":"tool_call_update","status":"completed","toolCallId":"call_3"}}}
{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"{{s1}}","update":{"content":{"text":"done","type":"text"},"sessionUpdate":"agent_message_chunk"}}}
{"id":2,"jsonrpc":"2.0","result":{"stopReason":"end_turn"}}
`
	if diff := cmp.Diff(want, draftExpect(t, DialectACP, log)); diff != "" {
		t.Errorf("expect section (-want +got):\n%s", diff)
	}
}

// A session/cancel sent while a prompt may still run (here before any of
// its updates showed) lands before or after the turn ends, as timing
// decides: the recorded answer's end_turn may be cancelled on another run
// (race-client.py acp seed 10, replayed: "stopReason: expected end_turn,
// got cancelled").
func TestRecordACPCancelRace(t *testing.T) {
	log := []recorded{
		{client: true, line: `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}`},
		{line: `{"jsonrpc":"2.0","id":1,"result":{"sessionId":"01M8SP0NR2ZXZS3GS98HCGD9K9"}}`},
		{client: true, line: `{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"01M8SP0NR2ZXZS3GS98HCGD9K9","prompt":[]}}`},
		{client: true, line: `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"01M8SP0NR2ZXZS3GS98HCGD9K9"}}`},
		{line: `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"01M8SP0NR2ZXZS3GS98HCGD9K9","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a"}}}}`},
		{line: `{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}`},
		{client: true, line: `{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"01M8SP0NR2ZXZS3GS98HCGD9K9","prompt":[]}}`},
		{line: `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"01M8SP0NR2ZXZS3GS98HCGD9K9","update":{"sessionUpdate":"usage_update","used":109,"size":200000}}}`},
		{line: `{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}`},
	}
	out, err := draftCase(&Case{ID: "x", Level: "MUST", Dialect: DialectACP}, log, nil, map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	got := sectionsOf(t, out)
	// And the next prompt's context counts the cut answer or the whole one.
	for _, want := range []string{`{"id":2,"jsonrpc":"2.0","result":{"stopReason":{"$oneof":["end_turn","cancelled"]}}}`, `"used":"$number"`} {
		if !strings.Contains(got, want) {
			t.Errorf("recording lacks %s:\n%s", want, got)
		}
	}
}

// The day e's system prompt names (pi's events show the system message)
// becomes a pattern: a session recorded before midnight replayed after it
// (scripts/race-roundtrip at 23:58: six pi recordings failed on
// "Date: 2026-12-05" against "Date: 2026-12-06").
func TestRecordSystemPromptDate(t *testing.T) {
	n := newNormalizer(piDialect{}, map[string]any{})
	got := n.str("content", "Environment:\n- OS: linux/amd64\n- Date: 2026-12-05\n- Reasoning effort: medium")
	m := &matcher{bindings: map[string]any{}}
	for _, day := range []string{"2026-12-05", "2026-12-06"} {
		if mm := m.match("", got, "Environment:\n- OS: linux/amd64\n- Date: "+day+"\n- Reasoning effort: medium", true, map[string]any{}); mm != nil {
			t.Errorf("%q does not match the prompt of %s: %s", got, day, mm.reason)
		}
	}
	if mm := m.match("", got, "Environment:\n- OS: linux/amd64\n- Date: 2026-12-06\n- Reasoning effort: high", true, map[string]any{}); mm == nil {
		t.Errorf("%q matches a prompt that differs beyond its date", got)
	}
}

// TestRecordOutID: an --out whose name the runner would refuse as a case id
// fails before the server starts, naming a valid one.
func TestRecordOutID(t *testing.T) {
	tests := []struct {
		name, out string
		want      string // "" for no error
	}{
		{name: "valid", out: "dir/my-case.txtar"},
		{name: "underscore", out: "dir/my_case.txtar", want: "try --out dir/my-case.txtar"},
		{name: "capitals", out: "Big Case.txtar", want: "try --out big-case.txtar"},
		{name: "nothing valid", out: "dir/__.txtar", want: `the case id "__" (the file's name) is one the runner refuses`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkOutID(tt.out)
			if (err == nil) != (tt.want == "") || err != nil && !strings.Contains(err.Error(), tt.want) {
				t.Errorf("checkOutID(%q) = %v, want %q", tt.out, err, tt.want)
			}
		})
	}
	dir := t.TempDir()
	marker := filepath.Join(dir, "server-ran")
	_, err := Record(context.Background(), RecordOptions{
		Server: []string{"/bin/sh", "-c", "touch " + marker}, Out: filepath.Join(dir, "my_case.txtar"),
		Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: io.Discard,
	})
	if err == nil || !strings.Contains(err.Error(), "my-case.txtar") {
		t.Errorf("Record = %v, want an error naming my-case.txtar", err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the server ran though the case's id is refused")
	}
}
