//go:build !unix

package store

import "os"

// openRead opens path for reading at offsets.
func openRead(path string) (readerAtCloser, error) { return os.Open(path) }
