package pi

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/e-agent/e/internal/model"
)

// Levels are pi's thinking levels, lowest first.
var Levels = []string{"off", "minimal", "low", "medium", "high", "xhigh", "max"}

// AvailableLevels returns the thinking levels of a model, in pi's order:
// as pi 1.6.0 offers them, "off" and "minimal", then its effort levels
// that are pi levels, for a model with effort levels; ["off"] for one
// without.
func AvailableLevels(info model.Info) []string {
	if len(info.Efforts) == 0 {
		return []string{"off"}
	}
	var out []string
	for _, l := range Levels {
		if l == "off" || l == "minimal" || slices.Contains(info.Efforts, l) {
			out = append(out, l)
		}
	}
	return out
}

// Clamp returns the level of info nearest to level, as pi clamps a level
// to the model's capabilities: the highest available level not above it,
// else the lowest available.
func Clamp(info model.Info, level string) string {
	avail := AvailableLevels(info)
	want := slices.Index(Levels, level)
	best := avail[0]
	for _, l := range avail {
		if slices.Index(Levels, l) <= want {
			best = l
		}
	}
	return best
}

// Effort is e's effort for a pi level on info: "" for "off" (and a model
// without effort levels); a level the model has no effort of (pi's
// "minimal") is its lowest effort above that level.
func Effort(info model.Info, level string) string {
	l := Clamp(info, level)
	if l == "off" {
		return ""
	}
	if slices.Contains(info.Efforts, l) {
		return l
	}
	for _, above := range Levels[slices.Index(Levels, l):] {
		if slices.Contains(info.Efforts, above) {
			return above
		}
	}
	return ""
}

// errNoModel is ResolveModel's error when no model matches.
var errNoModel = errors.New("model not found")

// ResolveModel finds the model a pi --model pattern names (cli.md): an
// exact id, provider/id, or a fuzzy match on the id, restricted to
// provider when given, with an optional :thinking suffix. Several matches
// prefer those usable (usable reports a provider's key is set).
func ResolveModel(models []model.Info, provider, pattern string, usable func(model.Info) bool) (model.Info, string, error) {
	level := ""
	if i := strings.LastIndexByte(pattern, ':'); i >= 0 && slices.Contains(Levels, pattern[i+1:]) {
		pattern, level = pattern[:i], pattern[i+1:]
	}
	if p, id, ok := strings.Cut(pattern, "/"); ok && provider == "" {
		for _, m := range models {
			if m.Provider == p && m.Name == id {
				return m, level, nil
			}
		}
	}
	var exact, fuzzy []model.Info
	lower := strings.ToLower(pattern)
	for _, m := range models {
		if provider != "" && m.Provider != provider {
			continue
		}
		switch {
		case m.Name == pattern || m.ID == pattern:
			exact = append(exact, m)
		case strings.Contains(strings.ToLower(m.Name), lower):
			fuzzy = append(fuzzy, m)
		}
	}
	cands := exact
	if len(cands) == 0 {
		cands = fuzzy
	}
	if len(cands) > 1 {
		var ok []model.Info
		for _, m := range cands {
			if usable(m) {
				ok = append(ok, m)
			}
		}
		if len(ok) > 0 {
			cands = ok
		}
	}
	switch len(cands) {
	case 0:
		if provider != "" {
			return model.Info{}, "", fmt.Errorf("%w: %s/%s", errNoModel, provider, pattern)
		}
		return model.Info{}, "", fmt.Errorf("%w: %s", errNoModel, pattern)
	case 1:
		return cands[0], level, nil
	}
	var ids []string
	for _, m := range cands {
		ids = append(ids, m.ID)
	}
	return model.Info{}, "", fmt.Errorf("model %q is ambiguous (%s): use --provider or provider/id", pattern, strings.Join(ids, ", "))
}
