package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
)

// normalizer replaces the volatile values of recorded lines by
// placeholders and matchers (spec/conformance.md, section 5).
type normalizer struct {
	names map[string]string // a bound string value → its placeholder name
	paths []string          // bound path values, longest first
	k     *volatileKeys     // what the dialect's lines name volatile values by
}

func newNormalizer(d dialect, bindings map[string]any) *normalizer {
	n := &normalizer{names: map[string]string{}, k: keysOf(d)}
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

// volatileKeys are the fields of a dialect's lines that hold values which
// differ between runs of the same session.
type volatileKeys struct {
	session map[string]bool // a session id: {{s1}} …
	entry   map[string]bool // a log entry's id, when entryRE matches it: {{e1}} …
	entryRE *regexp.Regexp
	// number are the fields whose numbers differ between runs (measured
	// durations, clock times, token estimates over a system prompt that
	// names the temp dir), with the matcher they become.
	number map[string]string
}

var (
	erpcKeys = &volatileKeys{
		session: map[string]bool{"session": true},
		entry:   map[string]bool{"id": true, "parent": true, "leaf": true, "first_kept": true, "since": true, "entry": true},
		entryRE: regexp.MustCompile(`^[0-9a-f]{8,64}$`),
		number:  map[string]string{"ms": "$int>=0", "duration_ms": "$int>=0", "first_byte_ms": "$int>=0", "tokens_before": "$int>=0", "tokens_after": "$int>=0", "wall_time_seconds": "$number"},
	}
	// pi's entry ids are e's (hex) or derived from the session's ULID,
	// either with suffixes naming the entry (".model", ".system", ".1"); its
	// messages carry the clock in milliseconds (timestamp).
	piKeys = &volatileKeys{
		session: map[string]bool{"sessionId": true},
		entry:   map[string]bool{"id": true, "parentId": true, "leafId": true, "entryId": true, "firstKeptEntryId": true, "targetId": true},
		entryRE: regexp.MustCompile(`^([0-9a-f]{8,64}|[0-9A-HJKMNP-TV-Z]{26})(\.[0-9A-Za-z_-]+)*$`),
		number: map[string]string{"timestamp": "$int>=0", "durationMs": "$int>=0", "tokensBefore": "$int>=0", "tokensAfter": "$int>=0",
			"estimatedTokensAfter": "$int>=0", "wall_time_seconds": "$number"},
	}
	acpKeys = &volatileKeys{session: map[string]bool{"sessionId": true}, entry: map[string]bool{}, entryRE: erpcKeys.entryRE, number: map[string]string{}}
)

// keysOf is the volatile fields of d's lines.
func keysOf(d dialect) *volatileKeys {
	switch d.(type) {
	case piDialect:
		return piKeys
	case acpDialect:
		return acpKeys
	}
	return erpcKeys
}

// volatileID are the keys of a model answer's id (e's usage event, pi's
// messages): the tape names it after the entry that served the call,
// which concurrent calls may take in another order on another run.
var volatileID = map[string]bool{"response_id": true, "responseId": true}

// value normalises v; key is the name of the field holding it.
func (n *normalizer) value(key string, v any) any {
	switch x := v.(type) {
	case map[string]any:
		// In key order, so that placeholders are numbered alike on
		// every run.
		out := make(map[string]any, len(x))
		for _, k := range sortedKeys(x) {
			out[k] = n.value(k, x[k])
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
		if m := n.k.number[key]; m != "" {
			return m
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
	case n.k.session[key] && s != "" && !strings.HasPrefix(s, "/"):
		return "{{" + n.bind(s, "s") + "}}"
	case n.k.entry[key] && n.k.entryRE.MatchString(s):
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
	if logPathRE.MatchString(s) && !strings.ContainsAny(s, " \n") {
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

var (
	// logPathRE is a log path: e's ($E_HOME/sessions/SLUG/), pi's
	// ($PI_CODING_AGENT_DIR/sessions/--SLUG--/, inside E_HOME in a case)
	// or one in a folder of the cwd (pi's --session-dir).
	logPathRE = regexp.MustCompile(`^(\{\{home\}\}(/pi-agent)?/sessions/[^/]+/|\{\{cwd\}\}/.*\.jsonl$)`)
	// volatileRE finds what differs between runs inside a string: the
	// slug of a log directory, a date-time, a duration in ms, a process id
	// (the holder of a lock), a loopback server's port (the tape's, which
	// pi's models.json names), the temp file of a pi bash output, the day
	// a system prompt names ("Date: 2026-12-05": pi's events show e's).
	volatileRE = regexp.MustCompile(`/[^\s"\]]*/pi-bash-[0-9a-f]{16}\.log|http://127\.0\.0\.1:\d+\b|\{\{home\}\}(/pi-agent)?/sessions/[^/{}]+/|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)|\b\d+ ms\b|\bpid \d+\b|\bDate: \d{4}-\d\d-\d\d\b`)
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
		case strings.HasPrefix(v, "{{home}}/pi-agent"):
			b.WriteString("{{home}}/pi-agent/sessions/[^/]+/")
		case strings.HasPrefix(v, "{{home}}"):
			b.WriteString("{{home}}/sessions/[^/]+/")
		case strings.HasSuffix(v, " ms"):
			b.WriteString("[0-9]+ ms")
		case strings.HasPrefix(v, "pid "):
			b.WriteString("pid [0-9]+")
		case strings.HasPrefix(v, "http://"):
			b.WriteString(`http://127\.0\.0\.1:[0-9]+`)
		case strings.HasSuffix(v, ".log"):
			b.WriteString(`/\S*/pi-bash-[0-9a-f]{16}\.log`)
		case strings.HasPrefix(v, "Date: "):
			b.WriteString(`Date: [0-9]{4}-[0-9]{2}-[0-9]{2}`)
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

// expectBuilder collects expect lines of a case in dialect d (nil: e rpc),
// joining adjacent deltas of a stream. c holds the client lines sent so
// far, by which acp places a response in its session's stream.
type expectBuilder struct {
	d      dialect
	c      *Case
	lines  []map[string]any
	labels []string
	opt    []string       // a line's prefix: "" or "?* " (loosenStops)
	last   map[string]int // stream → index of its latest line
	batch  map[string]int // stream → index of its latest tool_batch
	latest int            // index of the line the latest received line went into
}

func (b *expectBuilder) dialect() dialect {
	if b.d == nil {
		return erpcDialect{}
	}
	return b.d
}

// key is the stream of a line; "?" for one the dialect cannot place.
func (b *expectBuilder) key(obj map[string]any) string {
	if b.c == nil {
		b.c = &Case{}
	}
	lc, err := b.dialect().classify(obj, b.c, nil)
	if err != nil {
		return "?"
	}
	return lc.key
}

// add appends a received line, or joins it to its stream's delta run; it
// returns the line's stream.
func (b *expectBuilder) add(obj map[string]any) string {
	if b.last == nil {
		b.last = map[string]int{}
	}
	key, d := b.key(obj), b.dialect()
	if i, ok := b.last[key]; ok {
		ra, a, ok1 := d.delta(b.lines[i])
		rb, t, ok2 := d.delta(obj)
		if ok1 && ok2 && ra == rb {
			d.setDelta(b.lines[i], a+t)
			b.latest = i
			return key
		}
	}
	b.lines = append(b.lines, obj)
	b.labels = append(b.labels, "")
	b.opt = append(b.opt, "")
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
// stream that hold the run (e rpc: a result's output, a tool_end's
// content; pi: the message's content in text_end, message_end, turn_end
// and agent_end) and those of later answers (the history that
// session.entries or get_messages read).
func (b *expectBuilder) cutRuns(cut map[int]string) {
	d := b.dialect()
	for i, before := range cut {
		_, full, _ := d.delta(b.lines[i])
		if full == "" || strings.HasPrefix(full, "$") && !strings.HasPrefix(full, "$$") {
			continue // a matcher already
		}
		full, before = strings.TrimPrefix(full, "$"), strings.TrimPrefix(before, "$") // "$$x" is "$x"
		d.setDelta(b.lines[i], "$prefix:"+before)
		key := b.key(b.lines[i])
		for _, l := range b.lines[i+1:] {
			// Its stream's later lines, and any later answer: the
			// history a later request reads holds the cut text too.
			if lc, err := d.classify(l, b.c, nil); err == nil && (lc.key == key || !lc.event) {
				cutHolders(l, full, before)
			}
		}
	}
}

// cutHolders replaces, at any depth of v, each literal string of a field
// that holds text (holderFields) and contains full by a $prefix: of what
// came before full and before.
func cutHolders(v any, full, before string) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if s, ok := e.(string); ok && holderFields[k] && !isPattern(s) {
				if at := strings.Index(s, full); at >= 0 {
					x[k] = "$prefix:" + s[:at] + before
				}
				continue
			}
			cutHolders(e, full, before)
		}
	case []any:
		for _, e := range x {
			cutHolders(e, full, before)
		}
	}
}

// holderFields are the fields that may hold a delta run's text after it:
// e rpc's result output and final_output and a tool_end's content; pi's
// text_end content and its messages' text parts.
var holderFields = map[string]bool{"output": true, "final_output": true, "content": true, "text": true}

// stopWindow is what a stream printed between a stop and the stopped
// work's end: lines [from, to) of the builder that are in stream key.
type stopWindow struct {
	key      string
	from, to int
	steered  bool // opened by a line that raced the work and may change it (dialect.steers)
	stopped  bool // a stop came (it opened the window, or came while it was open)
	early    bool // a stop came before the work showed: it may land in time or after the work's end
	own      bool // the work of a request that raced other work: it may be refused or run; ends at its answer
	// queued are the texts of pi steers and follow-ups that raced the
	// work: delivered in it, or, when it ended first, in the next run.
	queued []string
}

// loosenStops makes each stop window timing-independent (spec/conformance.md
// 5): how far the server got between the client's stop and the moment it
// landed (a usage, a tool batch, a free-running tool's start and end, the
// next step's model call) depends on the machine's speed, so the window's
// lines become one "?*" line taking any line of the stream (progressLine)
// until the work's end, which stays required. The counts in that end and
// after it (usage, tools) depend on the same progress and are matched by
// type. A window a #wait names a line of keeps its lines.
func (b *expectBuilder) loosenStops(windows []stopWindow) {
	skip := map[int]bool{}
	first := map[int][]stopWindow{} // the index a window's ?* line goes before
	for _, w := range windows {
		// Before the texts are loosened below: they find the deliveries.
		for _, at := range b.queuedJoin(w, skip) {
			first[at] = append(first[at], stopWindow{key: w.key})
		}
	}
	for _, w := range windows {
		var in []int
		labelled := false
		for i := w.from; i < w.to; i++ {
			if b.key(b.lines[i]) == w.key {
				in = append(in, i)
				labelled = labelled || b.labels[i] != ""
			}
		}
		if labelled {
			continue
		}
		for _, i := range in {
			skip[i] = true
		}
		first[w.from] = append(first[w.from], w)
		end := -1
		for i := w.to; i < len(b.lines); i++ {
			if b.key(b.lines[i]) == w.key {
				loosenCounts(b.lines[i])
				// How much text got out before a stop landed is the
				// timing's as well (a shell's output, an answer cut
				// before its first delta).
				if w.stopped {
					// A steer may have made the work end sooner or later.
					loosenAborted(b.lines[i], w.early || w.steered)
					stoppedAnswer(b.lines[i])
				}
				if w.steered || w.stopped {
					loosenTexts(b.lines[i])
				}
				if end < 0 {
					end = i
				}
			}
		}
		if w.steered && end >= 0 {
			// A line that raced the work may also start more of it
			// after its end (pi's follow_up once the run settled).
			first[end+1] = append(first[end+1], w)
		}
	}
	if len(first) == 0 {
		return
	}
	before := map[int][]map[string]any{}
	for i, ws := range first {
		for _, w := range ws {
			before[i] = append(before[i], b.dialect().progressLine(w.key))
		}
	}
	b.splice(before, skip)
}

// queuedJoin loosens the run after window w for the pi steers and
// follow-ups that raced w's work (w.queued): whether one lands in that
// work or after it ended is the timing's, and one that lands after is
// queued (pi queues them while idle) for the next run, which takes a
// steer after its prompt and a follow-up when it would stop, as more
// turns. So in the first run of w's stream after w's end, each delivery
// of such a message (its queue_update, its user message, and the turn it
// starts) goes into drop, and the run's agent_end messages are matched
// as an array; it returns the indexes a "?*" line goes before: each
// delivery's, the run's first assistant message's and its agent_end's.
// A run a #wait names a line of, or one another window takes, is kept.
func (b *expectBuilder) queuedJoin(w stopWindow, drop map[int]bool) []int {
	if len(w.queued) == 0 || w.to < 0 {
		return nil
	}
	start, end := -1, -1 // the next run's agent_start and agent_end
	for i := w.to + 1; i < len(b.lines) && end < 0; i++ {
		switch t := b.lines[i]["type"]; {
		case b.key(b.lines[i]) != w.key:
		case t == "agent_start" && start < 0:
			start = i
		case t == "agent_end" && start >= 0:
			end = i
		}
	}
	if end < 0 {
		return nil
	}
	var group []int // the delivery being read
	var at []int
	mine, assistant := map[int]bool{}, -1
	turn := -1 // the current turn's turn_start
	for i := start + 1; i < end; i++ {
		l := b.lines[i]
		if b.key(l) != w.key {
			continue
		}
		if b.labels[i] != "" || drop[i] {
			return nil
		}
		msg, _ := l["message"].(map[string]any)
		switch t := l["type"]; {
		case t == "turn_start":
			turn, group = i, []int{i}
		case t == "queue_update":
			group = append(group, i)
		case t == "message_start" && msg["role"] == "user" && slices.Contains(w.queued, userText(msg)):
			if len(group) > 0 && group[0] == turn {
				// It starts its turn: the whole turn is the delivery.
				for j := turn; j < end; j++ {
					if b.key(b.lines[j]) == w.key {
						mine[j] = true
						if b.lines[j]["type"] == "turn_end" {
							break
						}
					}
				}
			}
			for _, j := range append(group, i) {
				mine[j] = true
			}
			if i+1 < end && b.lines[i+1]["type"] == "message_end" {
				mine[i+1] = true
			}
			at, group = append(at, i), nil
		case t == "message_start" && msg["role"] == "assistant" && assistant < 0:
			assistant, group = i, nil
		default:
			group = nil
		}
	}
	for j := range mine {
		if b.labels[j] != "" {
			return nil
		}
	}
	for j := range mine {
		drop[j] = true
	}
	if assistant >= 0 {
		at = append(at, assistant)
	}
	b.lines[end]["messages"] = "$array"
	return append(at, end)
}

// userText is the text of a pi user message (its content a string, or
// blocks whose texts are joined).
func userText(msg map[string]any) string {
	if s, ok := msg["content"].(string); ok {
		return s
	}
	var t strings.Builder
	blocks, _ := msg["content"].([]any)
	for _, c := range blocks {
		if s, ok := asObject(c)["text"].(string); ok {
			t.WriteString(s)
		}
	}
	return t.String()
}

// splice rebuilds b's lines: the "?*" lines of before[i] go before line i
// (before[len] after the last), and the lines in drop go.
func (b *expectBuilder) splice(before map[int][]map[string]any, drop map[int]bool) {
	var lines []map[string]any
	var labels, opt []string
	for i := 0; i <= len(b.lines); i++ {
		for _, l := range before[i] {
			lines, labels, opt = append(lines, l), append(labels, ""), append(opt, "?* ")
		}
		if i < len(b.lines) && !drop[i] {
			lines, labels, opt = append(lines, b.lines[i]), append(labels, b.labels[i]), append(opt, b.opt[i])
		}
	}
	b.lines, b.labels, b.opt, b.last, b.batch, b.latest = lines, labels, opt, nil, nil, 0
}

// stoppedAnswer keeps only the framing of an e rpc answer to work a stop
// may cut or not: an error (a compaction interrupted) where another run
// finishes first, or a compaction's result where another run's stop
// lands in time.
func stoppedAnswer(line map[string]any) {
	r, _ := line["result"].(map[string]any)
	_, compacted := r["tokens_before"]
	if _, failed := line["error"]; line["type"] == nil && (failed || compacted) {
		for k := range line {
			if k != "id" {
				delete(line, k)
			}
		}
	}
}

// loosenAborted matches by type an aborted:false of line or of its
// result (any aborted, when early): the stop came after the work had
// ended (or as it ended), and on another run it may land in time; one
// that came before the work showed may land in time or not. A shell
// command's cancelled likewise, and then its exit code (null when killed);
// and an ACP prompt's stopReason end_turn (any of the two, when early) is
// end_turn or cancelled.
func loosenAborted(line map[string]any, early bool) {
	if r := asObject(line["result"]); r != nil {
		if s, ok := r["stopReason"].(string); ok && (s == "end_turn" || early && s == "cancelled") {
			r["stopReason"] = map[string]any{"$oneof": []any{"end_turn", "cancelled"}}
		}
	}
	for _, m := range []map[string]any{line, asObject(line["result"])} {
		for _, k := range []string{"aborted", "cancelled"} {
			if a, ok := m[k].(bool); ok && (!a || early) {
				m[k] = "$bool"
				if _, ok := m["exit_code"]; ok && k == "cancelled" {
					m["exit_code"] = "$any"
				}
			}
		}
	}
}

func asObject(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// inProgress reports whether stream key of dialect d has work a stop can
// cut: an e rpc request whose response has not come, pi's process stream
// during a run (after agent_start, before agent_settled), an ACP session
// whose latest line is an update or a request of the agent's.
func (b *expectBuilder) inProgress(key string) bool {
	i, ok := b.last[key]
	if !ok {
		return false
	}
	switch b.dialect().(type) {
	case piDialect:
		for j := len(b.lines) - 1; j >= 0 && key == "process"; j-- {
			switch b.lines[j]["type"] {
			case "agent_start":
				return true
			case "agent_settled":
				return false
			}
		}
		return false
	case acpDialect:
		_, isMessage := b.lines[i]["method"]
		return strings.HasPrefix(key, "s:") && isMessage
	}
	_, isEvent := b.lines[i]["type"]
	return strings.HasPrefix(key, "r:") && isEvent
}

// working is the streams with work in progress (inProgress) in the scope
// of a client line naming session ("": every stream).
func (b *expectBuilder) working(n *normalizer, session string) []string {
	d := b.dialect()
	var keys []string
	for _, key := range sortedKeys(b.last) {
		if b.inProgress(key) && sessionScoped(d, n, b.lines[b.last[key]], session) {
			keys = append(keys, key)
		}
	}
	return keys
}

// endsWork reports whether a line of dialect d ends the work of its
// stream that a stop cut: e rpc's turn_end or response, pi's
// agent_settled, an ACP response (session/prompt's stopReason).
func endsWork(d dialect, obj map[string]any) bool {
	switch d.(type) {
	case piDialect:
		return obj["type"] == "agent_settled"
	case acpDialect:
		_, isMessage := obj["method"]
		return !isMessage
	}
	t, isEvent := obj["type"]
	return !isEvent || t == "turn_end"
}

// loosenUsage matches the counts of a line by type: a usage event's
// numbers, and those of usage and tools counts in any line, and e rpc's
// tool call ids, which count the session's calls so far.
func loosenUsage(line map[string]any) {
	switch line["type"] {
	case "tool_start", "tool_end", "tool_output":
		if _, ok := line["id"].(json.Number); ok {
			line["id"] = "$int>0"
		}
	case "tool_batch":
		calls, _ := line["calls"].([]any)
		for _, c := range calls {
			if m, ok := c.(map[string]any); ok {
				if _, ok := m["id"].(json.Number); ok {
					m["id"] = "$int>0"
				}
			}
		}
	}
	if line["type"] == "usage" {
		for k, v := range line {
			if _, ok := v.(json.Number); ok {
				line[k] = "$number"
			}
		}
	}
	loosenCounts(line)
}

// loosenCounts matches the numbers of v's usage and tools counts, a
// compaction's summary_chars (how long the history it summarised was) and
// an ACP usage_update's used (the context so far) by type.
func loosenCounts(v any) {
	var numbers func(any) any
	numbers = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				x[k] = numbers(e)
			}
		case []any:
			for i, e := range x {
				x[i] = numbers(e)
			}
		case json.Number:
			return "$number"
		}
		return v
	}
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if k == "usage" || k == "tools" || k == "summary_chars" || k == "used" && x["sessionUpdate"] == "usage_update" {
				x[k] = numbers(e)
			} else {
				loosenCounts(e)
			}
		}
	case []any:
		for _, e := range x {
			loosenCounts(e)
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
		key := b.key(l)
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
	b.keep(func(i int) bool { return !batched[keys[i]] || !perCall(b.lines[i]) })
}

// dropPiConcurrentCalls replaces, in a pi recording, the lines between
// the assistant message of a step with two tool calls or more and the
// step's turn_end (the calls' tool_execution_start, _update and _end and
// their toolResult messages) by one "?*" line taking any line: pi's events
// come as the calls finish, in an order that varies from run to run (e
// rpc's tool_batch: dropConcurrentTools; pi's lines of these types are
// expected elsewhere in the stream, so they cannot just be left out). The
// assistant message names the calls, the history keeps them in call order,
// and the turn_end's toolResults (and the run's agent_end messages) must
// each still come, in any order. A step where a #wait names such a line
// keeps its lines.
func (b *expectBuilder) dropPiConcurrentCalls() {
	drop := map[int]bool{}
	first := -1         // the batch's first line after its assistant message_end
	concurrent := false // the run has had such a batch
	var step []int
	labelled := false
	for i, l := range b.lines {
		switch {
		case b.key(l) != "process":
		case l["type"] == "message_end" && piCalls(l) >= 2:
			first, labelled, step = i+1, false, nil
		case first >= 0 && l["type"] != "turn_end":
			step = append(step, i)
			labelled = labelled || b.labels[i] != ""
		case first >= 0:
			if !labelled && len(step) > 0 {
				for _, j := range step {
					drop[j] = true
				}
				drop[step[0]] = false
				b.lines[step[0]], b.opt[step[0]] = b.dialect().progressLine("process"), "?* "
				anyOrder(l, "toolResults")
				concurrent = true
			}
			first = -1
		case concurrent && l["type"] == "agent_end":
			anyOrder(l, "messages") // the run's, the results as they finished
			concurrent = false
		}
	}
	if len(drop) > 0 {
		b.keep(func(i int) bool { return !drop[i] })
	}
}

// dropACPConcurrentCalls: after an ACP session's batch of two tool calls
// or more (consecutive tool_call updates), how their tool_call_update
// lines interleave varies from run to run (calls run at once), so each of
// them goes, a "?*" line taking any tool_call_update of the session in
// their place, until the session's next line of another kind. The
// session/request_permission requests among them stay, each expected in
// turn (the client answers them by their ids), and so does a line a
// #wait names, with a "?*" line after it.
func (b *expectBuilder) dropACPConcurrentCalls() {
	type state struct {
		calls int  // consecutive tool_call updates so far
		open  bool // in the updates of a batch of two or more
		last  int  // the latest tool_call
	}
	states := map[string]*state{}
	drop, after := map[int]bool{}, map[int]bool{}
	for i, l := range b.lines {
		key := b.key(l)
		s := states[key]
		if s == nil {
			s = &state{}
			states[key] = s
		}
		p, _ := l["params"].(map[string]any)
		u, _ := p["update"].(map[string]any)
		switch kind, _ := u["sessionUpdate"].(string); {
		case l["method"] == "session/update" && kind == "tool_call":
			s.calls, s.open, s.last = s.calls+1, false, i
		case l["method"] == "session/request_permission" || l["method"] == "session/update" && kind == "tool_call_update":
			if s.calls >= 2 {
				s.open, after[s.last] = true, true
			}
			s.calls = 0
			switch {
			case !s.open:
			case b.labels[i] != "":
				after[i] = true
			case l["method"] == "session/update":
				drop[i] = true
			}
		default:
			s.calls, s.open = 0, false
		}
	}
	if len(drop) == 0 {
		return
	}
	before := map[int][]map[string]any{}
	for i := range after {
		p, _ := b.lines[i]["params"].(map[string]any)
		before[i+1] = append(before[i+1], map[string]any{"method": "session/update", "params": map[string]any{
			"sessionId": p["sessionId"], "update": map[string]any{"sessionUpdate": "tool_call_update"}}})
	}
	b.splice(before, drop)
}

// anyOrder makes l's array field key match its elements in any order.
func anyOrder(l map[string]any, key string) {
	if rs, ok := l[key].([]any); ok {
		some := make([]any, len(rs))
		for k, r := range rs {
			some[k] = map[string]any{"$some": r}
		}
		l[key] = map[string]any{"$all": some}
	}
}

// piCalls is the number of tool calls in a pi line's assistant message.
func piCalls(l map[string]any) int {
	m, _ := l["message"].(map[string]any)
	content, _ := m["content"].([]any)
	n := 0
	for _, c := range content {
		if c, _ := c.(map[string]any); m["role"] == "assistant" && c["type"] == "toolCall" {
			n++
		}
	}
	return n
}

// dropPartialOutput replaces each run of partial output lines of a stream
// (dialect.partialOutput; lines of other streams may come between) by one
// "?*" line taking any such line: how many a replay prints depends on the
// chunks. The tool's end line and the result still show its whole output.
// A line a #wait names stays as it is.
func (b *expectBuilder) dropPartialOutput() {
	d := b.dialect()
	inRun := map[string]bool{} // stream → its latest kept line is a "?*" one
	b.keep(func(i int) bool {
		key := b.key(b.lines[i])
		if b.labels[i] != "" || !d.partialOutput(b.lines[i]) {
			inRun[key] = false
			return true
		}
		if inRun[key] {
			return false
		}
		inRun[key] = true
		b.lines[i], b.opt[i] = d.partialLine(b.lines[i]), "?* "
		return true
	})
}

// keep keeps the lines i for which keep(i) is true, in order (keep may
// rewrite line i), and forgets the indexes that pointed into the lines.
func (b *expectBuilder) keep(keep func(i int) bool) {
	var lines []map[string]any
	var labels, opt []string
	for i := range b.lines {
		if keep(i) {
			lines, labels, opt = append(lines, b.lines[i]), append(labels, b.labels[i]), append(opt, b.opt[i])
		}
	}
	b.lines, b.labels, b.opt, b.last, b.batch, b.latest = lines, labels, opt, nil, nil, 0
}

func (b *expectBuilder) String() string {
	var s strings.Builder
	for i, l := range b.lines {
		s.WriteString(b.opt[i])
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
	n := newNormalizer(dialectOf(c), r.Bindings)
	b := expectBuilder{d: dialectOf(c), c: c}
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
