package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/e-agent/e/internal/sandbox"
)

// escapes are what a hostile command tries from a workspace-write sandbox
// without network (W1, W3): each must fail. @OUT@ is a directory outside
// the roots, @HOME@ is E_HOME, @TCP@, @UDP@, @SOCK@ and @DGRAM@ (unix
// stream and datagram) are listeners the test runs on loopback.
var escapes = []struct{ name, line string }{
	{"dotdot", "echo x > ../outside/dotdot"},
	{"absolute", "echo x > @OUT@/absolute"},
	{"overwrite", "echo x > @OUT@/secret"},
	{"touch", "touch @OUT@/secret"},
	{"chmod", "chmod 600 @OUT@/secret"},
	{"remount", "mount -o remount,rw /"},
	{"truncate", "truncate -s 0 @OUT@/secret"},
	{"symlink", "ln -s @OUT@ lnk && echo x > lnk/symlink"},
	{"hardlink", "ln @OUT@/secret hl && echo x >> hl"},
	{"rename", "echo x > mv1 && mv mv1 @OUT@/renamed"},
	{"proc-root", "echo x > /proc/self/root/@OUT@/procroot"},
	{"unshare", "unshare -Ur sh -c 'echo x > @OUT@/unshare'"},
	{"nsenter", "nsenter --net=/proc/1/ns/net sh -c 'exec 3<>/dev/tcp/127.0.0.1/@TCP@'"},
	{"home", "echo x > @HOME@/planted"},
	{"tcp", "exec 3<>/dev/tcp/127.0.0.1/@TCP@"},
	{"udp", "echo x > /dev/udp/127.0.0.1/@UDP@"},
	{"unix", `python3 -c 'import socket; s=socket.socket(socket.AF_UNIX); s.connect("@SOCK@")'`},
	{"unix-dgram", `python3 -c 'import socket; s=socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); s.sendto(b"x", "@DGRAM@")'`},
}

// ordinary is work a sandboxed command must still do.
var ordinary = []struct{ name, line string }{
	{"write", "echo x > made && mkdir -p d/e && mv made d/e/ && rm -r d"},
	{"tmpdir", `echo x > "$TMPDIR/t" && rm "$TMPDIR/t"`},
	{"git", "git init -q repo && cd repo && echo a > a && git add a && git -c user.email=a@b -c user.name=a commit -qm a"},
	{"make", `printf 'all:\n\techo built > built.txt\n' > Makefile && make -s && test -s built.txt`},
	{"python", `python3 -c 'print(1)'`},
	{"devnull", "echo x > /dev/null"},
}

// script is one bash command line that tries every escape and every
// ordinary task and writes "NAME ok" or "NAME failed" for each into
// report.txt in the cwd.
func script(vars map[string]string) string {
	var b strings.Builder
	b.WriteString(`r=$PWD/report.txt; : > "$r"` + "\n")
	b.WriteString(`try() { if (eval "$2") >/dev/null 2>&1; then echo "$1 ok" >> "$r"; else echo "$1 failed" >> "$r"; fi; }` + "\n")
	for _, list := range [][]struct{ name, line string }{escapes, ordinary} {
		for _, e := range list {
			line := e.line
			for k, v := range vars {
				line = strings.ReplaceAll(line, k, v)
			}
			fmt.Fprintf(&b, "try %s %s\n", e.name, shellQuote(line))
		}
	}
	return b.String()
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// TestSandboxEscapes starts each entry point (e -p, e rpc, e --mode rpc,
// e acp) with --sandbox workspace-write, has it run the script through
// its way of running a command (the bash tool, session.shell, pi's bash),
// and checks every escape failed, nothing reached the listeners or the
// outside directory, and ordinary work succeeded (W1, W3).
func TestSandboxEscapes(t *testing.T) {
	if err := sandbox.Probe().Enforceable(sandbox.Policy{Mode: sandbox.WorkspaceWrite}); err != nil {
		t.Skip(err)
	}
	for _, tool := range []string{"python3", "git", "make", "unshare", "nsenter", "truncate"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	var reached atomic.Int32
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	go func() {
		for {
			c, err := tcp.Accept()
			if err != nil {
				return
			}
			reached.Add(1)
			c.Close()
		}
	}()
	udp, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	go func() {
		buf := make([]byte, 64)
		for {
			if _, _, err := udp.ReadFrom(buf); err != nil {
				return
			}
			reached.Add(1)
		}
	}()
	sockDir := t.TempDir()
	unix, err := net.Listen("unix", filepath.Join(sockDir, "s"))
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close()
	go func() {
		for {
			c, err := unix.Accept()
			if err != nil {
				return
			}
			reached.Add(1)
			c.Close()
		}
	}()
	dgram, err := net.ListenPacket("unixgram", filepath.Join(sockDir, "d"))
	if err != nil {
		t.Fatal(err)
	}
	defer dgram.Close()
	go func() {
		buf := make([]byte, 64)
		for {
			if _, _, err := dgram.ReadFrom(buf); err != nil {
				return
			}
			reached.Add(1)
		}
	}()
	_, tcpPort, _ := net.SplitHostPort(tcp.Addr().String())
	_, udpPort, _ := net.SplitHostPort(udp.LocalAddr().String())

	entries := []struct {
		name  string
		args  []string
		drive func(t *testing.T, cmd *exec.Cmd, cwd, script string)
	}{
		{"e -p", []string{"--json", "--no-save", "--ne"}, drivePrint},
		{"e rpc", []string{"rpc", "--ne", "--no-save"}, driveRPC},
		{"e --mode rpc", []string{"--mode", "rpc", "--no-session", "-ne"}, drivePi},
		{"e acp", []string{"acp", "--ne", "--no-save", "--approval", "never"}, driveACP},
	}
	for _, en := range entries {
		t.Run(en.name, func(t *testing.T) {
			root := t.TempDir()
			cwd, out, home := filepath.Join(root, "work"), filepath.Join(root, "outside"), filepath.Join(root, "home")
			for _, d := range []string{cwd, out, home} {
				if err := os.Mkdir(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(filepath.Join(out, "secret"), []byte("secret\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			s := script(map[string]string{"@OUT@": out, "@HOME@": home, "@TCP@": tcpPort, "@UDP@": udpPort,
				"@SOCK@": filepath.Join(sockDir, "s"), "@DGRAM@": filepath.Join(sockDir, "d")})
			before := reached.Load()
			cmd := exec.Command(bin, append(en.args, "--sandbox", "workspace-write")...)
			cmd.Dir = cwd
			cmd.Env = append(os.Environ(), "E_HOME="+home, "OPENAI_API_KEY=", "ANTHROPIC_API_KEY=", "PI_CODING_AGENT_DIR="+t.TempDir())
			en.drive(t, cmd, cwd, s)

			report, err := os.ReadFile(filepath.Join(cwd, "report.txt"))
			if err != nil {
				t.Fatalf("no report: %v", err)
			}
			got := map[string]string{}
			for _, line := range strings.Split(strings.TrimSpace(string(report)), "\n") {
				name, outcome, _ := strings.Cut(line, " ")
				got[name] = outcome
			}
			for _, e := range escapes {
				if got[e.name] != "failed" {
					t.Errorf("escape %s: %q, want failed", e.name, got[e.name])
				}
			}
			for _, o := range ordinary {
				if got[o.name] != "ok" {
					t.Errorf("ordinary %s: %q, want ok", o.name, got[o.name])
				}
			}
			if n := reached.Load() - before; n != 0 {
				t.Errorf("%d connections or packets reached the loopback listeners", n)
			}
			var names []string
			for _, d := range []string{out, home} {
				ents, _ := os.ReadDir(d)
				for _, e := range ents {
					names = append(names, e.Name())
				}
			}
			if want := []string{"secret"}; !slices.Equal(names, want) && !slices.Equal(names, append(want, "sessions")) {
				t.Errorf("outside and home hold %v, want only secret", names)
			}
			if b, _ := os.ReadFile(filepath.Join(out, "secret")); string(b) != "secret\n" {
				t.Errorf("secret now %q", b)
			}
		})
	}
}

// lineSession runs cmd with stdin and stdout pipes; lines are read with a deadline.
type lineSession struct {
	t     *testing.T
	in    io.WriteCloser
	lines chan map[string]any
	cmd   *exec.Cmd
}

func startLines(t *testing.T, cmd *exec.Cmd) *lineSession {
	t.Helper()
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ls := &lineSession{t: t, in: in, lines: make(chan map[string]any, 1024), cmd: cmd}
	go func() {
		defer close(ls.lines)
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				ls.lines <- m
			}
		}
	}()
	t.Cleanup(func() {
		in.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	return ls
}

func (ls *lineSession) send(v any) {
	ls.t.Helper()
	b, _ := json.Marshal(v)
	if _, err := ls.in.Write(append(b, '\n')); err != nil {
		ls.t.Fatal(err)
	}
}

// until returns the first line with id.
func (ls *lineSession) until(id any) map[string]any {
	ls.t.Helper()
	timeout := time.After(60 * time.Second)
	for {
		select {
		case m, ok := <-ls.lines:
			if !ok {
				ls.t.Fatalf("stdout ended before the answer to %v", id)
			}
			if fmt.Sprint(m["id"]) == fmt.Sprint(id) {
				return m
			}
		case <-timeout:
			ls.t.Fatalf("no answer to %v", id)
		}
	}
}

func toolPrompt(script string) string {
	args, _ := json.Marshal(map[string]string{"command": script})
	return "/tool bash " + string(args) + "\n/then\n/text done"
}

func drivePrint(t *testing.T, cmd *exec.Cmd, _, script string) {
	cmd.Args = append(cmd.Args, "-p", toolPrompt(script))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("e -p: %v\n%s", err, out)
	}
}

func driveRPC(t *testing.T, cmd *exec.Cmd, _, script string) {
	ls := startLines(t, cmd)
	ls.send(map[string]any{"id": 1, "method": "session.create", "params": map[string]any{}})
	res, _ := ls.until(1)["result"].(map[string]any)
	ls.send(map[string]any{"id": 2, "method": "session.shell", "params": map[string]any{"session": res["session"], "command": script}})
	if r := ls.until(2); r["result"] == nil {
		t.Fatalf("session.shell: %v", r)
	}
}

func drivePi(t *testing.T, cmd *exec.Cmd, _, script string) {
	ls := startLines(t, cmd)
	ls.send(map[string]any{"id": "1", "type": "bash", "command": script})
	if r := ls.until("1"); r["success"] != true {
		t.Fatalf("bash: %v", r)
	}
}

func driveACP(t *testing.T, cmd *exec.Cmd, cwd, script string) {
	ls := startLines(t, cmd)
	ls.send(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{"protocolVersion": 1}})
	ls.until(1)
	ls.send(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": map[string]any{"cwd": cwd, "mcpServers": []any{}}})
	res, _ := ls.until(2)["result"].(map[string]any)
	ls.send(map[string]any{"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": map[string]any{"sessionId": res["sessionId"],
		"prompt": []any{map[string]any{"type": "text", "text": toolPrompt(script)}}}})
	if r := ls.until(3); r["result"] == nil {
		t.Fatalf("session/prompt: %v", r)
	}
}
