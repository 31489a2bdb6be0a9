package prefault

import "unsafe"

// Slice is Write for a slice of any element type: the pages its capacity
// spans (a 100,000-entry session's entries are 24 MB of structs).
func Slice[E any](s []E) {
	if cap(s) == 0 {
		return
	}
	var e E
	Write(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), uintptr(cap(s))*unsafe.Sizeof(e))[:0])
}
