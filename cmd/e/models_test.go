package main

import (
	"strings"
	"testing"

	"github.com/e-agent/e/schemas"
	"github.com/tidwall/gjson"
)

// M2: e models is models.list for a shell: a table, or with --json the
// method's result.
func TestModelsCommand(t *testing.T) {
	out, err := command(t, "models").Output()
	if err != nil {
		t.Fatalf("e models: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if !strings.HasPrefix(lines[0], "MODEL") || !strings.Contains(string(out), "e/offline (default)") ||
		!strings.Contains(string(out), "openai/gpt-5.5 ") {
		t.Errorf("e models:\n%s", out)
	}
	out, err = command(t, "models", "--json").Output()
	if err != nil {
		t.Fatalf("e models --json: %v", err)
	}
	if err := schemas.ValidateResult("models.list", out); err != nil {
		t.Errorf("e models --json is no models.list result: %v\n%s", err, out)
	}
	if got := gjson.GetBytes(out, "default").String(); got != "e/offline" {
		t.Errorf("default %q, want e/offline (no key set)", got)
	}
	if err := command(t, "models", "extra").Run(); exitCode(err) != 2 {
		t.Errorf("e models extra: %v, want exit 2", err)
	}
}
