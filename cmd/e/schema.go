package main

import (
	"fmt"
	"io"

	"github.com/e-agent/e/schemas"
)

// runSchema is e schema: every schema as one document, or one by name.
// The schemas end with their own newline.
func runSchema(args []string, stdout, stderr io.Writer) int {
	switch len(args) {
	case 0:
		stdout.Write(schemas.Document())
		return 0
	case 1:
		b, ok := schemas.Schema(args[0])
		if !ok {
			fmt.Fprintf(stderr, "e schema: unknown schema %q (run e schema for all)\n", args[0])
			return 2
		}
		stdout.Write(b)
		return 0
	}
	return usageError(stderr, fmt.Errorf("schema takes at most one name"))
}
