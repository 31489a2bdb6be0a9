package sandbox

import (
	"os"

	"golang.org/x/sys/unix"
)

func landlockABI() (int, error) {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0, errno
	}
	return int(v), nil
}

// seccompAvailable reports whether this kernel filters system calls.
func seccompAvailable() bool {
	if err := unix.Prctl(unix.PR_GET_SECCOMP, 0, 0, 0, 0); err != nil {
		return false
	}
	_, err := os.Stat("/proc/sys/kernel/seccomp/actions_avail")
	return err == nil
}
