package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
)

// decode parses one JSON value keeping numbers as json.Number, so that an
// id such as 1e400 or -0 keeps its exact text (F2).
func decode(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("trailing data after the JSON value")
	}
	if _, err := dec.Token(); err == nil {
		return nil, fmt.Errorf("trailing data after the JSON value")
	}
	return v, nil
}

// canon is v's compact JSON with sorted keys and numbers as written: the
// identity of an id or a request stamp.
func canon(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%#v", v)
	}
	return string(b)
}

// show is a short rendering of a value for reports.
func show(v any, present bool) string {
	if !present {
		return "(absent)"
	}
	s := canon(v)
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// mismatch is the first place where a value differs from its expectation.
type mismatch struct {
	pointer string // JSON pointer into the line
	want    string
	got     string
	reason  string
}

func (m *mismatch) String() string {
	ptr := m.pointer
	if ptr == "" {
		ptr = "(root)"
	}
	s := "at " + ptr + ": " + m.reason
	return s + "\n    expected: " + m.want + "\n    got:      " + m.got
}

var placeholderRE = regexp.MustCompile(`\{\{([A-Za-z_][A-Za-z0-9_.-]*)\}\}`)

// matcher matches received values against expectations and owns the named
// placeholders ({{name}}) bound on first sight.
type matcher struct {
	bindings map[string]any
	roots    []string // case temp dirs; $path values must lie under one
}

// match compares got against want. New bindings go into nb and are kept
// only when the whole line matches (see commit).
func (m *matcher) match(ptr string, want, got any, present bool, nb map[string]any) *mismatch {
	fail := func(reason string) *mismatch {
		return &mismatch{pointer: ptr, want: show(want, true), got: show(got, present), reason: reason}
	}
	switch w := want.(type) {
	case string:
		return m.matchString(ptr, w, got, present, nb)
	case map[string]any:
		if len(w) == 1 {
			for k, arg := range w {
				switch k {
				case "$all", "$oneof":
					return m.matchCombinator(ptr, k, arg, got, present, nb)
				case "$some":
					return m.matchSome(ptr, arg, got, present, nb)
				case "$not":
					// Bindings made inside $not are dropped: a value that
					// does not match binds nothing.
					if m.match(ptr, arg, got, present, cloneMap(nb)) == nil {
						return fail("matches what $not excludes")
					}
					return nil
				}
			}
		}
		if !present {
			return fail("missing")
		}
		g, ok := got.(map[string]any)
		if !ok {
			return fail("want an object")
		}
		for _, k := range sortedKeys(w) {
			gv, ok := g[k]
			if mm := m.match(ptr+"/"+escapePointer(k), w[k], gv, ok, nb); mm != nil {
				return mm
			}
		}
		return nil
	case []any:
		if !present {
			return fail("missing")
		}
		g, ok := got.([]any)
		if !ok {
			return fail("want an array")
		}
		if len(g) != len(w) {
			return fail(fmt.Sprintf("want %d elements, got %d", len(w), len(g)))
		}
		for i := range w {
			if mm := m.match(fmt.Sprintf("%s/%d", ptr, i), w[i], g[i], true, nb); mm != nil {
				return mm
			}
		}
		return nil
	case json.Number:
		if !present {
			return fail("missing")
		}
		g, ok := got.(json.Number)
		if !ok {
			return fail("want a number")
		}
		if !numbersEqual(ptr, w, g) {
			return fail("different number")
		}
		return nil
	default: // bool, nil
		if !present {
			return fail("missing")
		}
		if want != got {
			return fail("different value")
		}
		return nil
	}
}

// numbersEqual compares two numbers by their text, which ids and request
// stamps must keep exactly (F2); elsewhere equal values in another
// spelling (1e2 and 100) are equal.
func numbersEqual(ptr string, w, g json.Number) bool {
	if w == g {
		return true
	}
	if ptr == "/id" || ptr == "/request" {
		return false
	}
	a, _, err1 := big.ParseFloat(string(w), 10, 256, big.ToNearestEven)
	b, _, err2 := big.ParseFloat(string(g), 10, 256, big.ToNearestEven)
	return err1 == nil && err2 == nil && a.Cmp(b) == 0
}

func (m *matcher) matchCombinator(ptr, op string, arg, got any, present bool, nb map[string]any) *mismatch {
	alts, ok := arg.([]any)
	if !ok {
		return &mismatch{pointer: ptr, want: show(arg, true), got: show(got, present), reason: op + " needs an array"}
	}
	var last *mismatch
	for _, a := range alts {
		try := cloneMap(nb)
		mm := m.match(ptr, a, got, present, try)
		if op == "$all" {
			if mm != nil {
				return mm
			}
			for k, v := range try {
				nb[k] = v
			}
			continue
		}
		if mm == nil {
			for k, v := range try {
				nb[k] = v
			}
			return nil
		}
		last = mm
	}
	if op == "$oneof" {
		return &mismatch{pointer: ptr, want: show(map[string]any{op: arg}, true), got: show(got, present),
			reason: "no alternative matches (last: " + last.reason + ")"}
	}
	return nil
}

func (m *matcher) matchSome(ptr string, arg, got any, present bool, nb map[string]any) *mismatch {
	g, ok := got.([]any)
	if !present || !ok {
		return &mismatch{pointer: ptr, want: "an array with an element matching " + show(arg, true), got: show(got, present), reason: "want an array"}
	}
	for i := range g {
		try := cloneMap(nb)
		if m.match(fmt.Sprintf("%s/%d", ptr, i), arg, g[i], true, try) == nil {
			for k, v := range try {
				nb[k] = v
			}
			return nil
		}
	}
	return &mismatch{pointer: ptr, want: "an element matching " + show(arg, true), got: show(got, present), reason: "no element matches"}
}

func (m *matcher) lookup(name string, nb map[string]any) (any, bool) {
	if v, ok := nb[name]; ok {
		return v, true
	}
	v, ok := m.bindings[name]
	return v, ok
}

// expand replaces {{name}} inside s by bound string values; quote escapes
// them for use inside a regular expression.
func (m *matcher) expand(s string, nb map[string]any, quote bool) (string, error) {
	var err error
	out := placeholderRE.ReplaceAllStringFunc(s, func(p string) string {
		name := p[2 : len(p)-2]
		v, ok := m.lookup(name, nb)
		if !ok {
			err = fmt.Errorf("placeholder {{%s}} is not bound yet", name)
			return p
		}
		str := inString(v)
		if quote {
			return regexp.QuoteMeta(str)
		}
		return str
	})
	return out, err
}

func (m *matcher) matchString(ptr, w string, got any, present bool, nb map[string]any) *mismatch {
	fail := func(reason string) *mismatch {
		return &mismatch{pointer: ptr, want: w, got: show(got, present), reason: reason}
	}
	// A whole-string placeholder binds any non-null value on first sight
	// and requires the same value afterwards.
	if sm := placeholderRE.FindStringSubmatch(w); sm != nil && sm[0] == w {
		if !present || got == nil {
			return fail("missing value for placeholder")
		}
		if v, ok := m.lookup(sm[1], nb); ok {
			if canon(v) != canon(got) {
				return &mismatch{pointer: ptr, want: w + " = " + show(v, true), got: show(got, true), reason: "placeholder bound to another value"}
			}
			return nil
		}
		nb[sm[1]] = got
		return nil
	}
	if !strings.HasPrefix(w, "$") || strings.HasPrefix(w, "$$") {
		lit := w
		if strings.HasPrefix(w, "$$") {
			lit = w[1:] // "$$x" is the literal "$x"
		}
		lit, err := m.expand(lit, nb, false)
		if err != nil {
			return fail(err.Error())
		}
		if !present {
			return fail("missing")
		}
		if g, ok := got.(string); !ok || g != lit {
			return &mismatch{pointer: ptr, want: show(lit, true), got: show(got, present), reason: "different value"}
		}
		return nil
	}
	name, arg, _ := strings.Cut(w, ":")
	if name == "$absent" {
		if present {
			return fail("must be absent")
		}
		return nil
	}
	if name == "$any" {
		if !present {
			return fail("missing")
		}
		return nil
	}
	if !present {
		return fail("missing")
	}
	str, isStr := got.(string)
	num, isNum := got.(json.Number)
	switch name {
	case "$string":
		if !isStr {
			return fail("want a string")
		}
	case "$nonempty":
		if !isStr || str == "" {
			return fail("want a non-empty string")
		}
	case "$bool":
		if _, ok := got.(bool); !ok {
			return fail("want a boolean")
		}
	case "$null":
		if got != nil {
			return fail("want null")
		}
	case "$array":
		if _, ok := got.([]any); !ok {
			return fail("want an array")
		}
	case "$object":
		if _, ok := got.(map[string]any); !ok {
			return fail("want an object")
		}
	case "$number":
		if !isNum {
			return fail("want a number")
		}
	case "$int", "$int>=0", "$int>0":
		if !isNum {
			return fail("want an integer")
		}
		// By value, as the schemas judge "integer": 1.0 and 1e2 are
		// integers written another way (JSON does not tell them apart).
		i, ok := integral(string(num))
		if !ok {
			return fail("want an integer")
		}
		if name == "$int>=0" && i.Sign() < 0 || name == "$int>0" && i.Sign() <= 0 {
			return fail("integer out of range")
		}
	case "$datetime":
		if !isStr {
			return fail("want an RFC 3339 date-time string")
		}
		if _, err := time.Parse(time.RFC3339Nano, str); err != nil {
			return fail("want an RFC 3339 date-time")
		}
	case "$path":
		if !isStr || !filepath.IsAbs(str) {
			return fail("want an absolute path")
		}
		if !m.underRoots(str) {
			return fail("path is not under the case's temporary directories")
		}
	case "$contains", "$prefix", "$suffix":
		sub, err := m.expand(arg, nb, false)
		if err != nil {
			return fail(err.Error())
		}
		if !isStr {
			return fail("want a string")
		}
		ok := name == "$contains" && strings.Contains(str, sub) ||
			name == "$prefix" && strings.HasPrefix(str, sub) ||
			name == "$suffix" && strings.HasSuffix(str, sub)
		if !ok {
			return fail(strings.TrimPrefix(name, "$") + " " + show(sub, true) + " not satisfied")
		}
	case "$regexp":
		expr, err := m.expand(arg, nb, true)
		if err != nil {
			return fail(err.Error())
		}
		re, err := regexp.Compile(expr)
		if err != nil {
			return fail("bad regexp: " + err.Error())
		}
		if !isStr || !re.MatchString(str) {
			return fail("does not match the regexp")
		}
	default:
		return fail("unknown matcher " + name)
	}
	return nil
}

func (m *matcher) underRoots(p string) bool {
	p = filepath.Clean(p)
	for _, r := range m.roots {
		if p == r || strings.HasPrefix(p, r+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// commit keeps the bindings of a matched line.
func (m *matcher) commit(nb map[string]any) {
	for k, v := range nb {
		m.bindings[k] = v
	}
}

// knownMatchers lists the $-matchers, for linting cases.
var knownMatchers = map[string]bool{
	"$any": true, "$absent": true, "$string": true, "$nonempty": true, "$bool": true, "$null": true,
	"$array": true, "$object": true, "$number": true, "$int": true, "$int>=0": true, "$int>0": true,
	"$datetime": true, "$path": true, "$contains": true, "$prefix": true, "$suffix": true, "$regexp": true,
}

// lintValue reports the first unknown $-matcher or combinator in an expectation.
func lintValue(ptr string, v any) error {
	switch w := v.(type) {
	case string:
		if strings.HasPrefix(w, "$") && !strings.HasPrefix(w, "$$") {
			name, arg, _ := strings.Cut(w, ":")
			if !knownMatchers[name] {
				return fmt.Errorf("at %s: unknown matcher %q", ptr, name)
			}
			if name == "$regexp" {
				if _, err := regexp.Compile(placeholderRE.ReplaceAllString(arg, "x")); err != nil {
					return fmt.Errorf("at %s: %w", ptr, err)
				}
			}
		}
	case map[string]any:
		for k, x := range w {
			if strings.HasPrefix(k, "$") && k != "$all" && k != "$oneof" && k != "$some" && k != "$not" {
				return fmt.Errorf("at %s: unknown combinator %q", ptr, k)
			}
			if err := lintValue(ptr+"/"+escapePointer(k), x); err != nil {
				return err
			}
		}
	case []any:
		for i, x := range w {
			if err := lintValue(fmt.Sprintf("%s/%d", ptr, i), x); err != nil {
				return err
			}
		}
	}
	return nil
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func cloneMap(m map[string]any) map[string]any {
	c := make(map[string]any, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// integral is a JSON number's value when it is an integer, in any
// notation; an exponent of five digits or more is refused (10^exp would
// be built) rather than computed.
func integral(num string) (*big.Int, bool) {
	if i, ok := new(big.Int).SetString(num, 10); ok {
		return i, true
	}
	if _, exp, hasExp := strings.Cut(strings.ToLower(num), "e"); hasExp && len(strings.TrimLeft(exp, "+-")) > 4 {
		return nil, false
	}
	r, ok := new(big.Rat).SetString(num)
	if !ok || !r.IsInt() {
		return nil, false
	}
	return r.Num(), true
}

// inString is a bound value as a longer string holds it: a string as it
// is, an integral number as its integer (a server may write the count 5
// as 5.0, and its text "5 ms" names the same number), anything else as
// JSON.
func inString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case json.Number:
		if i, ok := integral(string(x)); ok {
			return i.String()
		}
	}
	return canon(v)
}
