package conformance

// This file holds the mutants of the pi-rpc and acp dialects: defects
// planted in front of e --mode rpc and e acp, derived from schemas/pi and
// the ACP schema as the e rpc ones are from schemas/ (mutants.go), so that
// the dialect cases are proven to catch them.

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/e-agent/e/schemas"
)

// piEventTypes are the pi line types of schemas/pi/event.json, and the
// message_update kinds (message_update.<assistant message event type>).
func piEventTypes() (types, updates []string) {
	doc, err := loadSchemaFile("pi/event.json")
	if err != nil {
		return nil, nil
	}
	defs, _ := doc.(map[string]any)["$defs"].(map[string]any)
	for _, t := range sortedKeys(defs) {
		if ame, ok := strings.CutPrefix(t, "ame_"); ok {
			updates = append(updates, "message_update."+ame)
		} else if t != "message_update" { // by its kinds
			types = append(types, t)
		}
	}
	return append(types, "extension_ui_request"), updates
}

// piDef is the schema of $defs/name in a schemas/pi file.
func piDef(file, name string) (snode, bool) {
	doc, err := loadSchemaFile(file)
	if err != nil {
		return snode{}, false
	}
	v, ok := doc.(map[string]any)["$defs"].(map[string]any)[name]
	return snode{file: file, v: v}, ok
}

// piType is a pi line's type as the pi dialect names it
// (message_update.<kind> for a message update).
func piType(obj map[string]any) string {
	t := lineType(obj)
	if k, ok := piAME(obj)["type"].(string); ok {
		t += "." + k
	}
	return t
}

// piNoop are the pi commands that change state, answered by a noop mutant
// with this response data (nil: none) and not performed.
var piNoop = map[string]any{
	"abort": nil, "abort_bash": nil, "follow_up": nil, "new_session": map[string]any{"cancelled": false},
	"prompt": nil, "set_auto_compaction": nil, "set_auto_retry": nil, "set_follow_up_mode": nil,
	"set_session_name": nil, "set_steering_mode": nil, "set_thinking_level": nil, "steer": nil, "clear_queue": map[string]any{"steering": []any{}, "followUp": []any{}},
}

// acpNoop are the ACP requests a noop mutant answers with this result
// without performing them; session/cancel (a notification) is dropped.
var acpNoop = map[string]any{
	"session/cancel":            nil,
	"session/prompt":            map[string]any{"stopReason": "end_turn"},
	"session/set_config_option": map[string]any{"configOptions": []any{}},
	"session/close":             map[string]any{},
}

// acpResults are the ACP methods whose results' fields are mutated, with
// their schema's $defs name.
var acpResults = map[string]string{
	"initialize": "InitializeResponse", "session/new": "NewSessionResponse", "session/prompt": "PromptResponse",
	"session/load": "LoadSessionResponse", "session/list": "ListSessionsResponse",
	"session/set_config_option": "SetSessionConfigOptionResponse", "session/resume": "ResumeSessionResponse",
}

// acpUpdate is the update of an ACP session/update notification, nil for
// any other line.
func acpUpdate(obj map[string]any) map[string]any {
	if obj["method"] != "session/update" {
		return nil
	}
	params, _ := obj["params"].(map[string]any)
	u, _ := params["update"].(map[string]any)
	return u
}

func addDialectMutants(add func(*Mutant)) {
	pi := []string{DialectPi}
	acp := []string{DialectACP}

	// pi: drop each line type, each message update kind; drop and falsify
	// each field of each event (message updates: of their assistant
	// message event) and of each command's response.
	types, updates := piEventTypes()
	for _, t := range append(append([]string{}, types...), updates...) {
		add(dropLines("drop-event/pi/"+t, pi, func(o map[string]any) bool { return o["type"] != "response" && piType(o) == t }))
	}
	for _, t := range types {
		n, ok := piDef("pi/event.json", t)
		if !ok {
			continue
		}
		for _, path := range fieldPaths(n, 1) {
			if path != "type" {
				addFieldMutants(add, pi, "pi/"+t, path, func(o map[string]any) (map[string]any, bool) { return o, piType(o) == t })
			}
		}
	}
	for _, u := range updates {
		n, ok := piDef("pi/event.json", "ame_"+strings.TrimPrefix(u, "message_update."))
		if !ok {
			continue
		}
		for _, path := range fieldPaths(n, 1) {
			if path != "type" {
				addFieldMutants(add, pi, "pi/"+u, path, func(o map[string]any) (map[string]any, bool) {
					return piAME(o), piType(o) == u
				})
			}
		}
	}
	doc, _ := loadSchemaFile("pi/response.json")
	defs, _ := doc.(map[string]any)["$defs"].(map[string]any)
	for _, cmd := range sortedKeys(defs) {
		n, _ := piDef("pi/response.json", cmd)
		for _, path := range fieldPaths(n, 2) {
			if path == "type" || path == "command" || path == "id" || path == "success" || !strings.HasPrefix(path, "data") {
				continue
			}
			addFieldMutants(add, pi, "pi/response."+cmd, path, func(o map[string]any) (map[string]any, bool) {
				return o, o["type"] == "response" && o["command"] == cmd && o["success"] == true
			})
		}
	}
	for _, cmd := range sortedKeys(piNoop) {
		is := func(o map[string]any) bool {
			if o["type"] != cmd {
				return false
			}
			b, _ := json.Marshal(o)
			_, err := schemas.ValidatePiCommand(b)
			return err == nil
		}
		add(&Mutant{Name: "noop/pi/" + cmd, Class: "noop", Dialects: pi,
			client: func(p *proxy, l []byte, obj map[string]any) ([]byte, [][]byte) {
				if !is(obj) {
					return l, nil
				}
				r := map[string]any{"type": "response", "command": cmd, "success": true}
				if id, ok := obj["id"]; ok {
					r["id"] = id
				}
				if d := piNoop[cmd]; d != nil {
					r["data"] = d
				}
				return nil, [][]byte{line(r)}
			},
			applies: func(tr []Exchange) bool { return sent(tr, is) }})
	}

	// acp: drop each session update kind and the permission request;
	// drop and falsify each field of each update kind and of each
	// method's result; answer requests without performing them.
	if n, ok := acpDef("SessionUpdate"); ok {
		for _, b := range n.deref().v.(map[string]any)["oneOf"].([]any) {
			variant := snode{file: acpSchemaFile, v: b}
			kind, _ := b.(map[string]any)["properties"].(map[string]any)["sessionUpdate"].(map[string]any)["const"].(string)
			if kind == "" {
				continue
			}
			add(dropLines("drop-event/acp/"+kind, acp, func(o map[string]any) bool { return acpUpdate(o)["sessionUpdate"] == kind }))
			for _, path := range fieldPaths(variant, 1) {
				if path != "sessionUpdate" {
					addFieldMutants(add, acp, "acp/"+kind, path, func(o map[string]any) (map[string]any, bool) {
						u := acpUpdate(o)
						return u, u["sessionUpdate"] == kind
					})
				}
			}
		}
	}
	add(dropLines("drop-event/acp/session/request_permission", acp, func(o map[string]any) bool { return o["method"] == "session/request_permission" }))
	for _, m := range sortedKeys(acpResults) {
		n, ok := acpDef(acpResults[m])
		if !ok {
			continue
		}
		for _, path := range fieldPaths(n, 1) {
			addFieldMutants(add, acp, "acp/"+m+".result", path, func(o map[string]any) (map[string]any, bool) {
				r, ok := o["result"].(map[string]any)
				return r, ok && o["\x00method"] == m
			})
		}
	}
	for _, m := range sortedKeys(acpNoop) {
		is := func(o map[string]any) bool {
			params, _ := o["params"].(map[string]any)
			_, hasSession := params["sessionId"].(string)
			return o["method"] == m && hasSession
		}
		add(&Mutant{Name: "noop/acp/" + m, Class: "noop", Dialects: acp,
			client: func(p *proxy, l []byte, obj map[string]any) ([]byte, [][]byte) {
				if !is(obj) {
					return l, nil
				}
				id, hasID := obj["id"]
				if !hasID {
					return nil, nil
				}
				return nil, [][]byte{line(map[string]any{"jsonrpc": "2.0", "id": id, "result": acpNoop[m]})}
			},
			applies: func(tr []Exchange) bool { return sent(tr, is) }})
	}
}

// acpDef is the ACP schema's $defs/name.
func acpDef(name string) (snode, bool) {
	doc, err := acpDoc() // also makes it a schema file schemawalk reads
	if err != nil {
		return snode{}, false
	}
	defs, _ := doc.(map[string]any)["$defs"].(map[string]any)
	v, ok := defs[name]
	return snode{file: acpSchemaFile, v: v}, ok
}

// dialectOfCase is the case's dialect, e-rpc when unnamed.
func dialectOfCase(c *Case) string {
	if c.Dialect == "" {
		return DialectERPC
	}
	return c.Dialect
}

// speaks reports whether m is tried against cases of dialect d: e rpc's
// mutants (no Dialects) against e rpc cases only.
func (m *Mutant) speaks(d string) bool {
	if m.Dialects == nil {
		return d == DialectERPC
	}
	return slices.Contains(m.Dialects, d)
}
