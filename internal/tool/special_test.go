package tool

import (
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// makeSpecial puts a file of class kind at name in the session directory:
// what a hostile repository or a model's mkfifo leaves for the file tools.
func (s *session) makeSpecial(t *testing.T, kind, name string) {
	t.Helper()
	path := filepath.Join(s.cwd, name)
	var err error
	switch kind {
	case "fifo":
		err = syscall.Mkfifo(path, 0o600)
	case "socket":
		var l net.Listener
		if l, err = net.Listen("unix", path); err == nil {
			t.Cleanup(func() { l.Close() })
		}
	case "oversize":
		var f *os.File
		if f, err = os.Create(path); err == nil {
			err = f.Truncate(maxEditBytes + 1) // sparse
			f.Close()
		}
	}
	if err != nil {
		t.Fatal(err)
	}
}

// Every file tool answers at once about a FIFO, a socket or an oversize
// file named as its path: read, edit, write and grep fail naming the path and
// why; ls and find, which take any entry, list it (Y1). Before regfile, ls,
// grep and find of a FIFO blocked in open forever.
func TestSpecialTargets(t *testing.T) {
	tests := []struct {
		kind, tool string
		args       map[string]any
		content    string
		summary    string
		failed     bool
	}{
		{kind: "fifo", tool: "read", content: "read: f: a named pipe (FIFO), not a regular file", summary: "not a regular file", failed: true},
		{kind: "fifo", tool: "edit", args: map[string]any{"old": "a", "new": "b"}, content: "edit: f: a named pipe (FIFO), not a regular file", summary: "not a regular file", failed: true},
		{kind: "fifo", tool: "write", args: map[string]any{"content": "x"}, content: "write: f: a named pipe (FIFO), not a regular file", summary: "not a regular file", failed: true},
		{kind: "fifo", tool: "grep", args: map[string]any{"pattern": "x"}, content: "grep: f: a named pipe (FIFO), not a regular file", summary: "not a regular file", failed: true},
		{kind: "fifo", tool: "ls", content: "f", summary: "1 entry"},
		{kind: "fifo", tool: "find", args: map[string]any{"pattern": "*"}, content: "f", summary: "1 match"},
		{kind: "socket", tool: "read", content: "read: f: a socket, not a regular file", summary: "not a regular file", failed: true},
		{kind: "socket", tool: "write", args: map[string]any{"content": "x"}, content: "write: f: a socket, not a regular file", summary: "not a regular file", failed: true},
		{kind: "socket", tool: "grep", args: map[string]any{"pattern": "x"}, content: "grep: f: a socket, not a regular file", summary: "not a regular file", failed: true},
		{kind: "socket", tool: "ls", content: "f", summary: "1 entry"},
		{kind: "oversize", tool: "edit", args: map[string]any{"old": "a", "new": "b"}, summary: "file too large", failed: true},
		{kind: "oversize", tool: "grep", args: map[string]any{"pattern": "x"}, content: "grep: f: too large: over the limit of 16 MiB", summary: "file too large", failed: true},
	}
	for _, tt := range tests {
		t.Run(tt.kind+"/"+tt.tool, func(t *testing.T) {
			s := newSession(t)
			s.makeSpecial(t, tt.kind, "f")
			args := map[string]any{"path": "f"}
			for k, v := range tt.args {
				args[k] = v
			}
			checkResult(t, s.run(tt.tool, jsonArgs(t, args)), tt.content, tt.summary, tt.failed)
		})
	}
}

// grep and find walk past special files inside a tree without opening them.
func TestSpecialInTree(t *testing.T) {
	s := newSession(t)
	s.writeFile(t, "d/a.txt", "needle\n")
	s.makeSpecial(t, "fifo", "d/fifo")
	s.makeSpecial(t, "socket", "d/sock")
	if err := os.Symlink("/dev/zero", filepath.Join(s.cwd, "d", "zero")); err != nil {
		t.Fatal(err)
	}
	checkResult(t, s.run("grep", jsonArgs(t, map[string]any{"pattern": "needle|^$", "path": "d"})), "d/a.txt:1:needle", "1 match", false)
	checkResult(t, s.run("find", jsonArgs(t, map[string]any{"pattern": "*", "path": "d"})), "d/\nd/a.txt\nd/fifo\nd/sock\nd/zero", "5 matches", false)
}

// An absolute symbolic link inside the session directory whose real
// location is inside it is followed; one to outside is refused (spec/engine.md
// §12: the real location decides). An os.Root alone refuses every absolute link.
func TestAbsoluteLinkInside(t *testing.T) {
	s := newSession(t)
	s.writeFile(t, "sub/x.txt", "x\n")
	real, err := realPath(s.cwd)
	if err != nil {
		t.Fatal(err)
	}
	s.symlink(t, filepath.Join(real, "sub", "x.txt"), "abs-file")
	s.symlink(t, filepath.Join(real, "sub"), "abs-dir")
	s.symlink(t, filepath.Join(s.outside, "secret.txt"), "abs-out")
	tests := []struct {
		tool    string
		args    map[string]any
		content string
		summary string
		failed  bool
	}{
		{tool: "read", args: map[string]any{"path": "abs-file"}, content: "x\n", summary: "1 line"},
		{tool: "read", args: map[string]any{"path": "abs-dir/x.txt"}, content: "x\n", summary: "1 line"},
		{tool: "ls", args: map[string]any{"path": "abs-dir"}, content: "x.txt", summary: "1 entry"},
		{tool: "grep", args: map[string]any{"pattern": "x", "path": "abs-dir"}, content: "abs-dir/x.txt:1:x", summary: "1 match"},
		{tool: "edit", args: map[string]any{"path": "abs-file", "old": "x", "new": "y"}, summary: "1 replacement"},
		{tool: "read", args: map[string]any{"path": "abs-out"}, content: "read: abs-out: outside the session directory " + real, summary: "outside the session directory", failed: true},
		{tool: "write", args: map[string]any{"path": "abs-out", "content": "pwned"}, content: "write: abs-out: outside the session directory " + real, summary: "outside the session directory", failed: true},
	}
	for _, tt := range tests {
		t.Run(tt.tool+" "+tt.args["path"].(string), func(t *testing.T) {
			checkResult(t, s.run(tt.tool, jsonArgs(t, tt.args)), tt.content, tt.summary, tt.failed)
		})
	}
}
