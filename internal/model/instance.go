package model

import (
	"encoding/json"
	"slices"
	"strings"
)

// minimalInstance returns a small value of the JSON Schema schema, for the
// offline model's answer to a request with an output schema: an object
// with its required properties, an array of its minItems, a string of its
// minLength, a number at its minimum, the first of an enum, a const. It
// aims at the keywords a client's schema commonly uses; e validates the
// answer all the same.
func minimalInstance(schema json.RawMessage) json.RawMessage {
	var root any
	if json.Unmarshal(schema, &root) != nil {
		return json.RawMessage(`{}`)
	}
	b, err := json.Marshal(instanceOf(root, root, 0))
	if err != nil {
		return json.RawMessage(`{}`)
	}
	return b
}

func instanceOf(s, root any, depth int) any {
	m, ok := s.(map[string]any)
	if !ok || depth > 32 {
		return map[string]any{}
	}
	if ref, ok := m["$ref"].(string); ok {
		if target := pointerTo(root, ref); target != nil {
			return instanceOf(target, root, depth+1)
		}
	}
	if v, ok := m["const"]; ok {
		return v
	}
	if e, ok := m["enum"].([]any); ok && len(e) > 0 {
		return e[0]
	}
	for _, k := range []string{"allOf", "anyOf", "oneOf"} {
		if subs, ok := m[k].([]any); ok && len(subs) > 0 {
			if k == "allOf" {
				return instanceOf(mergeAll(subs), root, depth+1)
			}
			return instanceOf(subs[0], root, depth+1)
		}
	}
	typ := m["type"]
	if list, ok := typ.([]any); ok && len(list) > 0 {
		typ = list[0]
		if typ == "null" && len(list) > 1 {
			typ = list[1]
		}
	}
	switch typ {
	case "string":
		return strings.Repeat("x", sizeOf(m["minLength"]))
	case "integer", "number":
		n := 0.0
		if f, ok := m["minimum"].(float64); ok {
			n = f
		}
		if f, ok := m["exclusiveMinimum"].(float64); ok {
			n = f + 1
		}
		if f, ok := m["maximum"].(float64); ok && n > f {
			n = f
		}
		return n
	case "boolean":
		return false
	case "null":
		return nil
	case "array":
		items := make([]any, sizeOf(m["minItems"]))
		for i := range items {
			items[i] = instanceOf(m["items"], root, depth+1)
		}
		return items
	}
	obj := map[string]any{}
	props, _ := m["properties"].(map[string]any)
	req, _ := m["required"].([]any)
	for _, r := range req {
		if name, ok := r.(string); ok {
			obj[name] = instanceOf(props[name], root, depth+1)
		}
	}
	return obj
}

// mergeAll joins the keywords of allOf's schemas, required lists and
// properties merged.
func mergeAll(subs []any) map[string]any {
	out := map[string]any{}
	props := map[string]any{}
	var req []any
	for _, s := range subs {
		m, _ := s.(map[string]any)
		for k, v := range m {
			switch k {
			case "properties":
				p, _ := v.(map[string]any)
				for name, ps := range p {
					props[name] = ps
				}
			case "required":
				r, _ := v.([]any)
				req = append(req, r...)
			default:
				out[k] = v
			}
		}
	}
	out["properties"], out["required"] = props, slices.Compact(req)
	return out
}

func sizeOf(v any) int {
	if f, ok := v.(float64); ok && f > 0 && f < 1000 {
		return int(f)
	}
	return 0
}

// pointerTo resolves a $ref inside root ("#/$defs/x"); nil when it is not
// one.
func pointerTo(root any, ref string) any {
	frag, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil
	}
	v := root
	for _, seg := range strings.Split(strings.TrimPrefix(frag, "/"), "/") {
		if seg == "" {
			continue
		}
		seg = strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~")
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[seg]
	}
	return v
}
