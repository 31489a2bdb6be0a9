package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/e-agent/e/schemas"
)

// runSchema is e schema: every schema as one document, one schema by name
// as a self-contained document, or --out DIR: a folder of files for code
// generators (schemas.Bundle).
func runSchema(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("schema", stderr)
	out := fs.String("out", "", "write one self-contained file per schema into this directory")
	pos, err := parse(fs, args)
	if err != nil {
		return usageError(stderr, err)
	}
	switch {
	case *out != "" && len(pos) > 0:
		return usageError(stderr, fmt.Errorf("schema --out takes no name"))
	case *out != "":
		return writeSchemas(*out, stdout, stderr)
	case len(pos) == 0:
		stdout.Write(schemas.Document())
		return 0
	case len(pos) > 1:
		return usageError(stderr, fmt.Errorf("schema takes at most one name"))
	}
	if pos[0] == "index" {
		b, _ := schemas.Schema("index")
		stdout.Write(b)
		return 0
	}
	b, err := schemas.Standalone(pos[0])
	if err != nil {
		fmt.Fprintf(stderr, "e schema: unknown schema %q (run e schema index for the names)\n", pos[0])
		return 2
	}
	stdout.Write(b)
	return 0
}

// writeSchemas writes the bundle into dir and lists the files it wrote.
func writeSchemas(dir string, stdout, stderr io.Writer) int {
	files, err := schemas.Bundle()
	if err == nil {
		err = os.MkdirAll(dir, 0o755)
	}
	if err != nil {
		fmt.Fprintf(stderr, "e schema: %v\n", err)
		return 1
	}
	var names []string
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if err := os.WriteFile(filepath.Join(dir, name), files[name], 0o644); err != nil {
			fmt.Fprintf(stderr, "e schema: %v\n", err)
			return 1
		}
	}
	fmt.Fprintf(stdout, "%d files in %s\n", len(names), dir)
	return 0
}
