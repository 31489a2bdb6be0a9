package eventfate

import (
	"os"
	"strings"
	"testing"

	"github.com/e-agent/e/schemas"
)

// A list that misses an event type, names one that does not exist, says
// nothing of one, or disagrees with the switch fails, each with its line.
func TestCheck(t *testing.T) {
	// The front end's translator lives beside internal/agent: run from a
	// package directory of internal, as a dialect's test does.
	if err := os.Chdir("../acp"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chdir("../eventfate") })
	good := map[string]Fate{}
	for _, typ := range schemas.Events() {
		good[typ] = Fate{What: "sent no further: a test"}
	}
	// ACP's Translator.Event has a case for text.
	good["text"] = Fate{Translated: true, What: "agent_message_chunk"}
	tests := []struct {
		name  string
		edit  func(map[string]Fate)
		wants []string // each some error's substring; none: no error allowed
	}{
		{name: "missing", edit: func(f map[string]Fate) { delete(f, "usage") }, wants: []string{`event "usage" of schemas/events has no fate`}},
		{name: "unknown", edit: func(f map[string]Fate) { f["napped"] = Fate{What: "x"} }, wants: []string{`names "napped", which is no event type`}},
		{name: "silent", edit: func(f map[string]Fate) { f["usage"] = Fate{} }, wants: []string{`eventFates["usage"] says nothing`}},
		{name: "no case", edit: func(f map[string]Fate) { f["slept"] = Fate{Translated: true, What: "x"} }, wants: []string{`says Event translates it, but it has no case`}},
		{name: "a case", edit: func(f map[string]Fate) { f["text"] = Fate{What: "x"} }, wants: []string{`but Event has a case for it`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fates := map[string]Fate{}
			for k, v := range good {
				fates[k] = v
			}
			tt.edit(fates)
			errs := Check("ACP", "translate.go", "Event", fates)
			var got []string
			for _, err := range errs {
				got = append(got, err.Error())
			}
			for _, w := range tt.wants {
				if !strings.Contains(strings.Join(got, "\n"), w) {
					t.Errorf("errors %q lack %q", got, w)
				}
			}
		})
	}
}
