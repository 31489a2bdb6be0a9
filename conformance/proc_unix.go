//go:build unix

package conformance

import (
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
