package conformance

// This file holds the mutants that break a server's wire behaviour in
// every dialect, rather than one field of one schema: order inside a
// turn, ids and stamps, error against success, truncated text, framing,
// the last line before exit, exit statuses; and the controls for what a
// client must take as it comes (CRLF, writes split or coalesced, slow
// answers, stderr noise, deltas cut differently).

import (
	"encoding/json"
	"math/big"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/e-agent/e/schemas"
)

// Wire shapes, told apart by the line alone (the proxy does not know the
// case's dialect): ACP lines carry jsonrpc, pi's responses are typed
// "response", e rpc's responses have no type.

// isACP reports whether obj is a JSON-RPC message (e acp).
func isACP(obj map[string]any) bool { _, ok := obj["jsonrpc"]; return ok }

// isReply reports whether obj answers a client request, in any dialect.
func isReply(obj map[string]any) bool {
	switch {
	case isACP(obj):
		_, id := obj["id"]
		_, method := obj["method"]
		return id && !method
	case obj["type"] == "response":
		return true
	}
	return isResponse(obj)
}

// isFailure reports whether a reply says the request failed.
func isFailure(obj map[string]any) bool {
	if obj["type"] == "response" {
		return obj["success"] == false
	}
	_, e := obj["error"]
	return e
}

// wireStream is the stream a server line is ordered in, as the dialects
// order them (spec/conformance.md 1.5): an e rpc request's events, an ACP
// session's updates, pi's single event stream; "" for replies and lines
// ordered against nothing.
func wireStream(obj map[string]any) string {
	switch {
	case isReply(obj):
		return ""
	case isACP(obj):
		if obj["method"] != "session/update" {
			return ""
		}
		params, _ := obj["params"].(map[string]any)
		s, _ := params["sessionId"].(string)
		return "s:" + s
	case obj["request"] != nil && lineType(obj) != "":
		return "r:" + canon(obj["request"])
	case lineType(obj) != "" && obj["session"] == nil && obj["request"] == nil && !erpcProcessType(lineType(obj)):
		return "pi"
	}
	return ""
}

// erpcProcessType reports e rpc's lines of the process stream.
func erpcProcessType(t string) bool {
	return t == "ask" || t == "notice" || t == "result" || t == "tool_call_cancelled"
}

// wireType is a stream line's kind: e rpc's and pi's type (pi's message
// updates by kind), an ACP update's sessionUpdate.
func wireType(obj map[string]any) string {
	if u := acpUpdate(obj); u != nil {
		s, _ := u["sessionUpdate"].(string)
		return s
	}
	return piType(obj)
}

// wireDelta reports the delta run of a line in any dialect.
func wireDelta(obj map[string]any) (run, text string, ok bool) {
	switch {
	case isACP(obj):
		return acpDialect{}.delta(obj)
	case obj["session"] != nil || obj["request"] != nil:
		return erpcDialect{}.delta(obj)
	}
	if r, t, ok := (piDialect{}).delta(obj); ok {
		return r, t, ok
	}
	return erpcDialect{}.delta(obj) // e -p --json lines carry no stamps
}

func setWireDelta(obj map[string]any, text string) {
	switch {
	case isACP(obj):
		acpDialect{}.setDelta(obj, text)
	case obj["type"] == "message_update" || obj["type"] == "bash_execution_update":
		piDialect{}.setDelta(obj, text)
	default:
		erpcDialect{}.setDelta(obj, text)
	}
}

// halfRunes cuts s at about half its runes; ok is false under two runes.
func halfRunes(s string) (head, tail string, ok bool) {
	n := utf8.RuneCountInString(s)
	if n < 2 {
		return s, "", false
	}
	i := 0
	for k := 0; k < n/2; k++ {
		_, w := utf8.DecodeRuneInString(s[i:])
		i += w
	}
	return s[:i], s[i:], true
}

// toolEnds pairs a tool's start line with its end line, per dialect: the
// key both share, and whether obj is the start or the end.
func toolEnds(obj map[string]any) (key string, start, end bool) {
	if u := acpUpdate(obj); u != nil {
		id, _ := u["toolCallId"].(string)
		switch u["sessionUpdate"] {
		case "tool_call":
			return "acp:" + id, true, false
		case "tool_call_update":
			s, _ := u["status"].(string)
			return "acp:" + id, false, s == "completed" || s == "failed"
		}
		return "", false, false
	}
	switch lineType(obj) {
	case "tool_start", "tool_end":
		return "e:" + canon(obj["request"]) + canon(obj["id"]), lineType(obj) == "tool_start", lineType(obj) == "tool_end"
	case "tool_execution_start", "tool_execution_end":
		id, _ := obj["toolCallId"].(string)
		return "pi:" + id, lineType(obj) == "tool_execution_start", lineType(obj) == "tool_execution_end"
	}
	return "", false, false
}

// otherID is a request id the client sent other than id, or id falsified
// when it sent no other.
func (p *proxy) otherID(id any) any {
	for _, k := range sortedKeys(p.methods) {
		if k != canon(id) && k != "null" {
			if v, err := decode([]byte(k)); err == nil {
				return v
			}
		}
	}
	f, _ := falsify(id)
	return f
}

var allDialects = []string{DialectERPC, DialectPi, DialectACP}

func addWireMutants(addTo func(*Mutant)) {
	all := allDialects
	// A defect of every dialect is tried in each on its own (one case
	// of any dialect catching it would prove nothing of the others):
	// class/NAME for e rpc, class/pi/NAME and class/acp/NAME.
	add := func(m *Mutant) {
		if m.Control || len(m.Dialects) < 2 {
			addTo(m)
			return
		}
		class, rest, _ := strings.Cut(m.Name, "/")
		for _, d := range m.Dialects {
			c := *m
			c.Dialects = []string{d}
			switch d {
			case DialectPi:
				c.Name = class + "/pi/" + rest
			case DialectACP:
				c.Name = class + "/acp/" + rest
			}
			addTo(&c)
		}
	}
	replies := func(tr []Exchange) bool { return received(tr, isReply) }

	// Controls: what a client must take as it comes.
	add(&Mutant{Name: "control/crlf", Class: "control", Control: true, Dialects: all,
		server: func(p *proxy, l []byte, obj map[string]any) [][]byte {
			// F5: records are split on LF; a trailing CR is stripped.
			return [][]byte{append(l[:len(l)-1:len(l)-1], '\r', '\n')}
		}})
	add(&Mutant{Name: "control/coalesced-writes", Class: "control", Control: true, Dialects: all,
		server: func(p *proxy, l []byte, obj map[string]any) [][]byte {
			// Lines go out in batches, several in one write.
			p.batch = append(p.batch, l...)
			p.batched++
			if p.batched >= 6 {
				return p.flushBatch()
			}
			if p.batchTimer == nil {
				p.batchTimer = time.AfterFunc(15*time.Millisecond, func() {
					p.mu.Lock()
					defer p.mu.Unlock()
					p.write(p.flushBatch()...)
				})
			}
			return nil
		}})
	add(&Mutant{Name: "control/byte-writes", Class: "control", Control: true, Dialects: all,
		server: func(p *proxy, l []byte, obj map[string]any) [][]byte {
			size := 1
			if len(l) > 2048 {
				size = 997
			}
			var out [][]byte
			for len(l) > size {
				out = append(out, l[:size])
				l = l[size:]
			}
			return append(out, l)
		}})
	add(&Mutant{Name: "control/slow-replies", Class: "control", Control: true, Dialects: all, applies: replies,
		server: func(p *proxy, l []byte, obj map[string]any) [][]byte {
			if isReply(obj) {
				time.Sleep(120 * time.Millisecond)
			}
			return [][]byte{l}
		}})
	add(&Mutant{Name: "control/stderr-noise", Class: "control", Control: true, Dialects: all,
		stderr: []byte("warning: x_future diagnostics on stderr {\"id\":1,\"result\":{}}\n\n\x1b[1mnoise\x1b[0m\n")})
	add(&Mutant{Name: "control/deltas-resplit", Class: "control", Control: true, Dialects: all,
		applies: func(tr []Exchange) bool {
			return received(tr, func(o map[string]any) bool {
				_, text, ok := wireDelta(o)
				_, _, cut := halfRunes(text)
				return ok && cut
			})
		},
		server: func(p *proxy, l []byte, obj map[string]any) [][]byte {
			// Chunking is the server's: the joined text is what counts.
			_, text, ok := wireDelta(obj)
			head, tail, cut := halfRunes(text)
			if !ok || !cut {
				return [][]byte{l}
			}
			setWireDelta(obj, head)
			first := line(obj)
			setWireDelta(obj, tail)
			return [][]byte{first, line(obj)}
		}})

	// Order inside a turn.
	inStream := func(o map[string]any) bool { return wireStream(o) != "" }
	add(&Mutant{Name: "reorder/swap-adjacent-lines", Class: "reorder", Dialects: []string{DialectPi, DialectACP},
		applies: func(tr []Exchange) bool { return received(tr, inStream) },
		server: func(p *proxy, l []byte, obj map[string]any) [][]byte {
			return p.swapAdjacent(l, obj)
		}})
	add(&Mutant{Name: "reorder/end-before-start", Class: "reorder", Dialects: all,
		applies: func(tr []Exchange) bool {
			return received(tr, func(o map[string]any) bool { _, s, _ := toolEnds(o); return s })
		},
		server: func(p *proxy, l []byte, obj map[string]any) [][]byte {
			key, start, end := toolEnds(obj)
			if p.held == nil {
				p.held = map[string][]byte{}
			}
			switch {
			case start:
				p.held[key] = l
				p.armFlush()
				return nil
			case end && p.held[key] != nil:
				s := p.held[key]
				delete(p.held, key)
				return [][]byte{l, s}
			}
			return [][]byte{l}
		}})
	add(&Mutant{Name: "delay/last-delta-past-response", Class: "reorder",
		applies: func(tr []Exchange) bool {
			return received(tr, func(o map[string]any) bool { _, _, d := wireDelta(o); return d && o["request"] != nil })
		},
		server: func(p *proxy, l []byte, obj map[string]any) [][]byte {
			return p.holdDelta(l, obj)
		}})
	add(&Mutant{Name: "delay/acp/update-past-prompt-answer", Class: "reorder", Dialects: []string{DialectACP},
		applies: func(tr []Exchange) bool {
			return received(tr, func(o map[string]any) bool { return acpUpdate(o) != nil })
		},
		server: func(p *proxy, l []byte, obj map[string]any) [][]byte {
			// K5: the last update of a prompt comes after its answer.
			if p.held == nil {
				p.held = map[string][]byte{}
			}
			if acpUpdate(obj) != nil {
				prev := p.held["u"]
				p.held["u"] = l
				p.armFlush()
				if prev != nil {
					return [][]byte{prev}
				}
				return nil
			}
			if isReply(obj) && p.methods[canon(obj["id"])] == "session/prompt" && p.held["u"] != nil {
				prev := p.held["u"]
				delete(p.held, "u")
				return [][]byte{l, prev}
			}
			return [][]byte{l}
		}})
	add(&Mutant{Name: "delay/pi/event-past-agent_end", Class: "reorder", Dialects: []string{DialectPi},
		applies: func(tr []Exchange) bool {
			return received(tr, func(o map[string]any) bool { return o["type"] == "agent_end" })
		},
		server: func(p *proxy, l []byte, obj map[string]any) [][]byte {
			// The event before agent_end comes after it.
			if p.held == nil {
				p.held = map[string][]byte{}
			}
			if wireStream(obj) != "pi" {
				return [][]byte{l}
			}
			prev := p.held["e"]
			delete(p.held, "e")
			if obj["type"] == "agent_end" && prev != nil {
				return [][]byte{l, prev}
			}
			p.held["e"] = l
			p.armFlush()
			if prev != nil {
				return [][]byte{prev}
			}
			return nil
		}})

	// Ids and stamps.
	add(&Mutant{Name: "stamp/response-id-falsified", Class: "stamp", Dialects: all,
		applies: func(tr []Exchange) bool {
			return received(tr, func(o map[string]any) bool { return isReply(o) && o["id"] != nil })
		},
		server: func(p *proxy, l []byte, obj map[string]any) [][]byte {
			if !isReply(obj) || obj["id"] == nil {
				return [][]byte{l}
			}
			obj["id"] = p.otherID(obj["id"])
			return [][]byte{line(obj)}
		}})
	add(&Mutant{Name: "stamp/request-of-another", Class: "stamp",
		applies: func(tr []Exchange) bool {
			return received(tr, func(o map[string]any) bool { return o["request"] != nil && lineType(o) != "" })
		},
		server: func(p *proxy, l []byte, obj map[string]any) [][]byte {
			if obj["request"] == nil || lineType(obj) == "" {
				return [][]byte{l}
			}
			obj["request"] = p.otherID(obj["request"])
			return [][]byte{line(obj)}
		}})
	acpSession := func(o map[string]any) string {
		params, _ := o["params"].(map[string]any)
		s, _ := params["sessionId"].(string)
		return s
	}
	add(&Mutant{Name: "stamp/acp/session-of-another", Class: "stamp", Dialects: []string{DialectACP},
		applies: func(tr []Exchange) bool {
			ids := map[string]bool{}
			received(tr, func(o map[string]any) bool {
				if s := acpSession(o); s != "" {
					ids[s] = true
				}
				return false
			})
			return len(ids) > 1
		},
		server: func(p *proxy, l []byte, obj map[string]any) [][]byte {
			s := acpSession(obj)
			if s == "" {
				return [][]byte{l}
			}
			p.sessions[s] = true
			for _, other := range sortedKeys(p.sessions) {
				if other != s {
					obj["params"].(map[string]any)["sessionId"] = other
					return [][]byte{line(obj)}
				}
			}
			return [][]byte{l}
		}})

	// Errors against successes.
	failures := func(tr []Exchange) bool {
		return received(tr, func(o map[string]any) bool { return isReply(o) && isFailure(o) && o["id"] != nil })
	}
	add(&Mutant{Name: "error/becomes-success", Class: "error", Dialects: all, applies: failures,
		server: func(p *proxy, l []byte, obj map[string]any) [][]byte {
			if !isReply(obj) || !isFailure(obj) || obj["id"] == nil {
				return [][]byte{l}
			}
			delete(obj, "error")
			delete(obj, "code")
			if obj["type"] == "response" {
				obj["success"] = true
			} else {
				obj["result"] = map[string]any{}
			}
			return [][]byte{line(obj)}
		}})
	add(&Mutant{Name: "error/success-becomes-failure", Class: "error", Dialects: all,
		applies: func(tr []Exchange) bool {
			return received(tr, func(o map[string]any) bool { return isReply(o) && !isFailure(o) })
		},
		server: func(p *proxy, l []byte, obj map[string]any) [][]byte {
			if !isReply(obj) || isFailure(obj) {
				return [][]byte{l}
			}
			delete(obj, "result")
			delete(obj, "data")
			switch {
			case obj["type"] == "response":
				obj["success"], obj["error"] = false, "internal failure"
			case isACP(obj):
				obj["error"] = map[string]any{"code": json.Number("-32603"), "message": "internal failure"}
			default:
				obj["error"], obj["code"] = "internal failure", "internal"
			}
			return [][]byte{line(obj)}
		}})
	add(&Mutant{Name: "error/code-swapped", Class: "error", Dialects: []string{DialectERPC, DialectACP}, // pi's failures have no code
		applies: func(tr []Exchange) bool {
			return received(tr, func(o map[string]any) bool { _, ok := swappedCode(o); return ok })
		},
		server: func(p *proxy, l []byte, obj map[string]any) [][]byte {
			c, ok := swappedCode(obj)
			if !ok {
				return [][]byte{l}
			}
			if e, isObj := obj["error"].(map[string]any); isObj {
				e["code"] = c
			} else {
				obj["code"] = c
			}
			return [][]byte{line(obj)}
		}})

	// Truncated text: the last delta of a run loses its second half, or
	// the prompt's final text does.
	add(&Mutant{Name: "truncate/last-delta", Class: "truncate", Dialects: all,
		applies: func(tr []Exchange) bool {
			return received(tr, func(o map[string]any) bool { _, t, d := wireDelta(o); _, _, cut := halfRunes(t); return d && cut })
		},
		server: func(p *proxy, l []byte, obj map[string]any) [][]byte {
			return p.truncateLastDelta(l, obj)
		}})
	add(&Mutant{Name: "truncate/final_output", Class: "truncate",
		applies: func(tr []Exchange) bool {
			methods := methodsOf(tr)
			return received(tr, func(o map[string]any) bool {
				r, _ := o["result"].(map[string]any)
				f, _ := r["final_output"].(string)
				_, _, cut := halfRunes(f)
				return isResponse(o) && methods[canon(o["id"])] == "session.prompt" && cut
			})
		},
		server: func(p *proxy, l []byte, obj map[string]any) [][]byte {
			r, _ := obj["result"].(map[string]any)
			f, _ := r["final_output"].(string)
			head, _, cut := halfRunes(f)
			if !isResponse(obj) || !cut {
				return [][]byte{l}
			}
			r["final_output"] = head
			if o, ok := r["output"].(string); ok {
				r["output"], _, _ = halfRunes(o)
			}
			return [][]byte{line(obj)}
		}})

	// Framing.
	add(&Mutant{Name: "framing/two-lines-in-one", Class: "framing", Dialects: all, applies: replies,
		server: func(p *proxy, l []byte, obj map[string]any) [][]byte {
			// A reply and the line after it share one line.
			if isReply(obj) {
				return [][]byte{append(l[:len(l)-1:len(l)-1], ' ')}
			}
			return [][]byte{l}
		}})
	add(&Mutant{Name: "framing/bom-at-start", Class: "framing", Dialects: all, start: [][]byte{[]byte("\ufeff")}})

	// The end of the process.
	add(&Mutant{Name: "exit/last-line-lost", Class: "exit", Dialects: all, dropHeld: true,
		server: func(p *proxy, l []byte, obj map[string]any) [][]byte {
			// Each line waits for the next (or a quiet spell); the one
			// still waiting when the server exits is never written.
			return p.lag(l)
		}})
	add(&Mutant{Name: "exit/one-and-two-swapped", Class: "exit", Dialects: all, exit: func(c int) int {
		switch c {
		case 1:
			return 2
		case 2:
			return 1
		}
		return c
	}})
	// More of the same families.
	add(&Mutant{Name: "control/integers-as-decimals", Class: "control", Control: true, Dialects: all,
		applies: func(tr []Exchange) bool { return received(tr, func(o map[string]any) bool { return decimalize(o) }) },
		server: func(p *proxy, l []byte, obj map[string]any) [][]byte {
			// Numbers are values (1.0 is the integer 1); ids keep their
			// text (F2) and so do the numbers a client echoes (ask).
			if !decimalize(obj) {
				return [][]byte{l}
			}
			return [][]byte{line(obj)}
		}})
	add(&Mutant{Name: "stamp/response-id-reencoded", Class: "stamp",
		applies: func(tr []Exchange) bool {
			return received(tr, func(o map[string]any) bool { _, ok := floatText(o["id"]); return isResponse(o) && ok })
		},
		server: func(p *proxy, l []byte, obj map[string]any) [][]byte {
			// F2: an id keeps its exact text; a float64 round trip loses it.
			f, ok := floatText(obj["id"])
			if !isResponse(obj) || !ok {
				return [][]byte{l}
			}
			obj["id"] = f
			return [][]byte{line(obj)}
		}})
	add(&Mutant{Name: "stamp/null-id-becomes-zero", Class: "stamp", Dialects: []string{DialectERPC, DialectACP}, // pi answers a line it cannot parse without an id
		applies: func(tr []Exchange) bool {
			return received(tr, func(o map[string]any) bool { id, has := o["id"]; return isReply(o) && has && id == nil })
		},
		server: func(p *proxy, l []byte, obj map[string]any) [][]byte {
			if id, has := obj["id"]; !isReply(obj) || !has || id != nil {
				return [][]byte{l}
			}
			obj["id"] = json.Number("0")
			return [][]byte{line(obj)}
		}})
	add(&Mutant{Name: "error/message-generic", Class: "error", Dialects: all, applies: failures,
		server: func(p *proxy, l []byte, obj map[string]any) [][]byte {
			if !isReply(obj) || !isFailure(obj) {
				return [][]byte{l}
			}
			if e, ok := obj["error"].(map[string]any); ok {
				e["message"] = "error"
			} else {
				obj["error"] = "error"
			}
			return [][]byte{line(obj)}
		}})
	add(&Mutant{Name: "error/code-dropped", Class: "error",
		applies: func(tr []Exchange) bool {
			return received(tr, func(o map[string]any) bool { _, c := o["code"]; return isResponse(o) && c })
		},
		server: func(p *proxy, l []byte, obj map[string]any) [][]byte {
			if _, c := obj["code"]; !isResponse(obj) || !c {
				return [][]byte{l}
			}
			delete(obj, "code")
			return [][]byte{line(obj)}
		}})
	add(&Mutant{Name: "error/result-and-error", Class: "error", applies: replies,
		server: func(p *proxy, l []byte, obj map[string]any) [][]byte {
			if !isResponse(obj) || isFailure(obj) {
				return [][]byte{l}
			}
			obj["error"] = "internal failure"
			return [][]byte{line(obj)}
		}})
	add(&Mutant{Name: "retype/reasoning-as-text", Class: "retype", Dialects: all,
		applies: func(tr []Exchange) bool { return received(tr, func(o map[string]any) bool { return retype(o, false) }) },
		server: func(p *proxy, l []byte, obj map[string]any) [][]byte {
			if !retype(obj, true) {
				return [][]byte{l}
			}
			return [][]byte{line(obj)}
		}})
	add(&Mutant{Name: "exit/signal-becomes-one", Class: "exit", Dialects: all, exit: func(c int) int {
		if c > 128 {
			return 1
		}
		return c
	}})
	add(&Mutant{Name: "exit/stderr-silenced", Class: "exit", Dialects: all, muteStderr: true})

	// A reply that never comes, method by method.
	for _, m := range schemas.Methods() {
		addTo(dropReplies("drop-response/"+m, nil, func(p *proxy, o map[string]any) bool {
			return isResponse(o) && p.methods[canon(o["id"])] == m
		}, func(tr []Exchange) bool {
			methods := methodsOf(tr)
			return received(tr, func(o map[string]any) bool { return isResponse(o) && methods[canon(o["id"])] == m })
		}, func(exp map[string]any, method string) bool { return isResponse(exp) && method == m }))
	}
	doc, _ := loadSchemaFile("pi/response.json")
	defs, _ := doc.(map[string]any)["$defs"].(map[string]any)
	for _, cmd := range sortedKeys(defs) {
		if cmd == "cancelled" || cmd == "failure" {
			continue
		}
		is := func(o map[string]any) bool { return o["type"] == "response" && o["command"] == cmd }
		addTo(dropReplies("drop-response/pi/"+cmd, []string{DialectPi}, func(_ *proxy, o map[string]any) bool { return is(o) },
			func(tr []Exchange) bool { return received(tr, is) }, func(exp map[string]any, _ string) bool { return is(exp) }))
	}
	acpMethods := sortedKeys(acpResults)
	for _, m := range sortedKeys(acpNoop) {
		if !slices.Contains(acpMethods, m) && m != "session/cancel" {
			acpMethods = append(acpMethods, m)
		}
	}
	for _, m := range acpMethods {
		addTo(dropReplies("drop-response/acp/"+m, []string{DialectACP}, func(p *proxy, o map[string]any) bool {
			return isACP(o) && isReply(o) && p.methods[canon(o["id"])] == m
		}, func(tr []Exchange) bool {
			methods := methodsOf(tr)
			return received(tr, func(o map[string]any) bool { return isACP(o) && isReply(o) && methods[canon(o["id"])] == m })
		}, func(exp map[string]any, method string) bool { return isACP(exp) && isReply(exp) && method == m }))
	}
}

// dropReplies is the mutant that never writes a reply that is matches.
func dropReplies(name string, dialects []string, is func(p *proxy, o map[string]any) bool, applies func([]Exchange) bool, never func(exp map[string]any, method string) bool) *Mutant {
	return &Mutant{Name: name, Class: "drop-response", Dialects: dialects, applies: applies, never: never,
		server: func(p *proxy, l []byte, obj map[string]any) [][]byte {
			if is(p, obj) {
				return nil
			}
			return [][]byte{l}
		}}
}

// decimalize writes every integer of v as N.0, but those of id, request,
// ask and call fields; it reports whether it changed any.
func decimalize(v any) bool {
	changed := false
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if k == "id" || k == "request" || k == "ask" || k == "call" {
				continue
			}
			if d, ok := asDecimal(e); ok {
				x[k], changed = d, true
				continue
			}
			changed = decimalize(e) || changed
		}
	case []any:
		for i, e := range x {
			if d, ok := asDecimal(e); ok {
				x[i], changed = d, true
				continue
			}
			changed = decimalize(e) || changed
		}
	}
	return changed
}

// asDecimal is the integer v written as N.0, when v is an integer.
func asDecimal(v any) (json.Number, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return "", false
	}
	if _, err := strconv.ParseInt(string(n), 10, 64); err != nil {
		return "", false
	}
	return n + ".0", true
}

// floatText is a numeric id as a float64 round trip writes it, when that
// differs from its text (1e400, 1.50, big integers).
func floatText(id any) (json.Number, bool) {
	n, ok := id.(json.Number)
	if !ok {
		return "", false
	}
	f, _, err := big.ParseFloat(string(n), 10, 53, big.ToNearestEven)
	if err != nil {
		return "", false
	}
	t := f.Text('g', -1)
	return json.Number(t), t != string(n)
}

// retype turns a reasoning delta into a text one (e rpc's reasoning, pi's
// thinking_delta, ACP's agent_thought_chunk); with apply false it only
// reports whether obj is one.
func retype(obj map[string]any, apply bool) bool {
	if u := acpUpdate(obj); u != nil && u["sessionUpdate"] == "agent_thought_chunk" {
		if apply {
			u["sessionUpdate"] = "agent_message_chunk"
		}
		return true
	}
	if a := piAME(obj); a != nil && a["type"] == "thinking_delta" {
		if apply {
			a["type"] = "text_delta"
		}
		return true
	}
	if lineType(obj) == "reasoning" {
		if apply {
			obj["type"] = "text"
		}
		return true
	}
	return false
}

// swappedCode is another error code for a failure reply that has one:
// e rpc's next code of the enum, ACP's JSON-RPC code traded for another.
func swappedCode(obj map[string]any) (any, bool) {
	if !isReply(obj) {
		return nil, false
	}
	if e, ok := obj["error"].(map[string]any); ok {
		c, ok := e["code"].(json.Number)
		if !ok {
			return nil, false
		}
		swap := map[string]string{"-32700": "-32600", "-32600": "-32601", "-32601": "-32602", "-32602": "-32603", "-32603": "-32602"}
		if s, ok := swap[string(c)]; ok {
			return json.Number(s), true
		}
		return json.Number("-32603"), true
	}
	c, ok := obj["code"].(string)
	if !ok {
		return nil, false
	}
	codes := []string{"parse_error", "invalid_request", "unknown_method", "invalid_params", "unknown_session", "turn_running", "no_turn", "locked", "untrusted", "not_found", "unsupported", "unknown_ask", "interrupted", "internal"}
	for i, k := range codes {
		if k == c {
			return codes[(i+1)%len(codes)], true
		}
	}
	return "internal", true
}

// flushBatch is the batch of lines held, as one write; p.mu is held.
func (p *proxy) flushBatch() [][]byte {
	if p.batchTimer != nil {
		p.batchTimer.Stop()
		p.batchTimer = nil
	}
	b := p.batch
	p.batch, p.batched = nil, 0
	if len(b) == 0 {
		return nil
	}
	return [][]byte{b}
}

// swapAdjacent holds each stream line until the stream's next one: a
// line of another type then goes first. A reply lets the held lines out
// first (the order against replies is another mutant's).
func (p *proxy) swapAdjacent(l []byte, obj map[string]any) [][]byte {
	if p.held == nil {
		p.held = map[string][]byte{}
	}
	key := wireStream(obj)
	if key == "" {
		var out [][]byte
		for _, k := range sortedKeys(p.held) {
			out = append(out, p.held[k])
		}
		p.held = nil
		return append(out, l)
	}
	prev, had := p.held[key]
	delete(p.held, key)
	p.armFlush()
	if !had {
		p.held[key] = l
		return nil
	}
	if wireType(jsonObject(prev)) != wireType(obj) {
		return [][]byte{l, prev}
	}
	p.held[key] = l
	return [][]byte{prev}
}

// holdDelta holds the latest delta of each e rpc request until the
// request's next delta: the events after the run's last delta, and the
// response, go first (the delta comes too late).
func (p *proxy) holdDelta(l []byte, obj map[string]any) [][]byte {
	if p.held == nil {
		p.held = map[string][]byte{}
	}
	key := ""
	switch {
	case isResponse(obj):
		key = canon(obj["id"])
	case obj["request"] != nil:
		key = canon(obj["request"])
	default:
		return [][]byte{l}
	}
	prev, had := p.held[key]
	if _, _, d := wireDelta(obj); d && !isResponse(obj) {
		p.held[key] = l
		p.armFlush()
		if had {
			return [][]byte{prev}
		}
		return nil
	}
	if !had || !isResponse(obj) {
		return [][]byte{l} // the held delta stays behind the events after it
	}
	delete(p.held, key)
	return [][]byte{l, prev}
}

// truncateLastDelta holds each delta until the next line of its stream:
// when that is not a delta of the same run, the held one, the run's last,
// goes out cut to its first half.
func (p *proxy) truncateLastDelta(l []byte, obj map[string]any) [][]byte {
	if p.held == nil {
		p.held = map[string][]byte{}
	}
	key := wireStream(obj)
	if key == "" {
		// A reply, a result or a line of the process ends the runs held.
		var out [][]byte
		for _, k := range sortedKeys(p.held) {
			out = append(out, cutDelta(p.held[k]))
		}
		p.held = nil
		return append(out, l)
	}
	run, _, isDelta := wireDelta(obj)
	prev, had := p.held[key]
	delete(p.held, key)
	var out [][]byte
	if had {
		prun, _, _ := wireDelta(jsonObject(prev))
		if isDelta && prun == run {
			out = append(out, prev)
		} else {
			out = append(out, cutDelta(prev))
		}
	}
	if isDelta {
		p.held[key] = l
		p.armFlush()
		return out
	}
	return append(out, l)
}

// cutDelta is a delta line with its text cut to the first half.
func cutDelta(l []byte) []byte {
	obj := jsonObject(l)
	_, text, _ := wireDelta(obj)
	head, _, ok := halfRunes(text)
	if !ok {
		return l
	}
	setWireDelta(obj, head)
	return line(obj)
}

// writeStderr prints a mutant's stderr noise.
func (m *Mutant) writeStderr() {
	if m.stderr != nil {
		os.Stderr.Write(m.stderr)
	}
}
