package pi

import (
	"testing"

	"github.com/e-agent/e/internal/eventfate"
)

// TestEveryEventHasAFate: each event type of schemas/events is either
// translated by Feed or listed in eventFates with why pi gets nothing, so
// a new event type fails here instead of being dropped without a word.
func TestEveryEventHasAFate(t *testing.T) {
	fates := map[string]eventfate.Fate{}
	for typ, f := range eventFates {
		fates[typ] = eventfate.Fate{Translated: f.fed, What: f.what}
	}
	for _, err := range eventfate.Check("pi", "translate.go", "Feed", fates) {
		t.Error(err)
	}
}
