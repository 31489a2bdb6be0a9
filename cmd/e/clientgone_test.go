package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// In pi's dialect EOF lets a running bash finish; but a client that is
// gone, its stdout reader closed or e's parent dead (a client killed with -9
// during a silent command), stops the command and e at once rather than at
// the command's timeout (D2, issue 30).
func TestPiClientGoneStopsBash(t *testing.T) {
	tests := []struct {
		name     string
		viaShell bool // e runs under a shell that is then killed
	}{
		{name: "stdout reader closed"},
		{name: "parent died", viaShell: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := command(t, "--mode", "rpc", "--no-session", "-ne")
			if tt.viaShell {
				// "; exit" keeps the shell from exec'ing e: e's parent is the shell.
				cmd.Args = append([]string{"sh", "-c", `"$0" "$@"; exit`, bin}, cmd.Args[1:]...)
				cmd.Path = "/bin/sh"
			}
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			in, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			outR, outW, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			cmd.Stdout, cmd.Stderr = outW, os.Stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			outW.Close()
			t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() })
			pidFile := filepath.Join(cmd.Dir, "pid")
			in.Write([]byte(`{"id":"b","type":"bash","command":"echo $$ > ` + pidFile + `.tmp; mv ` + pidFile + `.tmp ` + pidFile + `; exec sleep 600"}` + "\n"))
			var sleeper int
			for sleeper == 0 { // the command has started: its pid is in the file
				b, _ := os.ReadFile(pidFile)
				sleeper, _ = strconv.Atoi(strings.TrimSpace(string(b)))
				time.Sleep(10 * time.Millisecond)
			}
			t.Cleanup(func() { syscall.Kill(sleeper, syscall.SIGKILL) }) // in its own group: left by a failure
			ePid := findChild(t, cmd.Process.Pid, tt.viaShell)
			in.Close() // EOF: pi lets the command run on ...
			if tt.viaShell {
				syscall.Kill(cmd.Process.Pid, syscall.SIGKILL) // ... unless its parent dies
				cmd.Wait()
				// stdout stays open: only the parent's death tells
			} else {
				outR.Close() // ... or its stdout reader closes
			}
			deadline := time.Now().Add(20 * time.Second)
			for _, pid := range []int{ePid, sleeper} {
				for running(pid) {
					if time.Now().After(deadline) {
						t.Fatalf("process %d still runs 20 s after the client went", pid)
					}
					time.Sleep(10 * time.Millisecond)
				}
			}
			outR.Close()
		})
	}
}

// findChild returns e's pid: pid itself, or under a shell the child of pid.
func findChild(t *testing.T, pid int, viaShell bool) int {
	t.Helper()
	if !viaShell {
		return pid
	}
	for range 500 {
		for _, p := range procs() {
			if p.ppid == pid && strings.Contains(p.cmdline, bin) {
				return p.pid
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no e below the shell %d", pid)
	return 0
}

// running reports whether pid runs (a zombie does not count).
func running(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i >= 0 && len(b) > i+2 && b[i+2] != 'Z'
}
