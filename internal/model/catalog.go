package model

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"
)

// APIs a model is served by (Info.API, ProviderConfig.API).
const (
	APIOffline         = "offline"
	APIOpenAIResponses = "openai-responses"
	APIOpenAIChat      = "openai-chat"
	APIAnthropic       = "anthropic"
)

// Price is what a model costs, in USD per million tokens of each usage category.
type Price struct {
	Input        float64 `json:"input"`
	Output       float64 `json:"output"`
	CacheRead    float64 `json:"cache_read"`
	CacheWrite5m float64 `json:"cache_write_5m"`
	CacheWrite1h float64 `json:"cache_write_1h"`
}

// Info describes one model of the catalog; its JSON form is a models.list entry (M2).
type Info struct {
	ID            string   `json:"model"`    // "provider/name", e.g. "openai/gpt-5.5", "e/offline": what session.create's model takes
	Provider      string   `json:"provider"` // "e", "openai", "anthropic", or a custom provider name
	Name          string   `json:"id"`       // model id at the provider: Request.Model
	Efforts       []string `json:"effort"`   // supported effort levels, [] when none
	DefaultEffort string   `json:"-"`        // "" when Efforts is empty
	ImageInput    bool     `json:"image_input"`
	Tools         bool     `json:"tools"`
	ContextWindow int      `json:"context_window"`
	// Available reports that the model can be used now: its provider
	// needs no key or the key is set. Models sets it; Lookup leaves it nil.
	Available *bool  `json:"available,omitempty"`
	Price     *Price `json:"-"` // nil when unknown
	API       string `json:"-"` // APIOffline, APIOpenAIResponses, APIOpenAIChat or APIAnthropic
}

// Cost returns what usage u cost on this model in USD, or nil when the
// model has no price.
func (i Info) Cost(u Usage) *float64 {
	if i.Price == nil {
		return nil
	}
	p := i.Price
	c := (float64(u.Input)*p.Input + float64(u.Output)*p.Output + float64(u.CacheRead)*p.CacheRead +
		float64(u.CacheWrite5m)*p.CacheWrite5m + float64(u.CacheWrite1h)*p.CacheWrite1h) / 1e6
	return &c
}

// ProviderConfig is one entry of "providers" in settings.json.
type ProviderConfig struct {
	API       string        `json:"api"`         // APIOpenAIChat, APIOpenAIResponses or APIAnthropic
	BaseURL   string        `json:"base_url"`    // e.g. http://localhost:11434/v1
	APIKeyEnv string        `json:"api_key_env"` // "" when the endpoint needs no key
	Models    []ModelConfig `json:"models"`
}

// ModelConfig is one model of a ProviderConfig.
type ModelConfig struct {
	ID            string   `json:"id"`             // model name at the provider
	ContextWindow int      `json:"context_window"` // 0: 128000
	ImageInput    bool     `json:"image_input"`
	Effort        []string `json:"effort"` // default effort: "medium" if listed, else the first
	Price         *Price   `json:"price"`
}

// defaultContextWindow is the context window of a configured model that
// does not declare one.
const defaultContextWindow = 128_000

// Config configures a Catalog.
type Config struct {
	DefaultModel string                    // from settings; "" when none
	Providers    map[string]ProviderConfig // from settings, see ParseProviders
	Getenv       func(string) string       // reads API keys; nil: os.Getenv
	HTTPClient   *http.Client              // nil: a client of its own
	StallTimeout time.Duration             // 0: 60 s
}

// ProviderSettings is what an HTTP provider is built from.
type ProviderSettings struct {
	Name         string // provider name: "openai", "anthropic", a custom name
	BaseURL      string
	APIKey       string // "" when the endpoint needs no key
	KeyEnv       string // the environment variable APIKey came from, for errors; "" when none
	Client       *http.Client
	StallTimeout time.Duration // longest silence of a stream before it fails
}

// builtins are the providers e knows without settings. Prices are list
// prices when written and may be stale.
var builtins = map[string]ProviderConfig{
	"openai": {API: APIOpenAIResponses, BaseURL: "https://api.openai.com/v1", APIKeyEnv: "OPENAI_API_KEY",
		Models: []ModelConfig{
			{ID: "gpt-5.5", ContextWindow: 400_000, ImageInput: true, Effort: []string{"low", "medium", "high", "xhigh"},
				Price: &Price{Input: 1.75, Output: 14, CacheRead: 0.175, CacheWrite5m: 1.75, CacheWrite1h: 1.75}},
			{ID: "gpt-5.5-mini", ContextWindow: 400_000, ImageInput: true, Effort: []string{"low", "medium", "high"},
				Price: &Price{Input: 0.25, Output: 2, CacheRead: 0.025, CacheWrite5m: 0.25, CacheWrite1h: 0.25}},
			{ID: "gpt-4.1", ContextWindow: 1_047_576, ImageInput: true,
				Price: &Price{Input: 2, Output: 8, CacheRead: 0.5, CacheWrite5m: 2, CacheWrite1h: 2}},
		}},
	"anthropic": {API: APIAnthropic, BaseURL: "https://api.anthropic.com", APIKeyEnv: "ANTHROPIC_API_KEY",
		Models: []ModelConfig{
			{ID: "claude-sonnet-4-5", ContextWindow: 200_000, ImageInput: true, Effort: []string{"low", "medium", "high"},
				Price: &Price{Input: 3, Output: 15, CacheRead: 0.3, CacheWrite5m: 3.75, CacheWrite1h: 6}},
			{ID: "claude-opus-4-1", ContextWindow: 200_000, ImageInput: true, Effort: []string{"low", "medium", "high"},
				Price: &Price{Input: 15, Output: 75, CacheRead: 1.5, CacheWrite5m: 18.75, CacheWrite1h: 30}},
			{ID: "claude-haiku-4-5", ContextWindow: 200_000, ImageInput: true, Effort: []string{"low", "medium", "high"},
				Price: &Price{Input: 1, Output: 5, CacheRead: 0.1, CacheWrite5m: 1.25, CacheWrite1h: 2}},
		}},
}

// builtinDefaults is the default model of each built-in provider, in the
// order Default tries them.
var builtinDefaults = []struct{ provider, model string }{
	{"openai", "openai/gpt-5.5"},
	{"anthropic", "anthropic/claude-sonnet-4-5"},
}

// offlineInfo is the catalog entry of the offline model. Its effort levels
// do nothing but let clients exercise effort handling; its zero price makes
// cost_usd 0 rather than unknown.
var offlineInfo = Info{ID: OfflineID, Provider: "e", Name: "offline", Efforts: []string{"low", "medium", "high"},
	DefaultEffort: "medium", ImageInput: true, Tools: true, ContextWindow: 200_000, Price: &Price{}, API: APIOffline}

// ParseProviders decodes and checks the "providers" object of settings.json.
// Unknown fields are errors, so that a misspelt key does not silently
// fall back to a default. Empty or null raw yields no providers.
func ParseProviders(raw json.RawMessage) (map[string]ProviderConfig, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var byName map[string]json.RawMessage
	if err := json.Unmarshal(raw, &byName); err != nil {
		return nil, fmt.Errorf("model: providers: %w", err)
	}
	out := make(map[string]ProviderConfig, len(byName))
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		known, keysErr := providerKeys(name, byName[name])
		if keysErr != nil {
			errs = append(errs, keysErr)
		}
		dec := json.NewDecoder(bytes.NewReader(known))
		dec.DisallowUnknownFields()
		var pc ProviderConfig
		if err := dec.Decode(&pc); err != nil {
			errs = append(errs, fmt.Errorf("model: provider %q: %w", name, err))
			continue
		}
		if err := checkProvider(name, pc); err != nil {
			errs = append(errs, err)
			continue
		}
		if keysErr == nil {
			out[name] = pc
		}
	}
	// Every provider's problems at once, so a settings file is fixed in
	// one pass; the good providers are returned beside them.
	return out, errors.Join(errs...)
}

// providerFields are the keys of a provider in settings.json.
var providerFields = []string{"api", "base_url", "api_key_env", "models"}

// providerKeys refuses a provider's unknown keys by name: a key written
// into settings.json (api_key) is pointed to api_key_env, which names the
// environment variable that holds it. It returns raw without them, so the
// provider's other problems are found too.
func providerKeys(name string, raw json.RawMessage) (json.RawMessage, error) {
	var doc map[string]json.RawMessage
	if json.Unmarshal(raw, &doc) != nil {
		return raw, nil // not an object: the decode says so
	}
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(doc)) {
		switch {
		case slices.Contains(providerFields, k):
			continue
		case k == "api_key" || k == "apiKey" || k == "key":
			errs = append(errs, fmt.Errorf("model: provider %q: %s: settings.json holds no keys; put the key in an environment variable and name it in api_key_env (\"api_key_env\": \"%s_API_KEY\")",
				name, k, envName(name)))
		default:
			errs = append(errs, fmt.Errorf("model: provider %q: unknown key %q (known: %s)", name, k, strings.Join(providerFields, ", ")))
		}
		delete(doc, k)
	}
	if len(errs) == 0 {
		return raw, nil
	}
	known, _ := json.Marshal(doc)
	return known, errors.Join(errs...)
}

// envName is a provider name as the stem of an environment variable.
func envName(provider string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z':
			return r - 'a' + 'A'
		case r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			return r
		}
		return '_'
	}, provider)
}

// checkProvider reports every problem of provider name. A provider
// named like a built-in one only overrides it, so its fields are optional.
func checkProvider(name string, pc ProviderConfig) error {
	var errs []error
	fail := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("model: provider %q: %s", name, fmt.Sprintf(format, a...)))
	}
	_, builtin := builtins[name]
	switch {
	case name == "":
		fail("the name is empty")
	case name == "e":
		fail("the name is reserved for the built-in offline model")
	case strings.ContainsFunc(name, func(r rune) bool { return r == '/' || r <= ' ' }):
		fail(`the name must not contain "/", spaces or control characters`)
	}
	switch pc.API {
	case APIOpenAIChat, APIOpenAIResponses, APIAnthropic:
	case "":
		if !builtin {
			fail("api: required (%s, %s or %s)", APIOpenAIChat, APIOpenAIResponses, APIAnthropic)
		}
	default:
		fail("api: %q is not %s, %s or %s", pc.API, APIOpenAIChat, APIOpenAIResponses, APIAnthropic)
	}
	if pc.BaseURL == "" {
		if !builtin {
			fail("base_url: required")
		}
	} else if u, err := url.Parse(pc.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		fail("base_url: %q is not an http or https URL", pc.BaseURL)
	}
	if strings.ContainsFunc(pc.APIKeyEnv, func(r rune) bool { return r == '=' || r <= ' ' }) {
		fail("api_key_env: %q is not an environment variable name", pc.APIKeyEnv)
	}
	if len(pc.Models) == 0 && !builtin {
		fail("models: at least one model is required")
	}
	seen := map[string]bool{}
	for i, m := range pc.Models {
		switch {
		case m.ID == "":
			fail("models[%d].id: required", i)
		case seen[m.ID]:
			fail("models[%d].id: duplicate %q", i, m.ID)
		case m.ContextWindow < 0:
			fail("models[%d].context_window: negative", i)
		}
		seen[m.ID] = true
		for j, e := range m.Effort {
			if e == "" || slices.Contains(m.Effort[:j], e) {
				fail("models[%d].effort[%d]: empty or duplicate %q", i, j, e)
			}
		}
		if p := m.Price; p != nil {
			fields := []struct {
				name string
				v    float64
			}{{"input", p.Input}, {"output", p.Output}, {"cache_read", p.CacheRead},
				{"cache_write_5m", p.CacheWrite5m}, {"cache_write_1h", p.CacheWrite1h}}
			for _, f := range fields {
				if f.v < 0 || math.IsNaN(f.v) || math.IsInf(f.v, 0) {
					fail("models[%d].price.%s: %v is not a price", i, f.name, f.v)
				}
			}
		}
	}
	return errors.Join(errs...)
}

// Catalog knows every model e can use and builds providers for them.
// It is immutable and safe for concurrent use.
type Catalog struct {
	models       map[string]Info
	ids          []string                  // sorted
	providers    map[string]ProviderConfig // HTTP providers by name, built-ins merged with settings
	defaultModel string
	getenv       func(string) string
	client       *http.Client
	stall        time.Duration
}

// NewCatalog builds the catalog of the offline model, the built-in
// providers and the providers of cfg. A provider of cfg named "openai" or
// "anthropic" overrides the built-in one: its non-empty api, base_url and
// api_key_env replace the built-in values and its models add to (or
// replace, by id) the built-in models.
func NewCatalog(cfg Config) (*Catalog, error) {
	c := &Catalog{
		models:       map[string]Info{OfflineID: offlineInfo},
		providers:    map[string]ProviderConfig{},
		defaultModel: cfg.DefaultModel,
		getenv:       cfg.Getenv,
		client:       cfg.HTTPClient,
		stall:        cfg.StallTimeout,
	}
	if c.getenv == nil {
		c.getenv = os.Getenv
	}
	if c.client == nil {
		c.client = &http.Client{Transport: streamTransport()}
	}
	if c.stall == 0 {
		c.stall = 60 * time.Second
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Providers)) {
		if err := checkProvider(name, cfg.Providers[name]); err != nil {
			return nil, err
		}
	}
	for name, pc := range builtins {
		c.providers[name] = pc
	}
	for name, pc := range cfg.Providers {
		if b, ok := builtins[name]; ok {
			pc = ProviderConfig{
				API:       cmp.Or(pc.API, b.API),
				BaseURL:   cmp.Or(pc.BaseURL, b.BaseURL),
				APIKeyEnv: cmp.Or(pc.APIKeyEnv, b.APIKeyEnv),
				Models:    append(slices.Clone(b.Models), pc.Models...),
			}
		}
		c.providers[name] = pc
	}
	for name, pc := range c.providers {
		for _, m := range pc.Models {
			info := modelInfo(name, pc.API, m)
			c.models[info.ID] = info // later entries (settings) replace built-ins
		}
	}
	for id := range c.models {
		c.ids = append(c.ids, id)
	}
	slices.Sort(c.ids)
	return c, nil
}

func modelInfo(provider, api string, m ModelConfig) Info {
	info := Info{
		ID:            provider + "/" + m.ID,
		Provider:      provider,
		Name:          m.ID,
		Efforts:       append([]string{}, m.Effort...),
		ImageInput:    m.ImageInput,
		Tools:         true,
		ContextWindow: cmp.Or(m.ContextWindow, defaultContextWindow),
		API:           api,
	}
	if len(info.Efforts) > 0 {
		info.DefaultEffort = info.Efforts[0]
		if slices.Contains(info.Efforts, "medium") {
			info.DefaultEffort = "medium"
		}
	}
	if m.Price != nil {
		p := *m.Price
		info.Price = &p
	}
	return info
}

// Models returns every model, sorted by ID.
func (c *Catalog) Models() []Info {
	out := make([]Info, len(c.ids))
	for i, id := range c.ids {
		out[i] = c.info(id)
		env := c.providers[out[i].Provider].APIKeyEnv
		ok := out[i].API == APIOffline || env == "" || c.getenv(env) != ""
		out[i].Available = &ok
	}
	return out
}

// info returns a copy of model id that callers may change freely.
func (c *Catalog) info(id string) Info {
	info := c.models[id]
	info.Efforts = slices.Clone(info.Efforts)
	if info.Price != nil {
		p := *info.Price
		info.Price = &p
	}
	return info
}

// OfflineWarning is Default's warning when no provider has a key and the
// offline model stands in (e -p -q leaves it unsaid).
const OfflineWarning = "no model provider configured: using the built-in offline model e/offline"

// Default returns the model to use when none is chosen: the configured
// default; else the default model of the first built-in provider whose API
// key is set (OpenAI, then Anthropic); else the offline model. warning is
// non-empty when the choice deserves one: a configured default that is
// unknown, or the fall back to the offline model.
func (c *Catalog) Default() (id string, warning string) {
	var warnings []string
	if c.defaultModel != "" {
		info, err := c.Lookup(c.defaultModel)
		if err == nil {
			return info.ID, ""
		}
		warnings = append(warnings, fmt.Sprintf("default model from settings: %v", err))
	}
	id = OfflineID
	for _, d := range builtinDefaults {
		if c.getenv(c.providers[d.provider].APIKeyEnv) != "" {
			id = d.model
			break
		}
	}
	if id == OfflineID {
		warnings = append(warnings, OfflineWarning)
	} else if len(warnings) > 0 {
		warnings = append(warnings, "using "+id)
	}
	return id, strings.Join(warnings, "; ")
}

// Lookup returns model id. An id without a provider prefix ("gpt-5.5",
// "offline") names the one model of that name; the Info returned always
// carries the full ID.
func (c *Catalog) Lookup(id string) (Info, error) {
	if _, ok := c.models[id]; ok {
		return c.info(id), nil
	}
	if !strings.Contains(id, "/") && id != "" {
		var matches []string
		for _, full := range c.ids {
			if c.models[full].Name == id {
				matches = append(matches, full)
			}
		}
		switch len(matches) {
		case 1:
			return c.info(matches[0]), nil
		case 0:
		default:
			return Info{}, fmt.Errorf("ambiguous model %q: say which of %s (see e models or models.list)", id, strings.Join(matches, ", "))
		}
	}
	return Info{}, fmt.Errorf("unknown model %q (see e models or models.list)", id)
}

// Provider returns the provider that serves model id. Its Stream expects
// Request.Model to be Info.Name.
func (c *Catalog) Provider(id string) (Provider, error) {
	info, err := c.Lookup(id)
	if err != nil {
		return nil, err
	}
	if info.API == APIOffline {
		return Offline{}, nil
	}
	pc := c.providers[info.Provider]
	s := ProviderSettings{Name: info.Provider, BaseURL: pc.BaseURL, Client: c.client, StallTimeout: c.stall}
	if pc.APIKeyEnv != "" {
		s.APIKey, s.KeyEnv = c.getenv(pc.APIKeyEnv), pc.APIKeyEnv
		if s.APIKey == "" {
			return nil, fmt.Errorf("model %q: provider %q needs an API key: set %s", info.ID, info.Provider, pc.APIKeyEnv)
		}
	}
	switch info.API {
	case APIOpenAIResponses:
		return NewOpenAIResponses(s), nil
	case APIOpenAIChat:
		return NewOpenAIChat(s), nil
	default:
		return NewAnthropic(s), nil
	}
}

// CheckEffort resolves effort for model id: "" means the model's default
// effort ("" for a model without effort levels). Any other value must be
// one of the model's levels; a model without levels accepts only "".
func (c *Catalog) CheckEffort(id, effort string) (string, error) {
	info, err := c.Lookup(id)
	if err != nil {
		return "", err
	}
	switch {
	case effort == "":
		return info.DefaultEffort, nil
	case slices.Contains(info.Efforts, effort):
		return effort, nil
	case len(info.Efforts) == 0:
		return "", fmt.Errorf("effort %q not supported by model %q (it has no effort levels)", effort, info.ID)
	}
	return "", fmt.Errorf("effort %q not supported by model %q (supported: %s)", effort, info.ID, strings.Join(info.Efforts, ", "))
}

// ProviderStatus describes one HTTP provider of the catalog for people
// (e doctor, the operator log): never the key itself.
type ProviderStatus struct {
	Name    string `json:"name"`
	API     string `json:"api"`
	BaseURL string `json:"base_url"`
	KeyEnv  string `json:"key_env"` // "" when the endpoint needs no key
	KeySet  bool   `json:"key_set"` // KeyEnv is set (non-empty)
	Models  int    `json:"models"`
}

// Providers lists the HTTP providers, built-in and configured, by name.
func (c *Catalog) Providers() []ProviderStatus {
	var out []ProviderStatus
	for _, name := range slices.Sorted(maps.Keys(c.providers)) {
		pc := c.providers[name]
		out = append(out, ProviderStatus{Name: name, API: pc.API, BaseURL: pc.BaseURL, KeyEnv: pc.APIKeyEnv,
			KeySet: pc.APIKeyEnv != "" && c.getenv(pc.APIKeyEnv) != "", Models: len(pc.Models)})
	}
	return out
}

// streamReadBuffer is the size of the buffer each provider connection
// reads into: a stream read faster than the provider writes it costs a
// read(2) per event whatever the size, but one read slower (a burst,
// a fast provider on a busy machine) takes all that has arrived, rather
// than 4 KiB (net/http's default) of it, per read(2).
const streamReadBuffer = 64 << 10

// streamTransport is http.DefaultTransport's configuration (proxies from
// the environment, HTTP/2, timeouts) with streamReadBuffer, and its
// connections' reads batched while a stream is fast (streamConn).
func streamTransport() http.RoundTripper {
	t, ok := http.DefaultTransport.(*http.Transport)
	if !ok {
		return http.DefaultTransport
	}
	t = t.Clone()
	t.ReadBufferSize = streamReadBuffer
	dial := t.DialContext
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return streamDial(c), nil
	}
	return t
}
