package agent

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// The system prompt (spec/engine.md, "System prompt"): e's own text (or the
// operator's replacement), guidance for each tool offered, the environment
// as of the session's first model call, the session's effort, and the
// project's instructions. It stays byte-identical across a session's calls
// while the offered tools do not change, so providers can cache it.

// identity is e's own text; Engine.SystemPrompt replaces it.
const identity = `You are e, a coding agent. You work on the user's project in the working directory below, through the tools offered; no one can answer questions during a turn, so make reasonable choices and state them. Look before you claim: read files and run commands rather than guess. Work in small steps and verify each (build, tests). End with a short answer: what you found or changed, and how you checked it.`

// toolGuide is one line per built-in tool: when to use it, beyond what its
// description says.
var toolGuide = map[string]string{
	"read":  "read a file before changing it; use offset and limit on long files.",
	"edit":  "change an existing file by exact replacement; prefer it to write.",
	"write": "create a file, or replace one whole.",
	"bash":  "run commands (build, test, git); each call starts in the working directory with empty stdin. Prefer read, grep, find and ls to their shell forms.",
	"grep":  "search file contents by regular expression.",
	"find":  "find files by name.",
	"ls":    "list a directory.",
	"sleep": "wait for background work; a new user message ends the wait.",
}

// promptEnv is the environment part, computed once per session.
func promptEnv(cwd string, now time.Time) string {
	return envText(cwd, now, gitSummary(context.Background(), cwd))
}

func envText(cwd string, now time.Time, git string) string {
	var b strings.Builder
	b.WriteString("Environment:\n- Working directory: " + cwd + "\n")
	b.WriteString("- OS: " + runtime.GOOS + "/" + runtime.GOARCH + "\n")
	b.WriteString("- Date: " + now.Format("2006-01-02") + "\n")
	if git != "" {
		b.WriteString("- Git: " + git + "\n")
	}
	return b.String()
}

// gitSummary describes the repository at dir ("branch main, 2 changed, 1
// untracked"), or "" outside one or without git.
func gitSummary(ctx context.Context, dir string) string {
	if !inRepo(dir) {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	// --no-optional-locks: no index refresh written, so a status in the
	// background never makes the user's own git fail on index.lock.
	out, err := exec.CommandContext(ctx, "git", "--no-optional-locks", "-C", dir, "status", "--porcelain=v1", "--branch", "--no-renames").Output()
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	branch := strings.TrimPrefix(lines[0], "## ")
	if i := strings.Index(branch, "..."); i >= 0 {
		branch = branch[:i]
	}
	branch = strings.TrimPrefix(branch, "No commits yet on ")
	changed, untracked := 0, 0
	for _, l := range lines[1:] {
		if strings.HasPrefix(l, "??") {
			untracked++
		} else if l != "" {
			changed++
		}
	}
	s := "branch " + branch
	switch {
	case changed == 0 && untracked == 0:
		return s + ", clean"
	case untracked == 0:
		return s + ", " + strconv.Itoa(changed) + " changed"
	}
	return s + ", " + strconv.Itoa(changed) + " changed, " + strconv.Itoa(untracked) + " untracked"
}

// inRepo reports whether git could find a repository from dir: GIT_DIR
// names one, or dir or a directory above it holds .git. Outside one git
// status fails; not starting it saves the ~2 ms it takes to fail, on the
// way to a session's first text.
func inRepo(dir string) bool {
	if os.Getenv("GIT_DIR") != "" {
		return true
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return true // let git decide
	}
	for {
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			return true
		}
		up := filepath.Dir(dir)
		if up == dir {
			return false
		}
		dir = up
	}
}

// buildPrompt assembles the system prompt. base replaces identity when set;
// tools are the names offered, extension the ones extensions provide.
func buildPrompt(base, appendix, env, effort, instructions string, tools []string, extension map[string]bool) string {
	if base == "" {
		base = identity
	}
	var b strings.Builder
	b.WriteString(base)
	if len(tools) > 0 {
		b.WriteString("\n\nTools:\n")
		for _, name := range tools {
			guide, ok := toolGuide[name]
			if extension[name] || !ok {
				guide = "an extension's tool; see its description."
			}
			b.WriteString("- " + name + ": " + guide + "\n")
		}
	} else {
		b.WriteString("\n\nNo tools are offered in this session: answer from the conversation alone.\n")
	}
	b.WriteString("\n" + env)
	if effort != "" {
		b.WriteString("- Reasoning effort: " + effort + "\n")
	}
	if instructions != "" {
		b.WriteString("\nProject instructions (AGENTS.md; follow them):\n" + strings.TrimSpace(instructions) + "\n")
	}
	if appendix != "" {
		b.WriteString("\n" + strings.TrimSpace(appendix) + "\n")
	}
	return strings.TrimSuffix(b.String(), "\n")
}
