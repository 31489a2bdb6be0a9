package conformance

// This file holds what differs between the front ends a case may speak
// (spec/conformance.md 1.5): how the process's command is derived from the
// server command, how a line is assigned to a stream and what type it has,
// which lines are deltas joined into runs, and which requests a client line
// makes. Everything else (sections, directives, matchers, placeholders,
// tape, files) is shared.

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// The dialects a case's header may name.
const (
	DialectERPC = "e-rpc"  // e rpc, and e -p for print cases (the default)
	DialectPi   = "pi-rpc" // e --mode rpc: pi 1.6.0's RPC protocol (spec/pi.md)
	DialectACP  = "acp"    // e acp: the Agent Client Protocol v1 (spec/acp.md)
)

// lineClass is what a dialect says about one line.
type lineClass struct {
	key   string // the stream: "r:<id>", "s:<session placeholder>", "process" …
	event bool   // anything but a response to a client request
	typ   string // an event's type, "" when it has none the dialect knows
	id    string // a response's request id (canonical JSON); "null" for id null
}

// dialect is one front end's framing. resolve maps a session id the server
// printed to its stream key (acp; nil at load time, when expected lines
// name sessions by placeholder).
type dialect interface {
	// argv is the process's command: the server command (ending in rpc)
	// turned into this front end's, plus the case's server_args.
	argv(srv []string, c *Case) ([]string, error)
	classify(obj map[string]any, c *Case, resolve func(string) string) (lineClass, error)
	// delta reports the run a delta line belongs to and its text: adjacent
	// deltas of one run in a stream are joined before matching.
	delta(obj map[string]any) (run, text string, ok bool)
	setDelta(obj map[string]any, text string)
	// counts reports whether a line counts although the case's
	// expectations in its stream do not name its type: e rpc's process
	// stream, the requests a server sends its client.
	counts(obj map[string]any, lc lineClass) bool
	knownType(typ string) bool

	// What the recorder loosens (spec/conformance.md 5):
	//
	// progressLine is the "?*" line that takes any line of stream key
	// while stopped work winds down: any event of an e rpc request, any
	// pi event, any update of an ACP session.
	progressLine(key string) map[string]any
	// partialOutput reports whether a line repeats a running tool's
	// output so far: pi's tool_execution_update, an ACP tool_call_update
	// with content and no status. How the output came in chunks, so how
	// many such lines a run prints and what each holds, varies from run
	// to run (e rpc's tool_output deltas are joined into one run
	// instead); partialLine is the "?*" line that takes any such line of
	// obj's stream.
	partialOutput(obj map[string]any) bool
	partialLine(obj map[string]any) map[string]any
	// raceBorn reports whether an event of type typ is what a client
	// line can put into work already running, at a moment the timing
	// decides: e rpc's steered and discarded, pi's queue_update.
	raceBorn(typ string) bool
	// steers reports whether a client line can change what work already
	// running does (a steer, a second prompt, a model change), so that
	// what the work prints after it depends on when it landed.
	steers(line string) bool
	// dropConcurrent removes from b the lines of tool calls that may run
	// at once, whose order varies (e rpc: dropConcurrentTools; pi:
	// dropPiConcurrentCalls).
	dropConcurrent(b *expectBuilder)
}

// steerMethods are the requests of each dialect that can change running
// work, by method (e rpc, ACP) or command type (pi).
var steerMethods = map[string]map[string]bool{
	DialectERPC: {"session.steer": true, "session.unsteer": true, "session.set": true, "session.compact": true, "session.prompt": true, "session.shell": true},
	DialectPi: {"steer": true, "follow_up": true, "prompt": true, "set_model": true, "cycle_model": true, "set_thinking_level": true,
		"cycle_thinking_level": true, "compact": true, "set_auto_compaction": true, "set_auto_retry": true, "set_steering_mode": true,
		"set_follow_up_mode": true, "bash": true, "new_session": true, "switch_session": true, "fork": true, "set_session_name": true},
	DialectACP: {"session/prompt": true, "session/set_config_option": true, "session/set_mode": true, "session/set_model": true, "session/load": true},
}

// steersBy reports whether line is a request of dialect name that can
// change running work, its method read from field.
func steersBy(name, field, line string) bool {
	v, _ := decode([]byte(line))
	obj, _ := v.(map[string]any)
	m, _ := obj[field].(string)
	return steerMethods[name][m]
}

// dialectOf is the case's dialect.
func dialectOf(c *Case) dialect {
	switch c.Dialect {
	case DialectPi:
		return piDialect{}
	case DialectACP:
		return acpDialect{}
	}
	return erpcDialect{}
}

// derived replaces the server command's trailing rpc by with.
func derived(srv []string, c *Case, with ...string) ([]string, error) {
	if len(srv) == 0 || srv[len(srv)-1] != "rpc" {
		return nil, skipError(fmt.Sprintf("%s case: the server command %q does not end in rpc, so there is no %s command to derive from it",
			c.Dialect, strings.Join(srv, " "), strings.Join(with, " ")))
	}
	argv := append(append([]string{}, srv[:len(srv)-1]...), with...)
	return append(argv, c.ServerArgs...), nil
}

// erpcDialect is e rpc (spec/protocol.md).
type erpcDialect struct{}

func (erpcDialect) argv(srv []string, c *Case) ([]string, error) {
	return append(append([]string{}, srv...), c.ServerArgs...), nil
}

// classify: a request's events and its response share the stream
// "r:<id>"; lines of the process (ask, notice) are in "process".
func (erpcDialect) classify(obj map[string]any, _ *Case, _ func(string) string) (lineClass, error) {
	if t, ok := obj["type"]; ok && t != "$absent" {
		typ, _ := t.(string)
		req, ok := obj["request"]
		if !ok || req == "$absent" {
			return lineClass{key: "process", event: true, typ: typ}, nil
		}
		if isPattern(req) {
			return lineClass{}, errors.New(`an event's "request" must be the literal request id`)
		}
		return lineClass{key: "r:" + canon(req), event: true, typ: typ}, nil
	}
	id, ok := obj["id"]
	if !ok {
		return lineClass{}, errors.New(`line has neither "type" (an event) nor "id" (a response) (F3)`)
	}
	if isPattern(id) {
		return lineClass{}, errors.New(`a response's "id" must be the literal request id`)
	}
	return lineClass{key: "r:" + canon(id), id: canon(id)}, nil
}

func (erpcDialect) delta(obj map[string]any) (string, string, bool) {
	t, _ := obj["type"].(string)
	d, ok := obj["delta"].(string)
	switch {
	case !ok:
		return "", "", false
	case t == "text" || t == "reasoning" || t == "shell_output":
		return t, d, true
	case t == "tool_output":
		return t + ":" + canon(obj["id"]), d, true
	}
	return "", "", false
}

func (erpcDialect) setDelta(obj map[string]any, text string) { obj["delta"] = text }

// counts: the process stream's lines (ask, notice) count unexpected,
// but a type no schema knows is additive there too (P8).
func (erpcDialect) counts(_ map[string]any, lc lineClass) bool {
	return lc.key == "process" && knownEventType(lc.typ)
}

func (erpcDialect) knownType(t string) bool { return knownEventType(t) }

func (erpcDialect) progressLine(key string) map[string]any {
	id, _ := decode([]byte(strings.TrimPrefix(key, "r:")))
	return map[string]any{"type": "$string", "request": id}
}

func (erpcDialect) partialOutput(map[string]any) bool { return false }

func (erpcDialect) partialLine(map[string]any) map[string]any { return nil }

func (erpcDialect) raceBorn(t string) bool { return t == "steered" || t == "discarded" }

func (erpcDialect) steers(line string) bool { return steersBy(DialectERPC, "method", line) }

func (erpcDialect) dropConcurrent(b *expectBuilder) { b.dropConcurrentTools() }

// piDialect is e --mode rpc. Responses ({"type":"response"}) are in the
// stream of their id; every other line (events, extension_ui_request) is
// in the process stream, in order: pi has one session per process.
type piDialect struct{}

func (piDialect) argv(srv []string, c *Case) ([]string, error) {
	return derived(srv, c, "--mode", "rpc")
}

func (piDialect) classify(obj map[string]any, _ *Case, _ func(string) string) (lineClass, error) {
	typ, ok := obj["type"].(string)
	if !ok {
		return lineClass{}, errors.New(`a pi line has a string "type"`)
	}
	if typ == "message_update" {
		// A message update's type is its assistant message event's: a
		// case about tool calls need not list the text deltas.
		if t, ok := piAME(obj)["type"].(string); ok && !isPattern(t) {
			typ += "." + t
		}
	}
	if typ != "response" {
		return lineClass{key: piEventStream(obj, typ), event: true, typ: typ}, nil
	}
	id, ok := obj["id"]
	if !ok || id == "$absent" {
		return lineClass{key: "r:null", id: "null"}, nil // a line that could not be parsed has no id
	}
	if isPattern(id) {
		return lineClass{}, errors.New(`a response's "id" must be the literal command id`)
	}
	return lineClass{key: "r:" + canon(id), id: canon(id)}, nil
}

// piEventStream is the stream of a pi event: a bash command's output is in
// the stream of the command's response (its id), and each kind of
// command-born event (a rename, a thinking level) in one of its own, so
// that none is ordered against a run that goes on meanwhile; every other
// event is in the process stream.
func piEventStream(obj map[string]any, typ string) string {
	switch typ {
	case "bash_execution_update":
		if id, ok := obj["id"].(string); ok && id != "" && !isPattern(id) {
			return "r:" + canon(id)
		}
	case "session_info_changed", "thinking_level_changed":
		return "command:" + typ
	}
	return "process"
}

func piAME(obj map[string]any) map[string]any {
	if obj["type"] != "message_update" {
		return nil
	}
	a, _ := obj["assistantMessageEvent"].(map[string]any)
	return a
}

// delta: the text, thinking and tool call argument deltas of one content
// block (contentIndex). A joined line keeps the first one's message.
func (piDialect) delta(obj map[string]any) (string, string, bool) {
	if obj["type"] == "bash_execution_update" {
		d, ok := obj["delta"].(string)
		return "bash", d, ok
	}
	a := piAME(obj)
	t, _ := a["type"].(string)
	d, ok := a["delta"].(string)
	if !ok || !strings.HasSuffix(t, "_delta") {
		return "", "", false
	}
	return t + ":" + canon(a["contentIndex"]), d, true
}

func (piDialect) setDelta(obj map[string]any, text string) {
	if obj["type"] == "bash_execution_update" {
		obj["delta"] = text
	}
	if a := piAME(obj); a != nil {
		a["delta"] = text
	}
}

// counts: an extension's dialog waits for its answer, so it always counts.
func (piDialect) counts(_ map[string]any, lc lineClass) bool { return lc.typ == "extension_ui_request" }

func (piDialect) knownType(t string) bool {
	base, _, _ := strings.Cut(t, ".")
	return piKnownType(base)
}

func (piDialect) progressLine(string) map[string]any { return map[string]any{"type": "$string"} }

func (piDialect) partialOutput(obj map[string]any) bool {
	return obj["type"] == "tool_execution_update"
}

func (piDialect) partialLine(map[string]any) map[string]any {
	return map[string]any{"type": "tool_execution_update"}
}

func (piDialect) raceBorn(t string) bool { return t == "queue_update" }

func (piDialect) steers(line string) bool { return steersBy(DialectPi, "type", line) }

func (piDialect) dropConcurrent(b *expectBuilder) { b.dropPiConcurrentCalls() }

// acpDialect is e acp: JSON-RPC 2.0. A session's lines form one stream,
// "s:<name>" where name is the placeholder its session id is bound to: its
// session/update notifications, the requests the agent sends about it
// (session/request_permission) and the responses to the client's requests
// that name it. Responses to requests naming no session (initialize,
// session/new, session/list) are in "r:<id>".
type acpDialect struct{}

func (acpDialect) argv(srv []string, c *Case) ([]string, error) { return derived(srv, c, "acp") }

func (d acpDialect) classify(obj map[string]any, c *Case, resolve func(string) string) (lineClass, error) {
	if _, hasMethod := obj["method"].(string); hasMethod {
		return lineClass{key: acpSessionKey(obj, resolve), event: true, typ: acpType(obj)}, nil
	}
	id, ok := obj["id"]
	if !ok {
		return lineClass{}, errors.New(`a JSON-RPC message has a "method" (a request or notification) or an "id" (a response) (K1)`)
	}
	if isPattern(id) {
		return lineClass{}, errors.New(`a response's "id" must be the literal request id`)
	}
	lc := lineClass{key: "r:" + canon(id), id: canon(id)}
	if req := acpRequest(c, canon(id)); req != nil {
		if k := acpSessionKey(req, nil); k != "process" {
			lc.key = k
		}
	}
	return lc, nil
}

// acpType is the type of an ACP request or notification: a session
// update's kind (params.update.sessionUpdate), else its method; "" for a
// response.
func acpType(obj map[string]any) string {
	method, _ := obj["method"].(string)
	if method == "session/update" {
		params, _ := obj["params"].(map[string]any)
		u, _ := params["update"].(map[string]any)
		t, _ := u["sessionUpdate"].(string)
		return t
	}
	return method
}

// acpSessionKey is the stream of a message naming params.sessionId; one
// naming none is in the process stream.
func acpSessionKey(obj map[string]any, resolve func(string) string) string {
	p, _ := obj["params"].(map[string]any)
	sid, ok := p["sessionId"].(string)
	switch {
	case !ok || sid == "$absent":
		return "process"
	case wholePlaceholder(sid):
		return "s:" + sid[2:len(sid)-2]
	case resolve != nil:
		return resolve(sid)
	}
	return "s=" + sid
}

func wholePlaceholder(s string) bool {
	return strings.HasPrefix(s, "{{") && strings.HasSuffix(s, "}}") && strings.Count(s, "{{") == 1
}

// acpRequest is the client line (as the case writes it) that sent the
// request with that id, or nil.
func acpRequest(c *Case, id string) map[string]any {
	for _, s := range c.client {
		if s.kind != "send" {
			continue
		}
		v, err := decode(s.text)
		obj, ok := v.(map[string]any)
		if err != nil || !ok {
			continue
		}
		if _, isReq := obj["method"]; isReq && obj["id"] != nil && canon(obj["id"]) == id {
			return obj
		}
	}
	return nil
}

// acpChunks are the session updates whose content text streams in pieces.
var acpChunks = map[string]bool{"agent_message_chunk": true, "agent_thought_chunk": true, "user_message_chunk": true}

func acpContent(obj map[string]any) map[string]any {
	if obj["method"] != "session/update" {
		return nil
	}
	params, _ := obj["params"].(map[string]any)
	u, _ := params["update"].(map[string]any)
	if t, _ := u["sessionUpdate"].(string); !acpChunks[t] {
		return nil
	}
	c, _ := u["content"].(map[string]any)
	if c["type"] != "text" {
		return nil
	}
	return c
}

func (acpDialect) delta(obj map[string]any) (string, string, bool) {
	c := acpContent(obj)
	text, ok := c["text"].(string)
	if !ok {
		return "", "", false
	}
	u := obj["params"].(map[string]any)["update"].(map[string]any)
	return u["sessionUpdate"].(string), text, true
}

func (acpDialect) setDelta(obj map[string]any, text string) {
	if c := acpContent(obj); c != nil {
		c["text"] = text
	}
}

// counts: a request of the agent waits for the client's answer, so every
// one ACP defines counts (K9: e acp sends no fs/*, terminal/* or
// elicitation requests); one of a method ACP v1 lacks is additive.
func (acpDialect) counts(obj map[string]any, lc lineClass) bool {
	_, isRequest := obj["id"]
	return isRequest && acpKnownTypes[lc.typ]
}

func (acpDialect) knownType(t string) bool { return acpKnownTypes[t] }

func (acpDialect) progressLine(key string) map[string]any {
	return map[string]any{"method": "session/update", "params": map[string]any{"sessionId": "{{" + strings.TrimPrefix(key, "s:") + "}}"}}
}

func (acpDialect) partialOutput(obj map[string]any) bool {
	u, _ := obj["params"].(map[string]any)
	u, _ = u["update"].(map[string]any)
	_, status := u["status"]
	return obj["method"] == "session/update" && u["sessionUpdate"] == "tool_call_update" && u["content"] != nil && !status
}

func (acpDialect) partialLine(obj map[string]any) map[string]any {
	p, _ := obj["params"].(map[string]any)
	return map[string]any{"method": "session/update", "params": map[string]any{"sessionId": p["sessionId"],
		"update": map[string]any{"sessionUpdate": "tool_call_update", "status": "$absent"}}}
}

func (acpDialect) raceBorn(string) bool { return false }

func (acpDialect) steers(line string) bool { return steersBy(DialectACP, "method", line) }

func (acpDialect) dropConcurrent(b *expectBuilder) { b.dropACPConcurrentCalls() }

// acpKnownTypes are ACP v1's session update kinds and agent requests.
var acpKnownTypes = map[string]bool{
	"user_message_chunk": true, "agent_message_chunk": true, "agent_thought_chunk": true, "tool_call": true,
	"tool_call_update": true, "plan": true, "available_commands_update": true, "current_mode_update": true,
	"config_option_update": true, "session_info_update": true, "usage_update": true,
	"session/request_permission": true, "fs/read_text_file": true, "fs/write_text_file": true,
	"terminal/create": true, "terminal/output": true, "terminal/release": true, "terminal/wait_for_exit": true,
	"terminal/kill": true, "session/elicitation": true,
}

// resolveSession is the stream key of a session id the server printed:
// "s:<name>" for the placeholder bound to it (the one with a stream when
// several are), else "s=<id>"; r.mu is held.
func (r *run) resolveSession(sid string) string {
	var names []string
	for n, v := range r.m.bindings {
		if s, ok := v.(string); ok && s == sid {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		if _, ok := r.streams["s:"+n]; ok {
			return "s:" + n
		}
	}
	if len(names) > 0 {
		return "s:" + names[0]
	}
	return "s=" + sid
}

// cloneJSON is a deep copy of a decoded JSON value.
func cloneJSON(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = cloneJSON(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = cloneJSON(e)
		}
		return out
	}
	return v
}
