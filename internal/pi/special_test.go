package pi

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/e-agent/e/internal/regfile"
)

// switch_session to a FIFO, /dev/zero or a socket is refused at once,
// naming the path and what it is, and the current session stays (Y1).
func TestSwitchSessionSpecial(t *testing.T) {
	tests := []struct {
		name string
		make func(path string) error
		kind string
	}{
		{name: "fifo", make: func(p string) error { return syscall.Mkfifo(p, 0o600) }, kind: "a named pipe (FIFO)"},
		{name: "dev zero symlink", make: func(p string) error { return os.Symlink("/dev/zero", p) }, kind: "a character device"},
		{name: "socket", make: func(p string) error {
			l, err := net.Listen("unix", p)
			if err == nil {
				t.Cleanup(func() { l.Close() })
			}
			return err
		}, kind: "a socket"},
		{name: "directory", make: func(p string) error { return os.Mkdir(p, 0o700) }, kind: "a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fr := newFront(t)
			before := fr.session().ID()
			path := filepath.Join(fr.env.Cwd, "s.jsonl")
			if err := tt.make(path); err != nil {
				t.Fatal(err)
			}
			_, err := fr.switchSession(CommandSwitchSession{Type: "switch_session", SessionPath: path})
			if !errors.Is(err, regfile.ErrNotRegular) || !strings.Contains(err.Error(), path+": "+tt.kind) {
				t.Fatalf("switch_session = %v; want one naming %s as %s", err, path, tt.kind)
			}
			if got := fr.session().ID(); got != before {
				t.Errorf("the session changed to %s; want %s kept", got, before)
			}
		})
	}
}

// Pi's config files and templates are read through regfile (session files
// through the store's, TestSwitchSessionSpecial):
// a FIFO or /dev/zero is an error or skipped, never read (Y1).
func TestPiFilesSpecial(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "f")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := readJSON(fifo, &struct{}{}); !errors.Is(err, regfile.ErrNotRegular) {
		t.Errorf("readJSON(fifo) = %v, want ErrNotRegular", err)
	}
	if id, _ := readHeader(fifo); id != "" {
		t.Errorf("readHeader(fifo) = %q", id)
	}
	if got := fileOrText(fifo); got != fifo {
		t.Errorf("fileOrText(fifo) = %q, want the text itself", got)
	}
}
