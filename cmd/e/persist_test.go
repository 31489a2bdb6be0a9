package main

// End-to-end persistence tests against the real binary (issue #4): saved
// sessions and their listing, resume with its writer lock, read-only
// resume, crash repair, fork, export, the errors sidecar, secrets, trust
// and e -p's default save.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"

	"github.com/e-agent/e/schemas"
)

// persistEnv is one hermetic E_HOME and cwd that several e processes share.
type persistEnv struct {
	t         *testing.T
	home, cwd string
	env       []string // added to the environment, after the defaults
}

func newPersistEnv(t *testing.T, env ...string) *persistEnv {
	t.Helper()
	return &persistEnv{t: t, home: realTempDir(t), cwd: realTempDir(t), env: env}
}

// realTempDir is t.TempDir with symlinks resolved, so paths e reports
// compare equal to it.
func realTempDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func (p *persistEnv) command(args ...string) *exec.Cmd {
	cmd := exec.Command(bin, args...)
	cmd.Dir = p.cwd
	// Later entries win: p.env may set the keys cleared here.
	cmd.Env = append(os.Environ(), "E_HOME="+p.home, "OPENAI_API_KEY=", "ANTHROPIC_API_KEY=")
	cmd.Env = append(cmd.Env, p.env...)
	return cmd
}

// run runs e to completion with empty stdin.
func (p *persistEnv) run(args ...string) (stdout, stderr string, code int) {
	p.t.Helper()
	cmd := p.command(args...)
	cmd.Stdin = strings.NewReader("")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		p.t.Fatalf("e %v: %v", args, err)
	}
	return out.String(), errb.String(), code
}

// start runs e rpc --ne with args.
func (p *persistEnv) start(args ...string) *rpc {
	p.t.Helper()
	return startRPCWith(p.t, p.command(), append([]string{"rpc", "--ne"}, args...))
}

// stopRPC ends r with EOF and checks that it exits cleanly.
func stopRPC(r *rpc) {
	r.t.Helper()
	r.in.Close()
	if code := r.wait(); code != 0 {
		r.t.Errorf("e rpc exit %d, want 0", code)
	}
}

// rpcCall sends one request and returns its response line.
func rpcCall(r *rpc, id, method string, params map[string]any) string {
	r.t.Helper()
	b, err := json.Marshal(map[string]any{"id": id, "method": method, "params": params})
	if err != nil {
		r.t.Fatal(err)
	}
	r.send(string(b))
	return r.until(`{"id":"` + id + `",`)
}

// mustCall is rpcCall for a request that must succeed; it returns the result,
// checked against the method's result schema.
func mustCall(r *rpc, id, method string, params map[string]any) gjson.Result {
	r.t.Helper()
	line := rpcCall(r, id, method, params)
	res := gjson.Get(line, "result")
	if !res.Exists() {
		r.t.Fatalf("%s failed: %s", method, line)
	}
	if err := schemas.ValidateResult(method, []byte(res.Raw)); err != nil {
		r.t.Errorf("%s result does not validate: %v: %s", method, err, res.Raw)
	}
	return res
}

// callError is rpcCall for a request that must fail; it returns the error.
func callError(r *rpc, id, method string, params map[string]any) string {
	r.t.Helper()
	line := rpcCall(r, id, method, params)
	e := gjson.Get(line, "error")
	if !e.Exists() {
		r.t.Fatalf("%s succeeded, want an error: %s", method, line)
	}
	return e.String()
}

// runTurn runs one prompt to its end and returns the turn result.
func runTurn(r *rpc, id, sid, text string) gjson.Result {
	r.t.Helper()
	res := mustCall(r, id, "session.prompt", map[string]any{"session": sid, "prompt": text})
	if e := res.Get("error"); e.Exists() && e.Type != gjson.Null {
		r.t.Fatalf("turn %q failed: %s", text, res.Raw)
	}
	return res
}

// roleText is a message as session.messages shows it, reduced to role and text.
type roleText struct{ Role, Text string }

func sessionMessages(r *rpc, id, sid string) []roleText {
	r.t.Helper()
	var out []roleText
	for _, m := range mustCall(r, id, "session.messages", map[string]any{"session": sid}).Get("messages").Array() {
		var text []string
		for _, p := range m.Get("content").Array() {
			if p.Get("type").String() == "text" {
				text = append(text, p.Get("text").String())
			}
		}
		out = append(out, roleText{m.Get("role").String(), strings.Join(text, "")})
	}
	return out
}

// checkMode fails unless path exists with exactly mode perm.
func checkMode(t *testing.T, path string, perm fs.FileMode) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Errorf("stat: %v", err)
		return
	}
	if got := st.Mode().Perm(); got != perm {
		t.Errorf("%s has mode %#o, want %#o", path, got, perm)
	}
}

// checkJSONL fails unless every line of path is a JSON object and the file
// ends with a newline; it returns the lines.
func checkJSONL(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasSuffix(b, []byte("\n")) {
		t.Errorf("%s does not end with a newline: %q", path, b[max(0, len(b)-80):])
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	for i, l := range lines {
		if !json.Valid([]byte(l)) || !gjson.Parse(l).IsObject() {
			t.Errorf("%s:%d is not a JSON object: %q", path, i+1, l)
		}
	}
	return lines
}

// C5, C8, M4, M11, C6: a saved, named session is listed with its title and
// counts, and a new process resumes it with its history.
func TestSaveListResume(t *testing.T) {
	p := newPersistEnv(t)
	r := p.start()
	c := mustCall(r, "c", "session.create", map[string]any{"save": true, "name": "n1"})
	sid, path := c.Get("session").String(), c.Get("path").String()
	if path == "" {
		t.Fatalf("save:true gave no path: %s", c.Raw)
	}
	if res := runTurn(r, "p1", sid, "/text first answer"); res.Get("path").String() != path {
		t.Errorf("prompt result path %q, want %q", res.Get("path").String(), path)
	}
	checkMode(t, path, 0o600)
	checkMode(t, filepath.Dir(path), 0o700)
	checkMode(t, filepath.Join(p.home, "sessions"), 0o700)
	if got, want := filepath.Dir(path), filepath.Join(p.home, "sessions"); filepath.Dir(got) != want {
		t.Errorf("log %s is not in a directory of %s", path, want)
	}

	type summary struct {
		Path, Title, Name, Cwd string
		Messages, Turns        int
	}
	list := func(r *rpc, id string) []summary {
		t.Helper()
		var out []summary
		for _, s := range mustCall(r, id, "session.list", map[string]any{}).Get("sessions").Array() {
			out = append(out, summary{s.Get("path").String(), s.Get("title").String(), s.Get("name").String(),
				s.Get("cwd").String(), int(s.Get("messages").Int()), int(s.Get("turns").Int())})
		}
		return out
	}
	want := []summary{{Path: path, Title: "/text first answer", Name: "n1", Cwd: p.cwd, Messages: 2, Turns: 1}}
	if diff := cmp.Diff(want, list(r, "l1")); diff != "" {
		t.Errorf("session.list (-want +got):\n%s", diff)
	}
	mustCall(r, "x", "session.close", map[string]any{"session": sid})
	stopRPC(r)

	r2 := p.start()
	c2 := mustCall(r2, "c", "session.create", map[string]any{"resume": path, "save": true})
	if c2.Get("path").String() != path || c2.Get("session").String() != sid {
		t.Errorf("resume: got session %s path %s, want %s %s", c2.Get("session"), c2.Get("path"), sid, path)
	}
	info := mustCall(r2, "i", "session.info", map[string]any{"session": sid})
	if info.Get("name").String() != "n1" || info.Get("title").String() != "/text first answer" {
		t.Errorf("resumed session.info lost the name or title (C8): %s", info.Raw)
	}
	runTurn(r2, "p2", sid, "/text second answer")
	wantMsgs := []roleText{
		{"user", "/text first answer"}, {"assistant", "first answer"},
		{"user", "/text second answer"}, {"assistant", "second answer"},
	}
	if diff := cmp.Diff(wantMsgs, sessionMessages(r2, "m", sid)); diff != "" {
		t.Errorf("session.messages after resume (-want +got):\n%s", diff)
	}
	want[0].Messages, want[0].Turns = 4, 2
	if diff := cmp.Diff(want, list(r2, "l2")); diff != "" {
		t.Errorf("session.list after resume (-want +got):\n%s", diff)
	}
	mustCall(r2, "x", "session.close", map[string]any{"session": sid})
	stopRPC(r2)
	checkJSONL(t, path)
	if _, err := os.Stat(path + ".lock"); err == nil {
		t.Errorf("%s.lock outlived the writer", path)
	}
}

// C5: save defaults to false, and --no-save wins over save true.
func TestSaveDefaultsOff(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		params map[string]any
	}{
		{name: "save omitted", params: map[string]any{}},
		{name: "save null", params: map[string]any{"save": nil}},
		{name: "--no-save wins", args: []string{"--no-save"}, params: map[string]any{"save": true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPersistEnv(t)
			r := p.start(tt.args...)
			c := mustCall(r, "c", "session.create", tt.params)
			if c.Get("path").Type != gjson.Null {
				t.Errorf("memory-only session has a path: %s", c.Raw)
			}
			runTurn(r, "p", c.Get("session").String(), "/text hi")
			if l := mustCall(r, "l", "session.list", map[string]any{}).Get("sessions").Array(); len(l) != 0 {
				t.Errorf("session.list shows a memory-only session: %v", l)
			}
			stopRPC(r)
			if _, err := os.Stat(filepath.Join(p.home, "sessions")); err == nil {
				t.Errorf("a memory-only session made %s", filepath.Join(p.home, "sessions"))
			}
		})
	}
}

// C6: a log open for writing refuses a second writer, in the same process
// and in another, naming the holder's pid; a reader is still welcome, and
// the log is free again once closed.
func TestResumeLocked(t *testing.T) {
	p := newPersistEnv(t)
	r1 := p.start()
	c := mustCall(r1, "c", "session.create", map[string]any{"save": true})
	sid, path := c.Get("session").String(), c.Get("path").String()
	runTurn(r1, "p", sid, "/text held")
	holder := "pid " + strconv.Itoa(r1.cmd.Process.Pid)
	if b, err := os.ReadFile(path + ".lock"); err != nil || string(b) != strconv.Itoa(r1.cmd.Process.Pid)+"\n" {
		t.Errorf("%s.lock: %q, %v; want the writer's pid", path, b, err)
	}
	checkMode(t, path+".lock", 0o600)

	if e := callError(r1, "same", "session.create", map[string]any{"resume": path, "save": true}); !strings.Contains(e, "locked") || !strings.Contains(e, holder) {
		t.Errorf("same-process second writer: error %q does not name the lock and %s", e, holder)
	}
	r2 := p.start()
	if e := callError(r2, "other", "session.create", map[string]any{"resume": path, "save": true}); !strings.Contains(e, "locked") || !strings.Contains(e, holder) {
		t.Errorf("other-process second writer: error %q does not name the lock and %s", e, holder)
	}
	// C7: reading needs no lock.
	ro := mustCall(r2, "ro", "session.create", map[string]any{"resume": path})
	if ro.Get("path").Type != gjson.Null {
		t.Errorf("read-only resume has a path: %s", ro.Raw)
	}
	mustCall(r1, "x", "session.close", map[string]any{"session": sid})
	mustCall(r2, "again", "session.create", map[string]any{"resume": path, "save": true})
	stopRPC(r1)
	stopRPC(r2)
}

// C7: a read-only resume (save false, or any resume under --no-save) runs
// turns without touching the file: same bytes, same mtime, no lock file,
// and a torn tail is left as it is.
func TestReadOnlyResume(t *testing.T) {
	tests := []struct {
		name string
		args []string
		save bool
		torn string // appended to the log first
	}{
		{name: "save false", save: false},
		{name: "--no-save wins over save true", args: []string{"--no-save"}, save: true},
		{name: "torn tail left alone", save: false, torn: `{"type":"message","id":"dead`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPersistEnv(t)
			r := p.start()
			c := mustCall(r, "c", "session.create", map[string]any{"save": true})
			sid, path := c.Get("session").String(), c.Get("path").String()
			runTurn(r, "p1", sid, "/text one")
			runTurn(r, "p2", sid, "/text two")
			stopRPC(r)
			if tt.torn != "" {
				f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
				if err != nil {
					t.Fatal(err)
				}
				f.WriteString(tt.torn)
				f.Close()
			}
			before, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			st, _ := os.Stat(path)
			mtime := st.ModTime()
			dirBefore := dirNames(t, filepath.Dir(path))

			r = p.start(tt.args...)
			c = mustCall(r, "c", "session.create", map[string]any{"resume": path, "save": tt.save})
			// A copy has an id of its own: the log's id names only its writer (C7).
			copyID := c.Get("session").String()
			if c.Get("path").Type != gjson.Null || copyID == sid || copyID == "" {
				t.Errorf("read-only resume: %s, want a new session id (not %s) and path null", c.Raw, sid)
			}
			runTurn(r, "p3", copyID, "/text three")
			if got := sessionMessages(r, "m", copyID); len(got) != 6 || got[5] != (roleText{"assistant", "three"}) {
				t.Errorf("messages after a read-only turn: %v", got)
			}
			mustCall(r, "x", "session.close", map[string]any{"session": copyID})
			stopRPC(r)

			after, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(before, after) {
				t.Errorf("log changed:\nbefore %q\n after %q", before, after)
			}
			if st, _ := os.Stat(path); !st.ModTime().Equal(mtime) {
				t.Errorf("mtime changed from %v to %v", mtime, st.ModTime())
			}
			// No lock, torn or errors file; the listing cache may come and go.
			if diff := cmp.Diff(dirBefore, dirNames(t, filepath.Dir(path))); diff != "" {
				t.Errorf("files beside the log changed (-before +after):\n%s", diff)
			}
		})
	}
}

// dirNames lists dir without the disposable listing cache.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, de := range des {
		if !strings.HasPrefix(de.Name(), ".list-cache.json") {
			names = append(names, de.Name())
		}
	}
	return names
}

// C6, §4: kill -9 during a saved turn loses no completed turn; a writable
// resume repairs the tail (moving torn bytes to .torn), leaves valid JSONL,
// and the session goes on.
func TestCrashResume(t *testing.T) {
	tests := []struct {
		name string
		torn string // appended after the kill, as a write cut short would leave
	}{
		{name: "kill -9"},
		{name: "kill -9 with a torn last line", torn: `{"type":"message","id":"0badf00d","parent":"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPersistEnv(t)
			r := p.start()
			c := mustCall(r, "c", "session.create", map[string]any{"save": true})
			sid, path := c.Get("session").String(), c.Get("path").String()
			runTurn(r, "p1", sid, "/text turn one")
			runTurn(r, "p2", sid, "/text turn two")
			r.send(fmt.Sprintf(`{"id":"long","method":"session.prompt","params":{"session":%q,"prompt":"/delay 5\n/long 5000"}}`, sid))
			for range 3 {
				r.until(`"type":"text"`)
			}
			if err := r.cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			if code := r.wait(); code != 137 {
				t.Errorf("killed e exit %d, want 137", code)
			}
			if tt.torn != "" {
				f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
				if err != nil {
					t.Fatal(err)
				}
				f.WriteString(tt.torn)
				f.Close()
			}

			r = p.start()
			mustCall(r, "c", "session.create", map[string]any{"resume": path, "save": true})
			got := sessionMessages(r, "m1", sid)
			want := []roleText{
				{"user", "/text turn one"}, {"assistant", "turn one"},
				{"user", "/text turn two"}, {"assistant", "turn two"},
			}
			if len(got) < len(want) || !cmp.Equal(want, got[:len(want)]) {
				t.Errorf("completed turns after the crash:\n got %v\nwant a prefix %v", got, want)
			}
			if res := runTurn(r, "p3", sid, "/text after crash"); res.Get("output").String() != "after crash" {
				t.Errorf("turn after resume: %s", res.Raw)
			}
			mustCall(r, "x", "session.close", map[string]any{"session": sid})
			stopRPC(r)

			if _, err := os.Stat(path + ".lock"); err == nil {
				t.Errorf("the dead writer's %s.lock outlived the new writer", path)
			}
			lines := checkJSONL(t, path)
			if last := lines[len(lines)-1]; !strings.Contains(last, "after crash") {
				t.Errorf("last line is not the new answer: %s", last)
			}
			torn, err := os.ReadFile(path + ".torn")
			switch {
			case tt.torn == "" && err == nil:
				t.Errorf("%s.torn exists without a torn tail: %q", path, torn)
			case tt.torn != "" && err != nil:
				t.Errorf("torn tail not saved: %v", err)
			case tt.torn != "":
				if string(torn) != tt.torn+"\n" {
					t.Errorf(".torn holds %q, want %q", torn, tt.torn+"\n")
				}
				checkMode(t, path+".torn", 0o600)
			}
		})
	}
}

// M12, T2: a fork inherits the effort set with session.set, gets a file of
// its own whose header names its parent, and the two grow apart.
func TestFork(t *testing.T) {
	p := newPersistEnv(t)
	r := p.start()
	c := mustCall(r, "c", "session.create", map[string]any{"save": true})
	sid, path := c.Get("session").String(), c.Get("path").String()
	if ef := c.Get("effort").String(); ef == "high" {
		t.Fatalf("default effort is already high: %s", c.Raw)
	}
	runTurn(r, "p1", sid, "/text base")
	if set := mustCall(r, "s", "session.set", map[string]any{"session": sid, "effort": "high"}); set.Get("effort").String() != "high" {
		t.Fatalf("session.set: %s", set.Raw)
	}
	f := mustCall(r, "f", "session.fork", map[string]any{"session": sid})
	fid, fpath := f.Get("session").String(), f.Get("path").String()
	if fid == sid || fpath == "" || fpath == path {
		t.Fatalf("fork %s of session %s at %s is not a session of its own", f.Raw, sid, path)
	}
	checkMode(t, fpath, 0o600)
	info := mustCall(r, "i", "session.info", map[string]any{"session": fid})
	if info.Get("effort").String() != "high" || info.Get("path").String() != fpath {
		t.Errorf("fork session.info: %s, want effort high and path %s", info.Raw, fpath)
	}
	header := checkJSONL(t, fpath)[0]
	if gjson.Get(header, "parent_session").String() != path || gjson.Get(header, "effort").String() != "high" {
		t.Errorf("fork header: %s, want parent_session %s and effort high", header, path)
	}

	runTurn(r, "p2", sid, "/text on the original")
	runTurn(r, "p3", fid, "/text on the fork")
	runTurn(r, "p4", fid, "/text again on the fork")
	orig, fork := sessionMessages(r, "m1", sid), sessionMessages(r, "m2", fid)
	if len(orig) != 4 || len(fork) != 6 {
		t.Errorf("messages: original %d, fork %d; want 4 and 6", len(orig), len(fork))
	}
	if len(orig) == 4 && len(fork) == 6 {
		if diff := cmp.Diff(orig[:2], fork[:2]); diff != "" {
			t.Errorf("fork lost the shared history (-original +fork):\n%s", diff)
		}
		if orig[3].Text != "on the original" || fork[3].Text != "on the fork" {
			t.Errorf("the two did not grow apart: original %v, fork %v", orig, fork)
		}
	}
	stopRPC(r)
	// The files grew apart too.
	if o, f := len(checkJSONL(t, path)), len(checkJSONL(t, fpath)); o == f {
		t.Errorf("original and fork logs have the same number of lines (%d)", o)
	}
	// T1: the change is in the log, so a resume keeps it.
	r = p.start()
	for i, log := range []string{path, fpath} {
		id := fmt.Sprint("r", i)
		if c := mustCall(r, id, "session.create", map[string]any{"resume": log}); c.Get("effort").String() != "high" {
			t.Errorf("resume of %s: %s, want effort high", log, c.Raw)
		}
	}
	stopRPC(r)
}

// M13: the export is one escaped HTML page, beside the log by default.
func TestExport(t *testing.T) {
	const evil = "<script>alert(1)</script>"
	tests := []struct {
		name string
		save bool
		path string                                      // session.export's path; "" for none
		want func(p *persistEnv, log, sid string) string // the path expected
	}{
		{name: "saved, default path", save: true, want: func(_ *persistEnv, log, _ string) string {
			return strings.TrimSuffix(log, ".jsonl") + ".html"
		}},
		{name: "memory-only, default path", want: func(p *persistEnv, _, sid string) string {
			return filepath.Join(p.cwd, "e-session-"+sid+".html")
		}},
		{name: "relative path", save: true, path: "out/page.html", want: func(p *persistEnv, _, _ string) string {
			return filepath.Join(p.cwd, "out", "page.html")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPersistEnv(t)
			r := p.start()
			c := mustCall(r, "c", "session.create", map[string]any{"save": tt.save})
			sid := c.Get("session").String()
			runTurn(r, "p", sid, evil)
			params := map[string]any{"session": sid}
			if tt.path != "" {
				params["path"] = tt.path
			}
			res := mustCall(r, "e", "session.export", params)
			stopRPC(r)
			want := tt.want(p, c.Get("path").String(), sid)
			if got := res.Get("path").String(); got != want {
				t.Errorf("export path %q, want %q", got, want)
			}
			if got := res.Get("title").String(); got != evil {
				t.Errorf("export title %q, want %q", got, evil)
			}
			b, err := os.ReadFile(want)
			if err != nil {
				t.Fatal(err)
			}
			page := string(b)
			if !strings.Contains(page, "&lt;script&gt;") {
				t.Errorf("the page does not show the escaped prompt:\n%s", page)
			}
			if strings.Contains(strings.ToLower(page), "<script") {
				t.Errorf("the page has a script element:\n%s", page)
			}
			checkMode(t, want, 0o600)
		})
	}
}

// U2, U3: a terminal model failure of a saved session is appended to the
// private errors sidecar; a memory-only session writes none.
func TestErrorsSidecar(t *testing.T) {
	p := newPersistEnv(t)
	r := p.start()
	c := mustCall(r, "c", "session.create", map[string]any{"save": true})
	sid, path := c.Get("session").String(), c.Get("path").String()
	res := mustCall(r, "p", "session.prompt", map[string]any{"session": sid, "prompt": "/error fatal boom"})
	if !strings.Contains(res.Get("error").String(), "boom") || !res.Get("error_details").IsObject() {
		t.Errorf("turn result lacks the error and its details: %s", res.Raw)
	}
	mem := mustCall(r, "c2", "session.create", map[string]any{})
	mustCall(r, "p2", "session.prompt", map[string]any{"session": mem.Get("session").String(), "prompt": "/error fatal other"})
	stopRPC(r)

	side := path + ".errors.jsonl"
	checkMode(t, side, 0o600)
	lines := checkJSONL(t, side)
	if len(lines) != 1 {
		t.Fatalf("sidecar has %d lines, want 1: %q", len(lines), lines)
	}
	if !gjson.Get(lines[0], "time").Exists() || !gjson.Get(lines[0], "details").IsObject() {
		t.Errorf("sidecar line: %s", lines[0])
	}
	if !strings.Contains(lines[0], "boom") {
		t.Errorf("sidecar line does not carry the failure: %s", lines[0])
	}
	var sidecars []string
	filepath.WalkDir(p.home, func(path string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(path, ".errors.jsonl") {
			sidecars = append(sidecars, path)
		}
		return nil
	})
	if diff := cmp.Diff([]string{side}, sidecars); diff != "" {
		t.Errorf("sidecars under E_HOME (-want +got):\n%s", diff)
	}
}

// U3, §1, §9: no API key reaches any file under E_HOME: not one set in the
// environment, not one typed into a prompt (log, listing cache, export),
// not one a model error carries (the errors sidecar redacts it).
func TestSecretsNotStored(t *testing.T) {
	const openai, anthropic = "sk-test-SECRETSECRET123", "sk-ant-SECRETSECRET456"
	const bearer = "tok3n-SECRET-789xyz"
	p := newPersistEnv(t, "OPENAI_API_KEY="+openai, "ANTHROPIC_API_KEY="+anthropic)
	r := p.start("-m", "e/offline")
	c := mustCall(r, "c", "session.create", map[string]any{"save": true})
	sid, path := c.Get("session").String(), c.Get("path").String()
	res := mustCall(r, "p", "session.prompt", map[string]any{"session": sid,
		"prompt": "/error fatal rejected key " + openai + " with Bearer " + bearer})
	if !strings.Contains(res.Get("error").String(), "rejected key") {
		t.Fatalf("no model error: %s", res.Raw)
	}
	runTurn(r, "p2", sid, "/text fine")
	mustCall(r, "l", "session.list", map[string]any{})
	mustCall(r, "e", "session.export", map[string]any{"session": sid})
	stopRPC(r)

	side := path + ".errors.jsonl"
	var files []string
	err := filepath.WalkDir(p.home, func(f string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		files = append(files, f)
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		for _, secret := range []string{anthropic, openai, bearer} {
			if bytes.Contains(b, []byte(secret)) {
				t.Errorf("%s holds the secret %s:\n%s", f, secret, b)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(files, side) || !slices.ContainsFunc(files, func(f string) bool { return strings.HasSuffix(f, ".html") }) {
		t.Fatalf("no errors sidecar or export among %v", files)
	}
	if b, _ := os.ReadFile(side); !bytes.Contains(b, []byte("rejected key [REDACTED]")) || !bytes.Contains(b, []byte("Bearer [REDACTED]")) {
		t.Errorf("sidecar does not show the redactions: %s", b)
	}
}

// C9: a directory with an AGENTS.md is refused until `e trust`, listed by
// `e trust --list`, refused again after `e trust --revoke`; one without an
// AGENTS.md needs no trust.
func TestTrust(t *testing.T) {
	p := newPersistEnv(t)
	if err := os.WriteFile(filepath.Join(p.cwd, "AGENTS.md"), []byte("be brief\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	plain := realTempDir(t)
	trust := func(args ...string) string {
		t.Helper()
		out, errOut, code := p.run(append([]string{"trust"}, args...)...)
		if code != 0 {
			t.Fatalf("e trust %v: exit %d: %s", args, code, errOut)
		}
		return out
	}
	r := p.start()
	refused := func(id string) {
		t.Helper()
		e := callError(r, id, "session.create", map[string]any{})
		if !strings.Contains(e, "e trust "+p.cwd) {
			t.Errorf("untrusted cwd: error %q does not say `e trust %s`", e, p.cwd)
		}
	}
	refused("c1")
	mustCall(r, "plain", "session.create", map[string]any{"cwd": plain})

	trust(p.cwd)
	mustCall(r, "c2", "session.create", map[string]any{})
	if out := trust("--list"); out != p.cwd+"\n" {
		t.Errorf("e trust --list printed %q, want %q", out, p.cwd+"\n")
	}
	checkMode(t, filepath.Join(p.home, "trust.json"), 0o600)

	trust("--revoke", p.cwd)
	refused("c3")
	if out := trust("--list"); out != "" {
		t.Errorf("e trust --list after revoke printed %q", out)
	}
	if _, errOut, code := p.run("trust", filepath.Join(p.cwd, "missing")); code != 1 || !strings.Contains(errOut, "missing") {
		t.Errorf("e trust of a missing directory: exit %d, stderr %q; want 1 naming it", code, errOut)
	}
	stopRPC(r)
}

// P5: e -p saves its session unless --no-save; --json's result names the log.
func TestPrintSaves(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantLogs int
	}{
		{name: "saved by default", args: []string{"-p", "/text hi"}, wantLogs: 1},
		{name: "json result names the log", args: []string{"-p", "/text hi", "--json"}, wantLogs: 1},
		{name: "--no-save", args: []string{"-p", "/text hi", "--no-save"}, wantLogs: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPersistEnv(t)
			out, errOut, code := p.run(tt.args...)
			if code != 0 {
				t.Fatalf("e %v: exit %d: %s", tt.args, code, errOut)
			}
			var logs []string
			filepath.WalkDir(filepath.Join(p.home, "sessions"), func(f string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() && strings.HasSuffix(f, ".jsonl") && !strings.HasSuffix(f, ".errors.jsonl") {
					logs = append(logs, f)
				}
				return nil
			})
			if len(logs) != tt.wantLogs {
				t.Fatalf("logs under E_HOME/sessions: %v, want %d", logs, tt.wantLogs)
			}
			if len(logs) == 1 {
				checkMode(t, logs[0], 0o600)
				if lines := checkJSONL(t, logs[0]); gjson.Get(lines[0], "cwd").String() != p.cwd {
					t.Errorf("header: %s, want cwd %s", lines[0], p.cwd)
				}
			}
			if slices.Contains(tt.args, "--json") {
				lines := strings.Split(strings.TrimSpace(out), "\n")
				if got := gjson.Get(lines[len(lines)-1], "path").String(); got != logs[0] {
					t.Errorf("result path %q, want %q", got, logs[0])
				}
			}
		})
	}
}

// M13: e export writes a saved session's page from its log alone: the
// answer's markdown rendered, the tool call with its result and outcome.
func TestExportCommand(t *testing.T) {
	home := t.TempDir()
	cmd := command(t, "-p", "/tool bash {\"command\":\"echo a && echo b\"}\n/then\n/text **done**", "--json")
	cmd.Env = append(cmd.Env, "E_HOME="+home)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("e -p: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	log := gjson.Get(lines[len(lines)-1], "path").String()
	page := filepath.Join(t.TempDir(), "page.html")
	exp := command(t, "export", log, page)
	if b, err := exp.CombinedOutput(); err != nil || strings.TrimSpace(string(b)) != page {
		t.Fatalf("e export: %v: %s", err, b)
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<strong>done</strong>", `<span class="name">bash</span><span class="badge completed">completed</span>`,
		"<pre>a\nb\n", "e/offline · "} {
		if !strings.Contains(string(b), want) {
			t.Errorf("page lacks %q:\n%s", want, b)
		}
	}
	checkMode(t, page, 0o600)
	// By the session's id, found in the sessions folder; the page goes
	// beside the log.
	id := gjson.Get(lines[len(lines)-1], "session").String()
	byID := command(t, "export", id)
	byID.Env = append(byID.Env, "E_HOME="+home)
	if b, err := byID.CombinedOutput(); err != nil || strings.TrimSpace(string(b)) != strings.TrimSuffix(log, ".jsonl")+".html" {
		t.Errorf("e export %s: %v: %s", id, err, b)
	}
	missing := command(t, "export", "01JNOSUCHSESSION0000000000")
	missing.Env = append(missing.Env, "E_HOME="+home)
	if b, err := missing.CombinedOutput(); exitCode(err) != 1 || !strings.Contains(string(b), "no log 01JNOSUCHSESSION0000000000.jsonl in "+filepath.Join(home, "sessions")) {
		t.Errorf("e export of an unknown id: %v: %s", err, b)
	}
	if err := command(t, "export").Run(); exitCode(err) != 2 {
		t.Errorf("e export without a log: %v, want exit 2", err)
	}
	if err := command(t, "export", filepath.Join(home, "nope.jsonl")).Run(); exitCode(err) != 1 {
		t.Errorf("e export of a missing log: %v, want exit 1", err)
	}
}

// exitCode is err's exit status: 0 for nil, -1 when e did not run.
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return -1
}

// C6, C7: e -p --resume continues a saved session by its id (or path): the
// same log grows; with --no-save it is a read-only copy, said on stderr.
func TestPrintResume(t *testing.T) {
	home := t.TempDir()
	run := func(args ...string) (stdout, stderr string) {
		t.Helper()
		cmd := command(t, args...)
		cmd.Env = append(cmd.Env, "E_HOME="+home)
		cmd.Stdin = strings.NewReader("")
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		if err := cmd.Run(); err != nil {
			t.Fatalf("e %v: %v\n%s", args, err, e.String())
		}
		return o.String(), e.String()
	}
	out, _ := run("-p", "/text one", "--json")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	id, log := gjson.Get(lines[len(lines)-1], "session").String(), gjson.Get(lines[len(lines)-1], "path").String()
	out, _ = run("-p", "/text two", "--json", "--resume", id)
	lines = strings.Split(strings.TrimSpace(out), "\n")
	if got := gjson.Get(lines[len(lines)-1], "path").String(); got != log {
		t.Errorf("resumed by id: path %q, want the same log %q", got, log)
	}
	if n := len(checkJSONL(t, log)); n < 5 { // header, 2 × (user, answer)
		t.Errorf("log has %d lines after two turns", n)
	}
	before, _ := os.ReadFile(log)
	_, stderr := run("-p", "/text three", "--no-save", "--resume", id, "-q")
	if !strings.Contains(stderr, "read-only") || !strings.Contains(stderr, "--no-save") {
		t.Errorf("stderr %q: want the read-only warning naming --no-save", stderr)
	}
	if after, _ := os.ReadFile(log); !bytes.Equal(before, after) {
		t.Errorf("a read-only resume changed the log")
	}
}
