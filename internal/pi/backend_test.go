package pi

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSessionsOnTheHost checks that the dialect's sessions are the session
// layer's (Host.Create): registered with the host while current, gone from
// it once replaced, and saved in pi's per-cwd folder.
func TestSessionsOnTheHost(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"work", "e-home", "pi-agent"} {
		os.Mkdir(filepath.Join(dir, d), 0o700)
	}
	work := filepath.Join(dir, "work")
	f, err := ParseFlags([]string{"--mode", "rpc", "--session-dir", filepath.Join(dir, "sessions")})
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"PI_CODING_AGENT_DIR": filepath.Join(dir, "pi-agent")}
	fr, err := start(f, Env{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: io.Discard, Cwd: work,
		Home: filepath.Join(dir, "e-home"), Getenv: func(k string) string { return vars[k] }, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer fr.shutdown()
	first := fr.session()
	if _, err := fr.h.Get(first.ID()); err != nil {
		t.Fatalf("the first session is not on the host: %v", err)
	}
	if want := fr.b.dir(work); filepath.Dir(first.Path()) != want {
		t.Errorf("saved in %s, want pi's folder %s", filepath.Dir(first.Path()), want)
	}
	if _, err := fr.newSession(&command{typ: "new_session", line: []byte(`{"type":"new_session"}`)}); err != nil {
		t.Fatal(err)
	}
	second := fr.session()
	if _, err := fr.h.Get(first.ID()); err == nil {
		t.Errorf("the replaced session %s is still on the host", first.ID())
	}
	if _, err := fr.h.Get(second.ID()); err != nil || len(fr.h.Sessions()) != 1 {
		t.Errorf("host sessions %d, the new one: %v", len(fr.h.Sessions()), err)
	}
}
