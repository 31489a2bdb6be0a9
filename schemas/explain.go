package schemas

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// explain reduces the failures of a validation to one (V3): the deepest
// path wins, then the first path; type failures at that path are merged
// ("expected object or array").
func explain(v any, fails []fail) (path []string, msg string) {
	slices.SortStableFunc(fails, func(a, b fail) int {
		if len(a.path) != len(b.path) {
			return len(b.path) - len(a.path)
		}
		return comparePaths(a.path, b.path)
	})
	path = fails[0].path
	var at []fail
	for _, f := range fails {
		if slices.Equal(f.path, path) {
			at = append(at, f)
		}
	}
	return path, describe(at, valueAt(v, path))
}

// comparePaths orders paths segment by segment, array indexes numerically.
func comparePaths(a, b []string) int {
	for i := range min(len(a), len(b)) {
		x, errx := strconv.Atoi(a[i])
		y, erry := strconv.Atoi(b[i])
		if errx == nil && erry == nil && x != y {
			return x - y
		}
		if c := strings.Compare(a[i], b[i]); c != 0 {
			return c
		}
	}
	return len(a) - len(b)
}

// describe says what was expected and what came, given the failures at one
// path. null is left out of what was expected when there is something else:
// an optional field's null means its default, not a value to suggest.
func describe(fails []fail, got any) string {
	// The null branch of a nullable $ref (anyOf [{$ref}, {type: null}])
	// says only that null was allowed too: the other failure explains.
	if i := slices.IndexFunc(fails, onlyNull); i >= 0 && len(fails) > 1 {
		fails = slices.Delete(slices.Clone(fails), i, i+1)
	}
	var types []string
	for _, f := range fails {
		if f.kw != "type" {
			types = nil
			break
		}
		for _, w := range f.want.([]string) {
			if !slices.Contains(types, w) {
				types = append(types, w)
			}
		}
	}
	if types != nil {
		return "expected " + alternatives(withoutNull(types)) + ", got " + typeName(got)
	}
	slices.SortStableFunc(fails, func(a, b fail) int { return rank(a.kw) - rank(b.kw) })
	f := fails[0]
	switch f.kw {
	case "required":
		return "required"
	case "additionalProperties", "false":
		return "not allowed"
	case "enum":
		want := f.want.([]any)
		var shown []string
		for _, w := range want {
			if w != nil || len(want) == 1 {
				shown = append(shown, show(w))
			}
		}
		return "expected " + alternatives(shown) + ", got " + show(got)
	case "const":
		return "expected " + show(f.want) + ", got " + show(got)
	case "minLength":
		if f.want == 1 {
			return "expected a non-empty string, got " + show(got)
		}
		return fmt.Sprintf("expected at least %d characters, got %d", f.want, f.got)
	case "maxLength":
		return fmt.Sprintf("expected at most %d characters, got %d", f.want, f.got)
	case "minItems":
		return fmt.Sprintf("expected at least %d items, got %d", f.want, f.got)
	case "maxItems":
		return fmt.Sprintf("expected at most %d items, got %d", f.want, f.got)
	case "minProperties":
		return fmt.Sprintf("expected at least %d members, got %d", f.want, f.got)
	case "maxProperties":
		return fmt.Sprintf("expected at most %d members, got %d", f.want, f.got)
	case "minimum":
		return fmt.Sprintf("expected at least %s, got %s", f.want.(*bound).r.RatString(), show(got))
	case "maximum":
		return fmt.Sprintf("expected at most %s, got %s", f.want.(*bound).r.RatString(), show(got))
	case "exclusiveMinimum":
		return fmt.Sprintf("expected more than %s, got %s", f.want.(*bound).r.RatString(), show(got))
	case "exclusiveMaximum":
		return fmt.Sprintf("expected less than %s, got %s", f.want.(*bound).r.RatString(), show(got))
	case "pattern":
		return fmt.Sprintf("expected a string matching %s, got %s", f.want, show(got))
	case "uniqueItems":
		return "expected unique items"
	}
	return "does not satisfy " + f.kw
}

// rank orders mixed failures at one path: a value of the wrong type says
// more than the constraints it could not be checked against.
func rank(kw string) int {
	switch kw {
	case "required", "additionalProperties", "false":
		return 0
	case "type":
		return 1
	case "enum", "const":
		return 2
	}
	return 3
}

// onlyNull reports whether f is a type failure that wanted null alone.
func onlyNull(f fail) bool {
	want, _ := f.want.([]string)
	return f.kw == "type" && len(want) == 1 && want[0] == "null"
}

func withoutNull(types []string) []string {
	if len(types) < 2 {
		return types
	}
	return slices.DeleteFunc(slices.Clone(types), func(t string) bool { return t == "null" })
}

// alternatives joins "a", "a or b", "a, b or c".
func alternatives(s []string) string {
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

// show renders a value for an error line: its JSON text when short, else
// its type, so a huge or multi-line value never floods the line.
func show(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil || b.Len() > 41 {
		return typeName(v)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// typeName is the JSON type of a decoded value.
func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "number"
}

// valueAt returns the value at an instance location, nil when absent.
func valueAt(v any, path []string) any {
	for _, seg := range path {
		switch x := v.(type) {
		case map[string]any:
			v = x[seg]
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

// render writes a path as root.a.b[2]; a key that is not an identifier is
// quoted: root["a b"].
func render(root string, v any, path []string) string {
	var b strings.Builder
	b.WriteString(root)
	for _, seg := range path {
		switch x := v.(type) {
		case []any:
			b.WriteString("[" + seg + "]")
			if i, err := strconv.Atoi(seg); err == nil && i >= 0 && i < len(x) {
				v = x[i]
			} else {
				v = nil
			}
			continue
		case map[string]any:
			v = x[seg]
		default:
			v = nil
		}
		switch {
		case !identifier(seg):
			q, _ := json.Marshal(seg)
			b.WriteString("[" + string(q) + "]")
		case b.Len() > 0:
			b.WriteString("." + seg)
		default:
			b.WriteString(seg)
		}
	}
	return b.String()
}

func identifier(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if r != '_' && (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (i == 0 || r < '0' || r > '9') {
			return false
		}
	}
	return true
}
