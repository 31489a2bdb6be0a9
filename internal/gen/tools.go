package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/e-agent/e/internal/tool"
)

// toolSchemas returns schemas/tools/<name>.json for every built-in tool: a
// well-formed call to it as tool_batch announces it (name, arguments,
// category, target), and builtin.json, the union of them all.
func toolSchemas() (map[string][]byte, error) {
	files := map[string][]byte{}
	var names []string
	for _, spec := range tool.Builtins() {
		b, err := toolSchema(spec)
		if err != nil {
			return nil, fmt.Errorf("tool %s: %w", spec.Name, err)
		}
		names = append(names, spec.Name+".json")
		files["schemas/tools/"+spec.Name+".json"] = b
	}
	b, err := builtinSchema(names)
	if err != nil {
		return nil, err
	}
	files["schemas/tools/"+builtinFile] = b
	return files, nil
}

// builtinFile is the union of every built-in tool's call, which tool_batch
// refers to.
const builtinFile = "builtin.json"

func builtinSchema(files []string) ([]byte, error) {
	var refs []map[string]string
	for _, f := range files {
		refs = append(refs, map[string]string{"$ref": f})
	}
	return orderedJSON([]kv{
		{"$schema", "https://json-schema.org/draft/2020-12/schema"},
		{"$id", base + "tools/" + builtinFile},
		{"title", "built-in tool call"},
		{"description", "A well-formed call of any built-in tool, as tool_batch announces it (generated from internal/tool by go generate). A call may match none: the model may send malformed arguments, and extension tools are not listed."},
		{"oneOf", refs},
	})
}

// kv is one member of a JSON object written in a fixed order.
type kv struct {
	k string
	v any
}

// orderedJSON writes an object with its members in order, for readable
// files and stable output.
func orderedJSON(obj []kv) ([]byte, error) {
	var b strings.Builder
	b.WriteString("{\n")
	for i, e := range obj {
		v, err := json.MarshalIndent(e.v, "  ", "  ")
		if err != nil {
			return nil, err
		}
		k, _ := json.Marshal(e.k)
		fmt.Fprintf(&b, "  %s: %s", k, v)
		if i < len(obj)-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString("}\n")
	return []byte(b.String()), nil
}

func toolSchema(spec tool.Spec) ([]byte, error) {
	var params map[string]any
	if err := json.Unmarshal(spec.Parameters, &params); err != nil {
		return nil, err
	}
	target := map[string]any{"type": "string"}
	switch {
	case spec.Target == "":
		target["const"] = ""
		target["description"] = "always empty: the tool acts on no path or command"
	case spec.TargetDefault != "":
		target["description"] = fmt.Sprintf("the %s argument; %q when it is absent", spec.Target, spec.TargetDefault)
	default:
		target["description"] = fmt.Sprintf("the %s argument", spec.Target)
	}
	return orderedJSON([]kv{
		{"$schema", "https://json-schema.org/draft/2020-12/schema"},
		{"$id", base + "tools/" + spec.Name + ".json"},
		{"title", spec.Name + " tool call"},
		{"description", "A well-formed call of the built-in tool " + spec.Name + " as tool_batch announces it (generated from internal/tool by go generate). " + spec.Description},
		{"type", "object"},
		{"required", []string{"name", "arguments", "category", "target"}},
		{"properties", map[string]any{
			"name":      map[string]any{"const": spec.Name},
			"category":  map[string]any{"const": spec.Category},
			"target":    target,
			"arguments": params,
		}},
	})
}
