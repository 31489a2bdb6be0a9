package acp

import (
	"testing"

	"github.com/e-agent/e/internal/eventfate"
)

// TestEveryEventHasAFate: each event type of schemas/events is either
// translated by Translator.Event or listed in eventFates with why ACP gets
// nothing, so a new event type fails here instead of being dropped
// without a word.
func TestEveryEventHasAFate(t *testing.T) {
	fates := map[string]eventfate.Fate{}
	for typ, f := range eventFates {
		fates[typ] = eventfate.Fate{Translated: f.translated, What: f.what}
	}
	for _, err := range eventfate.Check("ACP", "translate.go", "Event", fates) {
		t.Error(err)
	}
}
