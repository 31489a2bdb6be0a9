package store_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/e-agent/e/internal/store"
	"github.com/google/go-cmp/cmp"
)

// session creates a saved session in cwd holding entries, with mtime at.
func session(t testing.TB, home, cwd string, at time.Time, name string, es ...store.Entry) string {
	t.Helper()
	l, err := store.Create(home, store.Header{Cwd: cwd, Model: "m", Effort: "e", Name: name})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Append(es...); err != nil {
		t.Fatal(err)
	}
	l.Close()
	if err := os.Chtimes(l.Path(), at, at); err != nil {
		t.Fatal(err)
	}
	return l.Path()
}

func msg(raw json.RawMessage) store.Entry { return store.Entry{Type: store.TypeMessage, Message: raw} }

// M4, C8: listing, newest first, with titles, names and counts.
func TestList(t *testing.T) {
	home := t.TempDir()
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	long := strings.Repeat("word ", 30)
	a := session(t, home, "/w/a", t0, "",
		msg(userMsg("  fix\n the   bug ")), msg(assistantMsg("calling a tool")), msg(toolResultMsg("output")), msg(assistantMsg("done")),
		msg(userMsg("thanks")))
	b := session(t, home, "/w/a", t0.Add(time.Hour), "label",
		msg(userMsg(long)), store.Entry{Type: store.TypeTitle, Name: "Explicit title"}, store.Entry{Type: store.TypeName, Name: "renamed"})
	c := session(t, home, "/w-a", t0.Add(2*time.Hour), "", msg(userMsg("same slug, other cwd"))) // slug collides with /w/a
	d := session(t, home, "/w/a", t0.Add(30*time.Minute), "only header", msg(json.RawMessage(`{"role":"user","content":[{"type":"image","media_type":"image/png","data":""}]}`)))

	want := []store.Summary{
		{Path: b, Title: "Explicit title", Name: "renamed", Modified: t0.Add(time.Hour), Messages: 1, Turns: 1, Cwd: "/w/a"},
		{Path: d, Title: "", Name: "only header", Modified: t0.Add(30 * time.Minute), Messages: 1, Turns: 0, Cwd: "/w/a"},
		{Path: a, Title: "fix the bug", Modified: t0, Messages: 5, Turns: 2, Cwd: "/w/a"},
	}
	for round := range 3 { // cold, cached, cache corrupted
		got, err := store.List(home, "/w/a/", false)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("round %d: List (-want +got):\n%s", round, diff)
		}
		if round == 1 {
			os.WriteFile(filepath.Join(filepath.Dir(a), ".list-cache.json"), []byte("{not json"), 0o600)
		}
	}
	all, err := store.List(home, "", true)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(append([]store.Summary{{Path: c, Title: "same slug, other cwd", Modified: t0.Add(2 * time.Hour), Messages: 1, Turns: 1, Cwd: "/w-a"}}, want...), all); diff != "" {
		t.Errorf("List all (-want +got):\n%s", diff)
	}

	// An append after the cached listing shows up.
	l, _, _, err := store.OpenWritable(a)
	if err != nil {
		t.Fatal(err)
	}
	l.Append(msg(userMsg("one more")), store.Entry{Type: store.TypeTitle, Name: "Retitled"})
	l.Close()
	got, _ := store.List(home, "/w/a", false)
	if got[0].Path != a || got[0].Messages != 6 || got[0].Turns != 3 || got[0].Title != "Retitled" {
		t.Errorf("after an append: %+v", got[0])
	}
	// A title longer than 80 characters is clipped.
	if title := store.Title([]store.Entry{msg(userMsg(long))}); len([]rune(title)) != 80 || !strings.HasSuffix(title, "…") {
		t.Errorf("Title of a long prompt = %q (%d runes)", title, len([]rune(title)))
	}
	// No sessions: empty, no error.
	if got, err := store.List(home, "/nowhere", false); err != nil || len(got) != 0 {
		t.Errorf("List of an unknown cwd = %v, %v", got, err)
	}
}

func TestSlug(t *testing.T) {
	tests := []struct{ cwd, want string }{
		{cwd: "/work/main", want: "--work-main--"},
		{cwd: "/work/main/", want: "--work-main--"},
		{cwd: "/", want: "----"},
		{cwd: `C:\Users\me`, want: "--C--Users-me--"},
	}
	for _, tt := range tests {
		if got := store.Slug(tt.cwd); got != tt.want {
			t.Errorf("Slug(%q) = %q, want %q", tt.cwd, got, tt.want)
		}
	}
	if s := store.Slug("/" + strings.Repeat("x", 500)); len(s) > 200 {
		t.Errorf("Slug of a long path is %d bytes", len(s))
	}
}

// H1, M4: a stale log of 1 GiB (sparse: a header, a hole, maybe a last
// entry without the branch summary) is listed from its head and a bounded
// tail, without reading it whole: the listing allocates a few MiB, not
// the file, and shows the header's cwd and name, the title its first user
// message gives, and no counts (spec/persistence.md §7).
func TestListHugeStaleLog(t *testing.T) {
	const size = 1 << 30
	header := `{"type":"session","version":1,"id":"big","cwd":"/w","created":"2026-01-01T00:00:00Z","model":"m","effort":"e","name":"label"}` + "\n"
	first := `{"type":"message","id":"00000001","parent":"","time":"2026-01-01T00:00:00Z","message":{"role":"user","content":"fix  the bug"}}` + "\n"
	last := "\n" + `{"type":"message","id":"00000002","parent":"00000001","time":"2026-01-01T00:00:00Z","message":{"role":"assistant","content":"done"}}` + "\n"
	tests := []struct {
		name       string
		head, tail string
		want       store.Summary
	}{
		{name: "header and a hole", head: header, want: store.Summary{Name: "label", Cwd: "/w"}},
		{name: "entries without a branch summary", head: header + first, tail: last, want: store.Summary{Title: "fix the bug", Name: "label", Cwd: "/w"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home := t.TempDir()
			dir := filepath.Join(home, "sessions", store.Slug("/w"))
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "big.jsonl")
			f, err := os.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteString(tt.head)
			if err := f.Truncate(size); err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteAt([]byte(tt.tail), size-int64(len(tt.tail))); err != nil {
				t.Fatal(err)
			}
			f.Close()
			fi, _ := os.Stat(path)
			tt.want.Path, tt.want.Modified = path, fi.ModTime().UTC()
			for _, round := range []string{"cold", "cached"} {
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				got, err := store.List(home, "/w", false)
				runtime.ReadMemStats(&after)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff([]store.Summary{tt.want}, got); diff != "" {
					t.Errorf("%s: List (-want +got):\n%s", round, diff)
				}
				alloc := after.TotalAlloc - before.TotalAlloc
				t.Logf("%s: %d KiB allocated", round, alloc>>10)
				if alloc > 64<<20 {
					t.Errorf("%s: List of a 1 GiB log allocated %d MiB, want at most 64", round, alloc>>20)
				}
			}
		})
	}
}

// H1, M4: a 40 MB log without the branch summary (as an older e wrote it)
// is scanned line by line for its counts: the listing allocates a small
// part of the file, not a copy of it.
func TestListScansOldLog(t *testing.T) {
	home := t.TempDir()
	dir := filepath.Join(home, "sessions", store.Slug("/w"))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString(`{"type":"session","version":1,"id":"old","cwd":"/w","created":"2026-01-01T00:00:00Z","model":"m","effort":"e"}` + "\n")
	text := strings.Repeat("output line ", 330)
	const n = 10000
	for i := range n {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		fmt.Fprintf(&b, `{"type":"message","id":"%08x","parent":"%08x","time":"2026-01-01T00:00:00Z","message":{"role":%q,"content":"%d %s"}}`+"\n", i+1, i, role, i, text)
	}
	path := filepath.Join(dir, "old.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	size := int64(b.Len())
	b.Reset()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	got, err := store.List(home, "/w", false)
	runtime.ReadMemStats(&after)
	if err != nil || len(got) != 1 {
		t.Fatalf("List: %v, %v", got, err)
	}
	if got[0].Messages != n || got[0].Turns != n/2 || !strings.HasPrefix(got[0].Title, "0 output line") {
		t.Errorf("summary %+v, want %d messages, %d turns, title from the first prompt", got[0], n, n/2)
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("a %d MiB log: %d KiB allocated", size>>20, alloc>>10)
	if alloc > uint64(size/4) {
		t.Errorf("List allocated %d KiB for a %d KiB log, want at most a quarter", alloc>>10, size>>10)
	}
}
