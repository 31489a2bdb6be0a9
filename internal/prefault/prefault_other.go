//go:build !linux

package prefault

// Min is the smallest buffer Write populates.
const Min = 64 << 10

// Write does nothing here: only Linux populates pages in bulk.
func Write(b []byte) {}
