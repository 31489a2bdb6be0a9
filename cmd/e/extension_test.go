package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/tidwall/gjson"
)

// guardBin builds the reference extension once per test binary.
func guardBin(t *testing.T) string {
	t.Helper()
	path := filepath.Join(filepath.Dir(bin), "guard")
	if _, err := os.Stat(path); err == nil {
		return path
	}
	if out, err := exec.Command("go", "build", "-o", path, "../../examples/extensions/guard").CombinedOutput(); err != nil {
		t.Fatalf("build guard: %v\n%s", err, out)
	}
	return path
}

// startWithExtensions runs e rpc with the guard and a missing extension.
func startWithExtensions(t *testing.T, extra ...string) *rpc {
	t.Helper()
	cmd := command(t)
	home := strings.TrimPrefix(cmd.Env[len(cmd.Env)-3], "E_HOME=")
	settings := fmt.Sprintf(`{"extensions":[{"name":"guard","command":%q},{"name":"ghost","command":"/nonexistent/ghost"}]}`, guardBin(t))
	if err := os.WriteFile(filepath.Join(home, "settings.json"), []byte(settings), 0o600); err != nil {
		t.Fatal(err)
	}
	return startRPCWith(t, cmd, append([]string{"rpc"}, extra...))
}

func prompt(r *rpc, id, sid, text string) {
	r.send(fmt.Sprintf(`{"id":%q,"method":"session.prompt","params":{"session":%q,"prompt":%q}}`, id, sid, text))
}

func create(r *rpc) string {
	r.send(`{"id":"c","method":"session.create"}`)
	return gjson.Get(r.until(`"id":"c"`), "result.session").String()
}

// X2, X3, X6, X7: an extension tool asks, the client answers; notices only
// after hello; the gate denies.
func TestExtensionAsk(t *testing.T) {
	r := startWithExtensions(t)
	sid := create(r) // no notice may come before hello (X7)
	r.send(`{"id":"h","method":"hello","params":{"ask":true}}`)
	r.until(`"id":"h"`)
	if n := r.until(`"type":"notice"`); !strings.Contains(n, "ghost") {
		t.Errorf("held notice does not name the missing extension: %s", n)
	}
	prompt(r, "p", sid, `/tool deploy {"target":"prod"}`+"\n/then\n/text ok")
	ask := r.until(`"type":"ask"`)
	if gjson.Get(ask, "extension").String() != "guard" || gjson.Get(ask, "method").String() != "ui.confirm" {
		t.Fatalf("ask line: %s", ask)
	}
	r.send(fmt.Sprintf(`{"id":"a","method":"ask.reply","params":{"ask":%d,"result":{"confirmed":true}}}`, gjson.Get(ask, "ask").Int()))
	if end := r.until(`"type":"tool_end"`); gjson.Get(end, "content").String() != "deployed to prod" {
		t.Errorf("tool_end: %s", end)
	}
	r.until(`"id":"p"`)
	// A reply to an answered ask is an error naming it (M15).
	r.send(fmt.Sprintf(`{"id":"a2","method":"ask.reply","params":{"ask":%d}}`, gjson.Get(ask, "ask").Int()))
	if resp := r.until(`"id":"a2"`); !strings.Contains(gjson.Get(resp, "error").String(), "ask") {
		t.Errorf("second reply: %s", resp)
	}
	// The gate denies rm -rf with a reason the model sees.
	prompt(r, "g", sid, `/tool bash {"command":"rm -rf /tmp/nothing-here"}`+"\n/then\n/text ok")
	if end := r.until(`"type":"tool_end"`); gjson.Get(end, "outcome").String() != "denied" {
		t.Errorf("gate: %s", end)
	}
	r.until(`"id":"g"`)
	r.in.Close()
	if code := r.wait(); code != 0 {
		t.Errorf("exit %d", code)
	}
}

// X5: without hello a question is refused at once; nothing waits.
func TestExtensionAskRefusedWithoutHello(t *testing.T) {
	r := startWithExtensions(t)
	sid := create(r)
	prompt(r, "p", sid, `/tool deploy {"target":"prod"}`+"\n/then\n/text ok")
	end := r.until(`"type":"tool_end"`)
	if c := gjson.Get(end, "content").String(); strings.Contains(c, "deployed to") {
		t.Errorf("deploy ran without a client to ask: %s", end)
	}
	r.until(`"id":"p"`)
	r.in.Close()
	r.wait()
}

// X6: killing the extension mid-ask cancels the ask, says so in a notice,
// and leaves the session usable.
func TestExtensionCrashMidAsk(t *testing.T) {
	r := startWithExtensions(t)
	r.send(`{"id":"h","method":"hello","params":{"ask":true}}`)
	r.until(`"id":"h"`)
	sid := create(r)
	prompt(r, "p", sid, `/tool deploy {"target":"prod"}`+"\n/then\n/text after")
	ask := gjson.Get(r.until(`"type":"ask"`), "ask").Int()
	killChild(t, r.cmd.Process.Pid, "guard")
	seen := len(r.seen)
	if resp := r.until(`"id":"p"`); gjson.Get(resp, "result.final_output").String() != "after" {
		t.Errorf("turn after crash: %s", resp)
	}
	// Two notices: the crash, and the ask the client can stop showing.
	var crashed, cancelled bool
	for _, l := range r.seen[seen:] {
		if gjson.Get(l, "type").String() != "notice" {
			continue
		}
		crashed = crashed || strings.Contains(gjson.Get(l, "message").String(), "guard")
		cancelled = cancelled || gjson.Get(l, "ask").Int() == ask
	}
	for !crashed || !cancelled { // a notice may also follow the response
		l := r.until(`"type":"notice"`)
		crashed = crashed || strings.Contains(gjson.Get(l, "message").String(), "guard")
		cancelled = cancelled || gjson.Get(l, "ask").Int() == ask
	}
	prompt(r, "p2", sid, "/text still here")
	if resp := r.until(`"id":"p2"`); gjson.Get(resp, "result.output").String() != "still here" {
		t.Errorf("session unusable after crash: %s", resp)
	}
	r.in.Close()
	r.wait()
}

// X8: --ne loads no extension: its tool is not offered.
func TestNoExtensions(t *testing.T) {
	r := startWithExtensions(t, "--ne")
	sid := create(r)
	prompt(r, "p", sid, `/tool deploy {"target":"prod"}`+"\n/then\n/text ok")
	if end := r.until(`"type":"tool_end"`); gjson.Get(end, "outcome").String() != "failed" {
		t.Errorf("deploy with --ne: %s", end)
	}
	r.until(`"id":"p"`)
	r.in.Close()
	r.wait()
}

// killChild SIGKILLs the child of pid whose command line contains name.
func killChild(t *testing.T, pid int, name string) {
	t.Helper()
	syscall.Kill(childPID(t, pid, name), syscall.SIGKILL)
}

// D1, D2: no extension process outlives e, after EOF or a signal.
func TestExtensionGoneAfterExit(t *testing.T) {
	tests := []struct {
		name     string
		stop     func(r *rpc)
		wantCode int
	}{
		{"EOF D1", func(r *rpc) { r.in.Close() }, 0},
		{"SIGTERM D2", func(r *rpc) { r.cmd.Process.Signal(syscall.SIGTERM) }, 143},
		{"SIGHUP D2", func(r *rpc) { r.cmd.Process.Signal(syscall.SIGHUP) }, 129},
		{"SIGINT", func(r *rpc) { r.cmd.Process.Signal(syscall.SIGINT) }, 130},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := startWithExtensions(t)
			// A turn's first model call waits for the handshakes (H3): the
			// extension is up once its answer came.
			prompt(r, "p", create(r), "/text up")
			r.until(`"id":"p"`)
			pid := childPID(t, r.cmd.Process.Pid, "guard")
			tt.stop(r)
			if code := r.wait(); code != tt.wantCode {
				t.Errorf("exit %d, want %d", code, tt.wantCode)
			}
			for _, p := range procs() {
				if p.pid == pid && p.state != "Z" {
					t.Errorf("extension process %d outlived e", pid)
				}
			}
		})
	}
}

// childPID returns the pid of the child of pid whose command line contains name.
func childPID(t *testing.T, pid int, name string) int {
	t.Helper()
	for _, p := range procs() {
		if p.ppid == pid && strings.Contains(p.cmdline, name) {
			return p.pid
		}
	}
	t.Fatalf("no child %q of %d", name, pid)
	return 0
}

// H3: hello, models.list and session.create do not wait for an
// extension's handshake: with one that never answers initialize, they are
// answered before the notice that the handshake failed (which, held for
// hello (X7), came right after hello's answer when the process waited for
// the handshake before serving).
func TestHelloBeforeHandshake(t *testing.T) {
	cmd := command(t)
	home := strings.TrimPrefix(cmd.Env[len(cmd.Env)-3], "E_HOME=")
	if err := os.WriteFile(filepath.Join(home, "settings.json"), []byte(`{"extensions":[{"name":"mute","command":"sleep","args":["60"]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	r := startRPCWith(t, cmd, []string{"rpc"})
	r.send(`{"id":"h","method":"hello"}`)
	r.until(`"id":"h"`)
	r.send(`{"id":"m","method":"models.list"}`)
	if l := r.until(`"`); !strings.Contains(l, `"id":"m"`) {
		t.Errorf("after hello's answer came %s, want models.list's answer", l)
	}
	r.send(`{"id":"c","method":"session.create"}`)
	if l := r.until(`"`); !strings.Contains(l, `"id":"c"`) || !strings.Contains(l, `"result"`) {
		t.Errorf("after models.list's answer came %s, want session.create's result", l)
	}
	r.in.Close()
	if code := r.wait(); code != 0 {
		t.Errorf("exit %d, want 0", code)
	}
}
