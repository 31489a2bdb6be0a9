package schemas

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The reference validator: santhosh-tekuri/jsonschema, draft 2020-12. e's
// own interpreter (validator.go) must agree with it on every schema.

type embedLoader struct{}

func (embedLoader) Load(url string) (any, error) {
	path, ok := strings.CutPrefix(url, base)
	if !ok {
		return nil, fmt.Errorf("%s is not an embedded schema", url)
	}
	b, err := files.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return jsonschema.UnmarshalJSON(bytes.NewReader(b))
}

func referenceSchema(t *testing.T, c *jsonschema.Compiler, path string) *jsonschema.Schema {
	t.Helper()
	s, err := c.Compile(base + path)
	if err != nil {
		t.Fatalf("reference compile %s: %v", path, err)
	}
	return s
}

func newReference() *jsonschema.Compiler {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(embedLoader{})
	return c
}

// sample builds an instance meant to satisfy n (it may not, for patterns).
func sample(n *node, depth int) any {
	switch {
	case depth > 8:
		return nil
	case n.always != nil:
		return nil
	case n.ref != nil:
		return sample(n.ref, depth+1)
	case n.constV != nil:
		return *n.constV
	case n.enum != nil:
		for _, e := range n.enum {
			if e != nil {
				return e
			}
		}
		return nil
	case len(n.allOf) > 0:
		return sample(n.allOf[0], depth+1)
	case len(n.anyOf) > 0:
		return sample(n.anyOf[0], depth+1)
	case len(n.oneOf) > 0:
		return sample(n.oneOf[0], depth+1)
	}
	t := "object"
	if len(n.types) > 0 {
		t = n.types[0]
		if t == "null" && len(n.types) > 1 {
			t = n.types[1]
		}
	}
	switch t {
	case "object":
		m := map[string]any{}
		for _, r := range n.required {
			if p, ok := n.props[r]; ok {
				m[r] = sample(p, depth+1)
			} else {
				m[r] = "x"
			}
		}
		return m
	case "array":
		var a []any = []any{}
		if n.minItems != nil && n.items != nil {
			for range *n.minItems {
				a = append(a, sample(n.items, depth+1))
			}
		}
		return a
	case "string":
		l := 1
		if n.minLen != nil {
			l = max(l, *n.minLen)
		}
		return strings.Repeat("x", l)
	case "integer", "number":
		switch {
		case n.min != nil:
			return json.Number(n.min.r.RatString())
		case n.exMin != nil:
			return json.Number(fmt.Sprint(n.exMin.r.Num().Int64()/max(n.exMin.r.Denom().Int64(), 1) + 1))
		}
		return json.Number("1")
	case "boolean":
		return true
	}
	return nil
}

// probes are the values every member is set to in turn. Besides one of each
// type they hold what catches a keyword implemented almost right: non-ASCII
// strings (minLength counts characters, not bytes), arrays with equal items
// (uniqueItems, 1 and 1.0 are equal), integers written 2.0, and values
// sitting exactly on the bounds the schema files write (exclusiveMinimum),
// read from the files' text rather than from the compiled nodes, which would
// share a bug of the compiler.
var probes = append([]any{nil, true, false, json.Number("0"), json.Number("1"), json.Number("-1"), json.Number("1.5"),
	json.Number("1e400"), json.Number("2.0"), "", "x", "all", "none", "é", "éé", "日本語", "😀", strings.Repeat("é", 64),
	[]any{}, []any{"x"}, []any{json.Number("1")}, []any{"x", "x"}, []any{json.Number("1"), json.Number("1.0")},
	[]any{map[string]any{"a": json.Number("1")}, map[string]any{"a": json.Number("1")}}, map[string]any{}},
	boundProbes()...)

// boundProbes returns, for every numeric bound and size written in the
// embedded schema files, the values on it and one either side: numbers for
// minimum/maximum/exclusive*, strings of that many non-ASCII characters for
// minLength/maxLength, arrays of that many distinct items for
// minItems/maxItems.
func boundProbes() []any {
	seen := map[string]bool{}
	var out []any
	add := func(v any) {
		b, _ := json.Marshal(v)
		if !seen[string(b)] {
			seen[string(b)] = true
			out = append(out, v)
		}
	}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				num, isNum := e.(json.Number)
				switch {
				case isNum && (k == "minimum" || k == "maximum" || k == "exclusiveMinimum" || k == "exclusiveMaximum"):
					r, _ := new(big.Rat).SetString(string(num))
					for _, d := range []int64{-1, 0, 1} {
						add(json.Number(new(big.Rat).Add(r, big.NewRat(d, 1)).FloatString(0)))
					}
					add(num)
				case isNum && (k == "minLength" || k == "maxLength" || k == "minItems" || k == "maxItems"):
					n, err := strconv.Atoi(string(num))
					if err != nil || n > 300 {
						continue
					}
					for _, l := range []int{n - 1, n, n + 1} {
						if l < 0 {
							continue
						}
						if strings.HasSuffix(k, "Length") {
							add(strings.Repeat("é", l))
							continue
						}
						items := []any{}
						for i := range l {
							items = append(items, "x"+strconv.Itoa(i))
						}
						add(items)
					}
				}
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	names, _ := fs.Glob(files, "*/*.json")
	for _, name := range names {
		b, err := files.ReadFile(name)
		if err != nil {
			continue
		}
		if v, err := decode(b); err == nil {
			walk(v)
		}
	}
	return out
}

// mutations returns v, and v with each member (to depth 2) replaced by each
// probe, deleted, or joined by an unknown member.
func mutations(v any, depth int) []any {
	out := []any{v}
	if depth > 2 {
		return out
	}
	switch x := v.(type) {
	case map[string]any:
		keys := slices.Sorted(maps.Keys(x))
		for _, k := range keys {
			without := maps.Clone(x)
			delete(without, k)
			out = append(out, without)
			for _, sub := range append(slices.Clone(probes), mutations(x[k], depth+1)[1:]...) {
				m := maps.Clone(x)
				m[k] = sub
				out = append(out, m)
			}
		}
		extra := maps.Clone(x)
		extra["zz_unknown"] = json.Number("1")
		out = append(out, extra)
	case []any:
		for _, p := range probes {
			out = append(out, append(slices.Clone(x), p))
		}
	}
	return out
}

// TestAgreesWithReference holds e's interpreter to the reference validator
// on every embedded schema, over thousands of instances.
func TestAgreesWithReference(t *testing.T) {
	ref := newReference()
	checked := 0
	for name, path := range theCatalog().paths {
		t.Run(name, func(t *testing.T) {
			ours, err := compile(name)
			if err != nil {
				t.Fatal(err)
			}
			theirs := referenceSchema(t, ref, path)
			instances := append(mutations(sample(ours, 0), 0), probes...)
			for _, inst := range instances {
				b, err := json.Marshal(inst)
				if err != nil {
					t.Fatal(err)
				}
				v, err := decode(b)
				if err != nil {
					t.Fatal(err)
				}
				var fails []fail
				ours.check(v, nil, &fails)
				rv, _ := jsonschema.UnmarshalJSON(bytes.NewReader(b))
				rerr := theirs.Validate(rv)
				if (len(fails) == 0) != (rerr == nil) {
					t.Errorf("disagree on %s: ours %v, reference %v", b, fails, rerr)
				}
				checked++
			}
		})
	}
	if checked < 1000 {
		t.Errorf("only %d instances checked", checked)
	}
}

// TestKeywordsSupported: a schema that used a keyword the interpreter does
// not implement would not compile (validator.go refuses it); this proves
// the refusal works.
func TestKeywordsSupported(t *testing.T) {
	c := &compiler{docs: map[string]any{"x.json": map[string]any{"dependentRequired": map[string]any{}}}, nodes: map[string]*node{}}
	if _, err := c.load("x.json", ""); err == nil || !strings.Contains(err.Error(), "dependentRequired") {
		t.Errorf("unsupported keyword accepted: %v", err)
	}
}

// TestKeywordProbes holds the interpreter to the reference on one small
// schema per keyword whose edge the embedded schemas may not reach, over the
// probes: a minLength counting bytes, uniqueItems ignored or comparing
// numbers by text, an inclusive exclusiveMinimum, oneOf taken as anyOf, or
// 2.0 refused as an integer each make this test fail.
func TestKeywordProbes(t *testing.T) {
	schemas := []string{
		`{"type":"string","minLength":2,"maxLength":3}`,
		`{"type":"array","uniqueItems":true}`,
		`{"type":"number","exclusiveMinimum":1,"exclusiveMaximum":3}`,
		`{"type":"number","minimum":1,"maximum":3}`,
		`{"oneOf":[{"type":"integer"},{"type":"number","minimum":0}]}`,
		`{"type":"integer"}`,
		`{"type":"array","minItems":2,"maxItems":2.0}`,
	}
	extra := []any{json.Number("2"), json.Number("3"), json.Number("3.0"), json.Number("0.5"), json.Number("-0.5"),
		"ab", "abcd", "😀😀", "ééé", []any{json.Number("1"), json.Number("2")}}
	for i, text := range schemas {
		t.Run(text, func(t *testing.T) {
			doc, err := decode([]byte(text))
			if err != nil {
				t.Fatal(err)
			}
			c := &compiler{docs: map[string]any{"probe.json": doc}, nodes: map[string]*node{}}
			ours, err := c.load("probe.json", "")
			if err != nil {
				t.Fatal(err)
			}
			rc := jsonschema.NewCompiler()
			rc.DefaultDraft(jsonschema.Draft2020)
			rdoc, _ := jsonschema.UnmarshalJSON(strings.NewReader(text))
			url := fmt.Sprintf("https://e.invalid/probe%d.json", i)
			if err := rc.AddResource(url, rdoc); err != nil {
				t.Fatal(err)
			}
			theirs, err := rc.Compile(url)
			if err != nil {
				t.Fatal(err)
			}
			for _, inst := range append(slices.Clone(probes), extra...) {
				b, _ := json.Marshal(inst)
				v, _ := decode(b)
				var fails []fail
				ours.check(v, nil, &fails)
				rv, _ := jsonschema.UnmarshalJSON(bytes.NewReader(b))
				if rerr := theirs.Validate(rv); (len(fails) == 0) != (rerr == nil) {
					t.Errorf("disagree on %s: ours %v, reference %v", b, fails, rerr)
				}
			}
		})
	}
}
