package schemas

import (
	"math"
	"strconv"
	"strings"
)

// decimal is a JSON number as 0.digits × 10^exp, compared in time linear in
// its text. big.Rat's decimal conversion is quadratic: a 2,000,000-digit
// number took 46 s to compare with a maximum, holding up every request.
type decimal struct {
	neg    bool
	digits string // significant digits, no leading or trailing zeros; "" for zero
	exp    int64
}

// maxExp clamps exponents: beyond it every number is too large or too small
// for any bound a schema writes, so their order against bounds is right;
// two numbers differing only in exponents past it compare equal.
const maxExp = math.MaxInt64 / 4

// parseDecimal reads a JSON number's text; ok is false for anything else.
func parseDecimal(s string) (d decimal, ok bool) {
	if strings.HasPrefix(s, "-") {
		d.neg, s = true, s[1:]
	}
	mant, e, hasExp := strings.Cut(strings.ToLower(s), "e")
	intPart, frac, _ := strings.Cut(mant, ".")
	if intPart == "" || strings.Trim(intPart, "0123456789") != "" || strings.Trim(frac, "0123456789") != "" {
		return decimal{}, false
	}
	var exp int64
	if hasExp {
		n, err := strconv.ParseInt(strings.TrimPrefix(e, "+"), 10, 64)
		switch {
		case err == nil:
		case strings.Trim(strings.TrimLeft(e, "+-"), "0123456789") == "" && len(strings.TrimLeft(e, "+-")) > 0:
			n = maxExp // out of int64 range: clamp
			if strings.HasPrefix(e, "-") {
				n = -maxExp
			}
		default:
			return decimal{}, false
		}
		exp = max(-maxExp, min(maxExp, n))
	}
	all := intPart + frac
	lead := len(all) - len(strings.TrimLeft(all, "0"))
	d.digits = strings.TrimRight(all[lead:], "0")
	if d.digits == "" {
		return decimal{neg: false}, true // -0 is 0
	}
	d.exp = exp + int64(len(intPart)) - int64(lead)
	return d, true
}

// cmp returns -1, 0 or +1 as d is less than, equal to or greater than o.
func (d decimal) cmp(o decimal) int {
	sign := func(x decimal) int {
		switch {
		case x.digits == "":
			return 0
		case x.neg:
			return -1
		}
		return 1
	}
	sd, so := sign(d), sign(o)
	if sd != so || sd == 0 {
		return cmpInt(sd, so)
	}
	c := 0
	switch {
	case d.exp != o.exp:
		c = cmpInt(d.exp, o.exp)
	default:
		c = strings.Compare(d.digits, o.digits)
	}
	if d.neg {
		return -c
	}
	return c
}

func cmpInt[T int | int64](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// isInt reports whether d is an integer (2.0 and 1e2 are, JSON Schema says).
func (d decimal) isInt() bool { return d.digits == "" || d.exp >= int64(len(d.digits)) }
