//go:build !linux

package jsonl

import "io"

// vectored is nil here: AppendShared copies its parts into the queue.
func vectored(io.Writer) func(bufs [][]byte) error { return nil }
