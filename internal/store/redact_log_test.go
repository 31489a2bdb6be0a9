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

// Redact looks for labels before it runs the labelled pattern, which
// costs tens of ns a byte: what it redacts is what the pattern alone
// redacts, whatever the case of the label (the Kelvin sign is a K to
// (?i)), wherever it lies, in text full of b and x that holds none.
func TestRedactLabelStart(t *testing.T) {
	long := strings.Repeat("box of axes, bear or beer; x-ray x-api ", 2000)
	tests := []struct {
		name  string
		in    string
		found bool
	}{
		{name: "none", in: long},
		{name: "bearer at the end", in: long + "Bearer abcdefgh12345678", found: true},
		{name: "upper case", in: "BEARER abcdefgh12345678", found: true},
		{name: "mixed case x-api-key", in: long + `"X-API-KEY": "abcdefgh12345678"`, found: true},
		{name: "kelvin sign", in: "x-api-\u212Aey: abcdefgh12345678", found: true},
		{name: "label without a value", in: "bearer " + long, found: true},
		{name: "cut short", in: long + "beare"},
		{name: "x-api- cut short", in: long + "x-api-k"},
		{name: "empty", in: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := labelStart(tt.in) >= 0; got != tt.found {
				t.Errorf("labelStart found a label: %v, want %v", got, tt.found)
			}
			want := keyPattern.ReplaceAllString(labelled.ReplaceAllString(tt.in, "${1}"+redacted), redacted)
			if got := Redact(tt.in); got != want {
				t.Errorf("Redact = …%.80q, want …%.80q", got[max(0, len(got)-80):], want[max(0, len(want)-80):])
			}
		})
	}
}

// Redact redacts what its patterns alone redact, whatever the text.
func FuzzRedact(f *testing.F) {
	for _, s := range []string{"Bearer abcdefgh12345678", "x-api-\u212Aey: abcdefgh12345678", `{"X-Api-Key":["abcdef123456"]}`,
		"bx bearer", "sk-ant-abcdefghijklmnopqrst", "ſ bearer\tabcdefghij"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := keyPattern.ReplaceAllString(labelled.ReplaceAllString(s, "${1}"+redacted), redacted)
		if got := Redact(s); got != want {
			t.Fatalf("Redact(%q) = %q, the patterns alone %q", s, got, want)
		}
	})
}
