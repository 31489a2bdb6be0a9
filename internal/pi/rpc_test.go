package pi

import "testing"

func TestJSTrim(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"  a b \n", "a b"},
		{"\t\r\n", ""},
		{"\uFEFF\u00a0x\u2028\u3000", "x"},
		{"\u0085x\u0085", "\u0085x\u0085"}, // not white space to JavaScript
	} {
		if got := jsTrim(tc.in); got != tc.want {
			t.Errorf("jsTrim(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
