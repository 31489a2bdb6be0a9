package schemas

import (
	"strings"
	"testing"
)

// G1, G2: a client tool's parameters compile in e's keywords, and
// arguments are checked against them.
func TestCompileUser(t *testing.T) {
	for _, tc := range []struct {
		name, schema, value string
		compileErr, err     string // substrings; "" for none
	}{
		{name: "valid", schema: `{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`, value: `{"n":2}`},
		{name: "missing", schema: `{"type":"object","required":["n"]}`, value: `{}`, err: "n"},
		{name: "wrong type", schema: `{"type":"object","properties":{"n":{"type":"integer"}}}`, value: `{"n":"x"}`, err: "n: expected integer"},
		{name: "defs ref", schema: `{"type":"object","properties":{"n":{"$ref":"#/$defs/x"}},"$defs":{"x":{"type":"string"}}}`, value: `{"n":1}`, err: "expected string"},
		{name: "unsupported keyword", schema: `{"type":"object","patternProperties":{}}`, compileErr: `"patternProperties"`},
		{name: "malformed required", schema: `{"type":"object","required":"n"}`, compileErr: "malformed schema"},
		{name: "not json", schema: `{`, compileErr: "malformed JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := CompileUser([]byte(tc.schema))
			if tc.compileErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.compileErr) {
					t.Fatalf("Compile: got %v, want an error containing %q", err, tc.compileErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			err = c.Validate([]byte(tc.value))
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("Validate: got %v, want an error containing %q", err, tc.err)
			}
		})
	}
}
