package conformance

import (
	"encoding/json"
	"fmt"

	"github.com/e-agent/e/schemas"
)

// SchemaValidator checks lines against the protocol schemas of package
// schemas: every line by its shape, and a response's result by the schema
// of the method it answers; the lines of e -p --json (MethodPrint) as
// unstamped events and the final result line.
//
// The protocol is additive (P8, V2): a field no schema declares and an
// event of a type the schemas do not know are reported as notes and
// otherwise ignored, so a newer server passes. Strict turns them into
// errors: e's own tests use it, so that e prints nothing its schemas do not
// describe.
type SchemaValidator struct {
	Strict bool
}

// ValidateLine implements LineValidator.
func (sv SchemaValidator) ValidateLine(line []byte, method string) ([]string, error) {
	obj, err := lineObject(line)
	if err != nil {
		return nil, err
	}
	typ, hasType := obj["type"].(string)
	_, typed := obj["type"]
	if typed && !hasType {
		return nil, schemas.ValidateLine(line) // names the bad type field
	}
	var shape []snode
	add := func(name string) {
		if n, ok := schemaNamed(name); ok {
			shape = append(shape, n)
		}
	}
	switch {
	case hasType && lineSchema(typ) && method != MethodPrint:
		add("lines/" + typ)
	case hasType && method == MethodPrint && typ == "result":
		add("lines/result")
	case hasType:
		if _, known := schemas.Schema("events/" + typ); !known {
			if sv.Strict {
				return nil, fmt.Errorf("event type %q is in no schema (--strict: e prints only what its schemas describe)", typ)
			}
			return []string{fmt.Sprintf("event type %q is in no schema: ignored, new event types are additive (P8)", typ)}, nil
		}
		add("events/" + typ)
		if method != MethodPrint {
			add("lines/event")
		}
	case obj["result"] != nil:
		add("envelope/response")
		if method != "" && method != "oneshot" {
			if n, ok := schemaNamed(method + ".result"); ok {
				shape = append(shape, snode{file: "", v: map[string]any{"properties": map[string]any{"result": refTo{file: n.file, v: n.v}}}})
			}
		}
	case obj["output"] != nil || method == "oneshot":
		add("oneshot/answer")
	default:
		add("envelope/error")
	}
	var notes []string
	if unknown := unknownFields(obj, shape...); len(unknown) > 0 {
		if sv.Strict {
			return nil, fmt.Errorf("field %s is in no schema (--strict: e prints only what its schemas describe)", unknown[0])
		}
		for _, p := range unknown {
			notes = append(notes, fmt.Sprintf("field %s is in no schema: ignored, new fields are additive (P8)", p))
		}
		if line, err = json.Marshal(withoutPointers(obj, unknown)); err != nil {
			return nil, err
		}
	}
	return notes, validateKnown(line, method, typ, hasType)
}

// validateKnown checks a line whose fields the schemas all declare.
func validateKnown(line []byte, method, typ string, hasType bool) error {
	if method == MethodPrint {
		if typ == "result" {
			return schemas.ValidateResultLine(line)
		}
		return schemas.ValidateEvent(line, false)
	}
	if err := schemas.ValidateLine(line); err != nil {
		return err
	}
	var head struct {
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(line, &head); err != nil {
		return err
	}
	if !hasType && head.Result != nil && method != "" && method != "oneshot" {
		if _, known := schemas.Schema(method + ".result"); known {
			return schemas.ValidateResult(method, head.Result)
		}
	}
	return nil
}

// knownEventType reports whether some schema describes lines of type t.
func knownEventType(t string) bool {
	if lineSchema(t) || t == "result" {
		return true
	}
	_, ok := schemas.Schema("events/" + t)
	return ok
}

// lineSchema reports whether lines of type t are e rpc's lines other than
// events, each with its schema lines/<t>.
func lineSchema(t string) bool {
	return t == "ask" || t == "notice" || t == "tool_call" || t == "tool_call_cancelled"
}

// lineObject decodes a line that must be one JSON object.
func lineObject(line []byte) (map[string]any, error) {
	v, err := decode(line)
	if err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("not a JSON object")
	}
	return obj, nil
}
