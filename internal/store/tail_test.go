package store

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func textMsg(role, text string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"role": role, "content": []any{map[string]any{"type": "text", "text": text}}})
	return b
}

// M4: a listing reads a log's header and last entry (and the lines its
// branch member points at), and gives the summary reading it whole gives.
func TestSummarizeTail(t *testing.T) {
	user := func(s string) Entry { return Entry{Type: TypeMessage, Message: textMsg("user", s)} }
	asst := func(s string) Entry { return Entry{Type: TypeMessage, Message: textMsg("assistant", s)} }
	image := Entry{Type: TypeMessage, Message: json.RawMessage(`{"role":"user","content":[{"type":"image","media_type":"image/png","data":"AA=="}]}`)}
	long := strings.Repeat("a long prompt ", 20000) // its line is longer than what a listing reads first
	tests := []struct {
		name    string
		header  string
		entries []Entry
		after   string // appended to the file by hand
	}{
		{name: "empty"},
		{name: "one turn", entries: []Entry{user("  hello\n  there  "), asst("hi")}},
		{name: "title entry wins", entries: []Entry{user("first"), {Type: TypeTitle, Name: "The title"}, asst("a"), user("second")}},
		{name: "later title", entries: []Entry{user("first"), asst("a"), {Type: TypeTitle, Name: "t1"}, {Type: TypeTitle, Name: "t2"}}},
		{name: "name entries", header: "label", entries: []Entry{user("x"), {Type: TypeName, Name: "n1"}, asst("a"), {Type: TypeName, Name: ""}}},
		{name: "image is no turn", entries: []Entry{image, user("then text"), {Type: TypeInterrupted}}},
		{name: "long title line", entries: []Entry{user(long), asst(long), {Type: TypeName, Name: "far"}, asst(long)}},
		{name: "torn tail", entries: []Entry{user("q"), asst("a")}, after: `{"type":"message","id":"ff`},
		{name: "whole tail without LF", entries: []Entry{user("q")}, after: `{"type":"name","id":"00000099","parent":"","time":"2026-01-01T00:00:00Z","name":"hand"}`},
		{name: "blank lines at the end", entries: []Entry{user("q")}, after: "\n\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := CreateIn(t.TempDir(), Header{Cwd: "/w", Model: "m", Effort: "e", Name: tt.header})
			if err != nil {
				t.Fatal(err)
			}
			if err := l.Append(tt.entries...); err != nil {
				t.Fatal(err)
			}
			l.Close()
			if tt.after != "" {
				f, _ := os.OpenFile(l.Path(), os.O_APPEND|os.O_WRONLY, 0)
				f.WriteString(tt.after)
				f.Close()
			}
			got, ok := summarizeTail(openLog(t, l.Path()), sizeOf(t, l.Path()), new([]byte))
			hand := tt.after != "" && !strings.HasPrefix(tt.after, "\n") && strings.HasSuffix(tt.after, "}")
			if ok == hand {
				t.Fatalf("summarizeTail ok = %v", ok)
			}
			r, err := Read(l.Path())
			if err != nil {
				t.Fatal(err)
			}
			b := Branch(r.Entries)
			m, n := Count(b)
			want := cached{Title: Title(b), Name: Name(r.Header, b), Messages: m, Turns: n, Cwd: r.Header.Cwd}
			if ok {
				if diff := cmp.Diff(want, got, cmp.AllowUnexported(cached{})); diff != "" {
					t.Errorf("tail summary (-whole +tail):\n%s", diff)
				}
			}
			if diff := cmp.Diff(want, summarize(openLog(t, l.Path()), sizeOf(t, l.Path()), new([]byte)), cmp.AllowUnexported(cached{})); diff != "" {
				t.Errorf("summarize (-whole +got):\n%s", diff)
			}
			// The scan summarize falls back on agrees with a whole read for every log (H1).
			if diff := cmp.Diff(want, summarizeScan(openLog(t, l.Path()), sizeOf(t, l.Path())), cmp.AllowUnexported(cached{})); diff != "" {
				t.Errorf("summarizeScan (-whole +got):\n%s", diff)
			}
		})
	}
}

// A resumed log goes on with the branch summary where it stopped; one whose
// last entry has none (an older log) gets none, and is listed whole.
func TestSummaryAcrossResume(t *testing.T) {
	l, err := CreateIn(t.TempDir(), Header{Cwd: "/w", Model: "m", Effort: "e"})
	if err != nil {
		t.Fatal(err)
	}
	path := l.Path()
	l.Append(Entry{Type: TypeMessage, Message: textMsg("user", "one")}, Entry{Type: TypeTitle, Name: "T"})
	l.Close()
	l, _, _, err = OpenWritable(path)
	if err != nil {
		t.Fatal(err)
	}
	l.Append(Entry{Type: TypeMessage, Message: textMsg("user", "two")})
	l.Close()
	if got, ok := summarizeTail(openLog(t, path), sizeOf(t, path), new([]byte)); !ok || got.Messages != 2 || got.Turns != 2 || got.Title != "T" {
		t.Errorf("after resume: %+v, %v", got, ok)
	}
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"type":"message","id":"0000aaaa","parent":"gone","time":"2026-01-01T00:00:00Z","message":{"role":"user","content":[{"type":"text","text":"old e"}]}}` + "\n")
	f.Close()
	l, _, _, err = OpenWritable(path)
	if err != nil {
		t.Fatal(err)
	}
	l.Append(Entry{Type: TypeMessage, Message: textMsg("user", "three")})
	l.Close()
	if _, ok := summarizeTail(openLog(t, path), sizeOf(t, path), new([]byte)); ok {
		t.Error("a summary after an entry without one")
	}
	if got := summarize(openLog(t, path), sizeOf(t, path), new([]byte)); got.Messages != 4 || got.Turns != 4 {
		t.Errorf("whole read: %+v", got)
	}
}

func sizeOf(t *testing.T, path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// openLog opens the log at path as a listing does, until the test ends,
// and checks the size and time that come with it.
func openLog(t *testing.T, path string) io.ReaderAt {
	t.Helper()
	d, err := openLogDir(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	r, size, mtime, err := d.open(filepath.Base(path))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if size != fi.Size() || mtime != fi.ModTime().UnixNano() {
		t.Errorf("open: size %d, mtime %d; Lstat: %d, %d", size, mtime, fi.Size(), fi.ModTime().UnixNano())
	}
	return r
}

// The listing cache written by hand reads back as encoding/json wrote it.
func TestListCacheJSON(t *testing.T) {
	c := listCache{Version: 1, Files: map[string]cached{
		"a.jsonl": {Size: 10, MtimeNS: -5, Title: "t <&> \u2028 \xff", Name: "n", Messages: 3, Turns: 1, Cwd: "/w"},
		"b.jsonl": {Size: 1, Invalid: true},
	}}
	for _, c := range []listCache{c, {Version: 1, Files: map[string]cached{}}} {
		var got, want listCache
		if err := json.Unmarshal(c.appendJSON(nil), &got); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(c)
		json.Unmarshal(b, &want)
		if diff := cmp.Diff(want, got, cmp.AllowUnexported(cached{})); diff != "" {
			t.Errorf("(-encoding/json +appendJSON):\n%s", diff)
		}
	}
}

// A listing opens regular files only: not a link to a log (which may lie
// anywhere), not a directory.
func TestLogDirOpen(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "log.jsonl"), []byte("{}\n"), 0o600)
	os.Symlink(filepath.Join(dir, "log.jsonl"), filepath.Join(dir, "link.jsonl"))
	os.Mkdir(filepath.Join(dir, "dir.jsonl"), 0o700)
	d, err := openLogDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, tt := range []struct {
		name string
		ok   bool
	}{{"log.jsonl", true}, {"link.jsonl", false}, {"dir.jsonl", false}, {"gone.jsonl", false}} {
		r, size, _, err := d.open(tt.name)
		if (err == nil) != tt.ok {
			t.Errorf("open(%s): %v, want ok %v", tt.name, err, tt.ok)
		}
		if err == nil {
			if size != 3 {
				t.Errorf("open(%s): size %d, want 3", tt.name, size)
			}
			r.Close()
		}
	}
}
