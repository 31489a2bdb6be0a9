package conformance

import (
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"strings"
	"sync"

	"github.com/e-agent/e/schemas"
)

// This file reads the protocol schemas as data, for two jobs the validator
// does not do: finding the fields of a line that no schema declares
// (additive matching ignores them, --strict fails them: P8, V2), and
// listing every property a schema declares (coverage).

// snode is one schema value together with the file its relative $refs
// resolve against.
type snode struct {
	file string // e.g. "events/text.json"
	v    any
}

var schemaFiles sync.Map // file path → decoded schema (any), or error

// loadSchemaFile loads one schema file by its path under schemas/.
func loadSchemaFile(file string) (any, error) {
	if v, ok := schemaFiles.Load(file); ok {
		if err, isErr := v.(error); isErr {
			return nil, err
		}
		return v, nil
	}
	name := strings.TrimSuffix(file, ".json")
	name = strings.TrimPrefix(name, "methods/")
	b, ok := schemas.Schema(name)
	if !ok {
		err := fmt.Errorf("conformance: no schema file %s", file)
		schemaFiles.Store(file, err)
		return nil, err
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		err = fmt.Errorf("conformance: schema %s: %w", file, err)
		schemaFiles.Store(file, err)
		return nil, err
	}
	schemaFiles.Store(file, v)
	return v, nil
}

// schemaNamed is the root of the schema with that name ("events/text",
// "session.create.params", "envelope/response"), or false.
func schemaNamed(name string) (snode, bool) {
	file := name + ".json"
	if !strings.Contains(name, "/") {
		if _, ok := schemas.Schema(name); ok && strings.Count(name, ".") > 0 {
			file = "methods/" + file
		}
	}
	v, err := loadSchemaFile(file)
	if err != nil {
		return snode{}, false
	}
	return snode{file: file, v: v}, true
}

// deref follows $ref (possibly several) to the schema it names.
func (n snode) deref() snode {
	for i := 0; i < 16; i++ {
		if r, ok := n.v.(refTo); ok {
			n = snode{file: r.file, v: r.v}
		}
		m, ok := n.v.(map[string]any)
		if !ok {
			return n
		}
		ref, ok := m["$ref"].(string)
		if !ok {
			return n
		}
		file, frag, _ := strings.Cut(ref, "#")
		target := n.file
		if file != "" {
			target = path.Join(path.Dir(n.file), file)
		}
		doc, err := loadSchemaFile(target)
		if err != nil {
			return snode{}
		}
		v := doc
		for _, tok := range strings.Split(strings.TrimPrefix(frag, "/"), "/") {
			if tok == "" {
				continue
			}
			tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
			mv, _ := v.(map[string]any)
			v = mv[tok]
		}
		// Siblings of $ref (2020-12 allows them) are kept by treating
		// the node as allOf [target, siblings].
		rest := map[string]any{}
		for k, x := range m {
			if k != "$ref" {
				rest[k] = x
			}
		}
		if hasShape(rest) {
			return snode{file: n.file, v: map[string]any{"allOf": []any{refTo{file: target, v: v}, rest}}}
		}
		n = snode{file: target, v: v}
	}
	return n
}

// refTo is a resolved reference embedded in a synthetic node.
type refTo struct {
	file string
	v    any
}

func hasShape(m map[string]any) bool {
	for _, k := range []string{"properties", "additionalProperties", "items", "allOf", "anyOf", "oneOf"} {
		if _, ok := m[k]; ok {
			return true
		}
	}
	return false
}

// branches is n itself and, recursively, every subschema of its
// combinators: the schemas an instance at n may be judged by.
func (n snode) branches() []snode {
	var out []snode
	var walk func(n snode, depth int)
	walk = func(n snode, depth int) {
		if depth > 12 {
			return
		}
		if r, ok := n.v.(refTo); ok {
			n = snode{file: r.file, v: r.v}
		}
		n = n.deref()
		m, ok := n.v.(map[string]any)
		if !ok {
			return
		}
		out = append(out, n)
		for _, k := range []string{"allOf", "anyOf", "oneOf"} {
			if subs, ok := m[k].([]any); ok {
				for _, s := range subs {
					walk(snode{file: n.file, v: s}, depth+1)
				}
			}
		}
		if t, ok := m["then"]; ok {
			walk(snode{file: n.file, v: t}, depth+1)
		}
		if e, ok := m["else"]; ok {
			walk(snode{file: n.file, v: e}, depth+1)
		}
	}
	walk(n, 0)
	return out
}

// objectShape is what the schemas say about an object instance: the
// declared properties (each with every schema declaring it), the
// additionalProperties schemas, and whether the object is free-form (no
// schema names a property, or one allows any: additionalProperties true).
func objectShape(ns ...snode) (props map[string][]snode, addl []snode, open bool) {
	props = map[string][]snode{}
	sawProps := false
	var bs []snode
	for _, n := range ns {
		bs = append(bs, n.branches()...)
	}
	for _, b := range bs {
		m := b.v.(map[string]any)
		if ps, ok := m["properties"].(map[string]any); ok {
			sawProps = true
			for k, s := range ps {
				props[k] = append(props[k], snode{file: b.file, v: s})
			}
		}
		switch a := m["additionalProperties"].(type) {
		case bool:
			if a {
				open = true
			}
		case map[string]any:
			addl = append(addl, snode{file: b.file, v: a})
		}
	}
	if !sawProps && len(addl) == 0 {
		open = true
	}
	return props, addl, open
}

// itemsOf is the items schemas of the branches of n.
func (n snode) itemsOf() []snode {
	var out []snode
	for _, b := range n.branches() {
		m := b.v.(map[string]any)
		if it, ok := m["items"]; ok {
			if _, isBool := it.(bool); !isBool {
				out = append(out, snode{file: b.file, v: it})
			}
		}
	}
	return out
}

// unknownFields lists the JSON pointers of the members of v that none of
// the schemas describes: the fields a newer server may add (P8). A
// free-form object (one whose schema names no properties) has none.
func unknownFields(v any, ns ...snode) []string {
	var out []string
	var walk func(ptr string, v any, ns []snode)
	walk = func(ptr string, v any, ns []snode) {
		if len(ns) == 0 {
			return
		}
		switch x := v.(type) {
		case map[string]any:
			props, addl, open := objectShape(ns...)
			for _, k := range sortedKeys(x) {
				sub := ptr + "/" + escapePointer(k)
				switch {
				case len(props[k]) > 0:
					walk(sub, x[k], props[k])
				case len(addl) > 0:
					walk(sub, x[k], addl)
				case !open:
					out = append(out, sub)
				}
			}
		case []any:
			var items []snode
			for _, n := range ns {
				items = append(items, n.itemsOf()...)
			}
			for i, e := range x {
				walk(fmt.Sprintf("%s/%d", ptr, i), e, items)
			}
		}
	}
	walk("", v, ns)
	return out
}

// withoutPointers is a copy of v without the members at ptrs.
func withoutPointers(v any, ptrs []string) any {
	drop := map[string]bool{}
	for _, p := range ptrs {
		drop[p] = true
	}
	var cp func(ptr string, v any) any
	cp = func(ptr string, v any) any {
		switch x := v.(type) {
		case map[string]any:
			out := make(map[string]any, len(x))
			for k, e := range x {
				sub := ptr + "/" + escapePointer(k)
				if !drop[sub] {
					out[k] = cp(sub, e)
				}
			}
			return out
		case []any:
			out := make([]any, len(x))
			for i, e := range x {
				out[i] = cp(fmt.Sprintf("%s/%d", ptr, i), e)
			}
			return out
		}
		return v
	}
	return cp("", v)
}

// propertyPaths lists every property the schema declares, as paths such
// as "session/model" ("[]" for array items, "*" for additional
// properties), recursively through references and combinators.
func propertyPaths(n snode) []string {
	seen := map[string]bool{}
	var walk func(prefix string, ns []snode, depth int)
	walk = func(prefix string, ns []snode, depth int) {
		if depth > 8 {
			return
		}
		props, addl, _ := objectShape(ns...)
		var items []snode
		for _, n := range ns {
			items = append(items, n.itemsOf()...)
		}
		for k, s := range props {
			p := prefix + k
			if !seen[p] {
				seen[p] = true
				walk(p+"/", s, depth+1)
			}
		}
		if len(addl) > 0 {
			walk(prefix+"*/", addl, depth+1)
		}
		if len(items) > 0 {
			walk(prefix+"[]/", items, depth+1)
		}
	}
	walk("", []snode{n}, 0)
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// presentPaths lists the property paths (as propertyPaths writes them) of
// the members present in v, judged by the schema n: the properties an
// expectation or a request exercises.
func presentPaths(v any, n snode) []string {
	seen := map[string]bool{}
	var walk func(prefix string, v any, ns []snode)
	walk = func(prefix string, v any, ns []snode) {
		if len(ns) == 0 {
			return
		}
		switch x := v.(type) {
		case map[string]any:
			props, addl, _ := objectShape(ns...)
			for k, e := range x {
				if strings.HasPrefix(k, "$") {
					// A combinator ($all, $oneof, $some, $not) stands for
					// the value it constrains.
					for _, a := range combinatorArgs(k, e) {
						walk(prefix, a, ns)
					}
					continue
				}
				if s, ok := e.(string); ok && s == "$absent" {
					continue // a field required absent is not exercised
				}
				switch {
				case len(props[k]) > 0:
					seen[prefix+k] = true
					walk(prefix+k+"/", e, props[k])
				case len(addl) > 0:
					seen[prefix+"*"] = true
					walk(prefix+"*/", e, addl)
				}
			}
		case []any:
			var items []snode
			for _, n := range ns {
				items = append(items, n.itemsOf()...)
			}
			for _, e := range x {
				walk(prefix+"[]/", e, items)
			}
		}
	}
	walk("", v, []snode{n})
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

func combinatorArgs(k string, v any) []any {
	switch k {
	case "$all", "$oneof":
		a, _ := v.([]any)
		return a
	case "$some":
		return []any{[]any{v}}
	}
	return nil // $not constrains nothing into existence
}
