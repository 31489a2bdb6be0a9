package conformance

import (
	"os/exec"
	"syscall"
)

// dieWithParent has the kernel kill the proxy's child when the proxy dies,
// so a proxy killed by SIGKILL leaves no server behind, like a server
// killed directly.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
