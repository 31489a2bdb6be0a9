package schemas

import (
	"fmt"
)

// A Compiled is a JSON Schema a client gave e (a client tool's parameters),
// compiled by e's validator: the keywords it supports, nothing else.
type Compiled struct{ n *node }

// userFile names a client's schema among the compiler's documents; its
// "#/$defs/…" references resolve within it.
const userFile = "client-schema.json"

// Compile compiles schema, a JSON Schema in the keywords e's validator
// supports; a keyword outside them, or a value of the wrong shape, is an
// error naming it.
func Compile(schema []byte) (c *Compiled, err error) {
	v, err := decode(schema)
	if err != nil {
		return nil, err
	}
	// The compiler trusts the shape of e's own files; a client's schema
	// may put a string where it expects an array.
	defer func() {
		if r := recover(); r != nil {
			c, err = nil, fmt.Errorf("malformed schema: %v", r)
		}
	}()
	cp := &compiler{docs: map[string]any{userFile: v}, nodes: map[string]*node{}}
	n, err := cp.load(userFile, "")
	if err != nil {
		return nil, err
	}
	return &Compiled{n: n}, nil
}

// Validate checks the JSON value b against c; the error names the first
// failing place and why ("count: expected integer, got string").
func (c *Compiled) Validate(b []byte) error {
	v, err := decode(b)
	if err != nil {
		return err
	}
	var fails []fail
	c.n.check(v, nil, &fails)
	if len(fails) == 0 {
		return nil
	}
	path, msg := explain(v, fails)
	if p := render("", v, path); p != "" {
		return fmt.Errorf("%s: %s", p, msg)
	}
	return fmt.Errorf("%s", msg)
}
