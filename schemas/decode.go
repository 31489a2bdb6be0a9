package schemas

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Decode reads a value that the schemas accepted (a method's params, a
// one-shot line) into v, a pointer to its struct. JSON Schema counts 2.0 and
// 1e2 as integers and Go does not, so when Go refuses a number, integers
// written that way are rewritten as plain ones and decoding is tried again.
// A value the schema accepts but v cannot hold is a *DecodeError naming the
// field, never Go's own json: wording (V3).
func Decode(data []byte, v any) error {
	err := json.Unmarshal(data, v)
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		return err
	}
	if te.Value == "number" || strings.HasPrefix(te.Value, "number ") {
		if tree, derr := decode(data); derr == nil {
			if plain, merr := json.Marshal(plainIntegers(tree)); merr == nil {
				if err = json.Unmarshal(plain, v); !errors.As(err, &te) {
					return err
				}
			}
		}
	}
	got := strings.TrimPrefix(te.Value, "number ")
	if te.Value == "number" || got != te.Value {
		return &DecodeError{Field: te.Field, Reason: fmt.Sprintf("%s does not fit in %s", got, te.Type)}
	}
	return &DecodeError{Field: te.Field, Reason: fmt.Sprintf("a %s cannot be held as %s", te.Value, te.Type)}
}

// DecodeError is a value the schema accepts that Go cannot hold.
type DecodeError struct {
	Field  string // dotted path below the decoded value, "" for the value itself
	Reason string // e.g. "1e30 does not fit in int64"
}

func (e *DecodeError) Error() string {
	if e.Field == "" {
		return e.Reason
	}
	return e.Field + ": " + e.Reason
}

// plainIntegers rewrites every integer-valued number written with a
// fraction or an exponent (2.0, 1e2) of at most 20 digits as a plain integer.
func plainIntegers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = plainIntegers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = plainIntegers(e)
		}
	case json.Number:
		d, ok := parseDecimal(string(x))
		if ok && strings.ContainsAny(string(x), ".eE") && d.isInt() && d.exp <= 20 {
			if d.digits == "" {
				return json.Number("0")
			}
			s := d.digits + strings.Repeat("0", int(d.exp)-len(d.digits))
			if d.neg {
				s = "-" + s
			}
			return json.Number(s)
		}
	}
	return v
}
