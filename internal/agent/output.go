package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/e-agent/e/internal/model"
	"github.com/e-agent/e/schemas"
)

// OutputSchema is the JSON Schema a turn's final answer must be valid
// against (J1), compiled by e's validator.
type OutputSchema struct {
	Raw    json.RawMessage // as the client gave it, sent to the provider
	schema *schemas.UserSchema
}

// NewOutputSchema compiles raw; a keyword e's validator does not implement
// is an error naming it.
func NewOutputSchema(raw json.RawMessage) (*OutputSchema, error) {
	s, err := schemas.CompileUser(raw)
	if err != nil {
		return nil, err
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		return nil, err
	}
	return &OutputSchema{Raw: compact.Bytes(), schema: s}, nil
}

// check parses an answer as one JSON value valid against the schema. A
// value fenced as a Markdown code block is taken from inside the fence,
// as models write one even when told not to.
func (o *OutputSchema) check(text string) (json.RawMessage, error) {
	v := strings.TrimSpace(text)
	if rest, ok := strings.CutPrefix(v, "```"); ok && strings.HasSuffix(rest, "```") {
		rest = strings.TrimSuffix(rest, "```")
		if i := strings.IndexByte(rest, '\n'); i >= 0 {
			rest = rest[i+1:] // the fence's language tag
		}
		v = strings.TrimSpace(rest)
	}
	if v == "" {
		return nil, fmt.Errorf("the answer is empty, not a JSON value")
	}
	if !json.Valid([]byte(v)) {
		return nil, fmt.Errorf("the answer is not one JSON value")
	}
	if err := o.schema.Validate([]byte(v)); err != nil {
		return nil, err
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, []byte(v)); err != nil {
		return nil, err
	}
	return compact.Bytes(), nil
}

// correction is the user message of the corrective call (J2): why the
// answer is invalid and the schema again.
func (o *OutputSchema) correction(why error) model.Message {
	text := model.CorrectionPrefix + " " + why.Error() +
		"\nAnswer again with only one JSON value, no other text, valid against this JSON Schema:\n" + string(o.Raw)
	return model.Message{Role: model.RoleUser, Content: []model.Part{{Type: model.PartText, Text: text}}}
}

// instruction is the schema as words, for a provider that refused it as a
// field of its request.
func (o *OutputSchema) instruction() string {
	return "Answer with only one JSON value, no other text, valid against this JSON Schema:\n" + string(o.Raw)
}

// refusedOutputField reports whether err is an endpoint's 400 naming the
// field the output schema went in: one that does not know it (J1).
func refusedOutputField(err error, api string) bool {
	var me *model.Error
	if !errors.As(err, &me) || me.Status != 400 {
		return false
	}
	field := map[string]string{model.APIOpenAIChat: "response_format", model.APIOpenAIResponses: "format",
		model.APIAnthropic: "output_format"}[api]
	return field != "" && strings.Contains(me.Body+" "+me.Message, field)
}
