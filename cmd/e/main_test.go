package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/e-agent/e/schemas"
)

// bin is the e binary under test, built once by TestMain.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "e")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// command returns e with a temp E_HOME and cwd.
func command(t testing.TB, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "E_HOME="+t.TempDir(), "OPENAI_API_KEY=", "ANTHROPIC_API_KEY=")
	return cmd
}

// P1, P4, P7: e -p exit codes and --json lines.
func TestPrint(t *testing.T) {
	schemaDir := t.TempDir()
	okSchema, badSchema := filepath.Join(schemaDir, "ok.json"), filepath.Join(schemaDir, "bad.json")
	for path, s := range map[string]string{okSchema: `{"type":"object","required":["ok"],"properties":{"ok":{"type":"boolean"}}}`,
		badSchema: `{"type":"object","patternProperties":{}}`} {
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name       string
		args       []string
		stdin      string
		wantCode   int
		wantStdout string // exact, for text mode
		wantStderr string // substring
		notStderr  string // a substring stderr must not have
	}{
		{name: "reply streamed P1", args: []string{"-p", "/text hello world"}, wantCode: 0, wantStdout: "hello world\n"},
		{name: "flags after the prompt", args: []string{"-p", "/text hi", "--no-save", "--nt"}, wantCode: 0, wantStdout: "hi\n"},
		{name: "piped stdin only P2", args: []string{"-p"}, stdin: "/text piped", wantCode: 0, wantStdout: "piped\n"},
		{name: "empty prompt is usage P2", args: []string{"-p"}, wantCode: 2, wantStderr: "empty prompt"},
		{name: "bad flag is usage P4", args: []string{"-p", "x", "--bogus"}, wantCode: 2, wantStderr: "bogus"},
		{name: "retried answer printed once P3 U2", args: []string{"-p", "/text done\n/error retryable"}, wantCode: 0, wantStdout: "done\n"},
		{name: "model error exits 1 P4", args: []string{"-p", "/error fatal boom"}, wantCode: 1, wantStderr: "boom"},
		{name: "unknown model exits 1", args: []string{"-p", "x", "-m", "nope/x"}, wantCode: 1, wantStderr: "unknown model"},
		{name: "missing image is usage", args: []string{"-p", "x", "--image", "missing.png"}, wantCode: 2, wantStderr: "missing.png"},
		{name: "separate messages on lines of their own P1", args: []string{"-p", "/text Let me check.\n/tool ls {}\n/then\n/text All good.", "--no-save"},
			wantStdout: "Let me check.\nAll good.\n"},
		{name: "-q silences the offline warning", args: []string{"-p", "/text hi", "-q", "--no-save"}, wantStdout: "hi\n", notStderr: "offline"},
		{name: "offline warning without -q", args: []string{"-p", "/text hi", "--no-save"}, wantStdout: "hi\n", wantStderr: "offline model"},
		{name: "unknown model names e models", args: []string{"-p", "x", "-m", "nope/x"}, wantCode: 1, wantStderr: "(see e models or models.list)"},
		{name: "output schema prints the value J1", args: []string{"-p", "review", "--output-schema", okSchema}, wantCode: 0,
			wantStdout: "{\"ok\":false}\n"},
		{name: "invalid output exits 1 J2", args: []string{"-p", "/text no\n/then\n/text still no", "--output-schema", okSchema},
			wantCode: 1, wantStderr: "e: invalid output: the answer is not one JSON value"},
		{name: "unsupported keyword is usage J1", args: []string{"-p", "x", "--output-schema", badSchema}, wantCode: 2,
			wantStderr: `"patternProperties"`},
		{name: "budget stop exits 1 N2", args: []string{"-p", "/tool bash {\"command\":\"true\"}\n/then\n/text x", "--max-model-calls", "1"},
			wantCode: 1, wantStderr: "e: stopped: max_model_calls 1 reached (1 calls made)\n"},
		{name: "negative budget is usage N1", args: []string{"-p", "x", "--max-tokens", "-1"}, wantCode: 2, wantStderr: "--max-tokens -1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := command(t, tt.args...)
			cmd.Stdin = strings.NewReader(tt.stdin)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tt.wantCode {
				t.Errorf("exit %d, want %d; stderr: %s", code, tt.wantCode, stderr.String())
			}
			if tt.wantStdout != "" && stdout.String() != tt.wantStdout {
				t.Errorf("stdout %q, want %q", stdout.String(), tt.wantStdout)
			}
			if !strings.Contains(stderr.String(), tt.wantStderr) {
				t.Errorf("stderr %q does not contain %q", stderr.String(), tt.wantStderr)
			}
			if tt.notStderr != "" && strings.Contains(stderr.String(), tt.notStderr) {
				t.Errorf("stderr %q contains %q", stderr.String(), tt.notStderr)
			}
		})
	}
}

// P7, S3: --json prints every event, then the result line; each validates.
func TestPrintJSON(t *testing.T) {
	cmd := command(t, "-p", "/tool ls {}\n/then\n/text done", "--json", "--no-save")
	cmd.Stdin = strings.NewReader("")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("e -p --json: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var got []string
	for i, l := range lines {
		ty := gjson.Get(l, "type").String()
		got = append(got, ty)
		if i == len(lines)-1 {
			if err := schemas.ValidateResultLine([]byte(l)); err != nil {
				t.Errorf("result line: %v: %s", err, l)
			}
			continue
		}
		if err := schemas.ValidateEvent([]byte(l), false); err != nil {
			t.Errorf("event: %v: %s", err, l)
		}
		if gjson.Get(l, "session").Exists() || gjson.Get(l, "request").Exists() {
			t.Errorf("e -p event carries rpc stamps: %s", l)
		}
	}
	want := "turn_start warning session_name usage tool_batch tool_start tool_end text usage turn_end result"
	if strings.Join(got, " ") != want {
		t.Errorf("types:\n got %s\nwant %s", strings.Join(got, " "), want)
	}
}

// rpc is a running e rpc process.
type rpc struct {
	t     *testing.T
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan string
	seen  []string // for failure messages
}

func startRPC(t *testing.T, args ...string) *rpc {
	t.Helper()
	return startRPCWith(t, command(t), append([]string{"rpc", "--ne"}, args...))
}

// startRPCWith starts cmd (from command) with args.
func startRPCWith(t *testing.T, cmd *exec.Cmd, args []string) *rpc {
	t.Helper()
	cmd.Args = append(cmd.Args[:1], args...)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := &rpc{t: t, cmd: cmd, in: in, lines: make(chan string, 1024)}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			r.lines <- sc.Text()
		}
		close(r.lines)
	}()
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return r
}

func (r *rpc) send(line string) {
	r.t.Helper()
	if _, err := io.WriteString(r.in, line+"\n"); err != nil {
		r.t.Fatal(err)
	}
}

// until reads lines up to one containing want.
func (r *rpc) until(want string) string {
	r.t.Helper()
	for {
		select {
		case l, ok := <-r.lines:
			if !ok {
				r.t.Fatalf("stdout closed before %q; lines so far:\n%s", want, strings.Join(r.seen, "\n"))
			}
			r.seen = append(r.seen, l)
			if err := schemas.ValidateLine([]byte(l)); err != nil {
				r.t.Errorf("line does not validate: %v: %s", err, l)
			}
			if strings.Contains(l, want) {
				return l
			}
		case <-time.After(20 * time.Second):
			r.t.Fatalf("timed out waiting for %q; lines so far:\n%s", want, strings.Join(r.seen, "\n"))
		}
	}
}

func (r *rpc) wait() int {
	r.t.Helper()
	for range r.lines {
	}
	err := r.cmd.Wait()
	if ee, ok := err.(*exec.ExitError); ok {
		if st, ok := ee.Sys().(syscall.WaitStatus); ok && st.Signaled() {
			return 128 + int(st.Signal())
		}
		return ee.ExitCode()
	}
	if err != nil {
		r.t.Fatal(err)
	}
	return 0
}

// proc is one process as /proc shows it.
type proc struct {
	pid, ppid int
	state     string // "Z" for a zombie
	cmdline   string
}

// procs lists the processes of this machine.
func procs() []proc {
	var out []proc
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		var p proc
		if _, err := fmt.Sscan(e.Name(), &p.pid); err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// The fields after the command name, which may hold spaces: state, ppid, …
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(f) < 2 {
			continue
		}
		p.state = f[0]
		fmt.Sscan(f[1], &p.ppid)
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		p.cmdline = string(cmdline)
		out = append(out, p)
	}
	return out
}

// alive reports whether a live (not zombie) process has marker in its command line.
func alive(marker string) bool {
	for _, p := range procs() {
		if strings.Contains(p.cmdline, marker) && p.state != "Z" {
			return true
		}
	}
	return false
}

// D1, D2, 12.4: EOF, SIGTERM, SIGHUP and SIGINT end e and every bash process it
// started, detached children included, those that cleared their environment
// and left the group too.
func TestProcessEnd(t *testing.T) {
	tests := []struct {
		name     string
		stop     func(r *rpc)
		wantCode int
	}{
		{"EOF D1", func(r *rpc) { r.in.Close() }, 0},
		{"shutdown M16", func(r *rpc) { r.send(`{"id":"s","method":"shutdown"}`) }, 0},
		{"SIGTERM D2", func(r *rpc) { r.cmd.Process.Signal(syscall.SIGTERM) }, 143},
		{"SIGHUP D2", func(r *rpc) { r.cmd.Process.Signal(syscall.SIGHUP) }, 129},
		{"SIGINT", func(r *rpc) { r.cmd.Process.Signal(syscall.SIGINT) }, 130}, // Ctrl-C at the client's terminal
		// While e keeps running: the turn's processes go, detached ones too.
		{"interrupt M8", func(r *rpc) { stopTurn(r, "session.interrupt") }, 0},
		{"close M14", func(r *rpc) { stopTurn(r, "session.close") }, 0},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := startRPC(t)
			r.send(`{"id":"c","method":"session.create"}`)
			sid := gjson.Get(r.until(`"id":"c"`), "result.session").String()
			// Five sleeps: in the group, detached with setsid, nohup'ed, and two
			// with neither marker nor group nor parent, found only because e
			// is their subreaper (12.4): env -i setsid in a subshell, and a
			// Popen(env={}, start_new_session=True) from a parent that exits.
			marker := fmt.Sprintf("%d%d", 424242, i)
			cmdline := fmt.Sprintf("setsid sleep %[1]s.1 & nohup sleep %[1]s.2 >/dev/null 2>&1 & "+
				"(env -i setsid sleep %[1]s.4 >/dev/null 2>&1 &); "+
				`python3 -c 'import subprocess; subprocess.Popen(["sleep", "%[1]s.5"], env={}, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)'; `+
				"echo started; sleep %[1]s.3", marker)
			args, _ := jsonString(fmt.Sprintf(`{"command":%q}`, cmdline))
			r.send(fmt.Sprintf(`{"id":"p","method":"session.prompt","params":{"session":%q,"prompt":%s}}`, sid, args))
			r.until(`started`)
			tt.stop(r)
			if code := r.wait(); code != tt.wantCode {
				t.Errorf("exit %d, want %d", code, tt.wantCode)
			}
			if alive(marker) {
				t.Errorf("a process with marker %s outlived e", marker)
			}
		})
	}
}

// stopTurn sends method for the session of the running prompt, checks that
// no process of the turn outlives its response while e still runs, then
// closes e's stdin.
func stopTurn(r *rpc, method string) {
	r.t.Helper()
	sid := gjson.Get(r.seen[0], "result.session").String()
	r.send(fmt.Sprintf(`{"id":"x","method":%q,"params":{"session":%q}}`, method, sid))
	r.until(`"id":"x"`)
	for _, p := range procs() {
		if strings.Contains(p.cmdline, "sleep 42424") && p.state != "Z" {
			r.t.Errorf("after %s, %q (pid %d) still runs", method, p.cmdline, p.pid)
		}
	}
	r.in.Close()
}

func jsonString(s string) (string, error) {
	var b strings.Builder
	b.WriteString(`"/tool bash `)
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteString(`"`)
	return b.String(), nil
}

// F4: an oversized line ends the process with a reason on stderr.
func TestOversizedLine(t *testing.T) {
	cmd := command(t, "rpc", "--ne")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Stdin = io.MultiReader(strings.NewReader(`{"id":1,"method":"x","params":{"a":"`), bytes.NewReader(bytes.Repeat([]byte("a"), 10<<20)), strings.NewReader("\"}}\n"))
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Errorf("exit: %v, want status 1", err)
	}
	if !strings.Contains(stderr.String(), "longer than 10485760 bytes") {
		t.Errorf("stderr %q does not say why", stderr.String())
	}
}

// P4: Ctrl-C interrupts the turn and e -p exits 1.
func TestPrintInterrupt(t *testing.T) {
	cmd := command(t, "-p", "/delay 100000\n/text never", "--no-save", "--json")
	cmd.Stdin = strings.NewReader("")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Signal once the turn has started: its first event is on stdout.
	br := bufio.NewReader(out)
	if line, err := br.ReadString('\n'); err != nil || !strings.Contains(line, "turn_start") {
		t.Fatalf("first line %q: %v", line, err)
	}
	done := make(chan error, 1)
	go func() { io.Copy(io.Discard, br); done <- cmd.Wait() }()
	cmd.Process.Signal(os.Interrupt)
	select {
	case err = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("e -p did not end after SIGINT")
	}
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Errorf("exit %v, want status 1; stderr %s", err, stderr.String())
	}
	if !strings.HasSuffix(stderr.String(), "e: interrupted\n") {
		t.Errorf("stderr %q does not end saying the turn was interrupted", stderr.String())
	}
}

// P7: --json ends with a result line whenever a turn was attempted, also
// when it was refused before it began (a bad model), with the error in it.
func TestPrintJSONRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{name: "unknown model", args: []string{"-p", "x", "--json", "-m", "nope/x"}},
		{name: "unknown session to resume", args: []string{"-p", "x", "--json", "--resume", "01JNOSUCHSESSION0000000000"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := command(t, tc.args...)
			cmd.Stdin = strings.NewReader("")
			out, err := cmd.Output()
			if exitCode(err) != 1 {
				t.Errorf("exit %v, want 1", err)
			}
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			last := lines[len(lines)-1]
			if err := schemas.ValidateResultLine([]byte(last)); err != nil || gjson.Get(last, "error").String() == "" {
				t.Errorf("last line %q (%v), want a result line with the error", last, err)
			}
		})
	}
}

// P3: with stdout and stderr one file (2>&1, a terminal), a line on stderr
// after a reply that ends mid-line starts on a line of its own.
func TestPrintStatusOwnLine(t *testing.T) {
	cmd := command(t, "-p", "/text done", "-v", "--no-save")
	cmd.Stdin = strings.NewReader("")
	out, err := cmd.CombinedOutput() // one pipe for both
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if !strings.Contains(string(out), "\ndone\ne: turn done") {
		t.Errorf("output %q: the reply and the summary share a line", out)
	}
	if strings.Contains(string(out), "\n\n") {
		t.Errorf("output %q has an empty line", out)
	}
}

// P2: e -p says what it waits for when piped stdin stays open.
func TestPrintStdinHint(t *testing.T) {
	cmd := command(t, "-p", "/text hi", "--no-save", "-q")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(errPipe).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "e: waiting for stdin to close") {
		t.Errorf("stderr's first line %q (%v), want the hint", line, err)
	}
	in.Close()
	go io.Copy(io.Discard, errPipe)
	if err := cmd.Wait(); err != nil || stdout.String() != "hi\n" {
		t.Errorf("after stdin closed: %v, stdout %q; want the reply", err, stdout.String())
	}
}

// F5, 12.8: when the client closes stdout, e rpc ends (no crash, no hang)
// with status 1 and says why on stderr.
func TestClientGone(t *testing.T) {
	cmd := command(t, "rpc", "--ne")
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	out.Close() // the client stops reading
	for range 100 {
		if _, err := io.WriteString(in, `{"id":1,"method":"hello"}`+"\n"); err != nil {
			break // e already exited
		}
	}
	in.Close()
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Errorf("exit %v after the client went away, want status 1; stderr %s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "e rpc: writing stdout: ") {
		t.Errorf("stderr %q does not say why e exited", stderr.String())
	}
	if strings.Contains(stderr.String(), "panic") {
		t.Errorf("stderr: %s", stderr.String())
	}
}

// P4, 12.8: when the reader of e -p's stdout goes away mid-reply, e stops
// the turn and exits 1, saying why on stderr (not silently by SIGPIPE).
func TestPrintStdoutGone(t *testing.T) {
	cmd := command(t, "-p", "/long 200000", "--no-save")
	cmd.Stdin = strings.NewReader("")
	out, _ := cmd.StdoutPipe()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(out, make([]byte, 10)); err != nil {
		t.Fatal(err)
	}
	out.Close()
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Errorf("exit %v, want status 1; stderr %s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "e: writing stdout: ") {
		t.Errorf("stderr %q does not say why e stopped", stderr.String())
	}
}

// e schema prints every schema, or one by name, so clients can generate types.
func TestSchemaCommand(t *testing.T) {
	out, err := command(t, "schema").Output()
	if err != nil || !gjson.ValidBytes(out) || !gjson.GetBytes(out, `$defs`).Exists() {
		t.Fatalf("e schema: %v: %.200s", err, out)
	}
	out, err = command(t, "schema", "session.create.params").Output()
	if err != nil || !strings.Contains(string(out), "tool_mode") {
		t.Fatalf("e schema session.create.params: %v: %.200s", err, out)
	}
	err = command(t, "schema", "nope").Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
		t.Errorf("unknown schema: %v, want exit 2", err)
	}
}
