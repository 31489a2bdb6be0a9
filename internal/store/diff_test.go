package store

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// M13: an edit call shows old → new as a unified diff of lines.
func TestLineDiff(t *testing.T) {
	for _, tc := range []struct {
		name     string
		old, new string
		want     []diffLine
	}{
		{name: "one line", old: "return a - b", new: "return a + b",
			want: []diffLine{{"-", "return a - b"}, {"+", "return a + b"}}},
		{name: "context kept", old: "def add(a, b):\n    return a - b\n", new: "def add(a, b):\n    # fixed\n    return a + b\n",
			want: []diffLine{{" ", "def add(a, b):"}, {"-", "    return a - b"}, {"+", "    # fixed"}, {"+", "    return a + b"}}},
		{name: "middle kept", old: "a\nb\nc\nd", new: "x\nb\nc\ny",
			want: []diffLine{{"-", "a"}, {"+", "x"}, {" ", "b"}, {" ", "c"}, {"-", "d"}, {"+", "y"}}},
		{name: "deleted", old: "a\nb", new: "",
			want: []diffLine{{"-", "a"}, {"-", "b"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, lineDiff(tc.old, tc.new)); diff != "" {
				t.Errorf("lineDiff (-want +got):\n%s", diff)
			}
		})
	}
}
