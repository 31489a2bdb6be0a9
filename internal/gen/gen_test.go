package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFresh fails when a generated file differs from what the generator
// makes of the schemas and internal/tool now: run go generate ./... .
func TestFresh(t *testing.T) {
	files, err := generate("../..")
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range files {
		got, err := os.ReadFile(filepath.Join("../..", path))
		if err != nil {
			t.Errorf("%s: %v (run go generate ./...)", path, err)
			continue
		}
		if string(got) != string(want) {
			t.Errorf("%s is stale: run go generate ./...", path)
		}
	}
	tools, _ := filepath.Glob("../../schemas/tools/*.json")
	for _, f := range tools {
		if _, ok := files["schemas/tools/"+filepath.Base(f)]; !ok {
			t.Errorf("%s belongs to no built-in tool: run go generate ./...", f)
		}
	}
}

// TestHeader checks that every generated file says so on its first line.
func TestHeader(t *testing.T) {
	files, err := generate("../..")
	if err != nil {
		t.Fatal(err)
	}
	for path, b := range files {
		if strings.HasPrefix(path, "schemas/") {
			continue // JSON has no comments; the descriptions say it
		}
		first, _, _ := strings.Cut(string(b), "\n")
		if !strings.Contains(first, "Code generated") || !strings.HasSuffix(first, "DO NOT EDIT.") {
			t.Errorf("%s: first line %q lacks the generated-code header", path, first)
		}
	}
}
