package conformance

import (
	"context"
	"path/filepath"
	"testing"
)

// predictsFailure replays a case's run through a mutant's edits and
// judges the result with the case's matcher, its exit status and stderr
// too: a mutant that changes what the case checks is predicted caught, one
// that changes what it does not check, or nothing, is not.
func TestPredictsFailure(t *testing.T) {
	if testing.Short() {
		t.Skip("runs e")
	}
	server := buildServer(t, false)
	tests := []struct {
		file string
		want map[string]bool // mutant → predicted caught
	}{
		{file: "prompt-text.txtar", want: map[string]bool{
			"identity":                             false,
			"drop-event/text":                      true,
			"drop-event/usage":                     false, // the case does not look at usage events
			"falsify/session.prompt.result/output": true,
			"falsify/session.prompt.result/usage/input_tokens": false,
			"drop-response/session.prompt":                     true,
			"exit/zero-becomes-one":                            true,
			"exit/signal-becomes-one":                          false,
		}},
		{file: "sigterm-during-bash.txtar", want: map[string]bool{
			"identity":                false,
			"exit/signal-becomes-one": true,
			"exit/zero-becomes-one":   false,
		}},
		{file: "framing-oversized-line.txtar", want: map[string]bool{
			"exit/stderr-silenced":  true, // the case reads stderr
			"exit/zero-becomes-one": false,
		}},
	}
	for _, tt := range tests {
		c := loadTestCase(t, filepath.Join(goldenDir, tt.file))
		base := Run(context.Background(), c, Options{Server: server, Validator: SchemaValidator{}, TimeoutScale: timeoutScale()})
		if base.Verdict != Pass {
			t.Fatalf("%s: %s without a mutant: %v", c.ID, base.Verdict, base.Divergence)
		}
		for name, want := range tt.want {
			t.Run(c.ID+"/"+name, func(t *testing.T) {
				m, ok := MutantNamed(name)
				if !ok {
					t.Fatalf("no mutant %s", name)
				}
				if got := predictsFailure(m, c, base); got != want {
					t.Errorf("predictsFailure = %v, want %v", got, want)
				}
			})
		}
	}
}
