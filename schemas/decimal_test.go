package schemas

import (
	"math/big"
	"strings"
	"testing"
)

// numbers are JSON number texts around the cases decimal must get right:
// signs, zeros, leading and trailing zeros, fractions, exponents.
var numbers = []string{
	"0", "-0", "0.0", "0e5", "1", "-1", "1.0", "10", "1e1", "100e-1", "0.1", "1e-1", "-0.1",
	"2", "2.0", "2.5", "25e-1", "9007199254740991", "9007199254740992", "9007199254740991.5",
	"123", "12", "1234", "0.12", "0.123", "-123", "-12", "1E+2", "1e-400", "1e400", "-1e400",
	"000", "0.000001", "1.5e3", "1500", "1499.999",
}

// decimal orders and equates numbers as big.Rat does, and says which are
// integers as JSON Schema does (2.0 is one).
func TestDecimal(t *testing.T) {
	for _, a := range numbers {
		da, ok := parseDecimal(a)
		ra, _ := new(big.Rat).SetString(a)
		if !ok {
			t.Fatalf("parseDecimal(%q) failed", a)
		}
		if got, want := da.isInt(), ra.IsInt(); got != want {
			t.Errorf("%s: isInt = %v, want %v", a, got, want)
		}
		for _, b := range numbers {
			db, _ := parseDecimal(b)
			rb, _ := new(big.Rat).SetString(b)
			if got, want := da.cmp(db), ra.Cmp(rb); got != want {
				t.Errorf("cmp(%s, %s) = %d, want %d", a, b, got, want)
			}
		}
	}
	for _, bad := range []string{"", "-", "x", "1e", "1.2.3", "1e1e1", "--1"} {
		if _, ok := parseDecimal(bad); ok {
			t.Errorf("parseDecimal(%q) accepted it", bad)
		}
	}
}

// 12.7a: a number of 10^6 digits checked against a maximum is answered in
// linear time (big.Rat took seconds, quadratically); exponents past int64
// are ordered right against bounds.
func TestHugeNumbers(t *testing.T) {
	huge := strings.Repeat("1", 1_000_000)
	for _, tt := range []struct{ params, want string }{
		{`{"ask":` + huge + `}`, "ask.reply: params.ask: expected at most 9007199254740991"},
		{`{"ask":-` + huge + `}`, "ask.reply: params.ask: expected at least"},
		{`{"ask":0.` + huge + `}`, "ask.reply: params.ask: expected integer"},
		{`{"ask":1e` + huge + `}`, "ask.reply: params.ask: expected at most 9007199254740991"},
		{`{"ask":1e-` + huge + `}`, "ask.reply: params.ask: expected integer"},
	} {
		err := ValidateParams("ask.reply", []byte(tt.params))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ValidateParams(%.20s…) = %v; want %q", tt.params, err, tt.want)
		}
	}
}

// FuzzDecimal checks decimal against big.Rat on any pair of numbers.
func FuzzDecimal(f *testing.F) {
	for i, a := range numbers {
		f.Add(a, numbers[(i+7)%len(numbers)])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if len(a) > 60 || len(b) > 60 {
			return
		}
		ra, okA := new(big.Rat).SetString(a)
		rb, okB := new(big.Rat).SetString(b)
		da, ok1 := parseDecimal(a)
		db, ok2 := parseDecimal(b)
		if !ok1 || !ok2 || !okA || !okB {
			return // not both numbers (big.Rat also takes "1/2", "0x1p3"…)
		}
		if got, want := da.cmp(db), ra.Cmp(rb); got != want {
			t.Errorf("cmp(%s, %s) = %d, want %d", a, b, got, want)
		}
		if got, want := da.isInt(), ra.IsInt(); got != want {
			t.Errorf("%s: isInt = %v, want %v", a, got, want)
		}
	})
}
