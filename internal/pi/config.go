package pi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/e-agent/e/internal/model"
	"github.com/e-agent/e/internal/regfile"
)

// Config is what e takes from pi's configuration directory
// (PI_CODING_AGENT_DIR, else ~/.pi/agent): the custom providers of
// models.json, the settings that have an e meaning, and where sessions go.
type Config struct {
	Dir       string
	Providers map[string]model.ProviderConfig
	// Keys holds literal API keys of models.json by the variable name the
	// provider's APIKeyEnv was given; Getenv serves them.
	Keys map[string]string
	// MaxTokens holds models.json's maxTokens by catalog id (provider/id).
	MaxTokens map[string]int
	// Names holds models.json's display names (name) by catalog id: the
	// model object's name, its id when it declares none.
	Names    map[string]string
	Settings Settings
	Warnings []string // models.json entries e cannot use, one line each
}

// Settings are the keys of pi's settings.json that e honours.
type Settings struct {
	DefaultProvider      string `json:"defaultProvider"`
	DefaultModel         string `json:"defaultModel"`
	DefaultThinkingLevel string `json:"defaultThinkingLevel"`
	SteeringMode         string `json:"steeringMode"`
	FollowUpMode         string `json:"followUpMode"`
	SessionDir           string `json:"sessionDir"`
	// DefaultTools is pi's defaultTools, read as pi reads it (DefaultTools).
	DefaultToolsRaw json.RawMessage `json:"defaultTools"`
	Compaction      struct {
		Enabled          *bool  `json:"enabled"`
		KeepRecentTokens *int64 `json:"keepRecentTokens"`
		ReserveTokens    *int64 `json:"reserveTokens"`
	} `json:"compaction"`
	Retry struct {
		Enabled         *bool    `json:"enabled"`
		MaxRetries      *int     `json:"maxRetries"`
		BaseDelayMS     *float64 `json:"baseDelayMs"`
		MaxAgentDelayMS *float64 `json:"maxAgentDelayMs"`
	} `json:"retry"`
}

// DefaultTools is the tools pi 1.6.0 turns on by default once settings
// set defaultTools (its resolveDefaultTools), nil when they do not: the
// plain names (pi's default ones when there are none), then each +name
// added and -name removed in order. Entries that are not strings are
// left out, and a value that is not a list is an empty one, as pi's.
func (s Settings) DefaultTools() []string {
	if len(s.DefaultToolsRaw) == 0 || string(s.DefaultToolsRaw) == "null" {
		return nil
	}
	var raw []any
	json.Unmarshal(s.DefaultToolsRaw, &raw)
	var entries, plain []string
	for _, e := range raw {
		if name, ok := e.(string); ok {
			entries = append(entries, name)
			if !isToolModifier(name) {
				plain = append(plain, name)
			}
		}
	}
	tools := append([]string{}, plain...) // not nil: set, if empty
	if len(plain) == 0 && len(entries) > 0 {
		tools = slices.Clone(piDefaultTools)
	}
	for _, e := range entries {
		name := e[min(1, len(e)):]
		i := slices.Index(tools, name)
		switch {
		case strings.HasPrefix(e, "+") && i < 0 && name != "":
			tools = append(tools, name)
		case strings.HasPrefix(e, "-") && i >= 0:
			tools = slices.Delete(tools, i, i+1)
		}
	}
	return tools
}

// AgentDir returns pi's configuration directory.
func AgentDir(getenv func(string) string) (string, error) {
	if d := getenv("PI_CODING_AGENT_DIR"); d != "" {
		return filepath.Abs(d)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("pi: config dir: %w", err)
	}
	return filepath.Join(home, ".pi", "agent"), nil
}

// piModels is models.json (models-configuration.md), the fields e uses.
type piModels struct {
	Providers map[string]piProvider `json:"providers"`
}

type piProvider struct {
	BaseURL string        `json:"baseUrl"`
	APIKey  string        `json:"apiKey"`
	API     string        `json:"api"`
	Models  []piModelConf `json:"models"`
}

type piModelConf struct {
	ID            string   `json:"id"`
	Name          string   `json:"name"`
	API           string   `json:"api"`
	BaseURL       string   `json:"baseUrl"`
	Reasoning     bool     `json:"reasoning"`
	Input         []string `json:"input"`
	ContextWindow int      `json:"contextWindow"`
	MaxTokens     int      `json:"maxTokens"`
	Cost          *struct {
		Input      float64 `json:"input"`
		Output     float64 `json:"output"`
		CacheRead  float64 `json:"cacheRead"`
		CacheWrite float64 `json:"cacheWrite"`
	} `json:"cost"`
}

// eAPI maps pi's API names onto e's providers.
var eAPI = map[string]string{
	"openai-completions": model.APIOpenAIChat,
	"openai-responses":   model.APIOpenAIResponses,
	"anthropic-messages": model.APIAnthropic,
}

// LoadConfig reads dir's models.json and settings.json; either may be
// missing. A file that is not valid JSON is an error naming it; an entry
// e cannot serve is skipped with a warning.
func LoadConfig(dir string) (*Config, error) {
	c := &Config{Dir: dir, Providers: map[string]model.ProviderConfig{}, Keys: map[string]string{}, MaxTokens: map[string]int{}, Names: map[string]string{}}
	var mf piModels
	if err := readJSON(filepath.Join(dir, "models.json"), &mf); err != nil {
		return nil, err
	}
	names := make([]string, 0, len(mf.Providers))
	for n := range mf.Providers {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, name := range names {
		pc, warn := c.provider(name, mf.Providers[name])
		if warn != "" {
			c.Warnings = append(c.Warnings, fmt.Sprintf("models.json: provider %q: %s", name, warn))
			continue
		}
		c.Providers[name] = pc
		for _, m := range mf.Providers[name].Models {
			if m.MaxTokens > 0 {
				c.MaxTokens[name+"/"+m.ID] = m.MaxTokens
			}
			if m.Name != "" {
				c.Names[name+"/"+m.ID] = m.Name
			}
		}
	}
	if err := readJSON(filepath.Join(dir, "settings.json"), &c.Settings); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Config) provider(name string, p piProvider) (model.ProviderConfig, string) {
	if name == "e" {
		return model.ProviderConfig{}, `the name "e" is e's own offline model`
	}
	pc := model.ProviderConfig{BaseURL: p.BaseURL}
	api := p.API
	for _, m := range p.Models {
		a := cmpOr(m.API, p.API)
		switch {
		case a == "":
			return pc, fmt.Sprintf("model %q: api: required", m.ID)
		case api != "" && a != api:
			return pc, fmt.Sprintf("model %q: api %q differs from the provider's %q; e needs one per provider", m.ID, a, api)
		case m.BaseURL != "" && m.BaseURL != p.BaseURL:
			return pc, fmt.Sprintf("model %q: a baseUrl of its own is not supported", m.ID)
		}
		api = a
		mc := model.ModelConfig{ID: m.ID, ContextWindow: m.ContextWindow, ImageInput: slices.Contains(m.Input, "image")}
		if m.Reasoning {
			mc.Effort = []string{"low", "medium", "high"}
		}
		if m.Cost != nil {
			mc.Price = &model.Price{Input: m.Cost.Input, Output: m.Cost.Output, CacheRead: m.Cost.CacheRead,
				CacheWrite5m: m.Cost.CacheWrite, CacheWrite1h: m.Cost.CacheWrite}
		}
		pc.Models = append(pc.Models, mc)
	}
	if api != "" {
		e, ok := eAPI[api]
		if !ok {
			return pc, fmt.Sprintf("api %q is not one e speaks (openai-completions, openai-responses, anthropic-messages)", api)
		}
		pc.API = e
	}
	switch key := p.APIKey; {
	case key == "":
	case strings.HasPrefix(key, "$"):
		pc.APIKeyEnv = strings.Trim(key[1:], "{}")
	case strings.HasPrefix(key, "!"):
		return pc, "apiKey commands (!…) are not supported: use \"$VARIABLE\""
	default:
		env := "E_PI_KEY_" + strings.ToUpper(strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
				return r
			}
			return '_'
		}, name))
		pc.APIKeyEnv = env
		c.Keys[env] = key
	}
	if _, err := model.ParseProviders(mustJSON(map[string]model.ProviderConfig{name: pc})); err != nil {
		return pc, strings.TrimPrefix(err.Error(), fmt.Sprintf("model: provider %q: ", name))
	}
	return pc, ""
}

// Getenv serves the literal keys of models.json over base.
func (c *Config) Getenv(base func(string) string) func(string) string {
	return func(k string) string {
		if v, ok := c.Keys[k]; ok {
			return v
		}
		return base(k)
	}
}

// SessionsDir is where saved sessions go: flag, then the environment, then
// settings, each a folder that holds the sessions themselves (flat), else
// the config dir's sessions/ folder, which holds a folder per cwd (pi's
// getDefaultSessionDir).
func (c *Config) SessionsDir(flag string, getenv func(string) string) (dir string, flat bool) {
	switch {
	case flag != "":
		return flag, true
	case getenv("PI_CODING_AGENT_SESSION_DIR") != "":
		return getenv("PI_CODING_AGENT_SESSION_DIR"), true
	case c.Settings.SessionDir != "":
		return c.Settings.SessionDir, true
	}
	return filepath.Join(c.Dir, "sessions"), false
}

// maxConfigBytes is the largest models.json, settings.json, template or
// text file e reads for pi's dialect (Y1).
const maxConfigBytes = 1 << 20

func readJSON(path string, v any) error {
	b, err := regfile.ReadFile(path, maxConfigBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("pi: %w", err)
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("pi: %s: %w", path, err)
	}
	return nil
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// CustomModel adds the model a --model names to its models.json provider
// when that provider declares no model it matches, as pi 1.6.0 does
// ("Using custom model id"): a copy of the provider's first model under
// that id. The provider is --provider's, else the pattern's "NAME/"
// prefix. It returns the warning to print, "" when it added nothing.
func (c *Config) CustomModel(provider, pattern string) string {
	if i := strings.LastIndexByte(pattern, ':'); i >= 0 && slices.Contains(Levels, pattern[i+1:]) {
		pattern = pattern[:i]
	}
	id := pattern
	if provider == "" {
		for name := range c.Providers {
			if rest, ok := strings.CutPrefix(pattern, name+"/"); ok && len(name) > len(provider) && rest != "" {
				provider, id = name, rest
			}
		}
	}
	pc, ok := c.Providers[provider]
	if !ok || len(pc.Models) == 0 {
		return ""
	}
	var known []model.Info
	for _, m := range pc.Models {
		known = append(known, model.Info{ID: provider + "/" + m.ID, Provider: provider, Name: m.ID})
	}
	if _, _, err := ResolveModel(known, provider, id, func(model.Info) bool { return true }); !errors.Is(err, errNoModel) {
		return "" // found, or ambiguous: no custom model
	}
	custom := pc.Models[0]
	custom.ID = id
	pc.Models = append(slices.Clone(pc.Models), custom)
	c.Providers[provider] = pc
	return fmt.Sprintf("model %q not found for provider %q: using it as a custom model id", id, provider)
}
