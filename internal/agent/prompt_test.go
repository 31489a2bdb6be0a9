package agent

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The system prompt carries e's text (or the operator's), guidance for the
// offered tools only, the environment, the effort and the instructions.
func TestBuildPrompt(t *testing.T) {
	env := promptEnv("/w", time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	tests := []struct {
		name                          string
		base, appendix, effort, instr string
		tools                         []string
		ext                           map[string]bool
		want, not                     []string
	}{
		{name: "default", effort: "high", instr: "<!-- /w/AGENTS.md -->\nUse tabs.", tools: []string{"bash", "read"},
			want: []string{"You are e, a coding agent.", "\n- bash: run commands", "\n- read: read a file", "- Working directory: /w\n",
				"- Date: 2026-12-01\n", "- Reasoning effort: high", "Project instructions (AGENTS.md; follow them):\n<!-- /w/AGENTS.md -->\nUse tabs."},
			not: []string{"- edit:", "- write:"}},
		{name: "no tools", want: []string{"No tools are offered"}, not: []string{"Tools:", "Reasoning effort", "Project instructions"}},
		{name: "extension tool", tools: []string{"deploy", "read"}, ext: map[string]bool{"deploy": true},
			want: []string{"- deploy: an extension's tool; see its description."}},
		{name: "extension tool named like a built-in", tools: []string{"read"}, ext: map[string]bool{"read": true},
			want: []string{"- read: an extension's tool"}},
		{name: "replaced and extended", base: "You review code.", appendix: "Answer in French.", tools: []string{"read"},
			want: []string{"You review code.\n\nTools:", "- Working directory: /w", "\n\nAnswer in French."}, not: []string{"You are e"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := buildPrompt(tt.base, tt.appendix, env, tt.effort, tt.instr, tt.tools, tt.ext)
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("prompt lacks %q:\n%s", w, got)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(got, n) {
					t.Errorf("prompt has %q:\n%s", n, got)
				}
			}
		})
	}
	// Compact: every built-in tool, a short AGENTS.md. 4 bytes a token.
	all := buildPrompt("", "", env, "high", "<!-- /w/AGENTS.md -->\nUse tabs.", []string{"bash", "edit", "find", "grep", "ls", "read", "sleep", "write"}, nil)
	if n := len(all) / 4; n > 320 {
		t.Errorf("the full prompt is about %d tokens, want at most 320:\n%s", n, all)
	}
}

func TestGitSummary(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	if got := gitSummary(t.Context(), dir); got != "" {
		t.Errorf("outside a repository: %q", got)
	}
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q", "-b", "trunk")
	if got := gitSummary(t.Context(), dir); got != "branch trunk, clean" {
		t.Errorf("new repository: %q", got)
	}
	os.WriteFile(filepath.Join(dir, "a"), []byte("a"), 0o600)
	git("add", "a")
	git("commit", "-qm", "a")
	os.WriteFile(filepath.Join(dir, "a"), []byte("b"), 0o600)
	os.WriteFile(filepath.Join(dir, "u1"), nil, 0o600)
	os.WriteFile(filepath.Join(dir, "u2"), nil, 0o600)
	if got := gitSummary(t.Context(), dir); got != "branch trunk, 1 changed, 2 untracked" {
		t.Errorf("changed repository: %q", got)
	}
	// From a directory below the top, git finds the repository above.
	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o700)
	os.WriteFile(filepath.Join(sub, "u3"), nil, 0o600)
	if got := gitSummary(t.Context(), sub); got != "branch trunk, 1 changed, 3 untracked" {
		t.Errorf("below the top: %q", got)
	}
}

// inRepo finds .git (a directory, or a worktree's file) in a directory
// or above it, and nothing in a directory outside any repository.
func TestInRepo(t *testing.T) {
	t.Setenv("GIT_DIR", "")
	top := t.TempDir()
	if inRepo(top) {
		t.Fatalf("%s is in a repository: the test needs a temp dir outside one", top)
	}
	for _, dotgit := range []string{"dir", "file"} {
		t.Run(dotgit, func(t *testing.T) {
			root := t.TempDir()
			if dotgit == "dir" {
				os.Mkdir(filepath.Join(root, ".git"), 0o700)
			} else {
				os.WriteFile(filepath.Join(root, ".git"), []byte("gitdir: /elsewhere\n"), 0o600)
			}
			deep := filepath.Join(root, "a", "b")
			os.MkdirAll(deep, 0o700)
			for _, d := range []string{root, deep} {
				if !inRepo(d) {
					t.Errorf("inRepo(%s) = false", d)
				}
			}
		})
	}
	t.Setenv("GIT_DIR", filepath.Join(top, "x.git"))
	if !inRepo(top) {
		t.Error("GIT_DIR set: inRepo = false")
	}
}
