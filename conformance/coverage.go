package conformance

import (
	"bufio"
	"bytes"
	_ "embed"
	"path"
	"slices"
	"strings"

	"github.com/e-agent/e/schemas"
)

//go:embed requirements.txt
var requirementsTxt string

// Requirement is one numbered requirement of e's automation surface.
type Requirement struct {
	ID   string
	Text string
}

// Requirements returns every requirement ID in document order.
func Requirements() []Requirement {
	var out []Requirement
	sc := bufio.NewScanner(strings.NewReader(requirementsTxt))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		id, text, _ := strings.Cut(line, " ")
		out = append(out, Requirement{ID: id, Text: text})
	}
	return out
}

// Coverage is one requirement with the cases that cite it.
type Coverage struct {
	Requirement
	Cases []string
}

// CoverageOf maps every requirement to the cases citing it, uncovered
// requirements first, each group in document order.
func CoverageOf(cases []*Case) []Coverage {
	byID := map[string][]string{}
	for _, c := range cases {
		for _, id := range c.Requirements {
			byID[id] = append(byID[id], c.ID)
		}
	}
	var uncovered, covered []Coverage
	for _, r := range Requirements() {
		cv := Coverage{Requirement: r, Cases: byID[r.ID]}
		if len(cv.Cases) == 0 {
			uncovered = append(uncovered, cv)
		} else {
			covered = append(covered, cv)
		}
	}
	return append(uncovered, covered...)
}

// PropertyCoverage is one schema property (or, with an empty Path, one
// event type) with the cases that exercise it: a client line that sends
// it, or an expected line that checks it.
type PropertyCoverage struct {
	Schema string   // "session.create.params", "events/retry", "session.prompt.result", "oneshot/request" …
	Path   string   // "tools/[]", "details/stage"; "" for the event type itself
	Cases  []string // sorted
}

// Name is how reports write the property: "events/retry#delay_ms".
func (p PropertyCoverage) Name() string {
	if p.Path == "" {
		return p.Schema
	}
	return p.Schema + "#" + p.Path
}

// coveredSchemas are the schemas whose properties coverage lists: every
// method's params and result, every event, the v1 one-shot lines, and the
// ask, notice and e -p result lines.
func coveredSchemas() []string {
	var out []string
	results := resultNames()
	for _, m := range schemas.Methods() {
		out = append(out, m+".params")
		if r := results[m]; !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	for _, t := range schemas.Events() {
		out = append(out, "events/"+t)
	}
	return append(out, "oneshot/request", "oneshot/answer", "lines/ask", "lines/notice", "lines/result")
}

// resultNames maps each method to the name its result's coverage is kept
// under: its own ("session.info.result"), or, for a result that is only a
// $ref to a whole schema file that another method's result is too
// (session.prompt's and session.follow_up's: result.json), that file's
// ("result"): one shape, covered once, by a case of either method.
func resultNames() map[string]string {
	out := map[string]string{}
	shared := map[string][]string{} // target → methods
	for _, m := range schemas.Methods() {
		out[m] = m + ".result"
		if t := wholeRef(m + ".result"); t != "" {
			shared[t] = append(shared[t], m)
		}
	}
	for t, ms := range shared {
		if len(ms) > 1 {
			for _, m := range ms {
				out[m] = t
			}
		}
	}
	return out
}

// wholeRef is the name of the schema file that schema name is only a
// $ref to ("result"), "" when it is not.
func wholeRef(name string) string {
	n, ok := schemaNamed(name)
	if !ok {
		return ""
	}
	m, _ := n.v.(map[string]any)
	ref, _ := m["$ref"].(string)
	file, frag, _ := strings.Cut(ref, "#")
	if file == "" || frag != "" {
		return ""
	}
	return strings.TrimSuffix(path.Join(path.Dir(n.file), file), ".json")
}

// PropertyCoverageOf lists every event type and every property of the
// covered schemas (derived from the schemas, not from a list) with the
// cases exercising it, unexercised ones first, each group sorted.
func PropertyCoverageOf(cases []*Case) []PropertyCoverage {
	hits := map[string]map[string]bool{} // name → case ids
	hit := func(schema, path, id string) {
		k := schema + "#" + path
		if hits[k] == nil {
			hits[k] = map[string]bool{}
		}
		hits[k][id] = true
	}
	walk := func(schema string, v any, id string) {
		n, ok := schemaNamed(schema)
		if !ok {
			return
		}
		for _, p := range presentPaths(v, n) {
			hit(schema, p, id)
		}
	}
	results := resultNames()
	for _, c := range cases {
		if c.Dialect != "" && c.Dialect != DialectERPC {
			continue // other schemas: DialectPropertyCoverageOf
		}
		methods := map[string]string{} // canonical id → method
		for _, s := range c.client {
			var texts [][]byte
			switch s.kind {
			case "send", "pad":
				texts = [][]byte{s.text}
			case "raw":
				texts = bytes.Split(s.text, []byte("\n"))
			}
			for _, t := range texts {
				obj := jsonObject(t)
				if obj == nil {
					continue
				}
				id, hasID := obj["id"]
				m, isStr := obj["method"].(string)
				if _, has := obj["method"]; !has {
					walk("oneshot/request", obj, c.ID)
					m, isStr = "oneshot", true
				} else if isStr {
					if p, ok := obj["params"].(map[string]any); ok {
						walk(m+".params", p, c.ID)
					}
				}
				if hasID && isStr {
					methods[canon(id)] = m
				}
			}
		}
		for _, e := range c.expect {
			t, typed := e.value["type"].(string)
			switch {
			case typed && lineSchema(t):
				walk("lines/"+t, e.value, c.ID)
			case typed && t == "result" && c.printMode():
				walk("lines/result", e.value, c.ID)
			case typed:
				if _, known := schemaNamed("events/" + t); known {
					hit("events/"+t, "", c.ID)
					walk("events/"+t, e.value, c.ID)
				}
			default:
				m := methods[canon(e.value["id"])]
				switch {
				case m == "oneshot":
					walk("oneshot/answer", e.value, c.ID)
				case m != "":
					if r, ok := e.value["result"]; ok {
						walk(results[m], r, c.ID)
					}
				}
			}
		}
	}
	var uncovered, covered []PropertyCoverage
	add := func(schema, path string) {
		pc := PropertyCoverage{Schema: schema, Path: path, Cases: sortedKeys(hits[schema+"#"+path])}
		if len(pc.Cases) == 0 {
			uncovered = append(uncovered, pc)
		} else {
			covered = append(covered, pc)
		}
	}
	for _, t := range schemas.Events() {
		add("events/"+t, "")
	}
	for _, s := range coveredSchemas() {
		n, ok := schemaNamed(s)
		if !ok {
			continue
		}
		for _, p := range propertyPaths(n) {
			add(s, p)
		}
	}
	return append(uncovered, covered...)
}

// DialectPropertyCoverageOf is PropertyCoverageOf for the pi dialect's
// schemas (schemas/pi): every property of every command, response and
// event shape ("pi/command.json#prompt", path "images/[]/data"), with the
// pi-rpc cases whose client lines send it or whose expected lines check
// it. ACP's published schema is one union of every message, which no
// line can be attributed to part of, so it has none.
func DialectPropertyCoverageOf(cases []*Case) []PropertyCoverage {
	hits := map[string]map[string]bool{}
	walk := func(n snode, name string, v any, id string) {
		for _, p := range presentPaths(v, n) {
			k := name + "#" + p
			if hits[k] == nil {
				hits[k] = map[string]bool{}
			}
			hits[k][id] = true
		}
	}
	for _, c := range cases {
		if c.Dialect != DialectPi {
			continue
		}
		for _, s := range c.client {
			if obj := jsonObject(s.text); obj != nil && s.kind == "send" {
				if n, name, ok := piCommandShape(obj); ok {
					walk(n, name, obj, c.ID)
				}
			}
		}
		for _, e := range c.expect {
			if n, ok := piShape(e.value); ok {
				walk(n, piShapeName(e.value), e.value, c.ID)
			}
		}
	}
	var uncovered, covered []PropertyCoverage
	for _, file := range []string{"pi/command.json", "pi/response.json", "pi/event.json", "pi/extension_ui_request.json"} {
		doc, err := loadSchemaFile(file)
		if err != nil {
			continue
		}
		defs, _ := doc.(map[string]any)["$defs"].(map[string]any)
		for _, def := range sortedKeys(defs) {
			if file == "pi/event.json" && !piKnownType(def) || file == "pi/response.json" && def == "cancelled" {
				continue // shapes inside lines, not lines
			}
			name := file + "#" + def
			for _, p := range propertyPaths(snode{file: file, v: defs[def]}) {
				pc := PropertyCoverage{Schema: name, Path: p, Cases: sortedKeys(hits[name+"#"+p])}
				if len(pc.Cases) == 0 {
					uncovered = append(uncovered, pc)
				} else {
					covered = append(covered, pc)
				}
			}
		}
	}
	return append(uncovered, covered...)
}

// piCommandShape is the schema of a pi command line by its type.
func piCommandShape(obj map[string]any) (snode, string, bool) {
	t, _ := obj["type"].(string)
	doc, err := loadSchemaFile("pi/command.json")
	if err != nil || t == "" {
		return snode{}, "", false
	}
	defs, _ := doc.(map[string]any)["$defs"].(map[string]any)
	s, ok := defs[t]
	return snode{file: "pi/command.json", v: s}, "pi/command.json#" + t, ok
}

// piShapeName names the shape piShape picks for a line.
func piShapeName(obj map[string]any) string {
	typ, _ := obj["type"].(string)
	switch typ {
	case "response":
		if ok, _ := obj["success"].(bool); ok {
			c, _ := obj["command"].(string)
			return "pi/response.json#" + c
		}
		return "pi/response.json#failure"
	case "extension_ui_request":
		m, _ := obj["method"].(string)
		return "pi/extension_ui_request.json#" + m
	}
	return "pi/event.json#" + typ
}
