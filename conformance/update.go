package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"
)

// normalizer replaces the volatile values of recorded lines by
// placeholders and matchers (spec/conformance.md, section 5).
type normalizer struct {
	names map[string]string // a bound string value → its placeholder name
	paths []string          // bound path values, longest first
	next  int               // for new session names s1, s2 …
}

func newNormalizer(bindings map[string]any) *normalizer {
	n := &normalizer{names: map[string]string{}}
	for _, name := range sortedKeys(bindings) {
		v, ok := bindings[name].(string)
		if !ok || len(v) < 3 {
			continue
		}
		if _, dup := n.names[v]; !dup {
			n.names[v] = name
		}
		if strings.HasPrefix(v, "/") {
			n.paths = append(n.paths, v)
		}
	}
	sort.Slice(n.paths, func(i, j int) bool { return len(n.paths[i]) > len(n.paths[j]) })
	return n
}

// value normalises v; key is the name of the field holding it.
func (n *normalizer) value(key string, v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = n.value(k, e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = n.value(key, e)
		}
		return out
	case string:
		return n.str(key, x)
	}
	return v
}

func (n *normalizer) str(key, s string) string {
	if name, ok := n.names[s]; ok {
		return "{{" + name + "}}"
	}
	if key == "session" && s != "" && !strings.HasPrefix(s, "/") {
		for {
			n.next++
			name := fmt.Sprintf("s%d", n.next)
			if !n.bound(name) {
				n.names[s] = name
				return "{{" + name + "}}"
			}
		}
	}
	for _, p := range n.paths {
		if strings.Contains(s, p) {
			s = strings.ReplaceAll(s, p, "{{"+n.names[p]+"}}")
		}
	}
	if len(s) >= 20 && strings.Contains(s, "T") {
		if _, err := time.Parse(time.RFC3339Nano, s); err == nil {
			return "$datetime"
		}
	}
	if strings.HasPrefix(s, "$") {
		return "$" + s
	}
	return s
}

func (n *normalizer) bound(name string) bool {
	for _, v := range n.names {
		if v == name {
			return true
		}
	}
	return false
}

// rawLine normalises a line the client sent, as text, so that its exact
// bytes (ids such as 1e400) survive.
func (n *normalizer) rawLine(line string) string {
	vals := sortedKeys(n.names)
	sort.SliceStable(vals, func(i, j int) bool { return len(vals[i]) > len(vals[j]) })
	for _, v := range vals {
		q, _ := json.Marshal(v)
		name := n.names[v]
		line = strings.ReplaceAll(line, string(q), `"{{`+name+`}}"`)
		if strings.HasPrefix(v, "/") {
			line = strings.ReplaceAll(line, string(q[1:len(q)-1]), "{{"+name+"}}")
		}
	}
	return line
}

// expectBuilder collects expect lines, joining adjacent deltas of a stream.
type expectBuilder struct {
	lines  []map[string]any
	labels []string
	last   map[string]int // stream → index of its latest line
	latest int            // index of the line the latest received line went into
}

func (b *expectBuilder) add(obj map[string]any) {
	if b.last == nil {
		b.last = map[string]int{}
	}
	key, _, err := streamKey(obj)
	if err != nil {
		key = "?"
	}
	if i, ok := b.last[key]; ok && sameRun(b.lines[i], obj) {
		a, ok1 := b.lines[i]["delta"].(string)
		d, ok2 := obj["delta"].(string)
		if ok1 && ok2 {
			b.lines[i]["delta"] = a + d
			b.latest = i
			return
		}
	}
	b.lines = append(b.lines, obj)
	b.labels = append(b.labels, "")
	b.last[key] = len(b.lines) - 1
	b.latest = len(b.lines) - 1
}

func (b *expectBuilder) String() string {
	var s strings.Builder
	for i, l := range b.lines {
		if b.labels[i] != "" {
			s.WriteString("@" + b.labels[i] + " ")
		}
		s.WriteString(marshalLine(l) + "\n")
	}
	return s.String()
}

// marshalLine writes a line with "type", "id" and "result"/"error" first,
// the way the protocol's examples read.
func marshalLine(v map[string]any) string {
	var b bytes.Buffer
	b.WriteByte('{')
	keys := sortedKeys(v)
	order := map[string]int{"type": -4, "id": -3, "result": 2, "error": 2, "session": 3, "request": 4}
	sort.SliceStable(keys, func(i, j int) bool { return order[keys[i]] < order[keys[j]] })
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		b.WriteString(canonNoEscape(v[k]))
	}
	b.WriteByte('}')
	return b.String()
}

func canonNoEscape(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return canon(v)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// Update rewrites the expect section of c's file from the lines r
// received, keeping the labels the case's waits use and its placeholder
// names. The rewritten case is exact; loosen it by hand where the
// requirements allow.
func Update(c *Case, r *Result) error {
	if c.printMode() && !c.jsonOutput() {
		return fmt.Errorf("conformance: update %s: a print case without an expect section prints text, not lines: edit its stdout section by hand", c.ID)
	}
	data, err := os.ReadFile(c.File)
	if err != nil {
		return fmt.Errorf("conformance: %w", err)
	}
	n := newNormalizer(r.Bindings)
	var b expectBuilder
	placed := map[string]bool{}
	into := make([]int, len(r.Lines)) // received line → expect line
	for i, raw := range r.Lines {
		v, err := decode([]byte(raw))
		obj, ok := v.(map[string]any)
		if err != nil || !ok {
			return fmt.Errorf("conformance: update %s: line %d is not a JSON object", c.ID, i+1)
		}
		b.add(n.value("", obj).(map[string]any))
		into[i] = b.latest
	}
	for i, l := range r.labelAt {
		b.labels[into[i]] = l
		placed[l] = true
	}
	for _, s := range c.client {
		for _, l := range s.labels {
			if !placed[l] {
				return fmt.Errorf("conformance: update %s: no received line matched @%s, which client line %d waits for", c.ID, l, s.line)
			}
		}
	}
	a := parseArchive(data)
	found := false
	for i := range a.files {
		if a.files[i].name == "expect" {
			a.files[i].data, found = []byte(b.String()), true
		}
	}
	if !found {
		a.files = append(a.files, archiveFile{name: "expect", data: []byte(b.String())})
	}
	if err := os.WriteFile(c.File, formatArchive(a), 0o644); err != nil {
		return fmt.Errorf("conformance: %w", err)
	}
	return nil
}
