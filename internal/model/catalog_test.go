package model

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// env returns a Getenv reading only m, so tests never see the real environment.
func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func mustCatalog(t *testing.T, cfg Config) *Catalog {
	t.Helper()
	if cfg.Getenv == nil {
		cfg.Getenv = env(nil)
	}
	c, err := NewCatalog(cfg)
	if err != nil {
		t.Fatalf("NewCatalog: %v", err)
	}
	return c
}

var local = map[string]ProviderConfig{
	"local": {API: APIOpenAIChat, BaseURL: "http://127.0.0.1:11434/v1", Models: []ModelConfig{
		{ID: "llama3", ImageInput: false},
		{ID: "qwen/qwq", ContextWindow: 32768, Effort: []string{"high", "low"}, Price: &Price{Input: 1, Output: 2}},
		{ID: "gpt-4.1"},
	}},
}

func TestCatalogDefault(t *testing.T) {
	const offlineWarning = "no model provider configured: using the built-in offline model e/offline"
	tests := []struct {
		name        string
		cfg         Config
		env         map[string]string
		wantID      string
		wantWarning string
	}{
		{name: "no keys", wantID: OfflineID, wantWarning: offlineWarning},
		{name: "openai key", env: map[string]string{"OPENAI_API_KEY": "k"}, wantID: "openai/gpt-5.5"},
		{name: "anthropic key", env: map[string]string{"ANTHROPIC_API_KEY": "k"}, wantID: "anthropic/claude-sonnet-4-5"},
		{name: "both keys: openai first", env: map[string]string{"ANTHROPIC_API_KEY": "k", "OPENAI_API_KEY": "k"},
			wantID: "openai/gpt-5.5"},
		{name: "configured", cfg: Config{DefaultModel: "local/qwen/qwq", Providers: local}, wantID: "local/qwen/qwq"},
		{name: "configured by short name", cfg: Config{DefaultModel: "claude-opus-4-1"}, wantID: "anthropic/claude-opus-4-1"},
		{name: "configured offline", cfg: Config{DefaultModel: "e/offline"}, env: map[string]string{"OPENAI_API_KEY": "k"},
			wantID: OfflineID},
		{name: "configured unknown, key set", cfg: Config{DefaultModel: "nope"}, env: map[string]string{"OPENAI_API_KEY": "k"},
			wantID:      "openai/gpt-5.5",
			wantWarning: `default model from settings: unknown model "nope" (see e models or models.list); using openai/gpt-5.5`},
		{name: "configured unknown, no key", cfg: Config{DefaultModel: "x/y"},
			wantID:      OfflineID,
			wantWarning: `default model from settings: unknown model "x/y" (see e models or models.list); ` + offlineWarning},
		{name: "overridden key variable",
			cfg: Config{Providers: map[string]ProviderConfig{"openai": {APIKeyEnv: "MY_OPENAI_KEY"}}},
			env: map[string]string{"MY_OPENAI_KEY": "k"}, wantID: "openai/gpt-5.5"},
		{name: "overridden key variable unset",
			cfg: Config{Providers: map[string]ProviderConfig{"openai": {APIKeyEnv: "MY_OPENAI_KEY"}}},
			env: map[string]string{"OPENAI_API_KEY": "k"}, wantID: OfflineID, wantWarning: offlineWarning},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.Getenv = env(tt.env)
			id, warning := mustCatalog(t, tt.cfg).Default()
			if id != tt.wantID || warning != tt.wantWarning {
				t.Errorf("Default() = %q, %q; want %q, %q", id, warning, tt.wantID, tt.wantWarning)
			}
		})
	}
}

// M2: the models.list entries.
func TestCatalogModels(t *testing.T) {
	c := mustCatalog(t, Config{Providers: local})
	var ids []string
	for _, m := range c.Models() {
		ids = append(ids, m.ID)
	}
	want := []string{"anthropic/claude-haiku-4-5", "anthropic/claude-opus-4-1", "anthropic/claude-sonnet-4-5",
		"e/offline", "local/gpt-4.1", "local/llama3", "local/qwen/qwq", "openai/gpt-4.1", "openai/gpt-5.5", "openai/gpt-5.5-mini"}
	if diff := cmp.Diff(want, ids); diff != "" {
		t.Errorf("model ids (-want +got):\n%s", diff)
	}

	for _, tt := range []struct{ id, json string }{
		{"e/offline", `{"model":"e/offline","provider":"e","id":"offline","effort":["low","medium","high"],"image_input":true,"tools":true,"context_window":200000}`},
		{"openai/gpt-4.1", `{"model":"openai/gpt-4.1","provider":"openai","id":"gpt-4.1","effort":[],"image_input":true,"tools":true,"context_window":1047576}`},
		{"local/llama3", `{"model":"local/llama3","provider":"local","id":"llama3","effort":[],"image_input":false,"tools":true,"context_window":128000}`},
		{"local/qwen/qwq", `{"model":"local/qwen/qwq","provider":"local","id":"qwen/qwq","effort":["high","low"],"image_input":false,"tools":true,"context_window":32768}`},
	} {
		info, err := c.Lookup(tt.id)
		if err != nil {
			t.Fatal(err)
		}
		got, err := json.Marshal(info)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tt.json {
			t.Errorf("%s as JSON:\n got %s\nwant %s", tt.id, got, tt.json)
		}
	}

	// Callers get copies: changing one changes nothing in the catalog.
	m := c.Models()
	m[0].Efforts[0] = "changed"
	m[0].Price.Input = -1
	if again := c.Models(); again[0].Efforts[0] == "changed" || again[0].Price.Input == -1 {
		t.Errorf("Models shares its slices or prices with callers: %+v", again[0])
	}
}

func TestCatalogOverride(t *testing.T) {
	c := mustCatalog(t, Config{Providers: map[string]ProviderConfig{
		"openai": {BaseURL: "http://127.0.0.1:1/v1", Models: []ModelConfig{
			{ID: "gpt-4.1", ContextWindow: 1000, Effort: []string{"low"}},
			{ID: "o-new", ContextWindow: 5},
		}},
	}})
	for _, tt := range []struct {
		id      string
		wantCW  int
		wantAPI string
	}{
		{"openai/gpt-4.1", 1000, APIOpenAIResponses}, // replaced by settings
		{"openai/o-new", 5, APIOpenAIResponses},      // added by settings
		{"openai/gpt-5.5", 400_000, APIOpenAIResponses},
	} {
		info, err := c.Lookup(tt.id)
		if err != nil {
			t.Fatal(err)
		}
		if info.ContextWindow != tt.wantCW || info.API != tt.wantAPI {
			t.Errorf("%s: context window %d, api %q; want %d, %q", tt.id, info.ContextWindow, info.API, tt.wantCW, tt.wantAPI)
		}
	}
}

func TestCatalogLookup(t *testing.T) {
	c := mustCatalog(t, Config{Providers: local})
	tests := []struct {
		id      string
		wantID  string
		wantErr string
	}{
		{id: "openai/gpt-5.5", wantID: "openai/gpt-5.5"},
		{id: "offline", wantID: OfflineID},
		{id: "llama3", wantID: "local/llama3"},
		{id: "local/qwen/qwq", wantID: "local/qwen/qwq"},
		{id: "gpt-4.1", wantErr: `ambiguous model "gpt-4.1": say which of local/gpt-4.1, openai/gpt-4.1 (see e models or models.list)`},
		{id: "x", wantErr: `unknown model "x" (see e models or models.list)`},
		{id: "qwen/qwq", wantErr: `unknown model "qwen/qwq" (see e models or models.list)`},
		{id: "", wantErr: `unknown model "" (see e models or models.list)`},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			info, err := c.Lookup(tt.id)
			if got := errString(err); got != tt.wantErr {
				t.Fatalf("Lookup error %q, want %q", got, tt.wantErr)
			}
			if info.ID != tt.wantID {
				t.Errorf("Lookup ID %q, want %q", info.ID, tt.wantID)
			}
		})
	}
}

// T1: effort is validated against the model.
func TestCatalogCheckEffort(t *testing.T) {
	c := mustCatalog(t, Config{Providers: local})
	tests := []struct {
		id, effort string
		want       string
		wantErr    string
	}{
		{id: "e/offline", effort: "", want: "medium"},
		{id: "e/offline", effort: "high", want: "high"},
		{id: "e/offline", effort: "max", wantErr: `effort "max" not supported by model "e/offline" (supported: low, medium, high)`},
		{id: "openai/gpt-5.5", effort: "xhigh", want: "xhigh"},
		{id: "openai/gpt-4.1", effort: "", want: ""},
		{id: "openai/gpt-4.1", effort: "none", wantErr: `effort "none" not supported by model "openai/gpt-4.1" (it has no effort levels)`},
		{id: "local/qwen/qwq", effort: "", want: "high"}, // no "medium": the first level
		{id: "nope", effort: "low", wantErr: `unknown model "nope" (see e models or models.list)`},
	}
	for _, tt := range tests {
		t.Run(tt.id+"/"+tt.effort, func(t *testing.T) {
			got, err := c.CheckEffort(tt.id, tt.effort)
			if errString(err) != tt.wantErr || got != tt.want {
				t.Errorf("CheckEffort = %q, %v; want %q, %q", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestInfoCost(t *testing.T) {
	u := Usage{Input: 1_000_000, Output: 2_000_000, CacheRead: 3_000_000, CacheWrite5m: 4_000_000, CacheWrite1h: 5_000_000}
	c := mustCatalog(t, Config{Providers: local})
	tests := []struct {
		id   string
		want *float64
	}{
		{"anthropic/claude-sonnet-4-5", ptr(3 + 2*15 + 3*0.3 + 4*3.75 + 5*6.0)},
		{"local/qwen/qwq", ptr(1 + 2*2.0)},
		{"e/offline", ptr(0.0)},
		{"local/llama3", nil},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			info, err := c.Lookup(tt.id)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, info.Cost(u), cmp.Comparer(func(a, b float64) bool {
				return a-b < 1e-9 && b-a < 1e-9
			})); diff != "" {
				t.Errorf("cost (-want +got):\n%s", diff)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestParseProviders(t *testing.T) {
	got, err := ParseProviders(json.RawMessage(`{
		"local": {"api": "openai-chat", "base_url": "http://localhost:11434/v1", "models": [
			{"id": "llama3", "context_window": 8192, "image_input": true, "effort": ["low"],
			 "price": {"input": 0.1, "output": 0.2, "cache_read": 0.01, "cache_write_5m": 0.3, "cache_write_1h": 0.4}}]},
		"anthropic": {"base_url": "http://127.0.0.1:8080"}
	}`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]ProviderConfig{
		"local": {API: APIOpenAIChat, BaseURL: "http://localhost:11434/v1", Models: []ModelConfig{{ID: "llama3",
			ContextWindow: 8192, ImageInput: true, Effort: []string{"low"},
			Price: &Price{Input: 0.1, Output: 0.2, CacheRead: 0.01, CacheWrite5m: 0.3, CacheWrite1h: 0.4}}}},
		"anthropic": {BaseURL: "http://127.0.0.1:8080"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("providers (-want +got):\n%s", diff)
	}
	for _, raw := range []string{"", " null "} {
		if got, err := ParseProviders(json.RawMessage(raw)); got != nil || err != nil {
			t.Errorf("ParseProviders(%q) = %v, %v; want nil, nil", raw, got, err)
		}
	}
}

func TestParseProvidersErrors(t *testing.T) {
	const ok = `"api":"openai-chat","base_url":"http://h/v1"`
	const model = `"models":[{"id":"m"}]`
	tests := []struct {
		name, raw string
		want      string
	}{
		{"not an object", `[1]`, "model: providers: json: cannot unmarshal array into Go value of type map[string]json.RawMessage"},
		{"unknown field", `{"p":{` + ok + `,` + model + `,"baseurl":"x"}}`, `model: provider "p": unknown key "baseurl" (known: api, base_url, api_key_env, models)`},
		{"a key in settings", `{"my-llm":{` + ok + `,` + model + `,"api_key":"sk-x"}}`,
			`model: provider "my-llm": api_key: settings.json holds no keys; put the key in an environment variable and name it in api_key_env ("api_key_env": "MY_LLM_API_KEY")`},
		{"unknown model field", `{"p":{` + ok + `,"models":[{"id":"m","tools":true}]}}`, `model: provider "p": json: unknown field "tools"`},
		{"missing api", `{"p":{"base_url":"http://h",` + model + `}}`, `model: provider "p": api: required (openai-chat, openai-responses or anthropic)`},
		{"unknown api", `{"p":{"api":"gemini","base_url":"http://h",` + model + `}}`, `model: provider "p": api: "gemini" is not openai-chat, openai-responses or anthropic`},
		{"missing base_url", `{"p":{"api":"anthropic",` + model + `}}`, `model: provider "p": base_url: required`},
		{"bad base_url", `{"p":{"api":"anthropic","base_url":"localhost:8080",` + model + `}}`, `model: provider "p": base_url: "localhost:8080" is not an http or https URL`},
		{"bad key env", `{"p":{` + ok + `,"api_key_env":"A=B",` + model + `}}`, `model: provider "p": api_key_env: "A=B" is not an environment variable name`},
		{"no models", `{"p":{` + ok + `}}`, `model: provider "p": models: at least one model is required`},
		{"model without id", `{"p":{` + ok + `,"models":[{"context_window":1}]}}`, `model: provider "p": models[0].id: required`},
		{"duplicate model", `{"p":{` + ok + `,"models":[{"id":"m"},{"id":"m"}]}}`, `model: provider "p": models[1].id: duplicate "m"`},
		{"negative window", `{"p":{` + ok + `,"models":[{"id":"m","context_window":-1}]}}`, `model: provider "p": models[0].context_window: negative`},
		{"duplicate effort", `{"p":{` + ok + `,"models":[{"id":"m","effort":["low","low"]}]}}`, `model: provider "p": models[0].effort[1]: empty or duplicate "low"`},
		{"negative price", `{"p":{` + ok + `,"models":[{"id":"m","price":{"output":-1}}]}}`, `model: provider "p": models[0].price.output: -1 is not a price`},
		{"wrong type", `{"p":{` + ok + `,"models":[{"id":"m","context_window":"big"}]}}`, `model: provider "p": json: cannot unmarshal string into Go struct field ModelConfig.models.context_window of type int`},
		{"reserved name", `{"e":{` + ok + `,` + model + `}}`, `model: provider "e": the name is reserved for the built-in offline model`},
		{"slash in name", `{"a/b":{` + ok + `,` + model + `}}`, `model: provider "a/b": the name must not contain "/", spaces or control characters`},
		{"built-in with bad api", `{"openai":{"api":"x"}}`, `model: provider "openai": api: "x" is not openai-chat, openai-responses or anthropic`},
		{"every problem of every provider, by name", `{"z":{},"b":{"api":"x","base_url":"h","models":[{"id":"m"}],"baseurl":1,"key":2}}`,
			"model: provider \"b\": unknown key \"baseurl\" (known: api, base_url, api_key_env, models)\n" +
				"model: provider \"b\": key: settings.json holds no keys; put the key in an environment variable and name it in api_key_env (\"api_key_env\": \"B_API_KEY\")\n" +
				"model: provider \"b\": api: \"x\" is not openai-chat, openai-responses or anthropic\n" +
				"model: provider \"b\": base_url: \"h\" is not an http or https URL\n" +
				"model: provider \"z\": api: required (openai-chat, openai-responses or anthropic)\n" +
				"model: provider \"z\": base_url: required\n" +
				"model: provider \"z\": models: at least one model is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseProviders(json.RawMessage(tt.raw))
			if errString(err) != tt.want {
				t.Errorf("ParseProviders error:\n got %v\nwant %s", err, tt.want)
			}
			if len(got) != 0 {
				t.Errorf("ParseProviders returned %v beside an error", got)
			}
		})
	}
	// NewCatalog checks providers built without ParseProviders too.
	_, err := NewCatalog(Config{Providers: map[string]ProviderConfig{"p": {API: APIOpenAIChat}}})
	if want := "model: provider \"p\": base_url: required\nmodel: provider \"p\": models: at least one model is required"; errString(err) != want {
		t.Errorf("NewCatalog error %v, want %s", err, want)
	}
}

func TestCatalogProvider(t *testing.T) {
	// One loopback server stands for every endpoint; it records what the
	// providers sent and fails the call, which is all this wiring test needs.
	type hit struct{ path, auth, apiKey string }
	var (
		mu   sync.Mutex
		hits []hit
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits = append(hits, hit{r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("x-api-key")})
		mu.Unlock()
		http.Error(w, `{"error":{"type":"invalid_request_error","message":"no"}}`, http.StatusBadRequest)
	}))
	defer srv.Close()

	c := mustCatalog(t, Config{
		Getenv:     env(map[string]string{"OPENAI_API_KEY": "sk-o", "ANTHROPIC_API_KEY": "sk-a"}),
		HTTPClient: srv.Client(),
		Providers: map[string]ProviderConfig{
			"openai":    {BaseURL: srv.URL + "/v1"},
			"anthropic": {BaseURL: srv.URL},
			"local":     {API: APIOpenAIChat, BaseURL: srv.URL + "/v1", Models: []ModelConfig{{ID: "llama3"}}},
			"keyed":     {API: APIOpenAIChat, BaseURL: srv.URL + "/v1", APIKeyEnv: "KEYED_KEY", Models: []ModelConfig{{ID: "m"}}},
		},
	})
	tests := []struct {
		id      string
		want    hit
		wantErr string
	}{
		{id: "openai/gpt-5.5", want: hit{path: "/v1/responses", auth: "Bearer sk-o"}},
		{id: "anthropic/claude-haiku-4-5", want: hit{path: "/v1/messages", apiKey: "sk-a"}},
		{id: "local/llama3", want: hit{path: "/v1/chat/completions"}},
		{id: "keyed/m", wantErr: `model "keyed/m": provider "keyed" needs an API key: set KEYED_KEY`},
		{id: "nope", wantErr: `unknown model "nope" (see e models or models.list)`},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			p, err := c.Provider(tt.id)
			if errString(err) != tt.wantErr {
				t.Fatalf("Provider error %v, want %q", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			info, _ := c.Lookup(tt.id)
			mu.Lock()
			hits = nil
			mu.Unlock()
			msgs := []Message{{Role: RoleUser, Content: []Part{{Type: PartText, Text: "hi"}}}}
			if _, err := p.Stream(t.Context(), &Request{Model: info.Name, Messages: msgs}, func(Delta) {}); err == nil {
				t.Errorf("Stream succeeded against a server that fails")
			}
			mu.Lock()
			defer mu.Unlock()
			if diff := cmp.Diff([]hit{tt.want}, hits, cmp.AllowUnexported(hit{})); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
		})
	}

	p, err := c.Provider("offline")
	if _, ok := p.(Offline); !ok || err != nil {
		t.Errorf("Provider(offline) = %T, %v; want Offline", p, err)
	}
}

// Without Getenv the catalog reads the process environment.
func TestCatalogOSGetenv(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "k")
	c, err := NewCatalog(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if id, _ := c.Default(); id != "openai/gpt-5.5" {
		t.Errorf("Default() = %q, want openai/gpt-5.5", id)
	}
}

// models.list says which models can be used now (issue 13).
func TestCatalogAvailable(t *testing.T) {
	c := mustCatalog(t, Config{Providers: local, Getenv: func(k string) string {
		if k == "ANTHROPIC_API_KEY" {
			return "k"
		}
		return ""
	}})
	got := map[string]bool{}
	for _, m := range c.Models() {
		if m.Available == nil {
			t.Fatalf("%s: available not set", m.ID)
		}
		got[m.ID] = *m.Available
	}
	for id, want := range map[string]bool{"e/offline": true, "anthropic/claude-haiku-4-5": true, "openai/gpt-5.5": false} {
		if got[id] != want {
			t.Errorf("%s available %v, want %v", id, got[id], want)
		}
	}
}
