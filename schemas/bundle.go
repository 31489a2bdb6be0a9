package schemas

import (
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"
)

// Standalone returns the schema name as one self-contained document: every
// schema it refers to, directly or not, is copied under its "$defs" and
// each $ref points there, so that a generator given this file alone
// resolves everything (e schema NAME).
func Standalone(name string) ([]byte, error) {
	path, ok := theCatalog().paths[name]
	if !ok {
		return nil, fmt.Errorf("schemas: no schema %q", name)
	}
	b := &bundler{defs: map[string]any{}}
	root, err := b.copy(path, "")
	if err != nil {
		return nil, err
	}
	rm := root.(map[string]any)
	if len(b.defs) > 0 {
		defs, _ := rm["$defs"].(map[string]any)
		if defs == nil {
			defs = map[string]any{}
		}
		for k, v := range b.defs {
			defs[k] = v
		}
		rm["$defs"] = defs
	}
	return marshal(rm)
}

// bundler copies schemas into one document.
type bundler struct {
	root string         // the path of the document's own file
	defs map[string]any // copied resources by their key in $defs
}

// copy returns the node at frag of the file path with its $refs rewritten.
func (b *bundler) copy(from, frag string) (any, error) {
	if b.root == "" {
		b.root = from
	}
	doc, err := loadFile(from)
	if err != nil {
		return nil, err
	}
	node, err := pointer(doc, frag)
	if err != nil {
		return nil, fmt.Errorf("schemas: %s#%s: %w", from, frag, err)
	}
	return b.rewrite(node, from, frag == "")
}

// rewrite returns a copy of node (found in the file path) whose $refs point
// into the bundle. top is set for a file's root, whose $id and $schema only
// the document's own root keeps.
func (b *bundler) rewrite(node any, from string, top bool) (any, error) {
	switch n := node.(type) {
	case map[string]any:
		out := make(map[string]any, len(n))
		for k, v := range n {
			if top && from != b.root && (k == "$id" || k == "$schema") {
				continue
			}
			if k == "$ref" {
				ref, err := b.ref(v.(string), from)
				if err != nil {
					return nil, err
				}
				out[k] = ref
				continue
			}
			c, err := b.rewrite(v, from, false)
			if err != nil {
				return nil, err
			}
			out[k] = c
		}
		return out, nil
	case []any:
		out := make([]any, len(n))
		for i, v := range n {
			c, err := b.rewrite(v, from, false)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	}
	return node, nil
}

// ref maps a $ref found in the file path to its place in the bundle,
// copying the target there on first use.
func (b *bundler) ref(ref, from string) (string, error) {
	target, frag, _ := strings.Cut(ref, "#")
	file := from
	if target != "" {
		file = path.Join(path.Dir(from), target)
	}
	if file == b.root {
		return "#" + frag, nil
	}
	key := strings.ReplaceAll(strings.TrimSuffix(file, ".json"), "/", ".")
	if frag != "" {
		key += "." + strings.ReplaceAll(strings.TrimPrefix(strings.TrimPrefix(frag, "/$defs/"), "/"), "/", ".")
	}
	if _, ok := b.defs[key]; !ok {
		b.defs[key] = nil // a cycle refers to it while it is copied
		c, err := b.copy(file, frag)
		if err != nil {
			return "", err
		}
		b.defs[key] = c
	}
	return "#/$defs/" + key, nil
}

func loadFile(path string) (any, error) {
	b, err := files.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("schemas: %w", err)
	}
	v, err := decode(b)
	if err != nil {
		return nil, fmt.Errorf("schemas: %s: %w", path, err)
	}
	return v, nil
}

func marshal(v any) ([]byte, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Bundle returns the files of e schema --out: every schema under a unique
// flat name (its name with "/" as "."; "events.error.json" and
// "envelope.error.json" stay apart), each $ref rewritten to a file of the
// bundle, and four files made for generators:
//
//	event.json        every event, a union discriminated by "type"
//	server_line.json  every line e rpc writes
//	client_line.json  every line a client may write
//	methods.json      each method's params and result
//
// Files carry no $id, so that every $ref resolves beside them.
func Bundle() (map[string][]byte, error) {
	c := theCatalog()
	flat := func(file string) string {
		return strings.ReplaceAll(nameOf(file), "/", ".") + ".json"
	}
	out := map[string][]byte{}
	for name, file := range c.paths {
		doc, err := loadFile(file)
		if err != nil {
			return nil, err
		}
		v, err := relink(doc, file, flat, true)
		if err != nil {
			return nil, err
		}
		if out[flat(file)] != nil {
			return nil, fmt.Errorf("schemas: two schemas bundle as %s", flat(file))
		}
		if out[flat(file)], err = marshal(v); err != nil {
			return nil, fmt.Errorf("schemas: %s: %w", name, err)
		}
	}
	ref := func(file string) map[string]any { return map[string]any{"$ref": flat(file)} }
	var events []any
	for _, t := range sortedKeys(c.events) {
		events = append(events, ref("events/"+t+".json"))
	}
	// A newer server's event types: a client skips them (P8), so a
	// generated decoder (quicktype's Convert.toServerLine) must take them
	// rather than throw. Its type is none of the known ones (nor the ask and
	// notice lines'), so server_line's oneOf stays exclusive.
	events = append(events, map[string]any{
		"title":       "other event",
		"description": "An event of a type these schemas do not know (a newer server's): a client skips it (P8).",
		"type":        "object",
		"required":    []any{"type"},
		"properties": map[string]any{"type": map[string]any{
			"type": "string",
			"not":  map[string]any{"enum": anys(append(sortedKeys(c.events), "ask", "notice"))},
		}},
	})
	lines := []any{map[string]any{"$ref": "event.json"}, ref("lines/ask.json"), ref("lines/notice.json"), ref("envelope/response.json"), ref("envelope/error.json")}
	var requests []any
	methods := map[string]any{}
	for _, m := range c.methods {
		params, result := ref("methods/"+m+".params.json"), ref("methods/"+m+".result.json")
		requests = append(requests, map[string]any{
			"title":    m + " request",
			"type":     "object",
			"required": []any{"method"},
			"properties": map[string]any{
				"id":     map[string]any{"description": "any JSON value, echoed in the response"},
				"method": map[string]any{"const": m},
				"params": map[string]any{"anyOf": []any{params, map[string]any{"type": "null"}}},
			},
		})
		methods[m] = map[string]any{
			"title":      m,
			"type":       "object",
			"required":   []any{"params", "result"},
			"properties": map[string]any{"params": params, "result": result},
		}
	}
	requests = append(requests, ref("oneshot/request.json"))
	for file, v := range map[string]map[string]any{
		"event.json":       {"title": "event", "description": "Every event of a turn, discriminated by type; a client skips types it does not know (additive protocol).", "oneOf": events},
		"server_line.json": {"title": "server line", "description": "Every line e rpc writes on stdout (F3).", "oneOf": lines},
		"client_line.json": {"title": "client line", "description": "Every line a client may write on e rpc's stdin: a request of each method, or a version-1 one-shot line (F2, O1).", "anyOf": requests},
		"methods.json":     {"title": "methods", "description": "Each e rpc method's params and result, by method name.", "type": "object", "required": sortedKeys(methods), "properties": methods},
	} {
		v["$schema"] = draft
		if out[file] != nil {
			return nil, fmt.Errorf("schemas: a schema is named like the bundle's %s", file)
		}
		b, err := marshal(v)
		if err != nil {
			return nil, err
		}
		out[file] = b
	}
	return out, nil
}

// relink copies node (found in the file path) with every $ref naming a
// file of the bundle; a file's root loses its $id.
func relink(node any, from string, flat func(string) string, top bool) (any, error) {
	switch n := node.(type) {
	case map[string]any:
		out := make(map[string]any, len(n))
		for k, v := range n {
			switch {
			case top && k == "$id":
				continue
			case k == "$ref":
				target, frag, _ := strings.Cut(v.(string), "#")
				file := from
				if target != "" {
					file = path.Join(path.Dir(from), target)
				}
				if _, err := files.ReadFile(file); err != nil {
					return nil, fmt.Errorf("schemas: %s: $ref %s: no such file", from, v)
				}
				ref := flat(file)
				if frag != "" {
					ref += "#" + frag
				}
				out[k] = ref
			default:
				c, err := relink(v, from, flat, false)
				if err != nil {
					return nil, err
				}
				out[k] = c
			}
		}
		return out, nil
	case []any:
		out := make([]any, len(n))
		for i, v := range n {
			c, err := relink(v, from, flat, false)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	}
	return node, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func anys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
