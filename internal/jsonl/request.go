package jsonl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// ErrMalformed is matched (errors.Is) by Request's error for a line that is
// not JSON at all, as opposed to valid JSON that is not a request.
var ErrMalformed = errors.New("malformed JSON")

// Request checks what can be known of a request line before its method
// runs, and returns its top-level id to answer with. The id is valid JSON
// and valid UTF-8: its own text (ids are compared by text), except that
// bytes of a string id that are not UTF-8 become U+FFFD, so the response
// line (and every event stamped with it) stays valid UTF-8. It is null when
// the line is malformed or its id is ambiguous.
//
// err, one line, says why the line cannot be served:
//   - malformed JSON, with the decoder's reason and byte offset;
//   - nesting deeper than the decoder's 10,000 levels: the line may be valid
//     JSON, and its id is still found (the scan finding it is iterative);
//   - not an object;
//   - a top-level key appearing twice (the id then null when it is "id").
func Request(line []byte) (id json.RawMessage, err error) {
	id = json.RawMessage("null")
	if !json.Valid(line) {
		var v any
		uerr := json.Unmarshal(line, &v)
		var se *json.SyntaxError
		switch {
		case errors.As(uerr, &se) && strings.Contains(se.Error(), "exceeded max depth"):
			return topID(line), fmt.Errorf("nested more than 10000 levels deep (at byte %d)", se.Offset)
		case errors.As(uerr, &se):
			return id, fmt.Errorf("%w: %s (at byte %d)", ErrMalformed, se.Error(), se.Offset)
		case uerr != nil:
			return id, fmt.Errorf("%w: %v", ErrMalformed, uerr)
		}
		return id, ErrMalformed
	}
	t := bytes.TrimLeft(line, " \t\r\n")
	if t[0] != '{' {
		return id, fmt.Errorf("expected a JSON object, got %s", Kind(t[0]))
	}
	seen := map[string]bool{}
	var dup string
	gjson.ParseBytes(line).ForEach(func(k, _ gjson.Result) bool {
		if seen[k.Str] {
			dup = k.Str
			return false
		}
		seen[k.Str] = true
		return true
	})
	if dup != "" {
		if dup != "id" {
			id = topID(line)
		}
		q, _ := json.Marshal(dup)
		return id, fmt.Errorf("key %s appears twice (each key may appear once in an object)", q)
	}
	return topID(line), nil
}

// topID returns the line's top-level id as valid JSON and UTF-8, or null.
func topID(line []byte) json.RawMessage {
	v := gjson.GetBytes(line, "id")
	if !v.Exists() {
		return json.RawMessage("null")
	}
	raw := []byte(v.Raw)
	if !utf8.Valid(raw) {
		raw = bytes.ToValidUTF8(raw, []byte("\uFFFD"))
	}
	if !json.Valid(raw) {
		return json.RawMessage("null")
	}
	return raw
}

// Kind names the JSON type a value starting with c has.
func Kind(c byte) string {
	switch c {
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	case '{':
		return "object"
	}
	return "number"
}
