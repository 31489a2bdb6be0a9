//go:build !unix

package conformance

import (
	"os"
	"os/exec"
)

func ownGroup(*exec.Cmd) {}

func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		cmd.Process.Kill()
	}
}

var signals = map[string]os.Signal{"INT": os.Interrupt, "KILL": os.Kill}
