//go:build !unix

package store

import "os"

// lockFile does nothing where flock is unavailable: e's locks (the writer
// lock of C6, the trust list's) exist on Unix only (spec/persistence.md).
func lockFile(f *os.File, wait bool) (busy bool, err error) { return false, nil }
