//go:build !linux

package statusline

import "os"

// Terminal reports whether f is a terminal (a character device, here)
// and its width, 0: unknown.
func Terminal(f *os.File) (bool, int) {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0, 0
}
