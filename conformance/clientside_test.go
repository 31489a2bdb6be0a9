package conformance

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestClientKit runs the kit against a small Python client, correct and
// with a classic bug planted (testdata/clients/task.py): the kit must pass
// the correct one and fail each buggy one in the scenario that catches it,
// naming the bug.
func TestClientKit(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
	scenarios, err := LoadScenarios("")
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]*Scenario{}
	for _, s := range scenarios {
		byID[s.ID] = s
	}
	tests := []struct {
		name     string
		bug      string
		scenario string
		verdict  Verdict
		message  string // a part of the divergence's message
		// timeoutMS, when set, bounds the scenario: the client hangs.
		timeoutMS int
	}{
		{name: "correct client, separators", scenario: "unicode-separators", verdict: Pass},
		{name: "correct client, asks", scenario: "ask-answered", verdict: Pass},
		{name: "correct client, basic", bug: "reuse-id", scenario: "basic", verdict: Pass},
		{name: "splitlines", bug: "splitlines", scenario: "unicode-separators", verdict: Fail, timeoutMS: 3000},
		{name: "id reused while open", bug: "reuse-id", scenario: "ask-answered", verdict: Fail,
			message: "the client reused id 1 for ask.reply while its session.prompt with that id is still open"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if byID[tt.scenario] == nil {
				t.Fatalf("no scenario %s", tt.scenario)
			}
			s := *byID[tt.scenario]
			if tt.timeoutMS > 0 {
				s.TimeoutMS = tt.timeoutMS
			}
			client := []string{"python3", "testdata/clients/task.py"}
			if tt.bug != "" {
				client = append(client, tt.bug)
			}
			r := RunClient(context.Background(), &s, ClientOptions{Client: client,
				Relay: []string{os.Args[0], "conformance-relay"}, TimeoutScale: timeoutScale()})
			msg := ""
			if r.Divergence != nil {
				msg = r.Divergence.Step + ": " + r.Divergence.Message
			}
			if r.Verdict != tt.verdict || !strings.Contains(msg, tt.message) {
				t.Errorf("verdict %s (%s), want %s with %q\nstderr: %s", r.Verdict, msg, tt.verdict, tt.message, r.Stderr)
			}
			t.Logf("%s: %s %s", tt.scenario, r.Verdict, msg)
		})
	}
}

func TestRawSeparators(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{name: "both", in: `{"a":"x\u2028y\u2029z"}`, want: "{\"a\":\"x\u2028y\u2029z\"}"},
		{name: "escaped backslash kept", in: `{"a":"\\u2028"}`, want: `{"a":"\\u2028"}`},
		{name: "other escapes kept", in: `{"a":"\u2027\n\""}`, want: `{"a":"\u2027\n\""}`},
		{name: "none", in: `{"a":1}`, want: `{"a":1}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(rawSeparators([]byte(tt.in))); got != tt.want {
				t.Errorf("rawSeparators(%s) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}
