package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// lineCodec is a test Codec: a header line "H id", then one line "E id
// parent type" per entry, a name entry held back until the next entry or
// Flush (as pi's codec holds an answer an interruption may cut).
type lineCodec struct{ held []byte }

func (c *lineCodec) Owns(header []byte) bool { return bytes.HasPrefix(header, []byte("H ")) }

func (c *lineCodec) Header(dst []byte, h Header) ([]byte, error) {
	return fmt.Appendf(dst, "H %s %s\n", h.ID, h.Cwd), nil
}

func (c *lineCodec) Entry(dst []byte, e Entry) ([]byte, error) {
	dst = append(dst, c.held...)
	c.held = nil
	line := fmt.Appendf(nil, "E %s %s %s\n", e.ID, cmpOr(e.Parent, "-"), e.Type)
	if e.Type == TypeName {
		c.held = line
		return dst, nil
	}
	return append(dst, line...), nil
}

func (c *lineCodec) Flush(dst []byte) []byte {
	dst = append(dst, c.held...)
	c.held = nil
	return dst
}

func (c *lineCodec) Decode(path string, data []byte) (Header, []Entry, error) {
	var h Header
	var es []Entry
	for _, l := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) == 3 && f[0] == "H":
			h = Header{Type: TypeSession, ID: f[1], Cwd: f[2], Model: "m"}
		case len(f) == 4 && f[0] == "E":
			e := Entry{ID: f[1], Type: f[3]}
			if f[2] != "-" {
				e.Parent = f[2]
			}
			es = append(es, e)
		default:
			return h, nil, fmt.Errorf("%s: bad line %q", path, l)
		}
	}
	return h, es, nil
}

func cmpOr(s, or string) string {
	if s == "" {
		return or
	}
	return s
}

// TestCodecLog checks a log in a codec's format (spec/pi.md: Saved
// sessions): its lines are only the codec's, a held line is written by
// Sync and Close, a reopened file is decoded and continued after its last
// entry, a torn last line is cut off, a file the codec does not own is
// e's, and a fork is written in the codec's format.
func TestCodecLog(t *testing.T) {
	dir := t.TempDir()
	h := Header{ID: NewID(), Cwd: dir, Model: "m", Created: time.Now()}
	l, err := CreateWith(dir, "", h, &lineCodec{})
	if err != nil {
		t.Fatal(err)
	}
	msg := json.RawMessage(`{"role":"user","content":[]}`)
	a, _ := l.AppendEntry(Entry{Type: TypeMessage, Message: msg})
	b, _ := l.AppendEntry(Entry{Type: TypeName, Name: "held"})
	path := l.Path()
	read := func() string { data, _ := os.ReadFile(path); return string(data) }
	want := fmt.Sprintf("H %s %s\nE %s - message\n", h.ID, dir, a.ID)
	if diff := cmp.Diff(want, read()); diff != "" {
		t.Errorf("before Sync, the name is held (-want +got):\n%s", diff)
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	want += fmt.Sprintf("E %s %s name\n", b.ID, a.ID)
	if diff := cmp.Diff(want, read()); diff != "" {
		t.Errorf("Sync writes the held line (-want +got):\n%s", diff)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	// A torn last line is cut off; the file is continued after its last entry.
	os.WriteFile(path, []byte(want+"E half"), 0o600)
	l, gotH, es, err := OpenWritableWith(path, &lineCodec{})
	if err != nil {
		t.Fatal(err)
	}
	if gotH.ID != h.ID || len(es) != 2 || es[1].Parent != a.ID {
		t.Errorf("decoded %+v %+v", gotH, es)
	}
	c, err := l.AppendEntry(Entry{Type: TypeMessage, Message: msg})
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	want += fmt.Sprintf("E %s %s message\n", c.ID, b.ID)
	if diff := cmp.Diff(want, read()); diff != "" {
		t.Errorf("reopened (-want +got):\n%s", diff)
	}
	if torn, _ := os.ReadFile(path + ".torn"); strings.TrimSpace(string(torn)) != "E half" {
		t.Errorf("torn tail saved as %q", torn)
	}
	rr, err := ReadWith(path, &lineCodec{})
	if err != nil || len(rr.Entries) != 3 {
		t.Errorf("ReadWith: %v, %d entries", err, len(rr.Entries))
	}

	// e's own log is e's, codec or not.
	el, err := CreateIn(filepath.Join(dir, "e"), Header{Cwd: dir, Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	el.AppendEntry(Entry{Type: TypeMessage, Message: msg})
	el.Close()
	el, _, es, err = OpenWritableWith(el.Path(), &lineCodec{})
	if err != nil || len(es) != 1 || el.codec != nil {
		t.Fatalf("e's log with a codec: %v, %d entries, codec %v", err, len(es), el != nil && el.codec != nil)
	}
	el.Close()

	fork, err := ForkWith(filepath.Join(dir, "fork"), Header{Cwd: dir, Model: "m"}, es, &lineCodec{})
	if err != nil {
		t.Fatal(err)
	}
	fork.Close()
	data, _ := os.ReadFile(fork.Path())
	if lines := strings.Split(strings.TrimSpace(string(data)), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[1], "E "+es[0].ID+" - message") {
		t.Errorf("fork in the codec's format: %q", data)
	}
}
