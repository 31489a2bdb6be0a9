package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"
)

// normalizer replaces the volatile values of recorded lines by
// placeholders and matchers (spec/conformance.md, section 5).
type normalizer struct {
	names map[string]string // a bound string value → its placeholder name
	paths []string          // bound path values, longest first
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

// volatileNumber are the fields whose numbers differ between runs of the
// same session: measured durations, and token estimates over a system
// prompt that names the temp dir.
var volatileNumber = map[string]bool{"ms": true, "duration_ms": true, "first_byte_ms": true, "tokens_before": true, "tokens_after": true}

// volatileID are the keys of a model answer's id (e's usage event, pi's
// messages): the tape names it after the entry that served the call,
// which concurrent calls may take in another order on another run.
var volatileID = map[string]bool{"response_id": true, "responseId": true}

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
	case json.Number:
		if volatileNumber[key] {
			return "$int>=0"
		}
	}
	return v
}

func (n *normalizer) str(key, s string) string {
	if name, ok := n.names[s]; ok {
		return "{{" + name + "}}"
	}
	switch {
	case volatileID[key] && s != "":
		return "$nonempty"
	case key == "session" && s != "" && !strings.HasPrefix(s, "/"):
		return "{{" + n.bind(s, "s") + "}}"
	case entryIDKey[key] && entryIDRE.MatchString(s):
		return "{{" + n.bind(s, "e") + "}}" // a log entry's random id
	}
	if len(s) >= 20 && strings.Contains(s, "T") {
		if _, err := time.Parse(time.RFC3339Nano, s); err == nil {
			return "$datetime"
		}
	}
	orig := s
	for _, p := range n.paths {
		if strings.Contains(s, p) {
			s = strings.ReplaceAll(s, p, "{{"+n.names[p]+"}}")
		}
	}
	// Ids quoted inside longer strings (errors, warnings) become
	// placeholders too.
	for _, v := range sortedKeys(n.names) {
		if name := n.names[v]; len(v) >= 8 && !strings.HasPrefix(v, "/") && strings.Contains(s, v) {
			s = strings.ReplaceAll(s, v, "{{"+name+"}}")
		}
	}
	if logPathRE.MatchString(s) && strings.HasPrefix(s, "{{home}}/sessions/") && !strings.ContainsAny(s, " \n") {
		// A whole log path: its directory is the cwd's slug, which
		// differs on every run; bind the path so later lines and
		// client requests can name it.
		return "{{" + n.bindRaw(orig, "path") + "}}"
	}
	if volatileRE.MatchString(s) {
		return "$regexp:" + volatilePattern(s)
	}
	if strings.HasPrefix(s, "$") {
		return "$" + s
	}
	return s
}

// entryIDKey are the fields that hold a log entry's id.
var entryIDKey = map[string]bool{"id": true, "parent": true, "leaf": true, "first_kept": true, "since": true, "entry": true}

var (
	entryIDRE = regexp.MustCompile(`^[0-9a-f]{8,64}$`)
	logPathRE = regexp.MustCompile(`^\{\{home\}\}/sessions/[^/]+/`)
	// volatileRE finds what differs between runs inside a string: the
	// slug of a log directory, a date-time, a duration in ms, a process id
	// (the holder of a lock).
	volatileRE = regexp.MustCompile(`\{\{home\}\}/sessions/[^/{}]+/|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)|\b\d+ ms\b|\bpid \d+\b`)
)

// volatilePattern is an anchored regular expression for s with its
// volatile parts made wildcards; placeholders stay, to be expanded (and
// quoted) when matched.
func volatilePattern(s string) string {
	var b strings.Builder
	b.WriteString("^")
	last := 0
	for _, loc := range volatileRE.FindAllStringIndex(s, -1) {
		b.WriteString(quoteKeepingPlaceholders(s[last:loc[0]]))
		switch v := s[loc[0]:loc[1]]; {
		case strings.HasPrefix(v, "{{home}}"):
			b.WriteString("{{home}}/sessions/[^/]+/")
		case strings.HasSuffix(v, " ms"):
			b.WriteString("[0-9]+ ms")
		case strings.HasPrefix(v, "pid "):
			b.WriteString("pid [0-9]+")
		default:
			b.WriteString(`[0-9T:.Z+-]+`)
		}
		last = loc[1]
	}
	b.WriteString(quoteKeepingPlaceholders(s[last:]))
	b.WriteString("$")
	return b.String()
}

func quoteKeepingPlaceholders(s string) string {
	var b strings.Builder
	last := 0
	for _, loc := range placeholderRE.FindAllStringIndex(s, -1) {
		b.WriteString(regexp.QuoteMeta(s[last:loc[0]]))
		b.WriteString(s[loc[0]:loc[1]])
		last = loc[1]
	}
	b.WriteString(regexp.QuoteMeta(s[last:]))
	return b.String()
}

// bind gives v a new placeholder name prefix1, prefix2 … not yet used.
func (n *normalizer) bind(v, prefix string) string {
	if name, ok := n.names[v]; ok {
		return name
	}
	for i := 1; ; i++ {
		name := fmt.Sprintf("%s%d", prefix, i)
		if !n.bound(name) {
			n.names[v] = name
			return name
		}
	}
}

// bindRaw binds a path value (longest-first replacement in client lines).
func (n *normalizer) bindRaw(v, prefix string) string {
	name := n.bind(v, prefix)
	n.paths = append(n.paths, v)
	sort.Slice(n.paths, func(i, j int) bool { return len(n.paths[i]) > len(n.paths[j]) })
	return name
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
		if strings.HasPrefix(v, "/") || len(v) >= 8 {
			// Inside longer strings too: paths, ids quoted in text.
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
	batch  map[string]int // stream → index of its latest tool_batch
	latest int            // index of the line the latest received line went into
}

// add appends a received line, or joins it to its stream's delta run; it
// returns the line's stream.
func (b *expectBuilder) add(obj map[string]any) string {
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
			return key
		}
	}
	b.lines = append(b.lines, obj)
	b.labels = append(b.labels, "")
	b.last[key] = len(b.lines) - 1
	b.latest = len(b.lines) - 1
	if obj["type"] == "tool_batch" {
		if b.batch == nil {
			b.batch = map[string]int{}
		}
		b.batch[key] = b.latest
	}
	return key
}

// waitable is the line a wait for line i names: i, or for a per-call line
// of a batch of two calls or more, the batch's tool_batch (the per-call
// lines' order varies, so dropConcurrentTools drops them unless named).
func (b *expectBuilder) waitable(key string, i int) int {
	if j, ok := b.batch[key]; ok && perCall(b.lines[i]) && concurrent(b.lines[j]) {
		return j
	}
	return i
}

// cutRuns loosens the delta runs that were still streaming when the
// client stopped work (by line index: the text they had then). Where the
// stop cuts a run depends on the machine's speed, so such a run is
// expected to start with the text received before the stop (a wait on it
// is met once that text is in), and so are the texts after it in its
// stream that hold the run (a result's output, a tool_end's content).
func (b *expectBuilder) cutRuns(cut map[int]string) {
	for i, before := range cut {
		full, _ := b.lines[i]["delta"].(string)
		if full == "" || strings.HasPrefix(full, "$") && !strings.HasPrefix(full, "$$") {
			continue // a matcher already
		}
		full, before = strings.TrimPrefix(full, "$"), strings.TrimPrefix(before, "$") // "$$x" is "$x"
		b.lines[i]["delta"] = "$prefix:" + before
		key, _, _ := streamKey(b.lines[i])
		for _, l := range b.lines[i+1:] {
			if k, _, _ := streamKey(l); k != key {
				continue
			}
			holders := []map[string]any{l}
			if r, ok := l["result"].(map[string]any); ok {
				holders = append(holders, r)
			}
			for _, h := range holders {
				for _, f := range []string{"output", "final_output", "content"} {
					if s, ok := h[f].(string); ok && !isPattern(s) {
						if at := strings.Index(s, full); at >= 0 {
							h[f] = "$prefix:" + s[:at] + before
						}
					}
				}
			}
		}
	}
}

// perCall reports whether l is one call's line of a tool batch.
func perCall(l map[string]any) bool {
	t, _ := l["type"].(string)
	return t == "tool_start" || t == "tool_output" || t == "tool_end"
}

// concurrent reports whether l is a tool batch of two calls or more.
func concurrent(l map[string]any) bool {
	calls, _ := l["calls"].([]any)
	return l["type"] == "tool_batch" && len(calls) > 1
}

// dropConcurrentTools removes the per-call lines (tool_start, tool_output,
// tool_end) of each stream with a tool batch of two calls or more: calls
// of one batch may run at once, in an order that varies from run to run
// (a recording may even show them one after the other), and order is
// checked within a stream, so a recording cannot fix theirs. The stream's
// tool_batch, text and result stay, and the model calls still see the
// tools' results. A stream where such a line carries a label (a #wait of
// the client names it) keeps its lines.
func (b *expectBuilder) dropConcurrentTools() {
	batched := map[string]bool{}
	keys := make([]string, len(b.lines))
	for i, l := range b.lines {
		key, _, err := streamKey(l)
		if err != nil {
			key = "?"
		}
		keys[i] = key
		if concurrent(l) {
			batched[key] = true
		}
	}
	for i, l := range b.lines {
		if perCall(l) && b.labels[i] != "" {
			delete(batched, keys[i])
		}
	}
	if len(batched) == 0 {
		return
	}
	var lines []map[string]any
	var labels []string
	for i, l := range b.lines {
		if batched[keys[i]] && perCall(l) {
			continue
		}
		lines, labels = append(lines, l), append(labels, b.labels[i])
	}
	b.lines, b.labels, b.last, b.batch, b.latest = lines, labels, nil, nil, 0
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
