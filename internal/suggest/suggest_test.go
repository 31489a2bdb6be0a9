package suggest

import "testing"

func TestNearest(t *testing.T) {
	words := []string{"rpc", "trust", "schema", "export", "doctor", "default_model", "tool_concurrency"}
	for _, tt := range []struct {
		in, want string
		ok       bool
	}{
		{in: "default_modle", want: "default_model", ok: true},
		{in: "trsut", want: "trust", ok: true},
		{in: "shcema", want: "schema", ok: true},
		{in: "rcp", want: "rpc", ok: true},
		{in: "doctr", want: "doctor", ok: true},
		{in: "tool-concurrency", want: "tool_concurrency", ok: true},
		{in: "frob"},
		{in: "x"},
	} {
		t.Run(tt.in, func(t *testing.T) {
			got, ok := Nearest(tt.in, words)
			if got != tt.want || ok != tt.ok {
				t.Errorf("Nearest(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"a", "", 1}, {"", "abc", 3}, {"kitten", "sitting", 3}, {"ab", "ba", 1}, {"héllo", "hello", 1},
	} {
		if got := distance(tt.a, tt.b); got != tt.want {
			t.Errorf("distance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}
