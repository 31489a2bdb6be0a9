package schemas

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Decode reads params that [ValidateParams] accepted into v, a pointer to
// the method's params struct. JSON Schema counts 2.0 and 1e2 as integers and
// Go does not, so when Go refuses a number, integers written that way are
// rewritten as plain ones and decoding is tried again. A value the schema
// accepts but v cannot hold gets one line naming the field (V3), like
// "ask.reply: params.ask: 1e30 does not fit in int64", never Go's own words.
func Decode(method string, params []byte, v any) error {
	return decodeInto(method, "params", params, v)
}

// DecodeOneShot reads a one-shot line that [ValidateOneShot] accepted into
// v, as [Decode] does.
func DecodeOneShot(line []byte, v any) error {
	return decodeInto("oneshot", "", line, v)
}

func decodeInto(prefix, root string, params []byte, v any) error {
	err := json.Unmarshal(params, v)
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		return err
	}
	if te.Value == "number" || strings.HasPrefix(te.Value, "number ") {
		if tree, derr := decode(params); derr == nil {
			if plain, merr := json.Marshal(plainIntegers(tree)); merr == nil {
				if err = json.Unmarshal(plain, v); !errors.As(err, &te) {
					return err
				}
			}
		}
	}
	field := root
	if te.Field != "" && root != "" {
		field += "." + te.Field
	} else if te.Field != "" {
		field = te.Field
	}
	got := strings.TrimPrefix(te.Value, "number ")
	if te.Value == "number" || got != te.Value {
		return fmt.Errorf("%s: %s: %s does not fit in %s", prefix, field, got, te.Type)
	}
	return fmt.Errorf("%s: %s: a %s cannot be held as %s", prefix, field, te.Value, te.Type)
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
