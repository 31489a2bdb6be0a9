package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/e-agent/e/internal/regfile"
	"github.com/e-agent/e/internal/suggest"
)

// Settings is $E_HOME/settings.json. An unknown top-level key is an error
// naming the nearest known one, as an unknown provider field is.
type Settings struct {
	ToolConcurrency  int             `json:"tool_concurrency"`     // tool wave size, 1..64, default 8 (L2)
	DefaultModel     string          `json:"default_model"`        // "" = the model package's default
	Providers        json.RawMessage `json:"providers"`            // parsed by the model package
	Extensions       json.RawMessage `json:"extensions"`           // parsed by the extension package
	MCPServers       json.RawMessage `json:"mcp_servers"`          // parsed by the session package
	CompactThreshold float64         `json:"compact_threshold"`    // fraction of the context window, (0,1], default 0.8
	StallTimeoutMS   int             `json:"stall_timeout_ms"`     // a stream silent this long is a transient failure; 0 = the model package's 60 s
	MaxAttempts      int             `json:"max_attempts"`         // attempts per model call, retries included, 1..20; 0 = the agent's 5
	SystemPrompt     string          `json:"system_prompt"`        // replaces e's own system prompt; "" = e's
	AppendSystem     string          `json:"append_system_prompt"` // appended to the system prompt
	// The process's budget of every turn (N1); 0 is none.
	MaxModelCalls int64   `json:"max_model_calls"`
	MaxTokens     int64   `json:"max_tokens"`
	MaxCostUSD    float64 `json:"max_cost_usd"`
	MaxDurationMS int64   `json:"max_duration_ms"`
	// Sandbox, WritableRoots and SandboxNetwork are the process's sandbox
	// policy unless flags give one (W2); the session package checks them.
	Sandbox        string   `json:"sandbox"`
	WritableRoots  []string `json:"writable_roots"`
	SandboxNetwork bool     `json:"sandbox_network"`
}

// Setting defaults.
const (
	DefaultToolConcurrency  = 8
	DefaultCompactThreshold = 0.8
)

// MaxConfigBytes is the largest settings.json or trust.json e reads (Y1).
const MaxConfigBytes = 1 << 20

// LoadSettings reads $home/settings.json. A missing file means the defaults;
// bad JSON and out-of-range values are errors naming the file, and for JSON
// errors the line and column. Unknown keys and out-of-range values are all
// reported, joined (a line each), beside the settings that are right.
func LoadSettings(home string) (Settings, error) {
	s := Settings{ToolConcurrency: DefaultToolConcurrency, CompactThreshold: DefaultCompactThreshold}
	path := filepath.Join(home, "settings.json")
	b, err := regfile.ReadFile(path, MaxConfigBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return s, fmt.Errorf("store: settings: %w", err)
	}
	var raw rawSettings
	if err := json.Unmarshal(b, &raw); err != nil {
		var syn *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case errors.As(err, &syn):
			line, col := position(b, syn.Offset)
			return s, fmt.Errorf("store: settings %s:%d:%d: %w", path, line, col, err)
		case errors.As(err, &typ):
			line, col := position(b, typ.Offset)
			return s, fmt.Errorf("store: settings %s:%d:%d: %s: want %s, got JSON %s", path, line, col, typ.Field, typ.Type, typ.Value)
		}
		return s, fmt.Errorf("store: settings %s: %w", path, err)
	}
	// Every problem at once, so the file is fixed in one pass; the
	// settings that are right are returned beside them (e doctor goes on
	// to check the providers).
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("store: settings %s: %s", path, fmt.Sprintf(format, a...)))
	}
	for _, err := range checkKeys(b) {
		bad("%v", err)
	}
	if raw.ToolConcurrency != nil {
		if n := *raw.ToolConcurrency; n < 1 || n > 64 {
			bad("tool_concurrency %d out of range 1..64", n)
		} else {
			s.ToolConcurrency = n
		}
	}
	if raw.CompactThreshold != nil {
		if f := *raw.CompactThreshold; !(f > 0 && f <= 1) {
			bad("compact_threshold %g out of range (0,1]", f)
		} else {
			s.CompactThreshold = f
		}
	}
	if raw.StallTimeoutMS != nil {
		if n := *raw.StallTimeoutMS; n < 1 || n > 3_600_000 {
			bad("stall_timeout_ms %d out of range 1..3600000", n)
		} else {
			s.StallTimeoutMS = n
		}
	}
	if raw.MaxAttempts != nil {
		if n := *raw.MaxAttempts; n < 1 || n > 20 {
			bad("max_attempts %d out of range 1..20", n)
		} else {
			s.MaxAttempts = n
		}
	}
	if raw.DefaultModel != nil {
		s.DefaultModel = *raw.DefaultModel
	}
	if raw.SystemPrompt != nil {
		s.SystemPrompt = *raw.SystemPrompt
	}
	if raw.AppendSystem != nil {
		s.AppendSystem = *raw.AppendSystem
	}
	for _, b := range []struct {
		name string
		v    *int64
	}{{"max_model_calls", raw.MaxModelCalls}, {"max_tokens", raw.MaxTokens}, {"max_duration_ms", raw.MaxDurationMS}} {
		if b.v != nil && *b.v < 1 {
			return s, fmt.Errorf("store: settings %s: %s %d out of range: want 1 or more", path, b.name, *b.v)
		}
	}
	if v := raw.MaxCostUSD; v != nil && !(*v > 0) {
		return s, fmt.Errorf("store: settings %s: max_cost_usd %g out of range: want above 0", path, *v)
	}
	s.MaxModelCalls, s.MaxTokens, s.MaxCostUSD, s.MaxDurationMS = deref(raw.MaxModelCalls), deref(raw.MaxTokens), deref(raw.MaxCostUSD), deref(raw.MaxDurationMS)
	if raw.Sandbox != nil {
		s.Sandbox = *raw.Sandbox
	}
	s.WritableRoots = raw.WritableRoots
	if raw.SandboxNetwork != nil {
		s.SandboxNetwork = *raw.SandboxNetwork
	}
	s.Providers = nonNull(raw.Providers)
	s.Extensions = nonNull(raw.Extensions)
	s.MCPServers = nonNull(raw.MCPServers)
	return s, errors.Join(errs...)
}

// rawSettings is settings.json as written: nil is absent or null.
type rawSettings struct {
	ToolConcurrency  *int            `json:"tool_concurrency"`
	DefaultModel     *string         `json:"default_model"`
	Providers        json.RawMessage `json:"providers"`
	Extensions       json.RawMessage `json:"extensions"`
	MCPServers       json.RawMessage `json:"mcp_servers"`
	CompactThreshold *float64        `json:"compact_threshold"`
	StallTimeoutMS   *int            `json:"stall_timeout_ms"`
	MaxAttempts      *int            `json:"max_attempts"`
	SystemPrompt     *string         `json:"system_prompt"`
	AppendSystem     *string         `json:"append_system_prompt"`
	MaxModelCalls    *int64          `json:"max_model_calls"`
	MaxTokens        *int64          `json:"max_tokens"`
	MaxCostUSD       *float64        `json:"max_cost_usd"`
	MaxDurationMS    *int64          `json:"max_duration_ms"`
	Sandbox          *string         `json:"sandbox"`
	WritableRoots    []string        `json:"writable_roots"`
	SandboxNetwork   *bool           `json:"sandbox_network"`
}

// SettingsKeys are the known top-level keys of settings.json.
var SettingsKeys = func() []string {
	var keys []string
	t := reflect.TypeFor[rawSettings]()
	for i := range t.NumField() {
		keys = append(keys, strings.Split(t.Field(i).Tag.Get("json"), ",")[0])
	}
	return keys
}()

// checkKeys refuses every top-level key settings.json does not define: a
// misspelt one would otherwise leave its setting at the default, silently.
func checkKeys(b []byte) []error {
	var doc map[string]json.RawMessage
	if json.Unmarshal(b, &doc) != nil {
		return nil // not an object: the decode above has said so
	}
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(doc)) {
		if slices.Contains(SettingsKeys, k) {
			continue
		}
		if near, ok := suggest.Nearest(k, SettingsKeys); ok {
			errs = append(errs, fmt.Errorf("unknown key %q (did you mean %q?)", k, near))
		} else {
			errs = append(errs, fmt.Errorf("unknown key %q (known: %s)", k, strings.Join(SettingsKeys, ", ")))
		}
	}
	return errs
}

func nonNull(r json.RawMessage) json.RawMessage {
	if string(r) == "null" {
		return nil
	}
	return r
}

// position turns a byte offset into a 1-based line and column.
func position(b []byte, off int64) (line, col int) {
	off = min(max(off, 0), int64(len(b)))
	before := b[:off]
	line = bytes.Count(before, []byte{'\n'}) + 1
	col = int(off) - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}

// deref is *p, or zero for nil.
func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
