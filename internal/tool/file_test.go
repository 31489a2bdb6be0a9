package tool

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRead(t *testing.T) {
	s := newSession(t)
	s.writeFile(t, "abc.txt", "a\nb\nc\n")
	s.writeFile(t, "crlf.txt", "a\r\nb")
	s.writeFile(t, "empty.txt", "")
	s.writeFile(t, "bin.dat", "text\x00more")
	s.writeFile(t, "long.txt", strings.Repeat("é", maxReadBytes)) // 2 bytes a rune: the cut must not split one
	s.writeFile(t, "many.txt", strings.Repeat(strings.Repeat("x", 1023)+"\n", 300))
	if err := os.Mkdir(filepath.Join(s.cwd, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, args       string
		content, summary string // content "~x": contains x
		failed           bool
	}{
		{name: "whole file", args: `{"path":"abc.txt"}`, content: "a\nb\nc\n", summary: "3 lines"},
		{name: "absolute path", args: `{"path":"` + filepath.Join(s.cwd, "abc.txt") + `"}`, content: "a\nb\nc\n", summary: "3 lines"},
		{name: "window", args: `{"path":"abc.txt","offset":2,"limit":1}`,
			content: "b\n[lines 2-2 shown; more follow: use offset=3 to continue]", summary: "1 line"},
		{name: "window to the end", args: `{"path":"abc.txt","offset":2,"limit":2}`, content: "b\nc\n", summary: "2 lines"},
		{name: "bytes kept as stored", args: `{"path":"crlf.txt"}`, content: "a\r\nb", summary: "2 lines"},
		{name: "empty", args: `{"path":"empty.txt"}`, content: "(empty file)", summary: "0 lines"},
		{name: "offset past the end", args: `{"path":"abc.txt","offset":4}`,
			content: "read: abc.txt: offset 4 is past the end of the file (3 lines)", failed: true},
		{name: "binary", args: `{"path":"bin.dat"}`, content: "read: bin.dat: binary file (9 bytes); use bash to inspect it", failed: true},
		{name: "missing", args: `{"path":"nope.txt"}`, content: "read: nope.txt: no such file or directory", summary: "not found", failed: true},
		{name: "directory", args: `{"path":"dir"}`, content: "read: dir: is a directory (use ls)", failed: true},
		{name: "long line", args: `{"path":"long.txt"}`,
			content: "~\n[line 1 truncated: 262144 of 524288 bytes shown; use bash to read more of it; next line is offset=2]", summary: "1 line"},
		{name: "byte limit", args: `{"path":"many.txt"}`,
			content: "~\n[lines 1-256 shown (256 KiB limit); more follow: use offset=257 to continue]", summary: "256 lines"},
		{name: "byte limit continued", args: `{"path":"many.txt","offset":257}`, summary: "44 lines"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkResult(t, s.run("read", tt.args), tt.content, tt.summary, tt.failed)
		})
	}
}

func TestWrite(t *testing.T) {
	s := newSession(t)
	s.writeFile(t, "old.txt", "old content\n")
	if err := os.Chmod(filepath.Join(s.cwd, "old.txt"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path, content string
		want                string // Content
		failed              bool
	}{
		{name: "new file in new directories", path: "a/b/c.txt", content: "hello", want: "wrote 5 bytes to a/b/c.txt"},
		{name: "replace", path: "old.txt", content: "new\n", want: "wrote 4 bytes to old.txt"},
		{name: "empty content", path: "e.txt", content: "", want: "wrote 0 bytes to e.txt"},
		{name: "directory", path: "a", content: "x", want: "write: a: is a directory", failed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := s.run("write", jsonArgs(t, map[string]any{"path": tt.path, "content": tt.content}))
			checkResult(t, got, tt.want, "", tt.failed)
			if !tt.failed {
				if data := s.readFile(t, tt.path); data != tt.content {
					t.Errorf("file holds %q; want %q", data, tt.content)
				}
			}
		})
	}
	fi, err := os.Stat(filepath.Join(s.cwd, "old.txt"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("old.txt mode = %v, %v; want 0600 kept", fi.Mode(), err)
	}
}

func TestEdit(t *testing.T) {
	const text = "one two\ntwo three\n"
	tests := []struct {
		name     string
		args     map[string]any
		content  string
		summary  string
		failed   bool
		wantFile string
	}{
		{name: "unique", args: map[string]any{"old": "one", "new": "1"},
			content: "edited f.txt: 1 replacement", summary: "1 replacement", wantFile: "1 two\ntwo three\n"},
		{name: "all", args: map[string]any{"old": "two", "new": "2", "all": true},
			content: "edited f.txt: 2 replacements", summary: "2 replacements", wantFile: "one 2\n2 three\n"},
		{name: "multi-line", args: map[string]any{"old": "two\ntwo", "new": "x"},
			content: "edited f.txt: 1 replacement", wantFile: "one x three\n"},
		{name: "missing", args: map[string]any{"old": "four", "new": "4"}, failed: true, summary: "old text not found",
			content: "edit: f.txt: old text not found (it must match exactly, whitespace included)", wantFile: text},
		{name: "ambiguous", args: map[string]any{"old": "two", "new": "2"}, failed: true, summary: "old text is ambiguous",
			content: "edit: f.txt: old text matches 2 times; include more surrounding text to make it unique, or set all to true", wantFile: text},
		{name: "ambiguous with all false", args: map[string]any{"old": "two", "new": "2", "all": false}, failed: true,
			content: "~matches 2 times", wantFile: text},
		{name: "no change", args: map[string]any{"old": "one", "new": "one"}, failed: true,
			content: "edit: f.txt: old and new are the same", wantFile: text},
		{name: "missing file", args: map[string]any{"path": "g.txt", "old": "a", "new": "b"}, failed: true,
			content: "edit: g.txt: no such file or directory", wantFile: text},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSession(t)
			s.writeFile(t, "f.txt", text)
			if err := os.Chmod(filepath.Join(s.cwd, "f.txt"), 0o640); err != nil {
				t.Fatal(err)
			}
			args := map[string]any{"path": "f.txt"}
			for k, v := range tt.args {
				args[k] = v
			}
			checkResult(t, s.run("edit", jsonArgs(t, args)), tt.content, tt.summary, tt.failed)
			if got := s.readFile(t, "f.txt"); got != tt.wantFile {
				t.Errorf("file holds %q; want %q", got, tt.wantFile)
			}
			if fi, err := os.Stat(filepath.Join(s.cwd, "f.txt")); err != nil || fi.Mode().Perm() != 0o640 {
				t.Errorf("mode = %v, %v; want 0640 kept", fi.Mode(), err)
			}
		})
	}
}

// Paths that lead outside the session directory, by ".." or by a symbolic
// link, are refused by every file tool (PITFALLS: symlinks escaped the workspace).
func TestPathEscape(t *testing.T) {
	s := newSession(t)
	s.writeFile(t, "in.txt", "in\n")
	s.writeFile(t, "sub/x.txt", "x\n")
	s.symlink(t, s.outside, "out")                                     // a link to a directory outside
	s.symlink(t, filepath.Join(s.outside, "secret.txt"), "secret")     // a link to a file outside
	s.symlink(t, filepath.Join(s.outside, "created.txt"), "dangling")  // a dangling link to outside
	s.symlink(t, "../outside", "rel")                                  // a relative link outside
	s.symlink(t, "sub", "insub")                                       // a link that stays inside
	s.symlink(t, filepath.Join(s.outside, "nested", "deeper"), "deep") // ".." after it stays outside
	if err := os.MkdirAll(filepath.Join(s.outside, "nested", "deeper"), 0o755); err != nil {
		t.Fatal(err)
	}
	real, err := realPath(s.cwd)
	if err != nil {
		t.Fatal(err)
	}
	outsideMsg := ": outside the session directory " + real
	escapes := []string{
		"../outside/secret.txt",
		"sub/../../outside/secret.txt",
		filepath.Join(s.outside, "secret.txt"),
		"out/secret.txt",
		"secret",
		"rel/secret.txt",
		"dangling",
		"deep/../secret.txt", // the kernel applies ".." to the link's target
		"/",
	}
	for _, p := range escapes {
		for _, c := range []struct{ tool, args string }{
			{"read", jsonArgs(t, map[string]any{"path": p})},
			{"write", jsonArgs(t, map[string]any{"path": p, "content": "pwned"})},
			{"edit", jsonArgs(t, map[string]any{"path": p, "old": "secret", "new": "pwned"})},
			{"ls", jsonArgs(t, map[string]any{"path": p})},
			{"find", jsonArgs(t, map[string]any{"pattern": "*", "path": p})},
			{"grep", jsonArgs(t, map[string]any{"pattern": "secret", "path": p})},
		} {
			t.Run(c.tool+" "+p, func(t *testing.T) {
				checkResult(t, s.run(c.tool, c.args), c.tool+": "+p+outsideMsg, "outside the session directory", true)
			})
		}
	}
	if data, err := os.ReadFile(filepath.Join(s.outside, "secret.txt")); err != nil || string(data) != "secret\n" {
		t.Errorf("secret.txt = %q, %v; want it untouched", data, err)
	}
	if _, err := os.Lstat(filepath.Join(s.outside, "created.txt")); !os.IsNotExist(err) {
		t.Errorf("write through a dangling link created its target outside (%v)", err)
	}

	inside := []struct{ tool, args, content string }{
		{"read", `{"path":"insub/x.txt"}`, "x\n"},
		{"read", `{"path":"sub/../in.txt"}`, "in\n"},
		{"read", `{"path":"insub/../in.txt"}`, "in\n"},
		{"write", `{"path":"insub/new.txt","content":"n"}`, "wrote 1 byte to insub/new.txt"},
		{"ls", `{"path":"insub"}`, "new.txt\nx.txt"},
	}
	for _, c := range inside {
		t.Run("inside "+c.tool+" "+c.args, func(t *testing.T) {
			checkResult(t, s.run(c.tool, c.args), c.content, "", false)
		})
	}
}
