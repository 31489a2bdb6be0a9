package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// setPipe gives f (a pipe) kib KiB of capacity, as e gives its stdout.
func setPipe(f *os.File, kib int) error {
	_, err := unix.FcntlInt(f.Fd(), unix.F_SETPIPE_SZ, kib<<10)
	return err
}
