package conformance

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
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
		s, doc, err := acpSchema()
		if err != nil {
			return nil, err
		}
		if typ := acpType(obj); typ != "" && !acpKnownTypes[typ] {
			if sv.Strict {
				return nil, fmt.Errorf("ACP message type %q is in no schema (--strict: e prints only what its schemas describe)", typ)
			}
			return []string{fmt.Sprintf("ACP message type %q is in no schema: ignored, new types are additive", typ)}, nil
		}
		shape, ok = snode{file: acpSchemaFile, v: doc}, true
		validate = func(v any) error {
			if err := s.Validate(v); err != nil {
				return errors.New("ACP schema: " + oneLine(err))
			}
			return nil
		}
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
	// schemawalk resolves the schema's own "#/$defs/…" references.
	var plain any
	if err := json.Unmarshal(acpSchemaJSON, &plain); err != nil {
		return compiledACP{}, fmt.Errorf("conformance: ACP schema: %w", err)
	}
	schemaFiles.Store(acpSchemaFile, plain)
	return compiledACP{s, plain}, nil
})

// acpSchema is the compiled ACP schema and the same as data.
func acpSchema() (*jsonschema.Schema, any, error) {
	c, err := acpCompiled()
	return c.s, c.doc, err
}

// oneLine is a validation error on one line.
func oneLine(err error) string {
	var ve *jsonschema.ValidationError
	if errors.As(err, &ve) {
		return strings.ReplaceAll(strings.TrimSpace(fmt.Sprint(ve)), "\n", "; ")
	}
	return err.Error()
}
