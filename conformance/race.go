package conformance

import (
	"slices"
	"strings"
)

// races follows, while a recording is drafted, the client lines that raced
// work in progress (spec/conformance.md 5): real clients send a request
// while a turn runs, a steer, a second prompt. How far the work had got
// when such a line landed is the timing's, so the recorder loosens what it
// decides, and only that:
//   - the line's answer keeps its framing and the placeholders it binds
//     (racingAnswer);
//   - the events the line puts into the work (dialect.raceBorn) are left
//     out, so that a replay takes them wherever they come, or not at all;
//   - a line that can change the work (dialect.steers) opens a stop window
//     on it and taints the session: the answers to later requests about it
//     keep their framing and placeholders, and later counts are matched by
//     type, as they are after a stop that cut work (how much of it was
//     done shows in what later model calls count).
type races struct {
	d       dialect
	seq     int               // client lines so far
	racing  map[string]bool   // the ids of client requests that raced work in their scope
	raced   map[string]bool   // the streams whose work such a request raced, until it ends
	scope   map[string]string // a client request's id → the session it names ("": none)
	sentAt  map[string]int    // a client request's id → its seq
	tainted map[string]int    // session → the seq of the first line that changed its work racing it
	cut     map[string]int    // session → the seq of the first stop that cut its work
	started map[string]string // a request that starts work (startsWork) → its stream, until the work shows there
	named   map[string]bool   // the placeholders the expected server lines so far name
	answers []map[string]any  // the answers racingAnswer made
}

func newRaces(d dialect) *races {
	return &races{d: d, racing: map[string]bool{}, raced: map[string]bool{}, scope: map[string]string{},
		sentAt: map[string]int{}, tainted: map[string]int{}, cut: map[string]int{}, started: map[string]string{},
		named: map[string]bool{}}
}

// client notes a client line naming session and returns the streams with
// work in progress in its scope: those b shows running (working), and
// those of work asked for that has not shown yet (a pi prompt is answered
// before its run starts).
func (r *races) client(b *expectBuilder, n *normalizer, l recorded, session string) []string {
	working := b.working(n, session)
	for _, id := range sortedKeys(r.started) {
		if key := r.started[id]; (session == "" || r.scope[id] == session) && !slices.Contains(working, key) {
			working = append(working, key)
		}
	}
	r.seq++
	if id, ok := requestID(l.line); ok && l.directive == "" {
		r.scope[id], r.sentAt[id] = session, r.seq
		if key, ok := startsWork(r.d, n.rawLine(l.line), id); ok {
			r.started[id] = key
		}
	}
	return working
}

// race notes that line, naming session, raced the work of streams
// working; it reports whether the line can change that work.
func (r *races) race(line, session string, working []string) bool {
	if id, ok := requestID(line); ok {
		r.racing[id] = true
	}
	for _, key := range working {
		r.raced[key] = true
	}
	steers := r.d.steers(line)
	if steers {
		r.taint(session)
	}
	return steers
}

// taint marks session's history as the timing's from the current client
// line on.
func (r *races) taint(session string) { first(r.tainted, session, r.seq) }

// stopped notes that the current client line stopped work of session: how
// much of it was done (a text cut short) shows in later counts.
func (r *races) stopped(session string) { first(r.cut, session, r.seq) }

func first(m map[string]int, session string, seq int) {
	if _, ok := m[session]; !ok {
		m[session] = seq
	}
}

// since reports whether m marks session (or every session: "") before the
// client line numbered at; session "" matches any.
func since(m map[string]int, session string, at int) bool {
	for s, t := range m {
		if t < at && (s == session || s == "" || session == "") {
			return true
		}
	}
	return false
}

// server is a server line (line normalised, obj as printed) as the case
// expects it, or keep false for a line to leave out; float is set for the
// answer to a line that raced work, which the case expects wherever it
// comes in its stream ("~"): on another run the work gets further or less
// far before the line lands.
func (r *races) server(line, obj map[string]any, sent *Case) (_ map[string]any, keep, float bool) {
	lc, err := r.d.classify(line, sent, nil)
	if err != nil {
		return line, true, false
	}
	if lc.event && r.d.raceBorn(lc.typ) {
		// What a racing line put into the work comes wherever the timing
		// puts it, even after the work it raced has ended (a pi
		// follow-up that found the run over is queued for the next).
		sid, _ := sessionOf(r.d, obj).(string)
		if r.raced[lc.key] || since(r.tainted, sid, r.seq+1) {
			return nil, false, false
		}
	}
	// The session a line is about, and the client line it follows: an
	// answer's request, an event's latest line.
	sid, at := "", r.seq+1
	if id, ok := obj["id"]; ok && !lc.event {
		sid, at = r.scope[canon(id)], r.sentAt[canon(id)]
		if r.racing[canon(id)] || since(r.tainted, sid, at) {
			line = racingAnswer(line, r.named)
			r.answers = append(r.answers, line)
		}
		float = r.racing[canon(id)]
	} else {
		sid, _ = sessionOf(r.d, obj).(string)
	}
	if since(r.tainted, sid, at) || since(r.cut, sid, at) {
		loosenUsage(line)
	}
	if endsWork(r.d, line) {
		delete(r.raced, lc.key)
	}
	notePlaceholders(line, r.named)
	return line, true, float
}

// added notes that line (obj as printed) went into stream key of b: work
// asked for has begun once its stream shows it running, or has ended when
// its request is answered with an end or a failure.
func (r *races) added(b *expectBuilder, key string, obj, line map[string]any) {
	for id, k := range r.started {
		_, answer := line["id"]
		if k == key && b.inProgress(key) || answer && canon(obj["id"]) == id && (endsWork(r.d, line) || line["success"] == false) {
			delete(r.started, id)
		}
	}
}

// startsWork reports whether a client line (placeholders in) starts work
// that later lines can race, and the stream the work shows in: an e rpc
// prompt, compaction or shell command (its request), a pi prompt or
// compaction (the process stream), an ACP prompt (its session's).
func startsWork(d dialect, line, id string) (string, bool) {
	v, _ := decode([]byte(line))
	obj, _ := v.(map[string]any)
	switch d.(type) {
	case piDialect:
		return "process", obj["type"] == "prompt" || obj["type"] == "compact"
	case acpDialect:
		return acpSessionKey(obj, nil), obj["method"] == "session/prompt"
	}
	m, _ := obj["method"].(string)
	return "r:" + id, m == "session.prompt" || m == "session.compact" || m == "session.shell"
}

// requestID is the id of a client line (canonical JSON), if it has one.
func requestID(line string) (string, bool) {
	v, err := decode([]byte(line))
	obj, _ := v.(map[string]any)
	id, ok := obj["id"]
	if err != nil || !ok || id == nil {
		return "", false
	}
	return canon(id), true
}

// racingAnswer is the expectation of the answer to a client line that
// raced work in progress: how far the work had got when the line landed
// decides the answer (a message count, whether a turn still runs, even a
// result or an error: a steer held or too late), so only its framing (id,
// pi's type and command, JSON-RPC's version) stays, and the placeholders
// it binds, which later lines name (not those inside arrays). One that
// earlier lines named (in named) is left out: which value it names is the
// timing's too (a session's leaf entry, before or after the work's next
// entry).
func racingAnswer(line map[string]any, named map[string]bool) map[string]any {
	out := map[string]any{}
	for k, v := range line {
		switch k {
		case "id", "type", "command", "jsonrpc":
			out[k] = v
		default:
			if p, ok := placeholdersOnly(v, named); ok {
				out[k] = p
			}
		}
	}
	return out
}

// placeholdersOnly is v with only its whole-placeholder strings not in
// named and the objects that hold them; ok is false when v holds none.
// Arrays go too: how long one is (messages, entries) is the timing's, and
// so is whether the answer is a result at all.
func placeholdersOnly(v any, named map[string]bool) (any, bool) {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			if p, ok := placeholdersOnly(e, named); ok {
				out[k] = p
			}
		}
		return out, len(out) > 0
	case string:
		return x, wholePlaceholder(x) && !named[x]
	}
	return nil, false
}

// dropUnnamed takes out of the raced answers the placeholders that the
// client's lines (client, its section) do not name: what a raced answer
// binds is the timing's (a session's leaf, or none yet), so it binds only
// what the client needs (a fork's session); a later server line naming
// it binds it itself.
func (r *races) dropUnnamed(client string) {
	var drop func(v any) bool // whether v is to go
	drop = func(v any) bool {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if drop(e) {
					delete(x, k)
				}
			}
			return len(x) == 0
		case string:
			return wholePlaceholder(x) && !strings.Contains(client, x)
		}
		return false
	}
	for _, a := range r.answers {
		for k, v := range a {
			if k != "id" && k != "type" && k != "command" && k != "jsonrpc" && drop(v) {
				delete(a, k)
			}
		}
	}
}

// notePlaceholders adds the whole placeholders of v to named.
func notePlaceholders(v any, named map[string]bool) {
	switch x := v.(type) {
	case map[string]any:
		for _, e := range x {
			notePlaceholders(e, named)
		}
	case []any:
		for _, e := range x {
			notePlaceholders(e, named)
		}
	case string:
		if wholePlaceholder(x) {
			named[x] = true
		}
	}
}

// loosenTexts matches the literal strings of v's text holders
// (holderFields) at any depth by type: what a steer that raced the work
// added to them depends on when it landed.
func loosenTexts(v any) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if s, ok := e.(string); ok && holderFields[k] && !isPattern(s) {
				x[k] = "$string"
				continue
			}
			loosenTexts(e)
		}
	case []any:
		for _, e := range x {
			loosenTexts(e)
		}
	}
}

// sessionScoped reports whether line of dialect d is about session.
// It binds no placeholder: a session no server line named yet has no
// lines.
func sessionScoped(d dialect, n *normalizer, line map[string]any, session string) bool {
	if session == "" {
		return true
	}
	name, ok := n.names[session]
	return ok && sessionOf(d, line) == "{{"+name+"}}"
}

// queuedMessage is the text a pi client line queues for a run that is
// going on (spec/pi.md): a steer's, a follow-up's, or a prompt's with a
// streamingBehavior. line is as the case writes it.
func queuedMessage(d dialect, line string) (string, bool) {
	if _, ok := d.(piDialect); !ok {
		return "", false
	}
	v, _ := decode([]byte(line))
	obj, _ := v.(map[string]any)
	text, ok := obj["message"].(string)
	switch obj["type"] {
	case "steer", "follow_up":
		return text, ok
	case "prompt":
		return text, ok && (obj["streamingBehavior"] == "steer" || obj["streamingBehavior"] == "followUp")
	}
	return "", false
}
