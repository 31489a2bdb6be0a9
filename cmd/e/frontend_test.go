package main

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// D1, D2, F5: the three JSON Lines front ends end the same way, through
// one loop (internal/lineserver): EOF exits 0, SIGTERM 143, SIGHUP 129, SIGINT 130,
// and a client that stops reading stdout ends e with status 1 and one
// line on stderr saying why (never a silent death by SIGPIPE).
func TestFrontEndsEnd(t *testing.T) {
	frontEnds := []struct {
		name  string // how its lines on stderr start
		args  []string
		ready string // a request; its response means the loop runs
	}{
		{"e rpc", []string{"rpc", "--ne"}, `{"id":1,"method":"hello"}`},
		{"e --mode rpc", []string{"--mode", "rpc", "--no-session", "-ne"}, `{"id":"1","type":"get_state"}`},
		{"e acp", []string{"acp", "--ne", "--no-save"}, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`},
	}
	endings := []struct {
		name     string
		end      func(cmd *exec.Cmd, in io.WriteCloser, out io.Closer, ready string)
		wantCode int
		stderr   string // substring, with the front end's name before it
	}{
		{"EOF", func(_ *exec.Cmd, in io.WriteCloser, _ io.Closer, _ string) { in.Close() }, 0, ""},
		{"SIGTERM", func(cmd *exec.Cmd, _ io.WriteCloser, _ io.Closer, _ string) { cmd.Process.Signal(syscall.SIGTERM) }, 143, ""},
		{"SIGHUP", func(cmd *exec.Cmd, _ io.WriteCloser, _ io.Closer, _ string) { cmd.Process.Signal(syscall.SIGHUP) }, 129, ""},
		{"SIGINT", func(cmd *exec.Cmd, _ io.WriteCloser, _ io.Closer, _ string) { cmd.Process.Signal(syscall.SIGINT) }, 130, ""},
		{"stdout gone", func(_ *exec.Cmd, in io.WriteCloser, out io.Closer, ready string) {
			out.Close() // the client stops reading; its requests still come
			for range 200 {
				if _, err := io.WriteString(in, ready+"\n"); err != nil {
					break // e already exited
				}
			}
			in.Close()
		}, 1, ": writing stdout: "},
	}
	for _, fe := range frontEnds {
		for _, end := range endings {
			t.Run(fe.name+"/"+end.name, func(t *testing.T) {
				cmd := command(t, fe.args...)
				cmd.Env = append(cmd.Env, "PI_CODING_AGENT_DIR="+t.TempDir())
				in, _ := cmd.StdinPipe()
				out, _ := cmd.StdoutPipe()
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { cmd.Process.Kill() })
				io.WriteString(in, fe.ready+"\n")
				br := bufio.NewReader(out)
				if line, err := br.ReadString('\n'); err != nil {
					t.Fatalf("no response to %s: %v; stderr %s", fe.ready, err, stderr.String())
				} else if strings.Contains(line, `"error"`) && !strings.Contains(line, `"error":null`) {
					t.Fatalf("ready request failed: %s", line)
				}
				end.end(cmd, in, out, fe.ready)
				done := make(chan error, 1)
				go func() {
					if end.name != "stdout gone" {
						io.Copy(io.Discard, br)
					}
					done <- cmd.Wait()
				}()
				var err error
				select {
				case err = <-done:
				case <-time.After(30 * time.Second):
					t.Fatalf("%s did not exit; stderr %s", fe.name, stderr.String())
				}
				if code := exitCode(err); code != end.wantCode {
					t.Errorf("exit %d (%v), want %d; stderr %s", code, err, end.wantCode, stderr.String())
				}
				if end.stderr != "" && !strings.Contains(stderr.String(), fe.name+end.stderr) {
					t.Errorf("stderr %q does not say %q", stderr.String(), fe.name+end.stderr)
				}
				if strings.Contains(stderr.String(), "panic") {
					t.Errorf("stderr: %s", stderr.String())
				}
			})
		}
	}
}

// H1, H2: a request stuck in its work (a never-answering MCP server, a FIFO
// named as the log to resume, which an open blocked on before Y1) holds neither a
// process-level request nor the process's end, in every dialect: the later
// request is answered while it hangs, and SIGTERM still exits 143 (EOF 0).
func TestStuckRequest(t *testing.T) {
	const mute = `{"name":"mute","command":"sleep","args":["1000"]`
	tests := []struct {
		name     string
		args     []string
		create   string                  // when set, a request first, whose answer's session is {{s}} in stuck
		stuck    func(dir string) string // the request that hangs, given a temp dir
		after    string                  // a process-level request, id "after"
		end      syscall.Signal          // 0: close stdin
		wantCode int
	}{
		{name: "e rpc/mcp never answers", args: []string{"rpc", "--ne"}, stuck: func(string) string {
			return `{"id":"stuck","method":"session.create","params":{"mcp_servers":[` + mute + `}]}}`
		}, after: `{"id":"after","method":"hello"}`, end: syscall.SIGTERM, wantCode: 143},
		{name: "e rpc/resume a FIFO/SIGTERM", args: []string{"rpc", "--ne"}, stuck: func(dir string) string {
			return `{"id":"stuck","method":"session.create","params":{"resume":"` + fifo(t, dir) + `"}}`
		}, after: `{"id":"after","method":"hello"}`, end: syscall.SIGTERM, wantCode: 143},
		{name: "e rpc/resume a FIFO/EOF", args: []string{"rpc", "--ne"}, stuck: func(dir string) string {
			return `{"id":"stuck","method":"session.create","params":{"resume":"` + fifo(t, dir) + `"}}`
		}, after: `{"id":"after","method":"hello"}`, wantCode: 0},
		{name: "e rpc/export to a FIFO/SIGTERM", args: []string{"rpc", "--ne"}, create: `{"id":"c","method":"session.create"}`, stuck: func(dir string) string {
			return `{"id":"stuck","method":"session.export","params":{"session":"{{s}}","path":"` + fifo(t, dir) + `"}}`
		}, after: `{"id":"after","method":"session.list"}`, end: syscall.SIGTERM, wantCode: 143},
		{name: "e rpc/export to a FIFO/EOF", args: []string{"rpc", "--ne"}, create: `{"id":"c","method":"session.create"}`, stuck: func(dir string) string {
			return `{"id":"stuck","method":"session.export","params":{"session":"{{s}}","path":"` + fifo(t, dir) + `"}}`
		}, after: `{"id":"after","method":"session.list"}`, wantCode: 0},
		{name: "e rpc/image a FIFO/SIGTERM", args: []string{"rpc", "--ne"}, create: `{"id":"c","method":"session.create"}`, stuck: func(dir string) string {
			return `{"id":"stuck","method":"session.prompt","params":{"session":"{{s}}","prompt":"see","images":["` + fifo(t, dir) + `"]}}`
		}, after: `{"id":"after","method":"hello"}`, end: syscall.SIGTERM, wantCode: 143},
		{name: "pi/export to a FIFO/SIGTERM", args: []string{"--mode", "rpc", "--no-session", "-ne"}, stuck: func(dir string) string {
			return `{"id":"stuck","type":"export_html","outputPath":"` + fifo(t, dir) + `"}`
		}, after: `{"id":"after","type":"get_state"}`, end: syscall.SIGTERM, wantCode: 143},
		{name: "pi/export to a FIFO/EOF", args: []string{"--mode", "rpc", "--no-session", "-ne"}, stuck: func(dir string) string {
			return `{"id":"stuck","type":"export_html","outputPath":"` + fifo(t, dir) + `"}`
		}, after: `{"id":"after","type":"get_state"}`, wantCode: 0},
		{name: "pi/switch to a FIFO/SIGTERM", args: []string{"--mode", "rpc", "--no-session", "-ne"}, stuck: func(dir string) string {
			return `{"id":"stuck","type":"switch_session","sessionPath":"` + fifo(t, dir) + `"}`
		}, after: `{"id":"after","type":"get_state"}`, end: syscall.SIGTERM, wantCode: 143},
		{name: "pi/switch to a FIFO/EOF", args: []string{"--mode", "rpc", "--no-session", "-ne"}, stuck: func(dir string) string {
			return `{"id":"stuck","type":"switch_session","sessionPath":"` + fifo(t, dir) + `"}`
		}, after: `{"id":"after","type":"get_state"}`, wantCode: 0},
		{name: "acp/mcp never answers", args: []string{"acp", "--ne", "--no-save"}, stuck: func(dir string) string {
			return `{"jsonrpc":"2.0","id":"stuck","method":"session/new","params":{"cwd":"` + dir + `","mcpServers":[` + mute + `,"env":[]}]}}`
		}, after: `{"jsonrpc":"2.0","id":"after","method":"initialize","params":{"protocolVersion":1}}`, end: syscall.SIGTERM, wantCode: 143},
		{name: "acp/mcp never answers/EOF", args: []string{"acp", "--ne", "--no-save"}, stuck: func(dir string) string {
			return `{"jsonrpc":"2.0","id":"stuck","method":"session/new","params":{"cwd":"` + dir + `","mcpServers":[` + mute + `,"env":[]}]}}`
		}, after: `{"jsonrpc":"2.0","id":"after","method":"session/list","params":{}}`, wantCode: 0},
		{name: "e rpc/mcp never answers/EOF", args: []string{"rpc", "--ne"}, stuck: func(string) string {
			return `{"id":"stuck","method":"session.create","params":{"mcp_servers":[` + mute + `}]}}`
		}, after: `{"id":"after","method":"models.list"}`, wantCode: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := command(t)
			cmd.Env = append(cmd.Env, "PI_CODING_AGENT_DIR="+t.TempDir())
			r := startRPCWith(t, cmd, tt.args)
			stuck := tt.stuck(t.TempDir())
			if tt.create != "" {
				r.send(tt.create)
				id := gjson.Get(r.until(`"id":"c"`), "result.session").String()
				stuck = strings.ReplaceAll(stuck, "{{s}}", id)
			}
			r.send(stuck)
			r.send(tt.after)
			// The later request's answer comes first; the stuck one's, if
			// it comes at all, after it. A FIFO no longer sticks: it is
			// refused at once, naming it (Y1), which may come first.
			for answered := false; !answered; {
				select {
				case l, ok := <-r.lines:
					if !ok {
						t.Fatal("stdout closed before the later request's answer")
					}
					if strings.Contains(l, `"id":"stuck"`) && !strings.Contains(l, "a named pipe (FIFO), not a regular file") {
						t.Fatalf("first answer %s, want the later request's", l)
					}
					answered = strings.Contains(l, `"id":"after"`)
				case <-time.After(20 * time.Second): // a failsafe, not a synchronisation
					t.Fatal("no answer to the later request")
				}
			}
			if tt.end == 0 {
				r.in.Close()
			} else {
				r.cmd.Process.Signal(tt.end)
			}
			if code := r.wait(); code != tt.wantCode {
				t.Errorf("exit %d, want %d", code, tt.wantCode)
			}
		})
	}
}

// fifo makes a named pipe in dir that nothing writes to: opening it to
// read blocks.
func fifo(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "log.jsonl")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// H1, M4: a stale 1 GiB log (sparse: a header, a hole and an entry without
// the branch summary) in the sessions folder is listed from its head and
// a bounded tail, in e rpc and ACP, while another session's requests and
// hello are answered; EOF then exits 0.
func TestHugeStaleLogListed(t *testing.T) {
	const size = 1 << 30
	tests := []struct {
		name   string
		args   []string
		create string // a session of its own, id "c"; {{dir}} is e's cwd
		list   string // id "list"
		after  string // id "after"
		want   string // in the list's answer
	}{
		{name: "e rpc", args: []string{"rpc", "--ne"}, create: `{"id":"c","method":"session.create"}`,
			list: `{"id":"list","method":"session.list","params":{"all":true}}`, after: `{"id":"after","method":"hello"}`,
			want: `"title":"fix the bug"`},
		{name: "acp", args: []string{"acp", "--ne", "--no-save"}, create: `{"jsonrpc":"2.0","id":"c","method":"session/new","params":{"cwd":"{{dir}}","mcpServers":[]}}`,
			list: `{"jsonrpc":"2.0","id":"list","method":"session/list","params":{"cwd":"/w"}}`, after: `{"jsonrpc":"2.0","id":"after","method":"initialize","params":{"protocolVersion":1}}`,
			want: `"title":"fix the bug"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := command(t)
			var home string
			for _, kv := range cmd.Env {
				if v, ok := strings.CutPrefix(kv, "E_HOME="); ok {
					home = v
				}
			}
			dir := filepath.Join(home, "sessions", "--w--")
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			f, err := os.Create(filepath.Join(dir, "big.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			f.WriteString(`{"type":"session","version":1,"id":"big","cwd":"/w","created":"2026-01-01T00:00:00Z","model":"m","effort":"e"}` + "\n" +
				`{"type":"message","id":"00000001","parent":"","time":"2026-01-01T00:00:00Z","message":{"role":"user","content":"fix the bug"}}` + "\n")
			last := "\n" + `{"type":"message","id":"00000002","parent":"00000001","time":"2026-01-01T00:00:00Z","message":{"role":"assistant","content":"done"}}` + "\n"
			if err := f.Truncate(size); err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteAt([]byte(last), size-int64(len(last))); err != nil {
				t.Fatal(err)
			}
			f.Close()
			r := startRPCWith(t, cmd, tt.args)
			// answers reads lines (any dialect's) up to the answers to ids.
			answers := func(ids ...string) map[string]string {
				got := map[string]string{}
				for len(got) < len(ids) {
					select {
					case l, ok := <-r.lines:
						if !ok {
							t.Fatalf("stdout closed before the answers to %v", ids)
						}
						for _, id := range ids {
							if strings.Contains(l, `"id":"`+id+`"`) {
								got[id] = l
							}
						}
					case <-time.After(20 * time.Second): // a failsafe, not a synchronisation
						t.Fatalf("answers %v, want %v", got, ids)
					}
				}
				return got
			}
			r.send(strings.ReplaceAll(tt.create, "{{dir}}", cmd.Dir))
			if c := answers("c")["c"]; strings.Contains(c, `"error"`) {
				t.Fatalf("create: %s", c)
			}
			r.send(tt.list)
			r.send(tt.after)
			got := answers("list", "after")
			if !strings.Contains(got["list"], tt.want) || strings.Contains(got["list"], `"error"`) {
				t.Errorf("list answer %s, want %s in it", got["list"], tt.want)
			}
			if strings.Contains(got["after"], `"error"`) {
				t.Errorf("answer %s", got["after"])
			}
			r.in.Close()
			if code := r.wait(); code != 0 {
				t.Errorf("exit %d, want 0", code)
			}
		})
	}
}
