package schemas

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// failure is one leaf of a validation error: where it is and why.
type failure struct {
	path []string // instance location, plus the property for required and not-allowed
	kind jsonschema.ErrorKind
}

// explain reduces a validation error to one failure (V3). The library
// reports causes in map order, so the choice is made deterministic here:
// the deepest path wins, then the first path; type failures at that path
// are merged ("expected object or array").
func explain(v any, ve *jsonschema.ValidationError) (path []string, msg string) {
	var leaves []failure
	var walk func(*jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		p := slices.Clone(e.InstanceLocation)
		switch k := e.ErrorKind.(type) {
		case *kind.Required:
			p = append(p, slices.Min(k.Missing))
		case *kind.AdditionalProperties:
			p = append(p, slices.Min(k.Properties))
		}
		leaves = append(leaves, failure{p, e.ErrorKind})
	}
	walk(ve)
	slices.SortStableFunc(leaves, func(a, b failure) int {
		if len(a.path) != len(b.path) {
			return len(b.path) - len(a.path)
		}
		return comparePaths(a.path, b.path)
	})
	path = leaves[0].path
	var at []jsonschema.ErrorKind
	for _, l := range leaves {
		if slices.Equal(l.path, path) {
			at = append(at, l.kind)
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
func describe(kinds []jsonschema.ErrorKind, got any) string {
	var types []string
	for _, k := range kinds {
		t, ok := k.(*kind.Type)
		if !ok {
			types = nil
			break
		}
		for _, w := range t.Want {
			if !slices.Contains(types, w) {
				types = append(types, w)
			}
		}
	}
	if types != nil {
		return "expected " + alternatives(withoutNull(types)) + ", got " + typeName(got)
	}
	slices.SortStableFunc(kinds, func(a, b jsonschema.ErrorKind) int { return rank(a) - rank(b) })
	switch k := kinds[0].(type) {
	case *kind.Required:
		return "required"
	case *kind.AdditionalProperties, *kind.FalseSchema:
		return "not allowed"
	case *kind.Enum:
		var want []string
		for _, w := range k.Want {
			if w != nil || len(k.Want) == 1 {
				want = append(want, show(w))
			}
		}
		return "expected " + alternatives(want) + ", got " + show(got)
	case *kind.Const:
		return "expected " + show(k.Want) + ", got " + show(got)
	case *kind.MinLength:
		if k.Want == 1 {
			return "expected a non-empty string, got " + show(got)
		}
		return fmt.Sprintf("expected at least %d characters, got %d", k.Want, k.Got)
	case *kind.MaxLength:
		return fmt.Sprintf("expected at most %d characters, got %d", k.Want, k.Got)
	case *kind.MinItems:
		return fmt.Sprintf("expected at least %d items, got %d", k.Want, k.Got)
	case *kind.MaxItems:
		return fmt.Sprintf("expected at most %d items, got %d", k.Want, k.Got)
	case *kind.Minimum:
		return fmt.Sprintf("expected at least %s, got %s", k.Want.RatString(), show(got))
	case *kind.Maximum:
		return fmt.Sprintf("expected at most %s, got %s", k.Want.RatString(), show(got))
	case *kind.ExclusiveMinimum:
		return fmt.Sprintf("expected more than %s, got %s", k.Want.RatString(), show(got))
	case *kind.ExclusiveMaximum:
		return fmt.Sprintf("expected less than %s, got %s", k.Want.RatString(), show(got))
	case *kind.Type:
		return "expected " + alternatives(withoutNull(k.Want)) + ", got " + typeName(got)
	}
	return "does not satisfy " + strings.Join(kinds[0].KeywordPath(), "/")
}

// rank orders mixed failures at one path: a value of the wrong type says
// more than the constraints it could not be checked against.
func rank(k jsonschema.ErrorKind) int {
	switch k.(type) {
	case *kind.Required, *kind.AdditionalProperties, *kind.FalseSchema:
		return 0
	case *kind.Type:
		return 1
	case *kind.Enum, *kind.Const:
		return 2
	}
	return 3
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
