package main

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// fifoTools are tool calls at a FIFO f in the cwd, and how each ends: the
// file tools answer at once rather than block in open (Y1).
var fifoTools = []struct {
	name, call, outcome string
}{
	{name: "read", call: `/tool read {"path":"f"}`, outcome: "failed"},
	{name: "ls", call: `/tool ls {"path":"f"}`, outcome: "completed"},
	{name: "grep", call: `/tool grep {"path":"f","pattern":"x"}`, outcome: "failed"},
	{name: "grep tree", call: `/tool grep {"pattern":"x"}`, outcome: "completed"},
	{name: "find", call: `/tool find {"path":"f","pattern":"*"}`, outcome: "completed"},
}

// fifoCommand is command with a FIFO f in its cwd.
func fifoCommand(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	cmd := command(t, args...)
	if err := syscall.Mkfifo(filepath.Join(cmd.Dir, "f"), 0o600); err != nil {
		t.Fatal(err)
	}
	return cmd
}

// e rpc: each tool call at a FIFO ends its turn, a resume of the FIFO or of
// /dev/zero is invalid_params, and the process then serves another request
// and exits 0 on EOF (Y1). Before regfile, ls, grep and find blocked and
// the resumes hung or ate memory.
func TestFIFOEndToEndRPC(t *testing.T) {
	cmd := fifoCommand(t)
	r := startRPCWith(t, cmd, []string{"rpc", "--ne"})
	sid := create(r)
	for _, tt := range fifoTools {
		prompt(r, "p", sid, tt.call)
		end := r.until(`"type":"tool_end"`)
		if got := gjson.Get(end, "outcome").String(); got != tt.outcome {
			t.Errorf("%s: tool_end %s, want outcome %s", tt.name, end, tt.outcome)
		}
		r.until(`"id":"p"`)
	}
	for _, resume := range []string{filepath.Join(cmd.Dir, "f"), "/dev/zero"} {
		r.send(`{"id":"r","method":"session.create","params":{"resume":"` + resume + `"}}`)
		if resp := r.until(`"id":"r"`); gjson.Get(resp, "code").String() != "invalid_params" || !strings.Contains(resp, resume+": a ") {
			t.Errorf("resume %s: %s; want invalid_params naming it", resume, resp)
		}
	}
	r.send(`{"id":"i","method":"session.info","params":{"session":"` + sid + `"}}`)
	if resp := r.until(`"id":"i"`); !gjson.Get(resp, "result").Exists() {
		t.Errorf("session.info after the special files: %s", resp)
	}
	r.in.Close()
	if code := r.wait(); code != 0 {
		t.Errorf("exit %d on EOF, want 0", code)
	}
}

// e -p: each tool call at a FIFO ends the turn and the process exits 0.
func TestFIFOEndToEndPrint(t *testing.T) {
	for _, tt := range fifoTools {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			c := fifoCommand(t, "-p", tt.call, "--json", "--no-save")
			cmd := exec.CommandContext(ctx, c.Path, c.Args[1:]...)
			cmd.Dir, cmd.Env = c.Dir, c.Env
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("e -p %q: %v (stderr %s)", tt.call, err, stderr.String())
			}
			var outcome string
			for _, l := range strings.Split(string(out), "\n") {
				if gjson.Get(l, "type").String() == "tool_end" {
					outcome = gjson.Get(l, "outcome").String()
				}
			}
			if outcome != tt.outcome {
				t.Errorf("tool_end outcome %q, want %q; stdout:\n%s", outcome, tt.outcome, out)
			}
		})
	}
}
