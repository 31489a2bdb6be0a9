package conformance

import (
	"encoding/json"
	"fmt"

	"github.com/e-agent/e/schemas"
)

// SchemaValidator checks lines against the protocol schemas of package
// schemas: every line by its shape, and a response's result by the schema
// of the method it answers; the lines of e -p --json (MethodPrint) as
// unstamped events and the final result line. Events of types the schemas
// do not know pass:
// new event types are additive (P8).
type SchemaValidator struct{}

// ValidateLine implements LineValidator.
func (SchemaValidator) ValidateLine(line []byte, method string) error {
	var head struct {
		Type   *string         `json:"type"`
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(line, &head); err != nil {
		return fmt.Errorf("not a JSON object: %w", err)
	}
	if method == MethodPrint {
		switch {
		case head.Type != nil && *head.Type == "result":
			return schemas.ValidateResultLine(line)
		case head.Type != nil:
			if _, known := schemas.Schema("events/" + *head.Type); !known {
				return nil
			}
		}
		return schemas.ValidateEvent(line, false)
	}
	if head.Type != nil && *head.Type != "ask" && *head.Type != "notice" {
		if _, known := schemas.Schema("events/" + *head.Type); !known {
			return nil
		}
	}
	if err := schemas.ValidateLine(line); err != nil {
		return err
	}
	if head.Type == nil && head.Result != nil && method != "" && method != "oneshot" {
		if _, known := schemas.Schema(method + ".result"); known {
			return schemas.ValidateResult(method, head.Result)
		}
	}
	return nil
}
