package store

import (
	"encoding/json"
	"os"
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
			got, ok := summarizeTail(l.Path(), size(t, l.Path()), new([]byte))
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
			if diff := cmp.Diff(want, summarize(l.Path(), size(t, l.Path()), new([]byte)), cmp.AllowUnexported(cached{})); diff != "" {
				t.Errorf("summarize (-whole +got):\n%s", diff)
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
	if got, ok := summarizeTail(path, size(t, path), new([]byte)); !ok || got.Messages != 2 || got.Turns != 2 || got.Title != "T" {
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
	if _, ok := summarizeTail(path, size(t, path), new([]byte)); ok {
		t.Error("a summary after an entry without one")
	}
	if got := summarize(path, size(t, path), new([]byte)); got.Messages != 4 || got.Turns != 4 {
		t.Errorf("whole read: %+v", got)
	}
}

func size(t *testing.T, path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
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
