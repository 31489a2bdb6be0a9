package pi

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/e-agent/e/internal/model"
)

func TestParseFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want Flags
		err  string
	}{
		{name: "rpc client", args: []string{"--mode", "rpc", "--provider", "mock", "--model", "m1", "--no-session"},
			want: Flags{Mode: "rpc", Provider: "mock", Model: "m1", NoSession: true}},
		{name: "equals and short", args: []string{"--mode=json", "-nt", "-n", "x", "--thinking=high", "hi"},
			want: Flags{Mode: "json", NoTools: true, Name: "x", Thinking: "high", Messages: []string{"hi"}}},
		{name: "tools", args: []string{"--mode", "rpc", "-t", "read, bash", "-xt", "write"},
			want: Flags{Mode: "rpc", Tools: []string{"read", "bash"}, ExcludeTools: []string{"write"}}},
		{name: "no-ops", args: []string{"--mode", "rpc", "--no-mcp", "--offline", "--verbose"}, want: Flags{Mode: "rpc"}},
		{name: "e's sandbox flags W2", args: []string{"--mode", "rpc", "--sandbox", "workspace-write", "--writable-root", "/a", "--writable-root=b", "--sandbox-network"},
			want: Flags{Mode: "rpc", Sandbox: "workspace-write", WritableRoots: []string{"/a", "b"}, SandboxNetwork: true}},
		// pi's subagent example: --print beside --mode json runs once, as --mode json does.
		{name: "json print", args: []string{"--mode", "json", "-p", "--no-session", "Task: x"},
			want: Flags{Mode: "json", NoSession: true, Messages: []string{"Task: x"}}},
		{name: "rpc print", args: []string{"--print", "--mode", "rpc"}, want: Flags{Mode: "rpc"}},
		{name: "prime flavour", args: []string{"--flavor", "prime", "--mode", "rpc"}, want: Flags{Mode: "rpc", Flavor: "prime"}},
		{name: "pi flavour wins later", args: []string{"--flavor", "prime", "--mode", "rpc", "--flavor=pi"}, want: Flags{Mode: "rpc"}},
		{name: "bad flavour", args: []string{"--mode", "rpc", "--flavor", "codex"}, err: `--flavor: "codex" is not pi or prime`},
		{name: "unknown", args: []string{"--mode", "rpc", "--frob"}, err: "unknown pi option --frob"},
		{name: "unsupported", args: []string{"--mode", "rpc", "--resume"}, err: "pi option --resume opens an interactive selector"},
		{name: "no mode", args: []string{"--no-session"}, err: "--mode rpc or --mode json is required"},
		{name: "text mode", args: []string{"--mode", "text"}, err: `--mode "text"`},
		// pi 1.6.0 (checked) ignores prompt arguments, --print and a bad
		// level in rpc mode, and refuses a --tools list that mixes names
		// and edits.
		{name: "rpc prompt", args: []string{"--mode", "rpc", "hello"},
			want: Flags{Mode: "rpc", Messages: []string{"hello"}, Warnings: []string{`rpc mode ignores prompt arguments (got "hello"): send prompt commands`}}},
		{name: "print in rpc mode", args: []string{"--mode", "rpc", "--print", "-nt"}, want: Flags{Mode: "rpc", NoTools: true}},
		{name: "print takes a prompt", args: []string{"-p", "hi", "--mode", "json"}, want: Flags{Mode: "json", Messages: []string{"hi"}}},
		{name: "bad level", args: []string{"--mode", "rpc", "--thinking", "lots"},
			want: Flags{Mode: "rpc", Warnings: []string{`--thinking: "lots" is not one of off, minimal, low, medium, high, xhigh, max; ignored`}}},
		{name: "tools mixed", args: []string{"--mode", "rpc", "--tools", "read,-bash"}, err: "cannot be mixed"},
		{name: "tools edit pattern", args: []string{"--mode", "rpc", "--tools", "-b*"}, err: "not patterns: -b*"},
		{name: "json without prompt", args: []string{"--mode", "json"}, err: "json mode needs a prompt"},
		{name: "provider alone", args: []string{"--mode", "rpc", "--provider", "x"}, err: "--provider requires --model"},
		{name: "missing value", args: []string{"--mode", "rpc", "--model"}, err: "--model needs a value"},
		{name: "file arg", args: []string{"--mode", "json", "@x.txt"}, err: "@file arguments"},
		// pi 1.6.0 (checked): --no-session wins, an empty in-memory session.
		{name: "no-session ignores continue and session", args: []string{"--mode", "rpc", "--no-session", "--session", "x.jsonl"},
			want: Flags{Mode: "rpc", NoSession: true}},
		{name: "no-session ignores continue", args: []string{"--mode", "rpc", "-c", "--no-session"},
			want: Flags{Mode: "rpc", NoSession: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseFlags(tt.args)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || !errors.Is(err, ErrUsage) {
					t.Fatalf("error %v, want a usage error containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("flags (-want +got):\n%s", diff)
			}
		})
	}
}

func TestResolveModel(t *testing.T) {
	models := []model.Info{
		{ID: "e/offline", Provider: "e", Name: "offline", Efforts: []string{"low", "medium", "high"}},
		{ID: "openai/gpt-5.5", Provider: "openai", Name: "gpt-5.5"},
		{ID: "mock/gpt-5.5", Provider: "mock", Name: "gpt-5.5"},
		{ID: "mock/mock-1", Provider: "mock", Name: "mock-1"},
	}
	usable := func(m model.Info) bool { return m.Provider != "openai" }
	tests := []struct {
		provider, pattern, id, level, err string
	}{
		{pattern: "offline", id: "e/offline"},
		{pattern: "offline:high", id: "e/offline", level: "high"},
		{pattern: "mock/gpt-5.5", id: "mock/gpt-5.5"},
		{pattern: "gpt-5.5", id: "mock/gpt-5.5"}, // the one with a key
		{provider: "openai", pattern: "gpt-5.5", id: "openai/gpt-5.5"},
		{pattern: "MOCK", id: "mock/mock-1"}, // fuzzy, case-insensitive
		{pattern: "nothing", err: "model not found: nothing"},
		{provider: "e", pattern: "gpt", err: "model not found: e/gpt"},
	}
	for _, tt := range tests {
		t.Run(tt.provider+"/"+tt.pattern, func(t *testing.T) {
			info, level, err := ResolveModel(models, tt.provider, tt.pattern, usable)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || info.ID != tt.id || level != tt.level {
				t.Errorf("got %s %q %v, want %s %q", info.ID, level, err, tt.id, tt.level)
			}
		})
	}
}

func TestClamp(t *testing.T) {
	off := model.Info{}
	three := model.Info{Efforts: []string{"low", "medium", "high"}}
	tests := []struct {
		info         model.Info
		level, want  string
		effort       string
		availability []string
	}{
		{info: three, level: "off", want: "off", effort: ""},
		{info: three, level: "minimal", want: "minimal", effort: "low"},
		{info: three, level: "medium", want: "medium", effort: "medium"},
		{info: three, level: "max", want: "high", effort: "high"},
		{info: off, level: "high", want: "off", effort: ""},
	}
	for _, tt := range tests {
		if got := Clamp(tt.info, tt.level); got != tt.want {
			t.Errorf("Clamp(%v, %s) = %s, want %s", tt.info.Efforts, tt.level, got, tt.want)
		}
		if got := Effort(tt.info, tt.level); got != tt.effort {
			t.Errorf("Effort(%v, %s) = %q, want %q", tt.info.Efforts, tt.level, got, tt.effort)
		}
	}
}

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "models.json"), []byte(`{"providers":{
		"local":{"baseUrl":"http://127.0.0.1:1/v1","api":"openai-completions","apiKey":"sk-lit",
			"models":[{"id":"q","name":"Q One","reasoning":true,"input":["text","image"],"contextWindow":1000,
				"cost":{"input":1,"output":2,"cacheRead":0.1,"cacheWrite":1.5}}]},
		"env":{"baseUrl":"http://127.0.0.1:2","api":"anthropic-messages","apiKey":"$MY_KEY","models":[{"id":"c"}]},
		"resp":{"baseUrl":"http://127.0.0.1:3/v1","api":"openai-responses","models":[{"id":"r"}]},
		"gem":{"baseUrl":"http://127.0.0.1:4","api":"google-generative-ai","models":[{"id":"g"}]},
		"cmd":{"baseUrl":"http://127.0.0.1:5","api":"openai-completions","apiKey":"!pass show x","models":[{"id":"x"}]}}}`), 0o600)
	os.WriteFile(filepath.Join(dir, "settings.json"), []byte(`{"defaultModel":"q","steeringMode":"all","compaction":{"enabled":false}}`), 0o600)
	c, err := LoadConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]model.ProviderConfig{
		"local": {API: model.APIOpenAIChat, BaseURL: "http://127.0.0.1:1/v1", APIKeyEnv: "E_PI_KEY_LOCAL",
			Models: []model.ModelConfig{{ID: "q", ContextWindow: 1000, ImageInput: true, Effort: []string{"low", "medium", "high"},
				Price: &model.Price{Input: 1, Output: 2, CacheRead: 0.1, CacheWrite5m: 1.5, CacheWrite1h: 1.5}}}},
		"env":  {API: model.APIAnthropic, BaseURL: "http://127.0.0.1:2", APIKeyEnv: "MY_KEY", Models: []model.ModelConfig{{ID: "c"}}},
		"resp": {API: model.APIOpenAIResponses, BaseURL: "http://127.0.0.1:3/v1", Models: []model.ModelConfig{{ID: "r"}}},
	}
	if diff := cmp.Diff(want, c.Providers); diff != "" {
		t.Errorf("providers (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"local/q": "Q One"}, c.Names); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
	if len(c.Warnings) != 2 || !strings.Contains(strings.Join(c.Warnings, "\n"), `"google-generative-ai" is not one e speaks`) {
		t.Errorf("warnings %q", c.Warnings)
	}
	if got := c.Getenv(func(string) string { return "" })("E_PI_KEY_LOCAL"); got != "sk-lit" {
		t.Errorf("literal key %q", got)
	}
	if c.Settings.DefaultModel != "q" || c.Settings.SteeringMode != "all" || *c.Settings.Compaction.Enabled {
		t.Errorf("settings %+v", c.Settings)
	}
	os.WriteFile(filepath.Join(dir, "models.json"), []byte(`{"providers":`), 0o600)
	if _, err := LoadConfig(dir); err == nil || !strings.Contains(err.Error(), "models.json") {
		t.Errorf("bad JSON: %v", err)
	}
}

func TestToolSelection(t *testing.T) {
	all := []string{"bash", "edit", "find", "grep", "read", "write", "ext_tool"}
	def := []string{"read", "bash", "edit", "write", "ext_tool"}
	tests := []struct {
		name     string
		defaults []string // settings' defaultTools (resolved)
		f        Flags
		want     []string
		warn     string
	}{
		// pi 1.6.0's default: read, bash, edit, write, and the tools of
		// extensions.
		{name: "default", want: def},
		{name: "settings' defaults", defaults: []string{"read", "grep", "teleport"}, want: []string{"read", "grep", "ext_tool"}},
		{name: "settings' defaults, none", defaults: []string{}, want: []string{"ext_tool"}},
		{name: "settings' defaults edited", defaults: []string{"read", "grep"}, f: Flags{Tools: []string{"+find", "-read"}},
			want: []string{"grep", "ext_tool", "find"}},
		{name: "allowlist", f: Flags{Tools: []string{"read", "grep"}}, want: []string{"read", "grep"}},
		{name: "allowlist pattern", f: Flags{Tools: []string{"*e*"}}, want: []string{"edit", "grep", "read", "write", "ext_tool"}},
		{name: "edits", f: Flags{Tools: []string{"-write", "-edit", "+find"}}, want: []string{"read", "bash", "ext_tool", "find"}},
		{name: "exclude pattern", f: Flags{ExcludeTools: []string{"*it*"}}, want: []string{"read", "bash", "ext_tool"}},
		{name: "no builtins", f: Flags{NoBuiltin: true}, want: []string{"ext_tool"}},
		{name: "none", f: Flags{NoTools: true}, want: []string{}},
		// pi 1.6.0 leaves a name no tool has out and goes on.
		{name: "unknown", f: Flags{Tools: []string{"read", "teleport"}}, want: []string{"read"}, warn: `no tool "teleport"`},
		{name: "unknown edit", f: Flags{Tools: []string{"-teleport"}}, want: def, warn: `no tool "teleport"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, warnings := toolSelection(all, tt.defaults, tt.f)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("tools (-want +got):\n%s", diff)
			}
			if w := strings.Join(warnings, "\n"); (tt.warn == "") != (w == "") || !strings.Contains(w, tt.warn) {
				t.Errorf("warnings %q, want one with %q", warnings, tt.warn)
			}
		})
	}
}

// TestDefaultTools checks pi 1.6.0's reading of settings' defaultTools
// (its resolveDefaultTools): plain names replace pi's default tools, then
// +name adds and -name removes, in order; only +/- entries edit pi's
// defaults; entries that are not strings are left out, and a value that
// is not a list is an empty one.
func TestDefaultTools(t *testing.T) {
	for _, tt := range []struct {
		name, raw string
		want      []string
	}{
		{name: "unset", raw: ``, want: nil},
		{name: "null", raw: `null`, want: nil},
		{name: "names", raw: `["read","grep"]`, want: []string{"read", "grep"}},
		{name: "edits of pi's defaults", raw: `["-write","+grep"]`, want: []string{"read", "bash", "edit", "grep"}},
		{name: "names, then edits", raw: `["read","+ls","-read","+ls"]`, want: []string{"ls"}},
		{name: "empty", raw: `[]`, want: []string{}},
		{name: "not strings", raw: `["read",7,null]`, want: []string{"read"}},
		{name: "not a list", raw: `"read"`, want: []string{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := Settings{DefaultToolsRaw: json.RawMessage(tt.raw)}.DefaultTools()
			if diff := cmp.Diff(tt.want, got); diff != "" || (got == nil) != (tt.want == nil) {
				t.Errorf("DefaultTools() (-want +got):\n%s (nil: %v)", diff, got == nil)
			}
		})
	}
}

// TestCustomModel checks pi 1.6.0's custom model ids: a --model its
// provider of models.json does not declare is a copy of that provider's
// first model under the id given.
func TestCustomModel(t *testing.T) {
	tests := []struct {
		name, provider, pattern string
		want                    []string // the provider's model ids after
		warn                    bool
	}{
		{name: "declared", pattern: "mock/m1", want: []string{"m1", "m2"}},
		{name: "fuzzy match", provider: "mock", pattern: "m", want: []string{"m1", "m2"}},
		{name: "prefix", pattern: "mock/other:high", want: []string{"m1", "m2", "other"}, warn: true},
		{name: "provider flag", provider: "mock", pattern: "other", want: []string{"m1", "m2", "other"}, warn: true},
		{name: "no such provider", pattern: "nope/other", want: []string{"m1", "m2"}},
		{name: "bare id", pattern: "other", want: []string{"m1", "m2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &Config{Providers: map[string]model.ProviderConfig{"mock": {API: model.APIOpenAIChat,
				Models: []model.ModelConfig{{ID: "m1", ContextWindow: 1000}, {ID: "m2"}}}}}
			warn := c.CustomModel(tt.provider, tt.pattern)
			var got []string
			for _, m := range c.Providers["mock"].Models {
				got = append(got, m.ID)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("models (-want +got):\n%s", diff)
			}
			if (warn != "") != tt.warn {
				t.Errorf("warning %q, want one: %v", warn, tt.warn)
			}
			if tt.warn && c.Providers["mock"].Models[2].ContextWindow != 1000 {
				t.Errorf("the custom model is not a copy of the first: %+v", c.Providers["mock"].Models[2])
			}
		})
	}
}
