//go:build unix

package conformance

import (
	"os"
	"os/exec"
	"syscall"
)

// ownGroup puts the server in a process group of its own so that a
// timeout kills it with every child it started.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}

// signals are the names #signal accepts.
var signals = map[string]os.Signal{"TERM": syscall.SIGTERM, "HUP": syscall.SIGHUP, "INT": syscall.SIGINT, "KILL": syscall.SIGKILL}
