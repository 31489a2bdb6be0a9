package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/e-agent/e/internal/mcp/mcptest"
)

// The test binary is its own MCP server (mcptest).
func TestMain(m *testing.M) {
	mcptest.MaybeServe()
	os.Exit(m.Run())
}

// testServer returns the configuration of the test server.
func testServer(t *testing.T, name string) Config {
	t.Helper()
	exe, env, err := mcptest.Command()
	if err != nil {
		t.Fatal(err)
	}
	return Config{Name: name, Command: exe, Env: env}
}

func connect(t *testing.T, cfg Config, onExit func(string)) *Client {
	t.Helper()
	c, err := Connect(context.Background(), cfg, t.TempDir(), onExit)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func TestTools(t *testing.T) {
	c := connect(t, testServer(t, "t1"), nil)
	var names []string
	for _, tl := range c.Tools() {
		names = append(names, tl.Name+"="+tl.Remote)
		if !json.Valid(tl.Parameters) {
			t.Errorf("%s: parameters %s are not JSON", tl.Name, tl.Parameters)
		}
	}
	want := []string{"mcp__t1__crash=crash", "mcp__t1__echo=echo", "mcp__t1__fail=fail", "mcp__t1__last=last", "mcp__t1__spawn=spawn"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
}

func TestCall(t *testing.T) {
	c := connect(t, testServer(t, "t1"), nil)
	tests := []struct {
		name, tool, args string
		content          string
		failed           bool
	}{
		{name: "result text", tool: "echo", args: `{"text":"hi"}`, content: "echo: hi"},
		{name: "a tool error fails the call", tool: "fail", args: `{}`, content: "it failed on purpose", failed: true},
		{name: "bad arguments fail the call", tool: "echo", args: `{"text":3}`, failed: true},
		{name: "unknown tool", tool: "nope", args: `{}`, failed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			content, failed := c.Call(context.Background(), tt.tool, json.RawMessage(tt.args))
			if failed != tt.failed || (tt.content != "" && !strings.Contains(content, tt.content)) {
				t.Errorf("Call = %q, failed %v; want %q, failed %v", content, failed, tt.content, tt.failed)
			}
		})
	}
}

func TestCrashFailsCalls(t *testing.T) {
	exited := make(chan string, 1)
	c := connect(t, testServer(t, "t1"), func(why string) { exited <- why })
	content, failed := c.Call(context.Background(), "crash", nil)
	if want := "mcp server t1 exited (exit status 3) during the call"; !failed || content != want {
		t.Errorf("the crashing call = %q, failed %v; want %q, failed", content, failed, want)
	}
	select {
	case why := <-exited:
		if want := "mcp server t1 exited (exit status 3)"; why != want {
			t.Errorf("onExit(%q), want %q: the server's exit status, not the pipes' close errors", why, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("onExit was not called within 10s of the crash")
	}
	content, failed = c.Call(context.Background(), "echo", json.RawMessage(`{"text":"x"}`))
	if !failed || !strings.Contains(content, "exited") {
		t.Errorf("a call after the crash = %q, failed %v; want it failed at once, naming the exit", content, failed)
	}
}

// A server that answers and exits at once: its answer was written before
// it exited, so the call gets it (the pipe is read to its end, not closed
// when the process is reaped), and the exit is told afterwards.
func TestAnswerBeforeExit(t *testing.T) {
	exited := make(chan string, 1)
	c := connect(t, testServer(t, "t1"), func(why string) { exited <- why })
	content, failed := c.Call(context.Background(), "last", nil)
	if failed || content != mcptest.LastWords {
		t.Errorf("Call(last) = %q, failed %v; want %q", content, failed, mcptest.LastWords)
	}
	select {
	case why := <-exited:
		if want := "mcp server t1 exited (exit status 0)"; why != want {
			t.Errorf("onExit(%q), want %q", why, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("onExit was not called within 10s of the exit")
	}
}

func TestCloseKillsTheProcessGroup(t *testing.T) {
	c, err := Connect(context.Background(), testServer(t, "t1"), t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	content, failed := c.Call(context.Background(), "spawn", nil)
	pid, err := strconv.Atoi(content)
	if failed || err != nil {
		t.Fatalf("spawn = %q, %v", content, failed)
	}
	c.Close()
	// The child was killed with the group; it is a zombie of the dead
	// server's, reparented to init (or our subreaper), until reaped.
	deadline := time.Now().Add(10 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("the server's child %d outlived Close", pid)
		}
		time.Sleep(10 * time.Millisecond) // polling a process we do not own; nothing to wait on
	}
}

func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	fields := strings.Fields(string(b))
	return len(fields) > 2 && fields[2] != "Z"
}

func TestConfigErrors(t *testing.T) {
	tests := []struct {
		cfg  Config
		want string
	}{
		{Config{Command: "x"}, `mcp: server "": name: required`},
		{Config{Name: "a__b", Command: "x"}, `mcp: server "a__b": name: "a__b" must not contain "__"`},
		{Config{Name: "a"}, `mcp: server "a": command: required`},
	}
	for _, tt := range tests {
		_, err := Connect(context.Background(), tt.cfg, t.TempDir(), nil)
		if err == nil || err.Error() != tt.want {
			t.Errorf("Connect(%+v) = %v, want %q", tt.cfg, err, tt.want)
		}
	}
	_, err := Connect(context.Background(), Config{Name: "gone", Command: "/no/such/server"}, t.TempDir(), nil)
	if err == nil || !strings.Contains(err.Error(), `mcp: server "gone"`) {
		t.Errorf("Connect(missing command) = %v", err)
	}
}

func TestName(t *testing.T) {
	if got := Name("my server", "do.it"); got != "mcp__my_server__do_it" {
		t.Errorf("Name = %q", got)
	}
	if got := Name(strings.Repeat("s", 40), strings.Repeat("t", 40)); len(got) != 64 {
		t.Errorf("Name is %d long, want 64", len(got))
	}
}
