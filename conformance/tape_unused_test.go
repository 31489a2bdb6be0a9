package conformance

import "testing"

// Only trailing optional entries may go unrequested.
func TestTapeUnused(t *testing.T) {
	opt, req := tapeEntry{Optional: true}, tapeEntry{}
	tests := []struct {
		name    string
		entries []tapeEntry
		next    int
		want    int
	}{
		{name: "all used", entries: []tapeEntry{req, req}, next: 2, want: 0},
		{name: "required left", entries: []tapeEntry{req, req}, next: 1, want: 1},
		{name: "optional tail left", entries: []tapeEntry{req, opt, opt}, next: 1, want: 0},
		{name: "optional before required", entries: []tapeEntry{req, opt, req}, next: 1, want: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := &tapeServer{entries: tt.entries, next: tt.next}
			if got := ts.unused(); got != tt.want {
				t.Errorf("unused() = %d, want %d", got, tt.want)
			}
		})
	}
}
