package statusline

import (
	"os"
	"syscall"
	"unsafe"
)

// Terminal reports whether f is a terminal and its width in columns
// (0 when unknown). /dev/null is a character device but no terminal: the
// TCGETS ioctl tells them apart.
func Terminal(f *os.File) (bool, int) {
	var t syscall.Termios
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), syscall.TCGETS, uintptr(unsafe.Pointer(&t))); e != 0 {
		return false, 0
	}
	var ws struct{ row, col, x, y uint16 }
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), syscall.TIOCGWINSZ, uintptr(unsafe.Pointer(&ws))); e != 0 {
		return true, 0
	}
	return true, int(ws.col)
}
