package store

import (
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/e-agent/e/internal/regfile"
)

// special puts a file of class kind at path: what a hostile repository or
// a mistyped path can name where e expects a regular file (Y1, Y2).
func special(t *testing.T, kind, path string, limit int64) {
	t.Helper()
	var err error
	switch kind {
	case "fifo":
		err = syscall.Mkfifo(path, 0o600)
	case "dev zero symlink":
		err = os.Symlink("/dev/zero", path)
	case "socket":
		var l net.Listener
		if l, err = net.Listen("unix", path); err == nil {
			t.Cleanup(func() { l.Close() })
		}
	case "oversize":
		var f *os.File
		if f, err = os.Create(path); err == nil {
			err = f.Truncate(limit + 1) // sparse: no disk, but over the limit
			f.Close()
		}
	case "directory":
		err = os.Mkdir(path, 0o700)
	}
	if err != nil {
		t.Fatal(err)
	}
}

var specialKinds = []struct {
	kind    string
	wantErr error
}{
	{kind: "fifo", wantErr: regfile.ErrNotRegular},
	{kind: "dev zero symlink", wantErr: regfile.ErrNotRegular},
	{kind: "socket", wantErr: regfile.ErrNotRegular},
	{kind: "oversize", wantErr: regfile.ErrTooLarge},
	{kind: "directory", wantErr: regfile.ErrNotRegular},
}

// Each file e reads from E_HOME, a session folder or a request's path
// refuses every special class at once, in one line naming the path.
func TestSpecialFiles(t *testing.T) {
	entries := []struct {
		name  string
		file  string // beneath a fresh E_HOME
		limit int64
		read  func(home, path string) error
	}{
		{name: "resume read-only", file: "s.jsonl", limit: MaxLogBytes, read: func(_, p string) error { _, err := Read(p); return err }},
		{name: "resume writable", file: "s.jsonl", limit: MaxLogBytes, read: func(_, p string) error {
			l, _, _, err := OpenWritable(p)
			if err == nil {
				l.Close()
			}
			return err
		}},
		{name: "settings", file: "settings.json", limit: MaxConfigBytes, read: func(h, _ string) error { _, err := LoadSettings(h); return err }},
		{name: "trust list", file: "trust.json", limit: MaxConfigBytes, read: func(h, _ string) error { _, err := Trusted(h); return err }},
		{name: "home AGENTS.md", file: "AGENTS.md", limit: MaxInstructionsBytes, read: func(h, _ string) error { _, _, err := Instructions(h, t.TempDir()); return err }},
	}
	for _, e := range entries {
		for _, k := range specialKinds {
			if k.kind == "directory" && (e.name == "resume writable" || e.name == "home AGENTS.md") {
				continue // O_RDWR of a directory fails in open (EISDIR); a directory AGENTS.md is skipped
			}
			t.Run(e.name+"/"+k.kind, func(t *testing.T) {
				home := t.TempDir()
				path := filepath.Join(home, e.file)
				special(t, k.kind, path, e.limit)
				err := e.read(home, path)
				if !errors.Is(err, k.wantErr) {
					t.Fatalf("got %v, want %v", err, k.wantErr)
				}
				if msg := err.Error(); !strings.Contains(msg, path) || strings.Contains(msg, "\n") {
					t.Errorf("error %q: want one line naming %s", msg, path)
				}
			})
		}
	}
}

// A trusted directory's special AGENTS.md fails the read naming it; an
// untrusted one's still asks for trust, without being opened (C9, Y1).
func TestInstructionsSpecial(t *testing.T) {
	for _, k := range specialKinds {
		if k.kind == "directory" {
			continue // below: a directory named AGENTS.md is no instructions file
		}
		t.Run(k.kind, func(t *testing.T) {
			home := t.TempDir()
			dir, _ := filepath.EvalSymlinks(t.TempDir())
			special(t, k.kind, filepath.Join(dir, "AGENTS.md"), MaxInstructionsBytes)
			if _, need, err := Instructions(home, dir); err != nil || !need {
				t.Errorf("untrusted: Instructions = need %v, %v; want need true, nil", need, err)
			}
			if err := Trust(home, dir); err != nil {
				t.Fatal(err)
			}
			if _, _, err := Instructions(home, dir); !errors.Is(err, k.wantErr) {
				t.Errorf("trusted: Instructions = %v, want %v", err, k.wantErr)
			}
		})
	}
}

// A directory named AGENTS.md neither asks for trust nor fails a trusted
// directory's session: it is no instructions file.
func TestInstructionsDirectory(t *testing.T) {
	home := t.TempDir()
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	special(t, "directory", filepath.Join(dir, "AGENTS.md"), 0)
	if text, need, err := Instructions(home, dir); text != "" || need || err != nil {
		t.Errorf("untrusted: Instructions = %q, %v, %v; want nothing", text, need, err)
	}
	if err := Trust(home, dir); err != nil {
		t.Fatal(err)
	}
	if text, need, err := Instructions(home, dir); text != "" || need || err != nil {
		t.Errorf("trusted: Instructions = %q, %v, %v; want nothing", text, need, err)
	}
}

// An export that fails midway (ENOSPC) leaves the old page, or no file, and
// no temporary file: never a partial page.
func TestWriteAtomicFailsMidway(t *testing.T) {
	tests := []struct {
		name string
		old  string // "" when there is no page yet
	}{
		{name: "new path"},
		{name: "existing page", old: "<html>old</html>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "page.html")
			if tt.old != "" {
				if err := os.WriteFile(path, []byte(tt.old), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			err := writeAtomic(path, func(w io.Writer) error {
				io.WriteString(w, strings.Repeat("<p>part</p>", 50000)) // past the buffer: on disk already
				return syscall.ENOSPC
			})
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("writeAtomic = %v, want ENOSPC", err)
			}
			got, rerr := os.ReadFile(path)
			if tt.old == "" && !errors.Is(rerr, os.ErrNotExist) || tt.old != "" && string(got) != tt.old {
				t.Errorf("after the failure the path holds %d bytes (%v), want %q", len(got), rerr, tt.old)
			}
			if des, _ := os.ReadDir(dir); len(des) != min(1, len(tt.old)) {
				t.Errorf("directory holds %d entries, want only the old page", len(des))
			}
		})
	}
}

func TestWriteAtomicTargets(t *testing.T) {
	tests := []struct {
		kind    string
		wantErr error
	}{
		{kind: "fifo", wantErr: regfile.ErrNotRegular},
		{kind: "dev zero symlink", wantErr: regfile.ErrNotRegular},
		{kind: "socket", wantErr: regfile.ErrNotRegular},
		{kind: "directory", wantErr: regfile.ErrNotRegular},
		{kind: "link to a page"},
	}
	for _, tt := range tests {
		t.Run(tt.kind, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "page.html")
			target := filepath.Join(dir, "real.html")
			if tt.kind == "link to a page" {
				os.WriteFile(target, []byte("old"), 0o600)
				os.Symlink(target, path)
			} else {
				special(t, tt.kind, path, 0)
			}
			err := writeAtomic(path, func(w io.Writer) error { _, err := io.WriteString(w, "new"); return err })
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("writeAtomic = %v, want %v", err, tt.wantErr)
			}
			if tt.wantErr == nil {
				if b, _ := os.ReadFile(target); string(b) != "new" {
					t.Errorf("link target holds %q, want the new page", b)
				}
				if fi, _ := os.Lstat(path); fi.Mode()&os.ModeSymlink == 0 {
					t.Errorf("the link was replaced")
				}
			}
		})
	}
}

// A FIFO where a log's pid sidecar goes (a repository can ship one) fails
// the writable resume naming it rather than blocking its open (Y1).
func TestPidSidecarFIFO(t *testing.T) {
	dir := t.TempDir()
	l, err := CreateIn(dir, Header{Cwd: dir})
	if err != nil {
		t.Fatal(err)
	}
	path := l.Path()
	l.Close()
	os.Remove(path + ".lock")
	special(t, "fifo", path+".lock", 0)
	if l, _, _, err := OpenWritable(path); !errors.Is(err, regfile.ErrNotRegular) {
		if l != nil {
			l.Close()
		}
		t.Fatalf("OpenWritable with a FIFO sidecar = %v, want ErrNotRegular", err)
	}
}
