//go:build !unix

package extension

import "os/exec"

// Without process groups only the extension itself can be killed.
func setGroup(*exec.Cmd) {}

func killGroup(cmd *exec.Cmd) {
	cmd.Process.Kill()
}
