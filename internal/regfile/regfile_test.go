package regfile

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// specials makes one file of each class the package refuses or limits in a
// fresh directory and returns their paths by class (Y1, Y2).
func specials(t *testing.T) map[string]string {
	t.Helper()
	dir := t.TempDir()
	p := func(name string) string { return filepath.Join(dir, name) }
	if err := syscall.Mkfifo(p("fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", p("zero")); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", p("sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	if err := os.WriteFile(p("big"), make([]byte, 2048), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p("small"), []byte("hello\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(p("dir"), 0o700); err != nil {
		t.Fatal(err)
	}
	return map[string]string{"fifo": p("fifo"), "zero": p("zero"), "sock": p("sock"), "big": p("big"), "small": p("small"), "dir": p("dir")}
}

func TestReadFile(t *testing.T) {
	files := specials(t)
	tests := []struct {
		name    string
		path    string
		want    string // content, when no error
		wantErr error
		inErr   string // the error names this
	}{
		{name: "regular", path: files["small"], want: "hello\n"},
		{name: "fifo", path: files["fifo"], wantErr: ErrNotRegular, inErr: "a named pipe (FIFO), not a regular file"},
		{name: "dev zero symlink", path: files["zero"], wantErr: ErrNotRegular, inErr: "a character device"},
		{name: "socket", path: files["sock"], wantErr: ErrNotRegular},
		{name: "oversize", path: files["big"], wantErr: ErrTooLarge, inErr: "over the limit of 1 KiB"},
		{name: "directory", path: files["dir"], wantErr: ErrNotRegular, inErr: "a directory"},
		// A /proc file says its size is 0 and has content: the limit, not the
		// size, ends the read.
		{name: "proc size 0", path: "/proc/self/status", want: "Name:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadFile(tt.path, 1024*1024)
			if tt.name == "oversize" {
				got, err = ReadFile(tt.path, 1024)
			}
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("ReadFile(%s) = %q, %v; want %v", tt.path, got, err, tt.wantErr)
				}
				if msg := err.Error(); !strings.Contains(msg, tt.path) || !strings.Contains(msg, tt.inErr) || strings.Contains(msg, "\n") {
					t.Errorf("error %q: want one line naming %s and %q", msg, tt.path, tt.inErr)
				}
				return
			}
			if err != nil || !strings.HasPrefix(string(got), tt.want) {
				t.Fatalf("ReadFile(%s) = %q, %v; want %q", tt.path, got, err, tt.want)
			}
		})
	}
}

// A file of 0 bytes by stat and endless content (/dev/zero's kind, here
// /proc/self/... is small) is cut at the limit: ReadAll never trusts size.
func TestReadAllLimitBeyondSize(t *testing.T) {
	f, err := os.Open("/dev/zero")
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	_, err = ReadAll(f, "/dev/zero", 0, 4096)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("ReadAll(/dev/zero, size 0, limit 4096) = %v, want ErrTooLarge", err)
	}
}

func TestOpenIn(t *testing.T) {
	files := specials(t)
	root, err := os.OpenRoot(filepath.Dir(files["fifo"]))
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	for _, name := range []string{"fifo", "sock", "dir"} {
		if _, _, err := OpenIn(root, name, os.O_RDONLY, 0); !errors.Is(err, ErrNotRegular) {
			t.Errorf("OpenIn(%s) = %v, want ErrNotRegular", name, err)
		}
	}
	f, fi, err := OpenAny(root, "fifo")
	if err != nil {
		t.Fatalf("OpenAny(fifo) = %v", err)
	}
	f.Close()
	if Kind(fi.Mode()) != "a named pipe (FIFO)" {
		t.Errorf("Kind = %q", Kind(fi.Mode()))
	}
}
