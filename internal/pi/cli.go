package pi

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/e-agent/e/internal/regfile"
)

// Flags are pi's command line as e's pi dialect reads it (cli.md).
type Flags struct {
	Mode          string // "rpc" or "json"
	Flavor        string // "" (pi 1.6.0's) or "prime" (prime-agent's: --flavor prime, or e run as prime-agent)
	Provider      string
	Model         string // pattern: id, provider/id, optional :thinking suffix
	APIKey        string
	Thinking      string
	Continue      bool
	Session       string // path or id
	SessionDir    string
	NoSession     bool
	Name          string
	Tools         []string // nil: the default selection
	ExcludeTools  []string
	NoTools       bool
	NoBuiltin     bool
	NoExtensions  bool
	NoTemplates   bool     // -np: no prompt templates
	SystemPrompt  *string  // replaces e's own system prompt text (text or a file's contents)
	AppendPrompts []string // appended to the system prompt
	Help, Version bool
	Messages      []string // json mode: the prompts
	// Warnings are options pi 1.6.0 takes but ignores (or e does), one
	// line each for stderr: e goes on, as pi does.
	Warnings []string
	// Sandbox, WritableRoots and SandboxNetwork are e's own sandbox flags
	// (--sandbox, --writable-root, --sandbox-network; W2): pi has none.
	Sandbox        string
	WritableRoots  []string
	SandboxNetwork bool
}

// ErrUsage marks a command-line error: exit status 2.
var ErrUsage = errors.New("usage")

// valued are pi's options that take a value, by every spelling.
var valued = map[string]string{
	"--mode": "mode", "--provider": "provider", "--model": "model", "--api-key": "api-key", "--thinking": "thinking",
	"--session": "session", "--session-dir": "session-dir", "-n": "name", "--name": "name",
	"-t": "tools", "--tools": "tools", "-xt": "exclude-tools", "--exclude-tools": "exclude-tools",
	"--system-prompt": "system-prompt", "--append-system-prompt": "append-system-prompt",
	// Accepted for what they select, which e does not have:
	"--models": "models", "--session-id": "session-id", "--fork": "fork", "-e": "extension", "--extension": "extension",
	"--skill": "skill", "--prompt-template": "prompt-template", "--theme": "theme", "--use-theme": "use-theme",
	"--tui-mode": "tui-mode", "--export": "export",
	// e's own: the sandbox of the session's commands.
	"--sandbox": "sandbox", "--writable-root": "writable-root",
	"--flavor": "flavor", // e's own: which peer's dialect (pi's, prime-agent's)
}

// switches are pi's options without a value.
var switches = map[string]string{
	"-c": "continue", "--continue": "continue", "--no-session": "no-session",
	"-nt": "no-tools", "--no-tools": "no-tools", "-nbt": "no-builtin-tools", "--no-builtin-tools": "no-builtin-tools",
	"-ne": "no-extensions", "--no-extensions": "no-extensions", "-h": "help", "--help": "help",
	"-v": "version", "--version": "version", "-np": "no-prompt-templates", "--no-prompt-templates": "no-prompt-templates",
	// No-ops in e: it has none of these to turn off, or already behaves so.
	"--no-mcp": "", "-ns": "", "--no-skills": "", "--no-themes": "",
	"--offline": "", "--verbose": "", "-na": "", "--no-approve": "",
	// Options e cannot honour: refused with a reason.
	"-r": "resume", "--resume": "resume", "-a": "approve", "--approve": "approve",
	"-nc": "no-context-files", "--no-context-files": "no-context-files", "--list-models": "list-models",
	"--sandbox-network": "sandbox-network", // e's own
}

// unsupported explains the pi options e refuses.
var unsupported = map[string]string{
	"resume":           "opens an interactive selector; use --session PATH or --continue",
	"approve":          "trusts project files for one process; use e trust DIR",
	"no-context-files": "is not supported: e uses AGENTS.md only in directories you trusted with e trust",
	"list-models":      "is not supported; use get_available_models",
	"models":           "(model scopes) is not supported",
	"session-id":       "is not supported; use --session PATH",
	"fork":             "is not supported; use the fork command",
	"extension":        "is not supported: e's extensions are configured in its settings",
	"skill":            "is not supported", "prompt-template": "is not supported", "theme": "is not supported",
	"use-theme": "is not supported", "tui-mode": "is not supported", "export": "is not supported; use export_html",
}

// ParseFlags reads pi's command line (without the program name). Errors
// wrap ErrUsage and name the option.
func ParseFlags(args []string) (Flags, error) {
	var f Flags
	fail := func(format string, a ...any) (Flags, error) {
		return Flags{}, fmt.Errorf("%w: %s", ErrUsage, fmt.Sprintf(format, a...))
	}
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if arg == "--" {
			f.Messages = append(f.Messages, args[i+1:]...)
			break
		}
		if !strings.HasPrefix(arg, "-") || arg == "-" {
			f.Messages = append(f.Messages, arg)
			continue
		}
		name, value, hasValue := strings.Cut(arg, "=")
		if !strings.HasPrefix(name, "--") {
			name, value, hasValue = arg, "", false // short options take their value separately
		}
		if name == "-p" || name == "--print" {
			// pi's print flag (pi's own subagent example spawns "pi --mode
			// json -p --no-session …"); --mode rpc or json wins over it, and as pi's
			// it takes the next argument as a prompt unless that is an
			// option or an @file.
			if hasValue {
				return fail("option %s takes no value", name)
			}
			if i+1 < len(args) && !strings.HasPrefix(args[i+1], "@") && (!strings.HasPrefix(args[i+1], "-") || strings.HasPrefix(args[i+1], "---")) {
				i++
				f.Messages = append(f.Messages, args[i])
			}
			continue
		}
		if key, ok := switches[name]; ok {
			if hasValue {
				return fail("option %s takes no value", name)
			}
			if why, bad := unsupported[key]; bad {
				return fail("pi option %s %s", name, why)
			}
			switch key {
			case "continue":
				f.Continue = true
			case "no-session":
				f.NoSession = true
			case "no-tools":
				f.NoTools = true
			case "no-builtin-tools":
				f.NoBuiltin = true
			case "no-extensions":
				f.NoExtensions = true
			case "no-prompt-templates":
				f.NoTemplates = true
			case "sandbox-network":
				f.SandboxNetwork = true
			case "help":
				f.Help = true
			case "version":
				f.Version = true
			}
			continue
		}
		key, ok := valued[name]
		if !ok {
			return fail("unknown pi option %s", name)
		}
		if !hasValue {
			if i+1 >= len(args) {
				return fail("option %s needs a value", name)
			}
			i++
			value = args[i]
		}
		if why, bad := unsupported[key]; bad {
			return fail("pi option %s %s", name, why)
		}
		switch key {
		case "mode":
			f.Mode = value
		case "provider":
			f.Provider = value
		case "model":
			f.Model = value
		case "api-key":
			f.APIKey = value
		case "thinking":
			if !slices.Contains(Levels, value) {
				// pi 1.6.0 warns and keeps the model's level.
				f.Warnings = append(f.Warnings, fmt.Sprintf("--thinking: %q is not one of %s; ignored", value, strings.Join(Levels, ", ")))
				continue
			}
			f.Thinking = value
		case "session":
			f.Session = value
		case "session-dir":
			f.SessionDir = value
		case "flavor":
			switch value {
			case "pi":
				f.Flavor = ""
			case "prime":
				f.Flavor = "prime"
			default:
				return fail("option --flavor: %q is not pi or prime", value)
			}
		case "name":
			f.Name = value
		case "tools":
			// pi's getToolListError: edits and names do not mix, and an
			// edit names one tool.
			f.Tools = splitList(value)
			mods := slices.DeleteFunc(slices.Clone(f.Tools), func(t string) bool { return !isToolModifier(t) })
			if len(mods) > 0 && len(mods) < len(f.Tools) {
				return fail("%s: tool names cannot be mixed with +name or -name entries", name)
			}
			if i := slices.IndexFunc(mods, func(t string) bool { return strings.Contains(t, "*") }); i >= 0 {
				return fail("%s: +name and -name entries take exact tool names, not patterns: %s", name, mods[i])
			}
		case "exclude-tools":
			f.ExcludeTools = append(f.ExcludeTools, splitList(value)...)
		case "system-prompt":
			v := fileOrText(value)
			f.SystemPrompt = &v
		case "append-system-prompt":
			f.AppendPrompts = append(f.AppendPrompts, fileOrText(value))
		case "sandbox":
			f.Sandbox = value
		case "writable-root":
			f.WritableRoots = append(f.WritableRoots, value)
		}
	}
	switch {
	case f.Help || f.Version:
	case f.Mode != "rpc" && f.Mode != "json":
		if f.Mode == "" {
			return fail("--mode rpc or --mode json is required")
		}
		return fail("--mode %q: e speaks pi's rpc and json modes (for text, use e -p)", f.Mode)
	case f.Mode == "rpc" && len(f.Messages) > 0:
		// pi 1.6.0 ignores them in rpc mode (but @file arguments).
		f.Warnings = append(f.Warnings, fmt.Sprintf("rpc mode ignores prompt arguments (got %q): send prompt commands", f.Messages[0]))
	case f.Mode == "json" && len(f.Messages) == 0:
		return fail("json mode needs a prompt argument")
	case f.Provider != "" && f.Model == "":
		return fail("--provider requires --model")
	case f.Continue && f.Session != "":
		return fail("--continue and --session cannot be combined")
	case f.NoSession:
		// pi 1.6.0 starts an empty in-memory session and ignores both.
		f.Continue, f.Session = false, ""
	}
	for _, m := range f.Messages {
		if strings.HasPrefix(m, "@") {
			return fail("@file arguments are not supported (got %q)", m)
		}
	}
	return f, nil
}

func splitList(v string) []string {
	out := []string{}
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// fileOrText returns the contents of the file v names, or v itself (cli.md:
// "text or the contents of an existing file").
func fileOrText(v string) string {
	if b, err := regfile.ReadFile(v, maxConfigBytes); err == nil {
		return string(b)
	}
	return v
}
