//go:build !linux

package sandbox

import (
	"errors"
	"os/exec"
)

// Elsewhere than Linux there is no Landlock, seccomp or user namespace:
// Probe finds nothing to enforce, so every sandboxed mode is refused as
// unsupported (W4), never run unconfined.

func landlockABI() (int, error) { return 0, errors.ErrUnsupported }

func seccompAvailable() bool { return false }

// Command refuses a sandboxed policy, which this system cannot enforce.
func Command(cmd *exec.Cmd, p Policy, cwd, tmp string) error {
	if !p.Sandboxed() {
		return nil
	}
	return Probe().Enforceable(p)
}

// Main returns nil: e is never started as a launcher here.
func Main() error { return nil }

// SelfTest fails: no command can be confined here.
func SelfTest() error { return errors.New("sandbox: this system cannot confine a command") }
