package tool

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

type kind int

const (
	kString kind = iota
	kInteger
	kBoolean
)

func (k kind) String() string {
	return [...]string{"string", "integer", "boolean"}[k]
}

// param declares one argument. The JSON Schema and the validator are both
// derived from it, so they cannot disagree.
type param struct {
	name     string
	kind     kind
	required bool
	nonEmpty bool  // strings: minLength 1
	min, max int64 // integers, inclusive
	desc     string
}

// args holds validated arguments: string, int64 or bool values. An optional
// argument that was omitted or null is absent.
type args map[string]any

func (a args) str(name string) string {
	s, _ := a[name].(string)
	return s
}

func (a args) integer(name string, dflt int64) int64 {
	if n, ok := a[name].(int64); ok {
		return n
	}
	return dflt
}

func (a args) boolean(name string) bool {
	b, _ := a[name].(bool)
	return b
}

// nonNull maps absent or null arguments to an empty object.
func nonNull(raw json.RawMessage) json.RawMessage {
	if t := bytes.TrimSpace(raw); len(t) == 0 || string(t) == "null" {
		return json.RawMessage("{}")
	}
	return raw
}

// validate checks raw against params and returns the values. Unknown fields
// are ignored; null for an optional parameter means the default.
func validate(tool string, params []param, raw json.RawMessage) (args, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(nonNull(raw), &m); err != nil || m == nil {
		return nil, fmt.Errorf("%s: the arguments must be a JSON object", tool)
	}
	a := args{}
	for _, p := range params {
		v, ok := m[p.name]
		if !ok || string(bytes.TrimSpace(v)) == "null" {
			if p.required {
				return nil, fmt.Errorf("%s: %s is required", tool, p.name)
			}
			continue
		}
		val, err := p.check(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", tool, p.name, err)
		}
		a[p.name] = val
	}
	return a, nil
}

func (p param) check(v json.RawMessage) (any, error) {
	got := jsonType(v)
	switch p.kind {
	case kString:
		var s string
		if got != "string" || json.Unmarshal(v, &s) != nil {
			return nil, fmt.Errorf("expected string, got %s", got)
		}
		if p.nonEmpty && s == "" {
			return nil, fmt.Errorf("must not be empty")
		}
		return s, nil
	case kInteger:
		if got != "number" {
			return nil, fmt.Errorf("expected integer, got %s", got)
		}
		n, err := parseInteger(string(bytes.TrimSpace(v)))
		if err != nil {
			return nil, err
		}
		if n < p.min || n > p.max {
			return nil, fmt.Errorf("must be between %d and %d, got %d", p.min, p.max, n)
		}
		return n, nil
	default:
		var b bool
		if got != "boolean" || json.Unmarshal(v, &b) != nil {
			return nil, fmt.Errorf("expected boolean, got %s", got)
		}
		return b, nil
	}
}

// parseInteger accepts any JSON number with an integral value (10, 1e3, 5.0),
// as JSON Schema's "integer" does.
func parseInteger(s string) (int64, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, fmt.Errorf("expected integer, got %s", s)
	}
	return int64(f), nil
}

// jsonType names the JSON type of a valid JSON value by its first byte.
func jsonType(v json.RawMessage) string {
	t := bytes.TrimSpace(v)
	if len(t) == 0 {
		return "nothing"
	}
	switch t[0] {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

// schema renders params as a JSON Schema object, properties in declaration
// order. Optional parameters also admit null (meaning the default); unknown
// properties are allowed.
func schema(params []param) json.RawMessage {
	var b bytes.Buffer
	b.WriteString(`{"type":"object","properties":{`)
	var required []string
	for i, p := range params {
		if i > 0 {
			b.WriteByte(',')
		}
		prop := map[string]any{"description": p.desc}
		if p.required {
			prop["type"] = p.kind.String()
			required = append(required, p.name)
		} else {
			prop["type"] = []string{p.kind.String(), "null"}
		}
		switch {
		case p.kind == kString && p.nonEmpty:
			prop["minLength"] = 1
		case p.kind == kInteger:
			prop["minimum"], prop["maximum"] = p.min, p.max
		}
		name, _ := json.Marshal(p.name)
		body, _ := json.Marshal(prop)
		b.Write(name)
		b.WriteByte(':')
		b.Write(body)
	}
	b.WriteString(`}`)
	if required != nil {
		r, _ := json.Marshal(required)
		b.WriteString(`,"required":`)
		b.Write(r)
	}
	b.WriteString(`}`)
	return b.Bytes()
}
