package conformance

import (
	"strings"
	"testing"
)

// FuzzMatch: whatever the expected and received lines hold, the matcher
// never panics, and a literal expectation (no $matcher, no {{placeholder}})
// matches its own value.
func FuzzMatch(f *testing.F) {
	for _, seed := range [][2]string{
		{`{"id":1,"result":{"a":"$any"}}`, `{"id":1,"result":{"a":2}}`},
		{`{"x":{"$all":["$contains:a","$prefix:ab"]}}`, `{"x":"abc"}`},
		{`{"x":{"$some":{"k":"{{v}}"}}}`, `{"x":[{"k":1},{"k":2}]}`},
		{`{"x":{"$not":"$int>0"}}`, `{"x":-1}`},
		{`{"id":1e400,"n":1.50}`, `{"id":1e400,"n":1.5}`},
		{`{"s":"$regexp:^a+$"}`, `{"s":"aaa"}`},
		{`["$$x",{"$oneof":[1,"$string"]}]`, `["$x","y"]`},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, want, got string) {
		w, err1 := decode([]byte(want))
		g, err2 := decode([]byte(got))
		if err1 != nil || err2 != nil {
			return
		}
		m := &matcher{bindings: map[string]any{}, roots: []string{"/tmp/case"}}
		m.match("", w, g, true, map[string]any{})
		if !meta(w) {
			if mm := m.match("", w, w, true, map[string]any{}); mm != nil {
				t.Errorf("%s does not match itself: %s", want, mm)
			}
		}
	})
}

// meta reports whether v holds a matcher or a placeholder anywhere.
func meta(v any) bool {
	switch x := v.(type) {
	case string:
		return strings.HasPrefix(x, "$") || strings.Contains(x, "{{")
	case map[string]any:
		for k, e := range x {
			if strings.HasPrefix(k, "$") || meta(e) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if meta(e) {
				return true
			}
		}
	}
	return false
}
