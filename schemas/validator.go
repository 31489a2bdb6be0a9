package schemas

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// This file is the validator e runs: an interpreter for the part of JSON
// Schema draft 2020-12 that the files in this folder use. e does not link a
// general validator because the one the project tests with
// (santhosh-tekuri/jsonschema) compiles every draft's meta-schemas in its
// package init, about 8 ms of a 10 ms start-up budget (issue: hello in
// under 10 ms). The tests hold this interpreter to that library: every
// schema is checked by both on the same instances and must agree
// (TestAgreesWithReference), one small schema per keyword is held to it on
// edge probes (TestKeywordProbes), the official JSON-Schema-Test-Suite cases
// of the supported keywords must pass (TestSuite), and a schema using a
// keyword outside the subset fails TestKeywordsSupported.

// supported lists the keywords the interpreter implements; annotations are
// accepted and ignored.
var supported = map[string]bool{
	"type": true, "properties": true, "required": true, "additionalProperties": true,
	"items": true, "minItems": true, "maxItems": true, "uniqueItems": true,
	"minLength": true, "maxLength": true, "pattern": true,
	"minimum": true, "maximum": true, "exclusiveMinimum": true, "exclusiveMaximum": true,
	"enum": true, "const": true, "allOf": true, "anyOf": true, "oneOf": true, "not": true,
	"$ref": true, "$defs": true, "minProperties": true, "maxProperties": true,
	// annotations
	"$schema": true, "$id": true, "title": true, "description": true, "default": true,
	"examples": true, "format": true, "contentEncoding": true, "contentMediaType": true,
	"$comment": true, "deprecated": true, "readOnly": true, "writeOnly": true,
	// e's own annotation: a method's dispatch facts, read by internal/gen
	"x-e": true,
}

// node is one compiled schema.
type node struct {
	always                                                 *bool // a boolean schema
	types                                                  []string
	props                                                  map[string]*node
	required                                               []string
	addl                                                   *node // additionalProperties
	items                                                  *node
	minItems, maxItems, minLen, maxLen, minProps, maxProps *int
	unique                                                 bool
	pattern                                                *regexp.Regexp
	min, max, exMin, exMax                                 *bound
	enum                                                   []any
	constV                                                 *any
	allOf, anyOf, oneOf                                    []*node
	not                                                    *node
	ref                                                    *node
}

// fail is one leaf failure: where, and which keyword with what it wanted.
type fail struct {
	path []string
	kw   string
	want any // []string (type), []any (enum), any (const), int (sizes), *bound (bounds)
	got  int // sizes
}

// compiler turns embedded files into nodes, resolving $ref across files.
type compiler struct {
	docs  map[string]any   // file path → decoded JSON
	nodes map[string]*node // "file#pointer" → node (recursion-safe)
	// ids maps the URI (no fragment) of each schema carrying $id, in the
	// files read so far, to where it is: a $ref resolves by $id first.
	ids     map[string]location
	scanned map[string]bool
}

type location struct{ file, ptr string }

// resolve returns ref resolved against base, as RFC 3986 says.
func resolve(base, ref string) string {
	b, err1 := url.Parse(base)
	r, err2 := url.Parse(ref)
	if err1 != nil || err2 != nil {
		return ref
	}
	return b.ResolveReference(r).String()
}

// scanIDs records the $id of v (at ptr of file, under base) and of every
// schema below it, and returns v's base URI.
func (c *compiler) scanIDs(file, ptr, base string, v any) {
	switch x := v.(type) {
	case map[string]any:
		if id, ok := x["$id"].(string); ok {
			base = resolve(base, id)
			target, _, _ := strings.Cut(base, "#")
			c.ids[target] = location{file, ptr}
		}
		for k, e := range x {
			if k == "enum" || k == "const" {
				continue // values, not schemas
			}
			c.scanIDs(file, ptr+"/"+strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1"), base, e)
		}
	case []any:
		for i, e := range x {
			c.scanIDs(file, ptr+"/"+strconv.Itoa(i), base, e)
		}
	}
}

// baseAt returns the base URI of the schema at ptr of file: the file, as
// changed by every $id on the way down.
func (c *compiler) baseAt(file, ptr string) string {
	base := file
	v := c.docs[file]
	apply := func() {
		if m, ok := v.(map[string]any); ok {
			if id, ok := m["$id"].(string); ok {
				base = resolve(base, id)
			}
		}
	}
	apply()
	if ptr == "" {
		return base
	}
	for _, seg := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		w, err := pointer(v, "/"+seg)
		if err != nil {
			return base
		}
		v = w
		apply()
	}
	return base
}

func (c *compiler) doc(file string) (any, error) {
	if d, ok := c.docs[file]; ok {
		c.scan(file, d)
		return d, nil
	}
	b, err := files.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("schemas: %w", err)
	}
	d, err := decode(b)
	if err != nil {
		return nil, fmt.Errorf("schemas: %s: %w", file, err)
	}
	c.docs[file] = d
	c.scan(file, d)
	return d, nil
}

func (c *compiler) scan(file string, d any) {
	if c.scanned[file] {
		return
	}
	if c.ids == nil {
		c.ids, c.scanned = map[string]location{}, map[string]bool{}
	}
	c.scanned[file] = true
	c.scanIDs(file, "", file, d)
}

// load compiles the schema at pointer ptr of file.
func (c *compiler) load(file, ptr string) (*node, error) {
	key := file + "#" + ptr
	if n, ok := c.nodes[key]; ok {
		return n, nil
	}
	d, err := c.doc(file)
	if err != nil {
		return nil, err
	}
	v, err := pointer(d, ptr)
	if err != nil {
		return nil, fmt.Errorf("schemas: %s#%s: %w", file, ptr, err)
	}
	n := &node{}
	c.nodes[key] = n // before compiling: a $ref cycle finds it
	if err := c.compile(n, file, c.baseAt(file, ptr), v); err != nil {
		return nil, fmt.Errorf("schemas: %s#%s: %w", file, ptr, err)
	}
	return n, nil
}

func pointer(v any, ptr string) (any, error) {
	if ptr == "" {
		return v, nil
	}
	for _, seg := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		// A pointer in a $ref is a URI fragment: percent-decoded first.
		if u, err := url.PathUnescape(seg); err == nil {
			seg = u
		}
		seg = strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~")
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[seg]; !ok {
				return nil, fmt.Errorf("no %q", seg)
			}
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(x) {
				return nil, fmt.Errorf("no index %q", seg)
			}
			v = x[i]
		default:
			return nil, fmt.Errorf("cannot index %s", typeName(v))
		}
	}
	return v, nil
}

func (c *compiler) sub(file, base string, v any) (*node, error) {
	n := &node{}
	return n, c.compile(n, file, base, v)
}

func (c *compiler) subs(file, base string, v any) ([]*node, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("expected an array of schemas")
	}
	var out []*node
	for _, s := range list {
		n, err := c.sub(file, base, s)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

// compile compiles schema v of file; base is its base URI, against which
// its $ref resolves (a $id in v changes it).
func (c *compiler) compile(n *node, file, base string, v any) error {
	if b, ok := v.(bool); ok {
		n.always = &b
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("a schema must be an object or a boolean, got %s", typeName(v))
	}
	if id, ok := m["$id"].(string); ok {
		base = resolve(base, id)
	}
	for k, val := range m {
		if !supported[k] {
			return fmt.Errorf("keyword %q is not supported by e's validator", k)
		}
		var err error
		switch k {
		case "type":
			switch t := val.(type) {
			case string:
				n.types = []string{t}
			case []any:
				for _, x := range t {
					s, _ := x.(string)
					n.types = append(n.types, s)
				}
			}
		case "properties":
			props, _ := val.(map[string]any)
			n.props = map[string]*node{}
			for name, s := range props {
				if n.props[name], err = c.sub(file, base, s); err != nil {
					return err
				}
			}
		case "required":
			for _, x := range val.([]any) {
				n.required = append(n.required, x.(string))
			}
		case "additionalProperties":
			n.addl, err = c.sub(file, base, val)
		case "items":
			n.items, err = c.sub(file, base, val)
		case "minItems":
			n.minItems = intOf(val)
		case "maxItems":
			n.maxItems = intOf(val)
		case "minLength":
			n.minLen = intOf(val)
		case "maxLength":
			n.maxLen = intOf(val)
		case "minProperties":
			n.minProps = intOf(val)
		case "maxProperties":
			n.maxProps = intOf(val)
		case "uniqueItems":
			n.unique, _ = val.(bool)
		case "pattern":
			n.pattern, err = regexp.Compile(val.(string))
		case "minimum":
			n.min = boundOf(val)
		case "maximum":
			n.max = boundOf(val)
		case "exclusiveMinimum":
			n.exMin = boundOf(val)
		case "exclusiveMaximum":
			n.exMax = boundOf(val)
		case "enum":
			n.enum, _ = val.([]any)
		case "const":
			cv := val
			n.constV = &cv
		case "allOf":
			n.allOf, err = c.subs(file, base, val)
		case "anyOf":
			n.anyOf, err = c.subs(file, base, val)
		case "oneOf":
			n.oneOf, err = c.subs(file, base, val)
		case "not":
			n.not, err = c.sub(file, base, val)
		case "$ref":
			ref, _ := val.(string)
			// By $id first (RFC 3986 resolution against the base), then as
			// a path relative to the file, which is how schemas/ refers.
			if id, frag, _ := strings.Cut(resolve(base, ref), "#"); c.ids[id] != (location{}) && (frag == "" || strings.HasPrefix(frag, "/")) {
				loc := c.ids[id]
				n.ref, err = c.load(loc.file, loc.ptr+frag)
				break
			}
			target, frag, _ := strings.Cut(ref, "#")
			tf := file
			if target != "" {
				tf = path.Join(path.Dir(file), target)
			}
			n.ref, err = c.load(tf, frag)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// intOf reads a size keyword's value: a non-negative integer, which JSON
// Schema lets a schema write as 2.0 or 2e0 too.
func intOf(v any) *int {
	num, ok := v.(json.Number)
	if !ok {
		return nil
	}
	if i, err := strconv.Atoi(string(num)); err == nil {
		return &i
	}
	if d, ok := parseDecimal(string(num)); ok && d.isInt() && !d.neg && d.exp <= 18 {
		i, _ := strconv.Atoi(d.digits + strings.Repeat("0", int(d.exp)-len(d.digits)))
		return &i
	}
	return nil
}

// bound is a numeric keyword's value: exact for messages, and as a decimal
// for linear comparison with instances.
type bound struct {
	r   *big.Rat
	dec decimal
}

func boundOf(v any) *bound {
	if num, ok := v.(json.Number); ok {
		r, ok1 := new(big.Rat).SetString(string(num))
		d, ok2 := parseDecimal(string(num))
		if ok1 && ok2 {
			return &bound{r: r, dec: d}
		}
	}
	return nil
}

// check validates v at path p, appending leaf failures to out.
func (n *node) check(v any, p []string, out *[]fail) {
	if n.always != nil {
		if !*n.always {
			*out = append(*out, fail{path: slices.Clone(p), kw: "false"})
		}
		return
	}
	if n.ref != nil {
		n.ref.check(v, p, out)
	}
	if len(n.types) > 0 && !slices.ContainsFunc(n.types, func(t string) bool { return isType(v, t) }) {
		*out = append(*out, fail{path: slices.Clone(p), kw: "type", want: n.types})
		return // other keywords would only repeat the type mismatch
	}
	if n.constV != nil && !equal(v, *n.constV) {
		*out = append(*out, fail{path: slices.Clone(p), kw: "const", want: *n.constV})
	}
	if n.enum != nil && !slices.ContainsFunc(n.enum, func(e any) bool { return equal(v, e) }) {
		*out = append(*out, fail{path: slices.Clone(p), kw: "enum", want: n.enum})
	}
	switch x := v.(type) {
	case map[string]any:
		n.checkObject(x, p, out)
	case []any:
		if n.minItems != nil && len(x) < *n.minItems {
			*out = append(*out, fail{path: slices.Clone(p), kw: "minItems", want: *n.minItems, got: len(x)})
		}
		if n.maxItems != nil && len(x) > *n.maxItems {
			*out = append(*out, fail{path: slices.Clone(p), kw: "maxItems", want: *n.maxItems, got: len(x)})
		}
		if n.unique {
			for i := range x {
				for j := i + 1; j < len(x); j++ {
					if equal(x[i], x[j]) {
						*out = append(*out, fail{path: slices.Clone(p), kw: "uniqueItems"})
					}
				}
			}
		}
		if n.items != nil {
			for i, item := range x {
				n.items.check(item, append(p, strconv.Itoa(i)), out)
			}
		}
	case string:
		l := utf8.RuneCountInString(x)
		if n.minLen != nil && l < *n.minLen {
			*out = append(*out, fail{path: slices.Clone(p), kw: "minLength", want: *n.minLen, got: l})
		}
		if n.maxLen != nil && l > *n.maxLen {
			*out = append(*out, fail{path: slices.Clone(p), kw: "maxLength", want: *n.maxLen, got: l})
		}
		if n.pattern != nil && !n.pattern.MatchString(x) {
			*out = append(*out, fail{path: slices.Clone(p), kw: "pattern", want: n.pattern.String()})
		}
	case json.Number:
		d, ok := parseDecimal(string(x))
		if ok {
			bound := func(b *bound, kw string, bad func(int) bool) {
				if b != nil && bad(d.cmp(b.dec)) {
					*out = append(*out, fail{path: slices.Clone(p), kw: kw, want: b})
				}
			}
			bound(n.min, "minimum", func(c int) bool { return c < 0 })
			bound(n.max, "maximum", func(c int) bool { return c > 0 })
			bound(n.exMin, "exclusiveMinimum", func(c int) bool { return c <= 0 })
			bound(n.exMax, "exclusiveMaximum", func(c int) bool { return c >= 0 })
		}
	}
	for _, s := range n.allOf {
		s.check(v, p, out)
	}
	if len(n.anyOf) > 0 {
		var all []fail
		matched := false
		for _, s := range n.anyOf {
			var f []fail
			s.check(v, p, &f)
			if len(f) == 0 {
				matched = true
				break
			}
			all = append(all, f...)
		}
		if !matched {
			*out = append(*out, all...)
		}
	}
	if len(n.oneOf) > 0 {
		var all []fail
		matches := 0
		for _, s := range n.oneOf {
			var f []fail
			s.check(v, p, &f)
			if len(f) == 0 {
				matches++
			}
			all = append(all, f...)
		}
		switch {
		case matches == 0:
			*out = append(*out, all...)
		case matches > 1:
			*out = append(*out, fail{path: slices.Clone(p), kw: "oneOf"})
		}
	}
	if n.not != nil {
		var f []fail
		n.not.check(v, p, &f)
		if len(f) == 0 {
			*out = append(*out, fail{path: slices.Clone(p), kw: "not"})
		}
	}
}

func (n *node) checkObject(x map[string]any, p []string, out *[]fail) {
	for _, r := range n.required {
		if _, ok := x[r]; !ok {
			*out = append(*out, fail{path: append(slices.Clone(p), r), kw: "required"})
		}
	}
	if n.minProps != nil && len(x) < *n.minProps {
		*out = append(*out, fail{path: slices.Clone(p), kw: "minProperties", want: *n.minProps, got: len(x)})
	}
	if n.maxProps != nil && len(x) > *n.maxProps {
		*out = append(*out, fail{path: slices.Clone(p), kw: "maxProperties", want: *n.maxProps, got: len(x)})
	}
	for k, val := range x {
		if s, ok := n.props[k]; ok {
			s.check(val, append(p, k), out)
			continue
		}
		if n.addl != nil {
			if n.addl.always != nil && !*n.addl.always {
				*out = append(*out, fail{path: append(slices.Clone(p), k), kw: "additionalProperties"})
				continue
			}
			n.addl.check(val, append(p, k), out)
		}
	}
}

func isType(v any, t string) bool {
	switch t {
	case "null":
		return v == nil
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "number":
		_, ok := v.(json.Number)
		return ok
	case "integer":
		num, ok := v.(json.Number)
		if !ok {
			return false
		}
		d, ok := parseDecimal(string(num))
		return ok && d.isInt()
	}
	return false
}

// equal is JSON equality: numbers by value, objects and arrays deeply.
func equal(a, b any) bool {
	switch x := a.(type) {
	case json.Number:
		y, ok := b.(json.Number)
		if !ok {
			return false
		}
		dx, ok1 := parseDecimal(string(x))
		dy, ok2 := parseDecimal(string(y))
		return ok1 && ok2 && dx.cmp(dy) == 0
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !equal(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equal(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	return a == b
}

// decode parses one JSON value, keeping numbers exact (json.Number). It
// refuses a key that appears twice in one object (RFC 8259 leaves their
// meaning open; Go would keep the last, gjson the first) with a
// *DuplicateKeyError. It builds the value with an explicit stack, so no
// nesting depth can exhaust the goroutine's stack.
func decode(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var stack []*frame
	var root any
	done := false
	for !done {
		tok, err := d.Token()
		if err != nil {
			return nil, fmt.Errorf("malformed JSON: %w", errEOF(err))
		}
		var val any
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				stack = append(stack, &frame{obj: map[string]any{}})
				continue
			case '[':
				stack = append(stack, &frame{arr: []any{}})
				continue
			}
			top := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if top.obj != nil {
				val = top.obj
			} else {
				val = top.arr
			}
		case string:
			if n := len(stack); n > 0 && stack[n-1].obj != nil && !stack[n-1].has {
				top := stack[n-1]
				if _, dup := top.obj[t]; dup {
					return nil, &DuplicateKeyError{Path: pathOf(stack, t)}
				}
				top.key, top.has = t, true
				continue
			}
			val = t
		default:
			val = t
		}
		if len(stack) == 0 {
			root, done = val, true
			continue
		}
		top := stack[len(stack)-1]
		if top.obj != nil {
			top.obj[top.key] = val
			top.key, top.has = "", false
		} else {
			top.arr = append(top.arr, val)
		}
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, fmt.Errorf("malformed JSON: invalid character after top-level value")
	}
	return root, nil
}

// frame is an object or array decode is inside.
type frame struct {
	obj map[string]any // nil for an array
	arr []any
	key string // the member being read
	has bool   // key is set
}

// pathOf renders where key sits below the root, as render does: .a[2]["x y"].
func pathOf(stack []*frame, key string) string {
	var b strings.Builder
	seg := func(k string) {
		if identifier(k) {
			b.WriteString("." + k)
			return
		}
		q, _ := json.Marshal(k)
		b.WriteString("[" + string(q) + "]")
	}
	for _, f := range stack[:len(stack)-1] {
		if f.obj != nil {
			seg(f.key)
		} else {
			fmt.Fprintf(&b, "[%d]", len(f.arr))
		}
	}
	seg(key)
	return b.String()
}

// DuplicateKeyError reports a key that appears twice in one object.
type DuplicateKeyError struct {
	Path string // where, below the value's root: ".a[2].k", ending with the key
}

func (e *DuplicateKeyError) Error() string {
	return e.Path + ": appears twice in one object (each key may appear once)"
}

func errEOF(err error) error {
	if err.Error() == "EOF" {
		return fmt.Errorf("unexpected EOF")
	}
	return err
}
