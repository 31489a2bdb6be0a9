package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/e-agent/e/schemas"
)

// Mutant is one defect the proxy can plant in a conforming server, or,
// when Control, one change a conforming client must accept (a line with an
// unknown field is still a good line). The catalogue is derived from the
// schemas: every event type, every field of every event and of the
// prompt result, every method, every optional parameter.
type Mutant struct {
	Name    string // e.g. "drop-event/steered", "falsify/usage/input_tokens"
	Class   string // the family, e.g. "drop-event"
	Control bool
	// Dialects are the dialects of the cases it is tried against; nil:
	// e rpc's only (it edits e rpc's lines).
	Dialects []string

	start    [][]byte // lines printed before the server's first
	server   func(p *proxy, line []byte, obj map[string]any) [][]byte
	client   func(p *proxy, line []byte, obj map[string]any) (fwd []byte, reply [][]byte)
	exit     func(code int) int
	stderr   []byte // written to stderr at the start and at the end
	dropHeld bool   // lines held when the server exits are lost
	// muteStderr discards the server's stderr
	muteStderr bool
	keepStdin  bool // never close the server's stdin
	noSignals  bool // do not forward signals
	// applies reports whether the mutant changes anything in a run whose
	// identity transcript is tr; nil: every run.
	applies func(tr []Exchange) bool
	// never reports whether the mutant lets no line through that could
	// match the expected line exp (Options.never); nil: any may pass.
	// It must be sure: the fields it reads in exp are literal there, so
	// a line matching exp has them too.
	never func(exp map[string]any, method string) bool
}

// Applies reports whether m would change anything in the run transcribed
// by tr (recorded without a proxy). A control that changes nothing in a
// run is the identity there, which the identity control tries.
func (m *Mutant) Applies(tr []Exchange) bool {
	return m.applies == nil || m.applies(tr)
}

var mutants = sync.OnceValue(buildMutants)

// Mutants returns the catalogue, controls first.
func Mutants() []*Mutant { return mutants() }

// MutantNamed returns the mutant called name.
func MutantNamed(name string) (*Mutant, bool) {
	for _, m := range mutants() {
		if m.Name == name {
			return m, true
		}
	}
	return nil, false
}

func line(v any) []byte { return []byte(canonNoEscape(v) + "\n") }

// received yields the decoded server lines of a transcript.
func received(tr []Exchange, f func(obj map[string]any) bool) bool {
	for _, e := range tr {
		if e.Dir != "received" {
			continue
		}
		if obj := jsonObject([]byte(e.Line)); obj != nil && f(obj) {
			return true
		}
	}
	return false
}

// sent yields the decoded client lines of a transcript.
func sent(tr []Exchange, f func(obj map[string]any) bool) bool {
	for _, e := range tr {
		if e.Dir != "sent" {
			continue
		}
		if obj := jsonObject([]byte(e.Line)); obj != nil && f(obj) {
			return true
		}
	}
	return false
}

func isResponse(obj map[string]any) bool {
	_, typed := obj["type"]
	_, id := obj["id"]
	return !typed && id
}

func lineType(obj map[string]any) string { s, _ := obj["type"].(string); return s }

// methodOf finds the method of the request a response answers, from the
// client lines of tr; "oneshot" for a v1 line.
func methodsOf(tr []Exchange) map[string]string {
	out := map[string]string{}
	sent(tr, func(obj map[string]any) bool {
		if id, ok := obj["id"]; ok {
			if m, ok := obj["method"].(string); ok {
				out[canon(id)] = m
			} else {
				out[canon(id)] = "oneshot"
			}
		}
		return false
	})
	return out
}

func buildMutants() []*Mutant {
	var ms []*Mutant
	add := func(m *Mutant) { ms = append(ms, m) }

	// Controls: what a conforming client must accept.
	all := []string{DialectERPC, DialectPi, DialectACP}
	add(&Mutant{Name: "identity", Class: "control", Control: true, Dialects: all})
	add(&Mutant{Name: "control/unknown-field", Class: "control", Control: true, Dialects: all,
		server: func(p *proxy, l []byte, obj map[string]any) [][]byte {
			obj["x_future"] = map[string]any{"nested": []any{json.Number("1"), "two"}}
			if r, ok := obj["result"].(map[string]any); ok {
				r["x_future_result"] = true
			}
			return [][]byte{line(obj)}
		}})
	add(&Mutant{Name: "control/unknown-event", Class: "control", Control: true,
		applies: func(tr []Exchange) bool {
			return received(tr, func(o map[string]any) bool {
				return isResponse(o) && o["id"] != nil || lineType(o) == "result" && o["session"] == nil
			})
		},
		server: func(p *proxy, l []byte, obj map[string]any) [][]byte {
			switch {
			case isResponse(obj) && obj["id"] != nil:
				// One in the request's stream, one in the process
				// stream (a newer server's notice of its own).
				return [][]byte{line(map[string]any{"type": "x_future_event", "detail": "additive", "session": p.anySession(), "request": obj["id"]}),
					line(map[string]any{"type": "x_future_notice", "detail": "additive"}), l}
			case lineType(obj) == "result" && obj["session"] == nil:
				return [][]byte{line(map[string]any{"type": "x_future_event", "detail": "additive"}), l}
			}
			return [][]byte{l}
		}})
	add(&Mutant{Name: "control/unknown-event/pi", Class: "control", Control: true, Dialects: []string{DialectPi},
		applies: func(tr []Exchange) bool {
			return received(tr, func(o map[string]any) bool { return o["type"] == "response" })
		},
		server: func(p *proxy, l []byte, obj map[string]any) [][]byte {
			if obj["type"] != "response" {
				return [][]byte{l}
			}
			return [][]byte{line(map[string]any{"type": "x_future_event", "detail": "additive"}), l}
		}})
	add(&Mutant{Name: "control/unknown-event/acp", Class: "control", Control: true, Dialects: []string{DialectACP},
		applies: func(tr []Exchange) bool {
			return received(tr, func(o map[string]any) bool { _, isMessage := o["method"]; return !isMessage })
		},
		server: func(p *proxy, l []byte, obj map[string]any) [][]byte {
			if _, isMessage := obj["method"]; isMessage {
				return [][]byte{l}
			}
			return [][]byte{line(map[string]any{"jsonrpc": "2.0", "method": "_x_future/notice", "params": map[string]any{"detail": "additive"}}), l}
		}})
	add(&Mutant{Name: "control/re-encoded", Class: "control", Control: true, Dialects: all,
		server: func(p *proxy, l []byte, obj map[string]any) [][]byte {
			return [][]byte{append(reencode(obj), '\n')}
		}})
	add(&Mutant{Name: "control/slow-and-chunked", Class: "control", Control: true, Dialects: all,
		server: func(p *proxy, l []byte, obj map[string]any) [][]byte {
			time.Sleep(2 * time.Millisecond)
			half := len(l) / 2
			for half > 0 && !utf8.RuneStart(l[half]) {
				half--
			}
			return [][]byte{l[:half], l[half:]}
		}})

	events := schemas.Events()
	lineTypes := append(append([]string{}, events...), "ask", "notice", "tool_call", "tool_call_cancelled")
	for _, t := range lineTypes {
		add(dropLines("drop-event/"+t, nil, func(o map[string]any) bool { return lineType(o) == t }))
	}
	// Fields of events, ask and notice lines.
	for _, t := range lineTypes {
		name := "events/" + t
		if lineSchema(t) {
			name = "lines/" + t
		}
		n, ok := schemaNamed(name)
		if !ok {
			continue
		}
		for _, path := range fieldPaths(n, 2) {
			if path == "type" {
				continue
			}
			match := func(obj map[string]any) (map[string]any, bool) { return obj, lineType(obj) == t }
			addFieldMutants(add, nil, t, path, match)
		}
	}
	// Fields of results: the prompt's and the v1 answer's to depth 2,
	// every other method's top level.
	// Methods whose results share one schema (session.prompt's and
	// session.follow_up's: result.json, coverage's resultNames) share
	// mutants too, named after the prompt's: they change either's result.
	results := resultNames()
	for _, m := range schemas.Methods() {
		n, ok := schemaNamed(m + ".result")
		if !ok {
			continue
		}
		same := []string{m}
		if results[m] != m+".result" {
			same = slices.DeleteFunc(slices.Clone(schemas.Methods()), func(o string) bool { return results[o] != results[m] })
			lead := same[0]
			if slices.Contains(same, "session.prompt") {
				lead = "session.prompt"
			}
			if m != lead {
				continue
			}
		}
		depth := 1
		if m == "session.prompt" {
			depth = 2
		}
		for _, path := range fieldPaths(n, depth) {
			addFieldMutants(add, nil, m+".result", path, resultOf(same...))
		}
	}
	if n, ok := schemaNamed("oneshot/answer"); ok {
		for _, path := range fieldPaths(n, 2) {
			addFieldMutants(add, nil, "oneshot", path, resultOf("oneshot"))
		}
	}

	// Methods answered without being performed.
	for _, m := range sortedKeys(cannedResults) {
		add(&Mutant{Name: "noop/" + m, Class: "noop",
			client: func(p *proxy, l []byte, obj map[string]any) ([]byte, [][]byte) {
				if obj["method"] != m || !p.wellFormedOnLive(m, obj) {
					return l, nil
				}
				id, hasID := obj["id"]
				if !hasID {
					return nil, nil
				}
				params, _ := obj["params"].(map[string]any)
				return nil, [][]byte{line(map[string]any{"id": id, "result": cannedResults[m](params)})}
			},
			applies: func(tr []Exchange) bool {
				return sent(tr, func(o map[string]any) bool { return o["method"] == m })
			}})
	}
	// Optional parameters ignored.
	for _, m := range schemas.Methods() {
		n, ok := schemaNamed(m + ".params")
		if !ok {
			continue
		}
		required := map[string]bool{}
		if rs, ok := n.deref().v.(map[string]any)["required"].([]any); ok {
			for _, r := range rs {
				required[fmt.Sprint(r)] = true
			}
		}
		props, _, _ := objectShape(n)
		for _, prop := range sortedKeys(props) {
			if required[prop] {
				continue
			}
			strip := func(obj map[string]any) bool {
				params, ok := obj["params"].(map[string]any)
				if obj["method"] != m || !ok {
					return false
				}
				if _, has := params[prop]; !has {
					return false
				}
				b, _ := json.Marshal(params)
				return schemas.ValidateParams(m, b) == nil
			}
			add(&Mutant{Name: "ignore-param/" + m + "/" + prop, Class: "ignore-param",
				client: func(p *proxy, l []byte, obj map[string]any) ([]byte, [][]byte) {
					if !strip(obj) {
						return l, nil
					}
					delete(obj["params"].(map[string]any), prop)
					return line(obj), nil
				},
				applies: func(tr []Exchange) bool { return sent(tr, strip) }})
		}
	}

	// Lines duplicated, reordered, delayed.
	hasResponse := func(tr []Exchange) bool { return received(tr, isResponse) }
	add(&Mutant{Name: "dup/response", Class: "duplicate", applies: hasResponse,
		server: func(p *proxy, l []byte, obj map[string]any) [][]byte {
			if isResponse(obj) {
				return [][]byte{l, l}
			}
			return [][]byte{l}
		}})
	nonDelta := func(obj map[string]any) bool { t := lineType(obj); return t != "" && !mergeable(t) }
	add(&Mutant{Name: "dup/event", Class: "duplicate",
		applies: func(tr []Exchange) bool { return received(tr, nonDelta) },
		server: func(p *proxy, l []byte, obj map[string]any) [][]byte {
			if nonDelta(obj) {
				return [][]byte{l, l}
			}
			return [][]byte{l}
		}})
	isDelta := func(obj map[string]any) bool { return mergeable(lineType(obj)) }
	add(&Mutant{Name: "dup/delta", Class: "duplicate",
		applies: func(tr []Exchange) bool { return received(tr, isDelta) },
		server: func(p *proxy, l []byte, obj map[string]any) [][]byte {
			if isDelta(obj) {
				return [][]byte{l, l}
			}
			return [][]byte{l}
		}})
	stamped := func(obj map[string]any) bool { _, ok := obj["request"]; return ok && lineType(obj) != "" }
	add(&Mutant{Name: "delay/last-event-past-response", Class: "reorder",
		applies: func(tr []Exchange) bool { return received(tr, stamped) },
		server: func(p *proxy, l []byte, obj map[string]any) [][]byte {
			return p.holdLast(l, obj, false)
		}})
	add(&Mutant{Name: "reorder/swap-adjacent-events", Class: "reorder",
		applies: func(tr []Exchange) bool { return received(tr, stamped) },
		server: func(p *proxy, l []byte, obj map[string]any) [][]byte {
			return p.holdLast(l, obj, true)
		}})
	add(&Mutant{Name: "reorder/response-first", Class: "reorder", applies: hasResponse,
		server: func(p *proxy, l []byte, obj map[string]any) [][]byte {
			// Every response jumps ahead of the lines held before it: a
			// one-line lag on everything else.
			if isResponse(obj) {
				return [][]byte{l}
			}
			return p.lag(l)
		}})

	// Stamps.
	add(&Mutant{Name: "stamp/request-as-string", Class: "stamp",
		applies: func(tr []Exchange) bool {
			return received(tr, func(o map[string]any) bool { _, num := o["request"].(json.Number); return num })
		},
		server: func(p *proxy, l []byte, obj map[string]any) [][]byte {
			if n, ok := obj["request"].(json.Number); ok {
				obj["request"] = string(n)
				return [][]byte{line(obj)}
			}
			return [][]byte{l}
		}})
	add(&Mutant{Name: "stamp/response-id-as-string", Class: "stamp",
		applies: func(tr []Exchange) bool {
			return received(tr, func(o map[string]any) bool { _, num := o["id"].(json.Number); return num && isResponse(o) })
		},
		server: func(p *proxy, l []byte, obj map[string]any) [][]byte {
			if n, ok := obj["id"].(json.Number); ok && isResponse(obj) {
				obj["id"] = string(n)
				return [][]byte{line(obj)}
			}
			return [][]byte{l}
		}})
	add(&Mutant{Name: "stamp/session-of-another", Class: "stamp",
		applies: func(tr []Exchange) bool {
			sessions := map[string]bool{}
			received(tr, func(o map[string]any) bool {
				if s, ok := o["session"].(string); ok {
					sessions[s] = true
				}
				return false
			})
			return len(sessions) > 1
		},
		server: func(p *proxy, l []byte, obj map[string]any) [][]byte {
			s, ok := obj["session"].(string)
			if !ok || lineType(obj) == "" {
				return [][]byte{l}
			}
			for _, other := range sortedKeys(p.sessions) {
				if other != s {
					obj["session"] = other
					return [][]byte{line(obj)}
				}
			}
			return [][]byte{l}
		}})

	// Noise on stdout.
	add(&Mutant{Name: "noise/log-line-at-start", Class: "noise", Dialects: all, start: [][]byte{[]byte("e: starting up\n")}})
	add(&Mutant{Name: "noise/text-after-response", Class: "noise", applies: hasResponse,
		server: func(p *proxy, l []byte, obj map[string]any) [][]byte {
			if isResponse(obj) {
				return [][]byte{l, []byte("done\n")}
			}
			return [][]byte{l}
		}})
	add(&Mutant{Name: "noise/blank-line-after-response", Class: "noise", applies: hasResponse,
		server: func(p *proxy, l []byte, obj map[string]any) [][]byte {
			if isResponse(obj) {
				return [][]byte{l, []byte("\n")}
			}
			return [][]byte{l}
		}})

	// Exit status and the process's life.
	add(&Mutant{Name: "exit/zero-becomes-one", Class: "exit", Dialects: all, exit: func(c int) int {
		if c == 0 {
			return 1
		}
		return c
	}})
	add(&Mutant{Name: "exit/nonzero-becomes-zero", Class: "exit", Dialects: all, exit: func(c int) int { return 0 }})
	add(&Mutant{Name: "exit/eof-ignored", Class: "exit", Dialects: all, keepStdin: true})
	add(&Mutant{Name: "exit/signals-ignored", Class: "exit", noSignals: true,
		applies: func(tr []Exchange) bool {
			for _, e := range tr {
				if e.Dir == "signal" && e.Line != "KILL" {
					return true
				}
			}
			return false
		}})
	addDialectMutants(add)
	addWireMutants(add)
	return ms
}

// dropLines is the mutant that drops the server lines is reports, of the
// cases of dialects (nil: e rpc).
func dropLines(name string, dialects []string, is func(obj map[string]any) bool) *Mutant {
	return &Mutant{Name: name, Class: "drop-event", Dialects: dialects,
		server: func(p *proxy, l []byte, obj map[string]any) [][]byte {
			if is(obj) {
				return nil
			}
			return [][]byte{l}
		},
		applies: func(tr []Exchange) bool { return received(tr, is) },
		// is reads literal fields (a type, a kind): an expected line it
		// holds for is matched only by lines it holds for.
		never: func(exp map[string]any, _ string) bool { return is(exp) }}
}

// addFieldMutants adds drop/ and falsify/ mutants for the field at path
// (slash-separated, "[]" for array items) of the objects match finds in
// the lines of dialects (nil: e rpc); none for an ACP _meta, which is
// free by definition.
func addFieldMutants(add func(*Mutant), dialects []string, owner, path string, match func(obj map[string]any) (map[string]any, bool)) {
	segs := strings.Split(path, "/")
	if slices.Contains(segs, "_meta") {
		return
	}
	for _, kind := range []string{"drop", "falsify"} {
		changed := func(obj map[string]any) bool {
			target, ok := match(obj)
			if !ok || target == nil {
				return false
			}
			return mutatePath(target, segs, kind, false)
		}
		add(&Mutant{Name: kind + "/" + owner + "/" + path, Class: kind + "-field", Dialects: dialects,
			server: func(p *proxy, l []byte, obj map[string]any) [][]byte {
				target, ok := p.resultTarget(obj, match)
				if !ok || !mutatePath(target, segs, kind, true) {
					return [][]byte{l}
				}
				return [][]byte{line(obj)}
			},
			applies: func(tr []Exchange) bool {
				methods := methodsOf(tr)
				return received(tr, func(o map[string]any) bool {
					if isResponse(o) {
						o["\x00method"] = methods[canon(o["id"])]
					}
					return changed(o)
				})
			}})
	}
}

// resultOf matches the result of responses to method m ("oneshot": the v1
// answer line itself).
func resultOf(ms ...string) func(obj map[string]any) (map[string]any, bool) {
	return func(obj map[string]any) (map[string]any, bool) {
		m, _ := obj["\x00method"].(string)
		if !isResponse(obj) || !slices.Contains(ms, m) {
			return nil, false
		}
		if m == "oneshot" {
			return obj, true
		}
		r, ok := obj["result"].(map[string]any)
		return r, ok
	}
}

// resultTarget tags a response with the method it answers (known to the
// proxy from the client lines) before matching.
func (p *proxy) resultTarget(obj map[string]any, match func(map[string]any) (map[string]any, bool)) (map[string]any, bool) {
	if isResponse(obj) {
		obj["\x00method"] = p.methods[canon(obj["id"])]
		defer delete(obj, "\x00method")
	}
	t, ok := match(obj)
	return t, ok && t != nil
}

// mutatePath drops or falsifies the value at segs under v; with apply
// false it only reports whether it would change anything.
func mutatePath(v any, segs []string, kind string, apply bool) bool {
	switch x := v.(type) {
	case map[string]any:
		if len(segs) == 0 {
			return false
		}
		e, ok := x[segs[0]]
		if !ok {
			return false
		}
		if len(segs) > 1 {
			return mutatePath(e, segs[1:], kind, apply)
		}
		if kind == "drop" {
			if apply {
				delete(x, segs[0])
			}
			return true
		}
		f, ok := falsify(e)
		if ok && apply {
			x[segs[0]] = f
		}
		return ok
	case []any:
		if len(segs) == 0 || segs[0] != "[]" {
			return false
		}
		any := false
		for _, e := range x {
			any = mutatePath(e, segs[1:], kind, apply) || any
		}
		return any
	}
	return false
}

// falsify returns a different value of the same kind where it can.
func falsify(v any) (any, bool) {
	switch x := v.(type) {
	case string:
		if x == "" {
			return "x", true
		}
		return x + "x", true
	case json.Number:
		if i, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return json.Number(strconv.FormatInt(i+1, 10)), true
		}
		if f, err := strconv.ParseFloat(string(x), 64); err == nil {
			return json.Number(strconv.FormatFloat(f*2+1, 'g', -1, 64)), true
		}
	case bool:
		return !x, true
	case nil:
		return "x", true
	case []any:
		if len(x) > 0 {
			return x[:len(x)-1], true
		}
	case map[string]any:
		if len(x) > 0 {
			return map[string]any{}, true
		}
	}
	return nil, false
}

// fieldPaths lists the property paths of n with at most depth names.
func fieldPaths(n snode, depth int) []string {
	var out []string
	for _, p := range propertyPaths(n) {
		names := 0
		for _, s := range strings.Split(p, "/") {
			if s != "[]" {
				names++
			}
		}
		if names <= depth && !strings.HasSuffix(p, "[]") && !strings.Contains(p, "*") {
			out = append(out, p)
		}
	}
	return out
}

// wellFormedOnLive reports whether a request is one the server must
// perform: its params pass the schema, and the session it names is live.
func (p *proxy) wellFormedOnLive(m string, obj map[string]any) bool {
	params, _ := obj["params"].(map[string]any)
	b, _ := json.Marshal(params)
	if params == nil {
		b = []byte("{}")
	}
	if schemas.ValidateParams(m, b) != nil {
		return false
	}
	if s, ok := params["session"].(string); ok && !p.sessions[s] {
		return false
	}
	return true
}

func (p *proxy) anySession() any {
	for _, s := range sortedKeys(p.sessions) {
		return s
	}
	return "s"
}

// holdLast keeps the latest event of each request stream back until the
// stream's next line: with swap, a following event of another type goes
// first (two events trade places); without, the held event goes out after
// the stream's response (it arrives too late).
func (p *proxy) holdLast(l []byte, obj map[string]any, swap bool) [][]byte {
	key := ""
	if r, ok := obj["request"]; ok && lineType(obj) != "" {
		key = canon(r)
	} else if isResponse(obj) {
		key = canon(obj["id"])
	}
	if key == "" {
		return [][]byte{l}
	}
	if p.held == nil {
		p.held = map[string][]byte{}
	}
	prev, had := p.held[key]
	delete(p.held, key)
	p.armFlush()
	if isResponse(obj) {
		if !had {
			return [][]byte{l}
		}
		if swap {
			return [][]byte{prev, l}
		}
		return [][]byte{l, prev}
	}
	if mergeable(lineType(obj)) {
		// Deltas pass in order; a held event goes first.
		if had {
			return [][]byte{prev, l}
		}
		return [][]byte{l}
	}
	if !had {
		p.held[key] = l
		return nil
	}
	if swap && lineType(jsonObject(prev)) != lineType(obj) {
		return [][]byte{l, prev}
	}
	p.held[key] = l
	return [][]byte{prev}
}

// lag writes each line when the next one arrives.
func (p *proxy) lag(l []byte) [][]byte {
	if p.held == nil {
		p.held = map[string][]byte{}
	}
	prev, had := p.held["lag"]
	p.held["lag"] = l
	p.armFlush()
	if had {
		return [][]byte{prev}
	}
	return nil
}

// armFlush writes held lines out after a quiet spell, so that a client
// waiting for a held line is not stuck forever; p.mu is held.
func (p *proxy) armFlush() {
	if p.sim {
		return
	}
	if p.timer != nil {
		p.timer.Stop()
	}
	p.timer = time.AfterFunc(300*time.Millisecond, func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, k := range sortedKeys(p.held) {
			p.write(p.held[k])
		}
		p.held = nil
	})
}

// reencode writes obj as JSON another encoder might: spaces after every
// colon and comma, keys in reverse order, every non-ASCII character and
// every slash escaped.
func reencode(v any) []byte {
	var b bytes.Buffer
	var enc func(v any)
	enc = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			keys := sortedKeys(x)
			sort.Sort(sort.Reverse(sort.StringSlice(keys)))
			b.WriteString("{ ")
			for i, k := range keys {
				if i > 0 {
					b.WriteString(" , ")
				}
				enc(k)
				b.WriteString(" : ")
				enc(x[k])
			}
			b.WriteString(" }")
		case []any:
			b.WriteString("[ ")
			for i, e := range x {
				if i > 0 {
					b.WriteString(" , ")
				}
				enc(e)
			}
			b.WriteString(" ]")
		case string:
			b.WriteByte('"')
			for _, r := range x {
				switch {
				case r == '"' || r == '\\':
					b.WriteByte('\\')
					b.WriteRune(r)
				case r == '/':
					b.WriteString(`\/`)
				case r < 0x20 || r > 0x7e:
					if r > 0xffff {
						r1, r2 := utf16Pair(r)
						fmt.Fprintf(&b, `\u%04x\u%04x`, r1, r2)
					} else {
						fmt.Fprintf(&b, `\u%04X`, r)
					}
				default:
					b.WriteRune(r)
				}
			}
			b.WriteByte('"')
		default:
			b.WriteString(canon(x))
		}
	}
	enc(v)
	return b.Bytes()
}

func utf16Pair(r rune) (rune, rune) {
	r -= 0x10000
	return 0xd800 + (r>>10)&0x3ff, 0xdc00 + r&0x3ff
}

// cannedResults are answers that pass each method's result schema, for
// the noop mutants: the method answered, nothing done.
var cannedResults = map[string]func(params map[string]any) any{
	"ask.reply":         func(map[string]any) any { return map[string]any{} },
	"session.close":     func(map[string]any) any { return map[string]any{} },
	"session.interrupt": func(map[string]any) any { return map[string]any{} },
	"shutdown":          func(map[string]any) any { return map[string]any{} },
	"session.steer":     func(map[string]any) any { return map[string]any{"held": true} },
	"session.compact": func(map[string]any) any {
		return map[string]any{"tokens_before": json.Number("100"), "tokens_after": json.Number("10"), "summary_chars": json.Number("40"), "summary": "nothing happened", "first_kept": nil, "usage": zeroUsage()}
	},
	"session.set": func(params map[string]any) any {
		r := map[string]any{"model": "tape/model", "effort": "medium"}
		if m, ok := params["model"].(string); ok {
			r["model"] = m
		}
		if e, ok := params["effort"].(string); ok {
			r["effort"] = e
		}
		return r
	},
	"session.export": func(params map[string]any) any {
		path, _ := params["path"].(string)
		if path == "" {
			path = "/tmp/session.html"
		}
		return map[string]any{"path": path, "title": "session"}
	},
	"session.fork": func(params map[string]any) any {
		return map[string]any{"session": params["session"], "path": nil}
	},
	"session.prompt": func(params map[string]any) any {
		return map[string]any{"output": "", "final_output": "", "model": "tape/model", "effort": "medium", "aborted": false,
			"error": nil, "error_details": nil, "warnings": []any{}, "usage": zeroUsage(), "cost_usd": json.Number("0"),
			"tools": map[string]any{"calls": json.Number("0"), "failures": json.Number("0")}, "session": params["session"], "path": nil}
	},
	"session.list":     func(map[string]any) any { return map[string]any{"sessions": []any{}} },
	"session.messages": func(map[string]any) any { return map[string]any{"messages": []any{}} },
}

func zeroUsage() map[string]any {
	z := json.Number("0")
	return map[string]any{"input_tokens": z, "output_tokens": z, "cache_read_tokens": z, "cache_write_5m_tokens": z, "cache_write_1h_tokens": z, "prompt_tokens": z}
}
