//go:build !linux

package lineserver

import "io"

// growPipe does nothing here: only Linux resizes pipes.
func growPipe(io.Writer) {}

// readerGone reports false here: only the parent's death is watched.
func readerGone(io.Writer) bool { return false }
