//go:build unix

package extension

import (
	"os/exec"
	"syscall"
)

// setGroup puts the extension in a process group of its own, so that
// killing the group also kills what it started.
func setGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

func killGroup(cmd *exec.Cmd) {
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // ESRCH: nothing left
}
