package pi

import (
	"fmt"
	"slices"

	"github.com/e-agent/e/internal/session"
)

// As pi's, e starts with a model whose provider's key is unset
// (session.Behaviour.KeyCheckAtPrompt) and refuses each prompt instead, with pi's
// first sentence ("No API key found for PROVIDER."), so that a client's
// start succeeds and its first prompt says what is wrong.

// keyMissing returns pi's refusal of a prompt for model id, nil when its
// provider can be used now.
func keyMissing(h *session.Host, id string) error {
	ms := h.Models()
	i := slices.IndexFunc(ms, func(m session.ModelInfo) bool { return m.ID == id })
	if i < 0 {
		return nil // not in the catalog: the session layer says why
	}
	m := ms[i]
	if usable(m) {
		return nil
	}
	hint := "pass --api-key"
	for _, p := range h.Providers() {
		if p.Name == m.Provider && p.KeyEnv != "" {
			hint = fmt.Sprintf("set %s or pass --api-key", p.KeyEnv)
		}
	}
	return fmt.Errorf("No API key found for %s.\n\nTo use this model, %s.", m.Provider, hint)
}
