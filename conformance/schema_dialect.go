package conformance

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/e-agent/e/schemas"
)

// DialectValidator is a LineValidator that also checks the lines of the
// other dialects (spec/conformance.md 1.5); a validator that is not one
// checks e rpc lines only.
type DialectValidator interface {
	LineValidator
	ValidateDialectLine(dialect string, line []byte) (notes []string, err error)
}

// ValidateDialectLine implements DialectValidator: pi-rpc lines against
// schemas/pi, acp lines against ACP's published schema. As for e rpc,
// fields and types no schema describes are notes, or errors when Strict.
func (sv SchemaValidator) ValidateDialectLine(dialect string, line []byte) ([]string, error) {
	obj, err := lineObject(line)
	if err != nil {
		return nil, err
	}
	v := any(obj)
	var shape snode
	var ok bool
	var validate func(v any) error
	switch dialect {
	case DialectPi:
		typ, _ := obj["type"].(string)
		if typ != "" && !piKnownType(typ) && typ != "response" {
			if sv.Strict {
				return nil, fmt.Errorf("pi line type %q is in no schema (--strict: e prints only what its schemas describe)", typ)
			}
			return []string{fmt.Sprintf("pi line type %q is in no schema: ignored, new types are additive", typ)}, nil
		}
		shape, ok = piShape(obj)
		validate = func(v any) error {
			b, err := json.Marshal(v)
			if err != nil {
				return err
			}
			return schemas.ValidatePiLine(b)
		}
	case DialectACP:
		c, err := acpCompiled()
		if err != nil {
			return nil, err
		}
		if typ := acpType(obj); typ != "" && !acpKnownTypes[typ] {
			if sv.Strict {
				return nil, fmt.Errorf("ACP message type %q is in no schema (--strict: e prints only what its schemas describe)", typ)
			}
			return []string{fmt.Sprintf("ACP message type %q is in no schema: ignored, new types are additive", typ)}, nil
		}
		shape, ok, validate = snode{file: acpSchemaFile, v: c.doc}, true, c.validate
	default:
		return sv.ValidateLine(line, "")
	}
	var notes []string
	if ok {
		if unknown := unknownFields(obj, shape); len(unknown) > 0 {
			if sv.Strict {
				return nil, fmt.Errorf("field %s is in no schema (--strict: e prints only what its schemas describe)", unknown[0])
			}
			for _, p := range unknown {
				notes = append(notes, fmt.Sprintf("field %s is in no schema: ignored, new fields are additive", p))
			}
			v = withoutPointers(obj, unknown)
		}
	}
	return notes, validate(v)
}

// piShape is the schema of a pi line by its type: a response by its
// command (or the failure shape), an extension_ui_request by its method.
func piShape(obj map[string]any) (snode, bool) {
	typ, _ := obj["type"].(string)
	file, def := "pi/event.json", typ
	switch typ {
	case "response":
		file, def = "pi/response.json", "failure"
		if ok, _ := obj["success"].(bool); ok {
			def, _ = obj["command"].(string)
		}
	case "extension_ui_request":
		file, def = "pi/extension_ui_request.json", ""
		def, _ = obj["method"].(string)
	case "session":
		file, def = "pi/session_header.json", ""
	case "extension_ui_response":
		file, def = "pi/extension_ui_response.json", ""
	}
	doc, err := loadSchemaFile(file)
	if err != nil {
		return snode{}, false
	}
	if def == "" {
		return snode{file: file, v: doc}, true
	}
	defs, _ := doc.(map[string]any)["$defs"].(map[string]any)
	s, ok := defs[def]
	return snode{file: file, v: s}, ok
}

// piKnownType reports whether schemas/pi describes lines of type t.
func piKnownType(t string) bool {
	switch t {
	case "response", "extension_ui_request", "session":
		return true
	}
	if strings.HasPrefix(t, "ame_") {
		return false // the assistant message events' shapes, not line types
	}
	doc, err := loadSchemaFile("pi/event.json")
	if err != nil {
		return false
	}
	defs, _ := doc.(map[string]any)["$defs"].(map[string]any)
	_, ok := defs[t]
	return ok
}

//go:embed acpschema/schema.json
var acpSchemaJSON []byte

// acpSchemaFile is the name the ACP schema has among the schema files
// schemawalk reads.
const acpSchemaFile = "acp/schema.json"

type compiledACP struct {
	s   *jsonschema.Schema
	doc any // the schema as data, for schemawalk
	// updates are session/update notifications by their update's kind
	// (sessionUpdate), each one variant of s's union: most of a prompt's
	// lines are updates, and validating each against the whole union,
	// whose oneOf tries every kind, took ~100 µs a line (a 30,000-chunk
	// stream took seconds of a case's timeout). A line its kind's schema
	// accepts, s accepts too (the kinds' sessionUpdate constants differ,
	// so no other one of the oneOf matches); one it rejects is validated
	// against s, so the verdict is always s's.
	updates map[string]*jsonschema.Schema
}

// acpUpdateSchema is a session/update notification whose update is the
// variant at pointer (of $defs/SessionUpdate/oneOf), as ACP's union admits
// it (Agent › Notification › SessionNotification).
func acpUpdateSchema(pointer string) string {
	return `{"type":"object","required":["jsonrpc","method","params"],
 "properties":{"jsonrpc":{"type":"string","enum":["2.0"]},"method":{"const":"session/update"},
  "params":{"type":"object","required":["sessionId","update"],"properties":{
   "sessionId":{"$ref":"acp.json#/$defs/SessionId"},
   "update":{"$ref":"acp.json#/$defs/SessionUpdate/oneOf/` + pointer + `"},
   "_meta":{"$ref":"acp.json#/$defs/SessionNotification/properties/_meta"}}}}}`
}

var acpCompiled = sync.OnceValues(func() (compiledACP, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(acpSchemaJSON))
	if err != nil {
		return compiledACP{}, fmt.Errorf("conformance: ACP schema: %w", err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("acp.json", doc); err != nil {
		return compiledACP{}, fmt.Errorf("conformance: ACP schema: %w", err)
	}
	s, err := c.Compile("acp.json")
	if err != nil {
		return compiledACP{}, fmt.Errorf("conformance: ACP schema: %w", err)
	}
	var kinds struct {
		Defs struct {
			SessionUpdate struct {
				OneOf []struct {
					Properties struct {
						SessionUpdate struct{ Const string }
					}
				}
			}
		} `json:"$defs"`
	}
	if err := json.Unmarshal(acpSchemaJSON, &kinds); err != nil {
		return compiledACP{}, fmt.Errorf("conformance: ACP schema: %w", err)
	}
	updates := map[string]*jsonschema.Schema{}
	for i, k := range kinds.Defs.SessionUpdate.OneOf {
		kind := k.Properties.SessionUpdate.Const
		if kind == "" {
			continue
		}
		name := "acp-update-" + kind + ".json"
		doc, err := jsonschema.UnmarshalJSON(strings.NewReader(acpUpdateSchema(strconv.Itoa(i))))
		if err == nil {
			err = c.AddResource(name, doc)
		}
		if err == nil {
			updates[kind], err = c.Compile(name)
		}
		if err != nil {
			return compiledACP{}, fmt.Errorf("conformance: ACP schema: %s: %w", kind, err)
		}
	}
	plain, err := acpDoc()
	if err != nil {
		return compiledACP{}, err
	}
	return compiledACP{s, plain, updates}, nil
})

// acpDoc is the ACP schema as data, also stored as a schema file that
// schemawalk reads (it resolves the schema's own "#/$defs/…"
// references). The mutation proxy needs only this, not the compiled
// schema, whose compiling took most of each proxy process's start.
var acpDoc = sync.OnceValues(func() (any, error) {
	var plain any
	if err := json.Unmarshal(acpSchemaJSON, &plain); err != nil {
		return nil, fmt.Errorf("conformance: ACP schema: %w", err)
	}
	schemaFiles.Store(acpSchemaFile, plain)
	return plain, nil
})

// validate checks an ACP message against the schema, a session update
// by its variant first.
func (c compiledACP) validate(v any) error {
	if obj, _ := v.(map[string]any); obj["method"] == "session/update" {
		params, _ := obj["params"].(map[string]any)
		u, _ := params["update"].(map[string]any)
		kind, _ := u["sessionUpdate"].(string)
		if s := c.updates[kind]; s != nil && s.Validate(v) == nil {
			return nil
		}
	}
	if err := c.s.Validate(v); err != nil {
		return errors.New("ACP schema: " + oneLine(err))
	}
	return nil
}

// oneLine is a validation error on one line.
func oneLine(err error) string {
	var ve *jsonschema.ValidationError
	if errors.As(err, &ve) {
		return strings.ReplaceAll(strings.TrimSpace(fmt.Sprint(ve)), "\n", "; ")
	}
	return err.Error()
}
