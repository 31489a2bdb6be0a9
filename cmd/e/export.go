package main

import (
	"fmt"
	"io"
	"os"

	"github.com/e-agent/e/internal/store"
)

// runExport is e export: a saved session's HTML page (M13), without a server.
func runExport(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("export", stderr)
	pos, err := parse(fs, args)
	if err != nil {
		return usageError(stderr, err)
	}
	if len(pos) < 1 || len(pos) > 2 {
		return usageError(stderr, fmt.Errorf("export needs a session log (its path or its id) and at most one output path"))
	}
	log, err := locate(pos[0])
	if err != nil {
		fmt.Fprintf(stderr, "e export: %v\n", err)
		return 1
	}
	r, err := store.Read(log)
	if err != nil {
		fmt.Fprintf(stderr, "e export: %v\n", err)
		return 1
	}
	branch := store.Branch(r.Entries)
	title := store.Name(r.Header, branch)
	if title == "" {
		title = store.Title(branch)
	}
	if title == "" {
		title = "e session " + r.Header.ID
	}
	out := store.DefaultExportPath(log, r.Header.Cwd, r.Header.ID)
	if len(pos) == 2 {
		out = pos[1]
	}
	if err := store.ExportFile(out, title, r.Header, branch); err != nil {
		fmt.Fprintf(stderr, "e export: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, out)
	return 0
}

// locate resolves a session log's path, or a session id searched for in
// the sessions folder of e's home.
func locate(ref string) (string, error) {
	home, err := store.Home()
	if err != nil {
		return "", err
	}
	cwd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	return store.Locate(home, cwd, ref)
}
