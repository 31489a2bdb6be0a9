//go:build !linux

package lineserver

import "io"

// growPipe does nothing here: only Linux resizes pipes.
func growPipe(io.Writer) {}
