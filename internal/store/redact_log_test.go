package store

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// Secrets never reach a session log, even when a prompt carries one.
func TestAppendRedactsSecrets(t *testing.T) {
	t.Setenv("EXAMPLE_API_KEY", "plain-secret-value-42")
	home := t.TempDir()
	l, err := Create(home, Header{ID: NewID(), Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	msg := `{"role":"user","content":[{"type":"text","text":"use sk-abcdefghijklmnopqrstu and plain-secret-value-42, Authorization: Bearer abcdefgh12345678"}]}`
	if err := l.Append(Entry{Type: TypeMessage, Message: json.RawMessage(msg)}, Entry{Type: TypeCompaction, Summary: "key sk-abcdefghijklmnopqrstu"}); err != nil {
		t.Fatal(err)
	}
	l.Close()
	b, err := os.ReadFile(l.Path())
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"sk-abcdefghijklmnopqrstu", "plain-secret-value-42", "abcdefgh12345678"} {
		if strings.Contains(string(b), secret) {
			t.Errorf("log contains %q:\n%s", secret, b)
		}
	}
	_, entries, err := ReadOnly(l.Path())
	if err != nil || len(entries) != 2 || !json.Valid(entries[0].Message) {
		t.Fatalf("log unreadable after redaction: %v %+v", err, entries)
	}
}
