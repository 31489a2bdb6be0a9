package store_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/e-agent/e/internal/store"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func userMsg(text string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": text}}})
	return b
}

func assistantMsg(text string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": text}}})
	return b
}

func toolResultMsg(text string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"role": "tool", "content": []any{map[string]any{"type": "tool_result", "call_id": "c1", "text": text}}})
	return b
}

// newLog creates a session in a fresh home and returns the home and the log.
func newLog(t *testing.T, cwd string) (string, *store.Log) {
	t.Helper()
	home := t.TempDir()
	t.Setenv("E_HOME", home)
	l, err := store.Create(home, store.Header{Cwd: cwd, Model: "offline/echo", Effort: "medium"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return home, l
}

func mustAppend(t *testing.T, l *store.Log, es ...store.Entry) []store.Entry {
	t.Helper()
	var out []store.Entry
	for _, e := range es {
		w, err := l.AppendEntry(e)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, w)
	}
	return out
}

// rawMessageEqual compares messages by JSON value, not bytes.
var rawMessageEqual = cmp.Comparer(func(a, b json.RawMessage) bool {
	var x, y any
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	json.Unmarshal(a, &x)
	json.Unmarshal(b, &y)
	return cmp.Equal(x, y)
})

// C5, C6: what is appended comes back on a writable resume and a read-only one.
func TestRoundTrip(t *testing.T) {
	_, l := newLog(t, "/work/main")
	want := mustAppend(t, l,
		store.Entry{Type: store.TypeMessage, Message: json.RawMessage(`{"role":"user","content":[{"type":"text","text":"hello <world> & \u2028"}]}`)},
		store.Entry{Type: store.TypeMessage, Message: assistantMsg("hi")},
		store.Entry{Type: store.TypeSettings, Model: "offline/other", Effort: "high"},
		store.Entry{Type: store.TypeCompaction, Summary: "they said hello", Kept: "", Tokens: 1234},
		store.Entry{Type: store.TypeName, Name: "my label"},
		store.Entry{Type: store.TypeTitle, Name: "Greeting"},
		store.Entry{Type: store.TypeInterrupted},
	)
	for i, e := range want {
		if len(e.ID) != 32 || e.Time.IsZero() {
			t.Errorf("entry %d: id %q time %v: want 32 hex digits (128 bits) and a time", i, e.ID, e.Time)
		}
		wantParent := ""
		if i > 0 {
			wantParent = want[i-1].ID
		}
		if e.Parent != wantParent {
			t.Errorf("entry %d: parent %q, want %q", i, e.Parent, wantParent)
		}
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	hdr := l.Header()
	if hdr.Type != "session" || hdr.Version != 1 || len(hdr.ID) != 26 || hdr.Created.IsZero() {
		t.Errorf("header not filled in: %+v", hdr)
	}
	path := l.Path()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// Compact message bytes survive as written (no HTML escaping of <, >, &).
	raw, _ := os.ReadFile(path)
	if !bytes.Contains(raw, want[0].Message) {
		t.Errorf("message text was rewritten on disk:\n%s", raw)
	}

	l2, h, got, err := store.OpenWritable(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if diff := cmp.Diff(hdr, *h, cmpopts.EquateApproxTime(0)); diff != "" {
		t.Errorf("header (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, got, rawMessageEqual); diff != "" {
		t.Errorf("entries (-want +got):\n%s", diff)
	}
	if len(l2.Warnings()) != 0 {
		t.Errorf("warnings on a clean log: %q", l2.Warnings())
	}
	more := mustAppend(t, l2, store.Entry{Type: store.TypeMessage, Message: userMsg("again")})
	if more[0].Parent != want[len(want)-1].ID {
		t.Errorf("first entry after resume has parent %q, want the last entry %q", more[0].Parent, want[len(want)-1].ID)
	}
	_, ro, err := store.ReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(append(want, more...), ro, rawMessageEqual); diff != "" {
		t.Errorf("read-only entries (-want +got):\n%s", diff)
	}
}

func TestAppendRejects(t *testing.T) {
	_, l := newLog(t, "/w")
	first := mustAppend(t, l, store.Entry{Type: store.TypeInterrupted})
	tests := []struct {
		name  string
		entry store.Entry
		want  string
	}{
		{name: "unknown type", entry: store.Entry{Type: "bogus"}, want: `unknown entry type "bogus"`},
		{name: "message without JSON", entry: store.Entry{Type: store.TypeMessage, Message: json.RawMessage(`{`)}, want: "valid JSON message"},
		{name: "duplicate id", entry: store.Entry{Type: store.TypeInterrupted, ID: first[0].ID}, want: "duplicate entry id"},
		{name: "attempt without call", entry: store.Entry{Type: store.TypeAttempt, Error: "e"}, want: "attempt entry without its call and error"},
		{name: "attempt without error", entry: store.Entry{Type: store.TypeAttempt, Call: &store.ModelCall{Model: "a/b", Attempts: 1}},
			want: "attempt entry without its call and error"},
		{name: "attempt message not JSON", entry: store.Entry{Type: store.TypeAttempt, Error: "e", Call: &store.ModelCall{Model: "a/b", Attempts: 1},
			Message: json.RawMessage(`{`)}, want: "message that is not JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := l.AppendEntry(tt.entry)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("AppendEntry(%+v) = %v, want an error containing %q", tt.entry, err, tt.want)
			}
		})
	}
	l.Close()
	if err := l.Append(store.Entry{Type: store.TypeInterrupted}); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Append after Close = %v, want os.ErrClosed", err)
	}
}

// A resumed log refuses the ids of the file and of entries appended since,
// however they look, and takes new ones.
func TestResumedLogRejectsDuplicates(t *testing.T) {
	_, l := newLog(t, "/w")
	mustAppend(t, l, store.Entry{Type: store.TypeInterrupted, ID: "0000000a"}, store.Entry{Type: store.TypeInterrupted, ID: "x-1"})
	l.Close()
	l, _, _, err := store.OpenWritable(l.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	mustAppend(t, l, store.Entry{Type: store.TypeInterrupted, ID: "0000000b"})
	for _, id := range []string{"0000000a", "x-1", "0000000b"} {
		if _, err := l.AppendEntry(store.Entry{Type: store.TypeInterrupted, ID: id}); err == nil || !strings.Contains(err.Error(), "duplicate entry id") {
			t.Errorf("AppendEntry with id %q = %v, want a duplicate error", id, err)
		}
	}
	mustAppend(t, l, store.Entry{Type: store.TypeInterrupted, ID: "0000000c"}, store.Entry{Type: store.TypeInterrupted, ID: "y-2"})
	if _, err := l.AppendEntry(store.Entry{Type: store.TypeInterrupted, ID: "y-2"}); err == nil {
		t.Error("a duplicate of an id appended after the set was built was taken")
	}
}

// C6: a second writer is refused, naming the holder's pid; C7 readers are not.
func TestLockRefusesSecondWriter(t *testing.T) {
	_, l := newLog(t, "/w")
	path := l.Path()
	wantPid := "pid " + strconv.Itoa(os.Getpid())

	_, _, _, err := store.OpenWritable(path)
	if !errors.Is(err, store.ErrLocked) || !strings.Contains(err.Error(), wantPid) {
		t.Fatalf("OpenWritable on a created log = %v, want ErrLocked naming %q", err, wantPid)
	}
	if _, _, err := store.ReadOnly(path); err != nil {
		t.Errorf("ReadOnly while locked: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + ".lock"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("pid sidecar left after Close: %v", err)
	}

	l2, _, _, err := store.OpenWritable(path)
	if err != nil {
		t.Fatalf("OpenWritable after Close: %v", err)
	}
	_, _, _, err = store.OpenWritable(path)
	if !errors.Is(err, store.ErrLocked) || !strings.Contains(err.Error(), wantPid) {
		t.Errorf("second OpenWritable = %v, want ErrLocked naming %q", err, wantPid)
	}
	l2.Close()
	l3, _, _, err := store.OpenWritable(path)
	if err != nil {
		t.Fatalf("OpenWritable after the second Close: %v", err)
	}
	l3.Close()
}

// tornFixture writes a log with two entries and the given tail, as a crash
// (kill -9) in the middle of a write leaves it, and returns the path and the
// bytes before the tail.
func tornFixture(t *testing.T, tail string) (path string, whole []byte, entries []store.Entry) {
	t.Helper()
	_, l := newLog(t, "/w")
	entries = mustAppend(t, l,
		store.Entry{Type: store.TypeMessage, Message: userMsg("one")},
		store.Entry{Type: store.TypeMessage, Message: assistantMsg("two")},
	)
	path = l.Path()
	l.Close()
	whole, _ = os.ReadFile(path)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(tail)
	f.Close()
	return path, whole, entries
}

// C7: a read-only resume never touches the file, torn tail or not.
func TestReadOnlyLeavesFileByteIdentical(t *testing.T) {
	for _, tail := range []string{"", `{"type":"message","id":"abcd1234","parent":"`} {
		t.Run(fmt.Sprintf("tail %q", tail), func(t *testing.T) {
			path, _, want := tornFixture(t, tail)
			old := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
			if err := os.Chtimes(path, old, old); err != nil {
				t.Fatal(err)
			}
			before, _ := os.ReadFile(path)
			dirBefore, _ := os.ReadDir(filepath.Dir(path))

			r, err := store.Read(path)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, r.Entries, rawMessageEqual); diff != "" {
				t.Errorf("entries (-want +got):\n%s", diff)
			}
			if (tail != "") != (len(r.Warnings) == 1) {
				t.Errorf("warnings %q for tail %q", r.Warnings, tail)
			}
			after, _ := os.ReadFile(path)
			if !bytes.Equal(before, after) {
				t.Errorf("file changed:\nbefore %q\nafter  %q", before, after)
			}
			fi, _ := os.Stat(path)
			if !fi.ModTime().Equal(old) {
				t.Errorf("mtime changed: %v, want %v", fi.ModTime(), old)
			}
			dirAfter, _ := os.ReadDir(filepath.Dir(path))
			if len(dirAfter) != len(dirBefore) {
				t.Errorf("read-only resume created files: %v", dirAfter)
			}
		})
	}
}

// A kill -9 mid-write leaves a torn last line; a writable resume cuts it
// off into <path>.torn and loses no whole line.
func TestTornTailRepair(t *testing.T) {
	tests := []struct {
		name     string
		tail     string
		wantCut  bool // the tail moves to .torn
		wantKept int  // entries from the tail that survive
	}{
		{name: "partial entry", tail: `{"type":"message","id":"abcd1234","message":{"role":"us`, wantCut: true},
		{name: "zero bytes", tail: "\x00\x00\x00", wantCut: true},
		{name: "whole entry without newline", tail: `{"type":"interrupted","id":"abcd1234","parent":"","time":"2025-01-01T00:00:00Z"}`, wantKept: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path, whole, entries := tornFixture(t, tt.tail)
			l, _, got, err := store.OpenWritable(path)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(entries)+tt.wantKept {
				t.Errorf("got %d entries, want %d", len(got), len(entries)+tt.wantKept)
			}
			if len(l.Warnings()) != 1 {
				t.Errorf("warnings %q, want one", l.Warnings())
			}
			torn, terr := os.ReadFile(path + ".torn")
			onDisk, _ := os.ReadFile(path)
			if tt.wantCut {
				if terr != nil || string(torn) != tt.tail+"\n" {
					t.Errorf(".torn = %q, %v; want the cut bytes %q", torn, terr, tt.tail)
				}
				if !bytes.Equal(onDisk, whole) {
					t.Errorf("repaired file:\n%q\nwant\n%q", onDisk, whole)
				}
				if fi, err := os.Stat(path + ".torn"); err != nil || fi.Mode().Perm() != 0o600 {
					t.Errorf(".torn mode: %v, %v", fi, err)
				}
			} else {
				if terr == nil {
					t.Errorf(".torn written for a whole entry: %q", torn)
				}
				if want := string(whole) + tt.tail + "\n"; string(onDisk) != want {
					t.Errorf("completed file:\n%q\nwant\n%q", onDisk, want)
				}
			}
			mustAppend(t, l, store.Entry{Type: store.TypeMessage, Message: userMsg("after crash")})
			l.Close()
			r, err := store.Read(path)
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Warnings) != 0 || len(r.Entries) != len(entries)+tt.wantKept+1 {
				t.Errorf("after repair and append: %d entries, warnings %q", len(r.Entries), r.Warnings)
			}
		})
	}
}

// A corrupt line in the middle is skipped with a warning; every valid line
// is kept, the file is not rewritten and the branch still reaches the root.
func TestCorruptMiddleLine(t *testing.T) {
	_, l := newLog(t, "/w")
	first := mustAppend(t, l, store.Entry{Type: store.TypeMessage, Message: userMsg("one")})
	path := l.Path()
	f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString("{\"type\":\"message\",\"id\":\"deadbeef\",\"message\":{garbage}\n")
	f.Close()
	// The next entry names the lost one as its parent.
	last := mustAppend(t, l, store.Entry{Type: store.TypeMessage, Parent: "deadbeef", Message: assistantMsg("three")})
	l.Close()
	before, _ := os.ReadFile(path)

	l2, _, got, err := store.OpenWritable(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if diff := cmp.Diff(append(first, last...), got, rawMessageEqual); diff != "" {
		t.Errorf("entries (-want +got):\n%s", diff)
	}
	if w := l2.Warnings(); len(w) != 1 || !strings.Contains(w[0], path+":3:") {
		t.Errorf("warnings %q, want one naming %s:3", w, path)
	}
	after, _ := os.ReadFile(path)
	if !bytes.Equal(before, after) {
		t.Errorf("writable open rewrote a log with a corrupt middle line")
	}
	if b := store.Branch(got); len(b) != 2 {
		t.Errorf("branch across the lost line has %d entries, want 2", len(b))
	}
}

func TestPermissions(t *testing.T) {
	home, l := newLog(t, "/work/main")
	if err := store.AppendError(l.Path(), map[string]string{"message": "boom"}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := store.Trust(home, dir); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path string
		want os.FileMode
	}{
		{path: filepath.Join(home, "sessions"), want: 0o700},
		{path: filepath.Join(home, "sessions", "--work-main--"), want: 0o700},
		{path: l.Path(), want: 0o600},
		{path: l.Path() + ".lock", want: 0o600},
		{path: l.Path() + ".errors.jsonl", want: 0o600},
		{path: filepath.Join(home, "trust.json"), want: 0o600},
	}
	for _, tt := range tests {
		t.Run(filepath.Base(tt.path), func(t *testing.T) {
			fi, err := os.Stat(tt.path)
			if err != nil {
				t.Fatal(err)
			}
			if got := fi.Mode().Perm(); got != tt.want {
				t.Errorf("mode %v, want %v", got, tt.want)
			}
		})
	}
	// Home creates $E_HOME 0700.
	fresh := filepath.Join(t.TempDir(), "e-home")
	t.Setenv("E_HOME", fresh)
	got, err := store.Home()
	if err != nil || got != fresh {
		t.Fatalf("Home() = %q, %v; want %q", got, err, fresh)
	}
	if fi, err := os.Stat(fresh); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("home mode: %v, %v", fi, err)
	}
}

// T2: a fork copies the branch into a file of its own; the two grow apart.
func TestFork(t *testing.T) {
	home, l := newLog(t, "/w")
	orig := mustAppend(t, l,
		store.Entry{Type: store.TypeMessage, Message: userMsg("one")},
		store.Entry{Type: store.TypeMessage, Message: assistantMsg("two")},
	)
	orig = append(orig, mustAppend(t, l,
		store.Entry{Type: store.TypeCompaction, Summary: "one, two", Kept: orig[1].ID, Tokens: 99},
		store.Entry{Type: store.TypeMessage, Message: userMsg("three")},
	)...)
	h := l.Header()
	h.ID, h.Parent, h.Model, h.Effort = "", l.Path(), "offline/changed", "low"
	fork, err := store.Fork(home, h, store.Branch(orig))
	if err != nil {
		t.Fatal(err)
	}
	defer fork.Close()
	if fork.Path() == l.Path() || fork.Header().ID == l.Header().ID {
		t.Fatalf("fork shares the original's file or id: %s", fork.Path())
	}
	mustAppend(t, fork, store.Entry{Type: store.TypeMessage, Message: userMsg("fork only")})
	mustAppend(t, l, store.Entry{Type: store.TypeMessage, Message: userMsg("original only")})
	fork.Close()
	l.Close()

	fh, fe, err := store.ReadOnly(fork.Path())
	if err != nil {
		t.Fatal(err)
	}
	if fh.Parent != l.Path() || fh.Model != "offline/changed" || fh.Effort != "low" {
		t.Errorf("fork header %+v: want parent %s, model and effort of the fork", fh, l.Path())
	}
	if diff := cmp.Diff(orig, fe[:len(orig)], rawMessageEqual); diff != "" {
		t.Errorf("fork copies (-want +got):\n%s", diff)
	}
	_, oe, _ := store.ReadOnly(l.Path())
	lastText := func(es []store.Entry) string {
		var m struct{ Content []struct{ Text string } }
		json.Unmarshal(es[len(es)-1].Message, &m)
		return m.Content[0].Text
	}
	if lastText(fe) != "fork only" || lastText(oe) != "original only" || len(fe) != 5 || len(oe) != 5 {
		t.Errorf("logs did not grow apart: fork ends %q, original ends %q", lastText(fe), lastText(oe))
	}
}

func TestBranch(t *testing.T) {
	e := func(id, parent string) store.Entry {
		return store.Entry{Type: store.TypeInterrupted, ID: id, Parent: parent}
	}
	ids := func(es []store.Entry) []string {
		var out []string
		for _, x := range es {
			out = append(out, x.ID)
		}
		return out
	}
	tests := []struct {
		name    string
		entries []store.Entry
		want    []string
	}{
		{name: "empty", entries: nil, want: nil},
		{name: "linear", entries: []store.Entry{e("a", ""), e("b", "a"), e("c", "b")}, want: []string{"a", "b", "c"}},
		{name: "rewound", entries: []store.Entry{e("a", ""), e("b", "a"), e("c", "b"), e("d", "a")}, want: []string{"a", "d"}},
		{name: "missing parent falls back to the previous line", entries: []store.Entry{e("a", ""), e("c", "lost")}, want: []string{"a", "c"}},
		{name: "forward link cannot loop", entries: []store.Entry{e("a", "b"), e("b", "a")}, want: []string{"a", "b"}},
		{name: "a duplicate id means the nearest earlier entry", entries: []store.Entry{
			e("x", ""), e("a", "x"), e("x", "a"), e("b", "x")}, want: []string{"x", "a", "x", "b"}},
		{name: "a later duplicate is never a parent", entries: []store.Entry{
			e("a", ""), e("b", "a"), e("a", "b")}, want: []string{"a", "b", "a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, ids(store.Branch(tt.entries))); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// The branch of a log that never branched is the log itself, not a copy
// (a 100,000-entry resume spent a tenth of a second copying it), clipped
// so that appending to it never writes into the caller's array.
func TestBranchOfLinearLog(t *testing.T) {
	in := make([]store.Entry, 3, 10)
	in[0], in[1], in[2] = store.Entry{ID: "a"}, store.Entry{ID: "b", Parent: "a"}, store.Entry{ID: "c", Parent: "b"}
	out := store.Branch(in)
	if len(out) != 3 || &out[0] != &in[0] {
		t.Fatalf("Branch of a linear log is a copy of %d entries, want the log", len(out))
	}
	if cap(out) != len(out) {
		t.Errorf("cap %d, want %d: an append would write into the caller's array", cap(out), len(out))
	}
	in[2].Parent = "a" // c now branches off a: a copy of the branch a, c
	if out := store.Branch(in); len(out) != 2 || &out[0] == &in[0] {
		t.Errorf("Branch of a branched log: %d entries sharing the log's array %v, want a copy of 2", len(out), len(out) > 0 && &out[0] == &in[0])
	}
}

func TestOpenRejects(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, content, want string
	}{
		{name: "empty", content: "", want: "no header"},
		{name: "torn header", content: `{"type":"session","vers`, want: "no complete header"},
		{name: "not a session", content: "{\"type\":\"other\"}\n", want: "not a session log"},
		{name: "future version", content: "{\"type\":\"session\",\"version\":2}\n", want: "unsupported format version 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-")+".jsonl")
			os.WriteFile(path, []byte(tt.content), 0o600)
			if _, _, err := store.ReadOnly(path); err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), path) {
				t.Errorf("ReadOnly = %v, want an error naming %s and %q", err, path, tt.want)
			}
			if _, _, _, err := store.OpenWritable(path); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("OpenWritable = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestNewID(t *testing.T) {
	prev := ""
	for range 10000 {
		id := store.NewID()
		if len(id) != 26 || strings.Trim(id, "0123456789ABCDEFGHJKMNPQRSTVWXYZ") != "" {
			t.Fatalf("NewID() = %q, not a ULID", id)
		}
		if id <= prev {
			t.Fatalf("NewID() = %q after %q: not increasing", id, prev)
		}
		prev = id
	}
	ms := time.Now().UnixMilli()
	// The first 10 characters are the millisecond timestamp.
	var got int64
	for _, c := range store.NewID()[:10] {
		got = got*32 + int64(strings.IndexRune("0123456789ABCDEFGHJKMNPQRSTVWXYZ", c))
	}
	if got < ms-1000 || got > ms+1000 {
		t.Errorf("ULID time %d, want about %d", got, ms)
	}
}

// Large logs are parsed in parallel chunks: order, line numbers and the
// torn tail must come out as from a serial parse.
func TestLargeLogParse(t *testing.T) {
	_, l := newLog(t, "/w")
	path := l.Path()
	l.Close()
	f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	const n = 15000 // about 3.5 MB
	var buf bytes.Buffer
	for i := range n {
		if i == 9000 {
			buf.WriteString("not json\n") // line 9002: after the header and 9000 entries
		}
		fmt.Fprintf(&buf, `{"type":"message","id":"%08x","parent":"","time":"2025-01-01T00:00:00Z","message":{"role":"user","content":[{"type":"text","text":"%0200d"}]}}`+"\n", i, i)
	}
	buf.WriteString(`{"type":"mess`)
	f.Write(buf.Bytes())
	f.Close()
	r, err := store.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Entries) != n {
		t.Fatalf("%d entries, want %d", len(r.Entries), n)
	}
	for i, e := range r.Entries {
		if e.ID != fmt.Sprintf("%08x", i) {
			t.Fatalf("entry %d has id %s: out of order", i, e.ID)
		}
	}
	want := []string{
		"store: " + path + ":9002: skipped a corrupt line: invalid character 'o' in literal null (expecting 'u')",
		"store: " + path + ": ignored a torn last line (13 bytes)",
	}
	if diff := cmp.Diff(want, r.Warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
}
