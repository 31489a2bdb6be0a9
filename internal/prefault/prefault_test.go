package prefault

import (
	"bytes"
	"testing"
)

// Write leaves a buffer's bytes as they were, whatever its size and
// alignment, and a buffer too small to be worth it alone.
func TestWriteKeepsContents(t *testing.T) {
	for _, tt := range []struct {
		name      string
		size, off int
	}{
		{name: "small", size: 100},
		{name: "at the threshold", size: Min},
		{name: "large", size: 3 << 20},
		{name: "large, unaligned", size: 3<<20 + 123, off: 7},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := make([]byte, tt.size+tt.off)[tt.off:]
			for i := range b {
				b[i] = byte(i * 7)
			}
			want := bytes.Clone(b)
			Write(b[:len(b)/2])
			if !bytes.Equal(b, want) {
				t.Error("Write changed the buffer's contents")
			}
		})
	}
	Write(nil)
}

// A buffer populated before it is written reads back what was written.
func TestWriteThenFill(t *testing.T) {
	b := make([]byte, 0, 1<<20)
	Write(b)
	for i := range cap(b) {
		b = append(b, byte(i))
	}
	for i, c := range b {
		if c != byte(i) {
			t.Fatalf("byte %d is %d, want %d", i, c, byte(i))
		}
	}
}
