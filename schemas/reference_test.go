package schemas

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
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

// probes are the values every member is set to in turn.
var probes = []any{nil, true, false, json.Number("0"), json.Number("1"), json.Number("-1"), json.Number("1.5"),
	json.Number("1e400"), "", "x", "all", "none", []any{}, []any{"x"}, []any{json.Number("1")}, map[string]any{}}

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
