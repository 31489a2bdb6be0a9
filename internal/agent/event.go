package agent

import (
	"encoding/json"

	"github.com/e-agent/e/internal/model"
)

// Event is one session event (P8). Each concrete type marshals to a JSON
// object whose "type" field is EventType(); the server adds the "session"
// and "request" stamps, e -p --json prints it as is. The events a turn
// streams by the thousand, *Text and *Reasoning, are pointers (a struct
// value in an interface costs an allocation per event), valid only while
// the sink runs: the turn sets the same one anew for its next delta, so a
// sink that keeps one keeps a copy. The rest are values.
//
// The event types, the turn Result and the shapes they share are
// generated from schemas/events, schemas/result.json and schemas/defs.json
// into event_gen.go (internal/gen/agent.go): a new event is its schema,
// go generate ./..., and the code that emits it.
type Event interface {
	EventType() string
}

// NewUsage returns u with prompt_tokens filled in (U1).
func NewUsage(u model.Usage) Usage { return Usage{Usage: u, PromptTokens: u.Prompt()} }

// Marshal encodes ev as a JSON object with its "type" first.
func Marshal(ev Event) ([]byte, error) {
	body, err := json.Marshal(ev)
	if err != nil {
		return nil, err
	}
	head := `{"type":"` + ev.EventType() + `"`
	if string(body) == "{}" {
		return []byte(head + "}"), nil
	}
	return append([]byte(head+","), body[1:]...), nil
}
