package tool

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tree makes a small project in a new session.
func tree(t *testing.T) *session {
	t.Helper()
	s := newSession(t)
	s.writeFile(t, "main.go", "package main\n\nfunc main() {\n\tprintln(\"Hello\")\n}\n")
	s.writeFile(t, "README.md", "hello world\r\n")
	s.writeFile(t, "cmd/e/main.go", "package main // hello\n")
	s.writeFile(t, "cmd/e/e_test.go", "package main\n")
	s.writeFile(t, ".git/config", "hello = main.go\n")
	s.writeFile(t, "bin/tool", "hello\x00binary")
	s.symlink(t, filepath.Join(s.outside, "secret.txt"), "secret.go")
	s.symlink(t, s.outside, "outdir")
	if err := os.Mkdir(filepath.Join(s.cwd, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestLs(t *testing.T) {
	s := tree(t)
	tests := []struct {
		name, args, content, summary string
		failed                       bool
	}{
		{name: "default", args: `{}`, content: ".git/\nREADME.md\nbin/\ncmd/\nempty/\nmain.go\noutdir@\nsecret.go@", summary: "8 entries"},
		{name: "subdirectory", args: `{"path":"cmd/e"}`, content: "e_test.go\nmain.go", summary: "2 entries"},
		{name: "empty", args: `{"path":"empty"}`, content: "(empty directory)", summary: "0 entries"},
		{name: "file", args: `{"path":"main.go"}`, content: "main.go", summary: "1 entry"},
		{name: "missing", args: `{"path":"nope"}`, content: "ls: nope: no such file or directory", failed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkResult(t, s.run("ls", tt.args), tt.content, tt.summary, tt.failed)
		})
	}
}

func TestLsBounded(t *testing.T) {
	s := newSession(t)
	touch(t, s.cwd, maxListEntries+5)
	got := s.run("ls", `{}`)
	checkResult(t, got, "~f0999\n[5 more entries not shown]", "1005 entries", false)
}

func TestFind(t *testing.T) {
	s := tree(t)
	tests := []struct {
		name, args, content, summary string
		failed                       bool
	}{
		{name: "by name", args: `{"pattern":"*.go"}`, content: "cmd/e/e_test.go\ncmd/e/main.go\nmain.go\nsecret.go", summary: "4 matches"},
		{name: "directories", args: `{"pattern":"e*"}`, content: "cmd/e/\ncmd/e/e_test.go\nempty/", summary: "3 matches"},
		{name: "by path", args: `{"pattern":"cmd/*/main.go"}`, content: "cmd/e/main.go", summary: "1 match"},
		{name: "under a path", args: `{"pattern":"main.go","path":"cmd"}`, content: "cmd/e/main.go"},
		{name: "under an absolute path", args: `{"pattern":"main.go","path":"` + filepath.Join(s.cwd, "cmd") + `"}`,
			content: filepath.Join(s.cwd, "cmd/e/main.go")},
		{name: ".git skipped", args: `{"pattern":"config"}`, content: "no matches", summary: "0 matches"},
		{name: "links not followed", args: `{"pattern":"secret.txt"}`, content: "no matches"},
		{name: "bad pattern", args: `{"pattern":"[a"}`, content: `find: invalid pattern "[a": syntax error in pattern`, failed: true},
		{name: "missing path", args: `{"pattern":"*","path":"nope"}`, content: "find: nope: no such file or directory", failed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkResult(t, s.run("find", tt.args), tt.content, tt.summary, tt.failed)
		})
	}
}

func TestFindBounded(t *testing.T) {
	s := newSession(t)
	touch(t, s.cwd, maxFindResults+1)
	got := s.run("find", `{"pattern":"f*"}`)
	checkResult(t, got, "~f0999\n[stopped after 1000 results; narrow the pattern or the path]", "1000 matches (truncated)", false)
}

func TestGrep(t *testing.T) {
	s := tree(t)
	tests := []struct {
		name, args, content, summary string
		failed                       bool
	}{
		{name: "recursive", args: `{"pattern":"(?i)hello"}`,
			content: "README.md:1:hello world\ncmd/e/main.go:1:package main // hello\nmain.go:4:\tprintln(\"Hello\")", summary: "3 matches"},
		{name: "glob", args: `{"pattern":"package","glob":"*_test.go"}`, content: "cmd/e/e_test.go:1:package main", summary: "1 match"},
		{name: "one file", args: `{"pattern":"func","path":"main.go"}`, content: "main.go:3:func main() {"},
		{name: "a directory", args: `{"pattern":"hello","path":"cmd/"}`, content: "cmd/e/main.go:1:package main // hello"},
		{name: "no matches", args: `{"pattern":"secret"}`, content: "no matches", summary: "0 matches"},
		{name: "empty line not invented", args: `{"pattern":"^$","path":"main.go"}`, content: "main.go:2:"},
		{name: "bad pattern", args: `{"pattern":"("}`, content: "grep: invalid pattern: error parsing regexp: missing closing ): `(`", failed: true},
		{name: "bad glob", args: `{"pattern":"a","glob":"["}`, content: `grep: invalid glob "[": syntax error in pattern`, failed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkResult(t, s.run("grep", tt.args), tt.content, tt.summary, tt.failed)
		})
	}
}

func TestGrepBounded(t *testing.T) {
	s := newSession(t)
	s.writeFile(t, "many.txt", strings.Repeat("match\n", maxGrepMatches+1))
	s.writeFile(t, "wide.txt", strings.Repeat("é", 400)+"\n")
	checkResult(t, s.run("grep", `{"pattern":"match"}`),
		"~many.txt:1000:match\n[stopped after 1000 matches; narrow the pattern, the path or the glob]", "1000 matches (truncated)", false)
	checkResult(t, s.run("grep", `{"pattern":"é"}`), "wide.txt:1:"+strings.Repeat("é", maxGrepLine/2)+"…", "1 match", false)
}

// touch creates n empty files f0000, f0001, ... in dir.
func touch(t *testing.T, dir string, n int) {
	t.Helper()
	for i := range n {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("f%04d", i)))
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
}
