package schemas

import (
	"errors"
	"fmt"
	"strings"
)

// userFile is the name a client's schema goes by inside the compiler: not
// a path of this folder, so a $ref without a file stays inside it.
const userFile = "output_schema"

// UserSchema is a JSON Schema a client gave (session.prompt's
// output_schema, J1), compiled by the validator e runs, so that it admits
// only the keywords the validator implements.
type UserSchema struct{ n *node }

// CompileUser compiles schema, a JSON Schema document. A keyword the
// validator does not implement is an error naming it.
func CompileUser(schema []byte) (u *UserSchema, err error) {
	d, err := decode(schema)
	if err != nil {
		return nil, err
	}
	switch d.(type) {
	case map[string]any, bool:
	default:
		return nil, fmt.Errorf("a schema must be an object or a boolean, got %s", typeName(d))
	}
	defer func() {
		// compile trusts the shape of a keyword's value, as every schema of
		// this folder has it right; a client's may not.
		if r := recover(); r != nil {
			u, err = nil, fmt.Errorf("malformed schema: %v", r)
		}
	}()
	c := &compiler{docs: map[string]any{userFile: d}, nodes: map[string]*node{}}
	n, err := c.load(userFile, "")
	if err != nil {
		return nil, errors.New(strings.Replace(err.Error(), "schemas: "+userFile+"#: ", "", 1))
	}
	return &UserSchema{n: n}, nil
}

// Validate checks value, one JSON text, against the schema. The error is
// the validator's first, one line, its path from the value's root
// ("$.items[2]: expected integer, got string").
func (u *UserSchema) Validate(value []byte) error {
	v, err := decode(value)
	if err != nil {
		return err
	}
	var fails []fail
	u.n.check(v, nil, &fails)
	if len(fails) == 0 {
		return nil
	}
	path, msg := explain(v, fails)
	if p := render("$", v, path); p != "" && p != "$" {
		return fmt.Errorf("%s: %s", p, msg)
	}
	return fmt.Errorf("%s", msg)
}
