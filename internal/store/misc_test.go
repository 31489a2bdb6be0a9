package store_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/e-agent/e/internal/store"
	"github.com/google/go-cmp/cmp"
)

// M13: the export is one self-contained page with everything escaped.
func TestExportHTML(t *testing.T) {
	h := store.Header{Type: "session", Version: 1, ID: "01J", Cwd: "/w/<script>", Created: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), Model: "m", Effort: "high"}
	branch := []store.Entry{
		msg(json.RawMessage(`{"role":"user","content":[{"type":"text","text":"<script>alert(1)</script>"},{"type":"image","media_type":"image/png","data":"iVBORw0KGgo="}]}`)),
		msg(json.RawMessage(`{"role":"assistant","content":[{"type":"reasoning","text":"<b>think</b>"},{"type":"tool_call","id":"c1","name":"bash","arguments":{"command":"echo '</pre><script>x</script>'"}}]}`)),
		msg(json.RawMessage(`{"role":"tool","content":[{"type":"tool_result","call_id":"c1","text":"<img src=x onerror=alert(1)>","is_error":true}]}`)),
		msg(json.RawMessage(`{"role":"user\" onclick=\"x","content":[{"type":"image","media_type":"text/html","data":"PHNjcmlwdD4="},{"type":"image","media_type":"image/png","data":"javascript:alert(1)"}]}`)),
		{Type: store.TypeCompaction, Summary: "<script>sum</script>", Tokens: 5},
		{Type: store.TypeInterrupted},
	}
	var buf bytes.Buffer
	if err := store.ExportHTML(&buf, "<script>title</script>", h, branch); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	if regexp.MustCompile(`(?i)<script|<img src=x|onclick="|src="javascript|src="http|href="javascript`).MatchString(page) {
		t.Errorf("unescaped markup or external reference in the export:\n%s", page)
	}
	for _, want := range []string{
		"&lt;script&gt;alert(1)&lt;/script&gt;",
		"&lt;script&gt;title&lt;/script&gt;",
		`src="data:image/png;base64,iVBORw0KGgo="`,
		`<div class="call failed">`,
		"Content-Security-Policy",
		"turn interrupted",
		`<meta name="color-scheme" content="light dark">`,
		"@media (prefers-color-scheme: dark){:root{--fg:",               // the page's dark colours
		"@media (prefers-color-scheme: dark) {\n/* Background */ .bg {", // and the highlighting's
	} {
		if !strings.Contains(page, want) {
			t.Errorf("export lacks %q", want)
		}
	}
	if n := strings.Count(page, "<img"); n != 1 {
		t.Errorf("%d images, want only the valid PNG", n)
	}
}

// M13: a session with markdown, code, tools, an error, an interrupt, a
// compaction and a fork renders each where it happened, escaped once.
func TestExportSample(t *testing.T) {
	r, err := store.Read(filepath.Join("testdata", "export.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	branch := store.Branch(r.Entries)
	if err := store.ExportHTML(&buf, store.Title(branch), r.Header, branch); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	if dir := os.Getenv("E_EXPORT_SAMPLE"); dir != "" { // the browser check's input (bench/export-screenshot)
		os.WriteFile(filepath.Join(dir, "export.html"), buf.Bytes(), 0o600)
	}
	// In page order: each pattern must match after the previous one.
	order := []struct{ name, re string }{
		{"title, escaped once", `<h1>Fix the calculator &amp; run its tests</h1>`},
		{"models in use", `<dd>e/offline · anthropic/claude-sonnet-4-5</dd>`},
		{"effort", `<dt>effort</dt><dd>high</dd>`},
		{"counts", `2 prompts · 3 model calls · 5 tool calls \(3 failed\)`},
		{"cost: the sum of the priced calls", `\$0\.0092`},
		{"fork in the header", `<dt>forked from</dt><dd>/home/u/.e/sessions/--work-calc--/01JPARENT`},
		{"usage by category", `<td>4200</td><td>235</td><td>2400</td><td>0</td><td>0</td>`},
		{"fork marker", `<div class="marker fork">forked from`},
		{"user text as typed", `<div class="text">Fix the calculator &amp; run its tests. Use &lt;b&gt;no&lt;/b&gt; new dependencies.</div>`},
		{"message time", `<time datetime="2026-12-01T09:00:04Z">09:00:04</time>`},
		{"model call", `anthropic/claude-sonnet-4-5 · 2.3 s · 1200 in / 85 out`},
		{"reasoning folded", `<details><summary>reasoning</summary>`},
		{"markdown", `I&rsquo;ll run the <strong>tests</strong> first, then read <code>calc.py</code>.|I'll run the <strong>tests</strong> first, then read <code>calc.py</code>.`},
		{"bash call, failed, with time", `<span class="name">bash</span><span class="badge failed">failed</span><span>1.2 s</span>`},
		{"command as text, highlighted", `<pre class="chroma"><code><span class="line"><span class="cl">python3 calc.py <span class="o">&amp;&amp;</span> seq <span class="m">1</span> <span class="m">30</span>`},
		{"long output folded", `<details class="result"><summary>output, 34 lines</summary><pre>Traceback`},
		{"read call with its result", `<span class="name">read</span><span class="badge completed">completed</span><span>3 ms</span></div><div class="args"><span class="key">path</span> calc.py</div>\s*<div class="result"><pre>def add`},
		{"failed read", `<span class="key">path</span> missing.py</div>\s*<div class="result"><pre>read: missing.py: no such file`},
		{"retried call", `1.8 s · 2 attempts`},
		{"highlighted fence", `<pre class="chroma"><code><span class="line"><span class="cl"><span class="k">def</span> <span class="nf">add</span>`},
		{"table", `<table>\s*<thead>`},
		{"raw HTML in markdown dropped", `A <!-- raw HTML omitted -->alert\(1\)<!-- raw HTML omitted --> stays text`},
		{"edit as a diff", `<span class="key">path</span> calc.py</div>\s*<pre class="diff"><span class="del">-return a - b</span><span class="add">&#43;return a &#43; b</span></pre>`},
		{"interrupted call", `<span class="badge interrupted">interrupted</span><span>2.9 s</span>`},
		{"interrupt marker", `<div class="marker interrupted">turn interrupted`},
		{"settings marker", `model openai/gpt-5.5, effort low from here`},
		{"compaction marker with summary", `earlier conversation compacted \(5200 tokens before\)[^<]*<time[^>]*>[^<]*</time>\s*<details><summary>summary</summary><div class="md"><p>The user asked to fix <code>calc.py</code>`},
		{"error where it happened", `<div class="error" role="alert"><b>error</b> <time datetime="2026-12-01T09:00:24Z">09:00:24</time><pre>model: openai: HTTP 429`},
		{"a user's shell command, highlighted, escaped, how it ended", `<section class="msg shell">[\s\S]*?<span class="name">shell</span><span class="badge failed">failed</span></div><pre class="chroma"><code><span class="line"><span class="cl">git status[\s\S]*?&lt;</span>test[\s\S]*?<div class="result"><pre>M calc.py`},
		{"its exit status and context", `\[exit status 2\]</div>\s*<div class="meta">\[kept out of the model&#39;s context\]`},
	}
	rest := page
	for _, o := range order {
		loc := regexp.MustCompile(o.re).FindStringIndex(rest)
		if loc == nil {
			t.Errorf("%s: no %s after the previous match", o.name, o.re)
			continue
		}
		rest = rest[loc[1]:]
	}
	for _, bad := range []string{"&amp;amp;", "&amp;lt;", `\u0026`, "**tests**", "```", `href="javascript`, "<script", "tool result</"} {
		if strings.Contains(page, bad) {
			t.Errorf("page has %q", bad)
		}
	}
	if n := strings.Count(page, `<div class="call`); n != 6 {
		t.Errorf("%d tool blocks, want 6 (each call with its result, no result alone, and the shell command)", n)
	}
	if t.Failed() {
		t.Logf("page:\n%s", page)
	}
}

// M13: call ids repeat across turns (the offline model and providers number
// each answer's calls from call_0_0), so each result shows under the call of
// the assistant message it answers, and the header counts the one failure.
func TestExportRepeatedCallIDs(t *testing.T) {
	h := store.Header{Type: "session", Version: 1, ID: "01J", Cwd: "/w", Model: "m"}
	var branch []store.Entry
	for i, turn := range []struct {
		command, output string
		failed          bool
	}{
		{command: "echo one", output: "out-one"},
		{command: "echo two", output: "out-two"},
		{command: "false", output: "out-three exit status 1", failed: true},
	} {
		branch = append(branch,
			msg(json.RawMessage(fmt.Sprintf(`{"role":"user","content":"turn %d"}`, i+1))),
			msg(json.RawMessage(fmt.Sprintf(`{"role":"assistant","content":[{"type":"tool_call","id":"call_0_0","name":"bash","arguments":{"command":%q}}]}`, turn.command))),
			msg(json.RawMessage(fmt.Sprintf(`{"role":"tool","content":[{"type":"tool_result","call_id":"call_0_0","text":%q,"is_error":%t}]}`, turn.output, turn.failed))),
			msg(json.RawMessage(`{"role":"assistant","content":"done"}`)),
		)
	}
	var buf bytes.Buffer
	if err := store.ExportHTML(&buf, "t", h, branch); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	if !strings.Contains(page, "3 prompts · 0 model calls · 3 tool calls (1 failed)") {
		t.Errorf("header counts wrong:\n%s", page)
	}
	// Each call, in order, with its own result right after it.
	call := regexp.MustCompile(`<div class="call( failed)?">[\s\S]*?<span class="cl">([^<]*)</span>[\s\S]*?<div class="result"><pre>([^<]*)</pre>`)
	var got [][]string
	for _, m := range call.FindAllStringSubmatch(page, -1) {
		got = append(got, []string{strings.TrimSpace(m[1]), strings.TrimSpace(m[2]), m[3]})
	}
	want := [][]string{
		{"", "echo one", "out-one"},
		{"", "echo two", "out-two"},
		{"failed", "false", "out-three exit status 1"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("calls and results (-want +got):\n%s\npage:\n%s", diff, page)
	}
}

func TestDefaultExportPath(t *testing.T) {
	if got := store.DefaultExportPath("/h/sessions/--w--/01J.jsonl", "/w", "01J"); got != "/h/sessions/--w--/01J.html" {
		t.Errorf("saved: %s", got)
	}
	if got := store.DefaultExportPath("", "/w", "01J"); got != "/w/e-session-01J.html" {
		t.Errorf("memory-only: %s", got)
	}
}

// U3: the errors sidecar is private and carries no secret.
func TestAppendErrorRedacts(t *testing.T) {
	t.Setenv("MY_PROVIDER_API_KEY", "plain-secret-value-123")
	log := filepath.Join(t.TempDir(), "01J.jsonl")
	details := map[string]any{
		"stage":      "model",
		"diagnostic": `401 from upstream; Authorization: Bearer abc.def-ghi_jkl; key sk-ant-api03-AAAAAAAAAAAAAAAAAAAA; {"x-api-key":"zzzzzzzzzzzz"} env plain-secret-value-123`,
	}
	for range 2 {
		if err := store.AppendError(log, details); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(log + ".errors.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2:\n%s", len(lines), b)
	}
	for _, secret := range []string{"abc.def", "AAAAAAAA", "zzzzzzzz", "plain-secret"} {
		if strings.Contains(string(b), secret) {
			t.Errorf("sidecar contains %q:\n%s", secret, b)
		}
	}
	var line struct {
		Time    time.Time
		Details map[string]string
	}
	if err := json.Unmarshal([]byte(lines[0]), &line); err != nil || line.Details["stage"] != "model" || line.Time.IsZero() {
		t.Errorf("line %q: %v", lines[0], err)
	}
	if got := strings.Count(line.Details["diagnostic"], "[REDACTED]"); got != 4 {
		t.Errorf("diagnostic %q: %d redactions, want 4", line.Details["diagnostic"], got)
	}
	if fi, _ := os.Stat(log + ".errors.jsonl"); fi.Mode().Perm() != 0o600 {
		t.Errorf("sidecar mode %v", fi.Mode().Perm())
	}
}

func TestRedact(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "env-key-9876543210")
	t.Setenv("SHORT_API_KEY", "abc") // too short to redact safely
	tests := []struct{ name, in, want string }{
		{name: "openai", in: "key=sk-proj-abcdefghijklmnop123 end", want: "key=[REDACTED] end"},
		{name: "anthropic", in: "sk-ant-api03-abcdefghijklmnopqrst", want: "[REDACTED]"},
		{name: "bearer", in: "Authorization: Bearer eyJhbGciOi.J9x-y", want: "Authorization: Bearer [REDACTED]"},
		{name: "x-api-key header", in: "x-api-key: abcdef123456", want: "x-api-key: [REDACTED]"},
		{name: "x-api-key json", in: `{"X-Api-Key":["abcdef123456"]}`, want: `{"X-Api-Key":["[REDACTED]"]}`},
		{name: "env value", in: "got env-key-9876543210!", want: "got [REDACTED]!"},
		{name: "short env value kept", in: "abc", want: "abc"},
		{name: "nothing", in: "sk- is short; a task-list", want: "sk- is short; a task-list"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := store.Redact(tt.in); got != tt.want {
				t.Errorf("Redact(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// L2: settings, defaults and range errors.
func TestLoadSettings(t *testing.T) {
	defaults := store.Settings{ToolConcurrency: 8, CompactThreshold: 0.8}
	tests := []struct {
		name    string
		file    *string
		want    store.Settings
		wantErr string
	}{
		{name: "missing file", want: defaults},
		{name: "empty object", file: ptr("{}"), want: defaults},
		{name: "nulls mean defaults", file: ptr(`{"tool_concurrency":null,"providers":null,"compact_threshold":null}`), want: defaults},
		{name: "all fields", file: ptr(`{"tool_concurrency":64,"default_model":"openai/x","providers":{"a":1},"extensions":[],"compact_threshold":0.5}`),
			want: store.Settings{ToolConcurrency: 64, DefaultModel: "openai/x", Providers: json.RawMessage(`{"a":1}`), Extensions: json.RawMessage(`[]`), CompactThreshold: 0.5}},
		{name: "tool_concurrency 1", file: ptr(`{"tool_concurrency":1}`), want: store.Settings{ToolConcurrency: 1, CompactThreshold: 0.8}},
		{name: "tool_concurrency 0", file: ptr(`{"tool_concurrency":0}`), wantErr: "tool_concurrency 0 out of range 1..64"},
		{name: "tool_concurrency 65", file: ptr(`{"tool_concurrency":65}`), wantErr: "tool_concurrency 65 out of range 1..64"},
		{name: "tool_concurrency string", file: ptr("{\n  \"tool_concurrency\": \"8\"}"), wantErr: "settings.json:2:"},
		{name: "compact_threshold 1.5", file: ptr(`{"compact_threshold":1.5}`), wantErr: "compact_threshold 1.5 out of range"},
		{name: "bad JSON", file: ptr("{\n\"tool_concurrency\": 8,\n}"), wantErr: "settings.json:3:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home := t.TempDir()
			if tt.file != nil {
				os.WriteFile(filepath.Join(home, "settings.json"), []byte(*tt.file), 0o600)
			}
			got, err := store.LoadSettings(home)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), filepath.Join(home, "settings.json")) {
					t.Errorf("err = %v, want one naming the file and %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// C9: trust by real path, inherited by subdirectories, never through a symlink.
func TestTrust(t *testing.T) {
	home := t.TempDir()
	base, _ := filepath.EvalSymlinks(t.TempDir())
	repo := filepath.Join(base, "repo")
	sub := filepath.Join(repo, "sub")
	other := filepath.Join(base, "other")
	for _, d := range []string{sub, other} {
		os.MkdirAll(d, 0o755)
	}
	link := filepath.Join(base, "link-to-repo")
	os.Symlink(repo, link)
	escape := filepath.Join(repo, "escape") // inside repo, pointing outside
	os.Symlink(other, escape)

	if err := store.Trust(home, link); err != nil { // recorded as the real path
		t.Fatal(err)
	}
	if got, _ := store.Trusted(home); !cmp.Equal(got, []string{repo}) {
		t.Errorf("Trusted = %q, want [%s]", got, repo)
	}
	tests := []struct {
		dir  string
		want bool
	}{
		{dir: repo, want: true},
		{dir: sub, want: true},
		{dir: filepath.Join(link, "sub"), want: true},
		{dir: other, want: false},
		{dir: escape, want: false},
		{dir: base, want: false},
		{dir: repo + "x", want: false},
		{dir: filepath.Join(base, "missing"), want: false},
	}
	for _, tt := range tests {
		if got := store.IsTrusted(home, tt.dir); got != tt.want {
			t.Errorf("IsTrusted(%s) = %v, want %v", tt.dir, got, tt.want)
		}
	}
	if err := store.Trust(home, filepath.Join(base, "missing")); err == nil {
		t.Error("Trust of a missing directory succeeded")
	}
	store.Trust(home, other)
	if err := store.Revoke(home, repo); err != nil {
		t.Fatal(err)
	}
	if got, _ := store.Trusted(home); !cmp.Equal(got, []string{other}) || store.IsTrusted(home, sub) {
		t.Errorf("after Revoke: Trusted = %q, IsTrusted(sub) = %v", got, store.IsTrusted(home, sub))
	}
	store.Revoke(home, other)
	if b, _ := os.ReadFile(filepath.Join(home, "trust.json")); !strings.Contains(string(b), `"trusted": []`) {
		t.Errorf("empty trust list file: %s", b)
	}
}

// C9: AGENTS.md is used only from trusted directories.
func TestInstructions(t *testing.T) {
	home := t.TempDir()
	base, _ := filepath.EvalSymlinks(t.TempDir())
	repo := filepath.Join(base, "repo")
	sub := filepath.Join(repo, "sub")
	plain := filepath.Join(base, "plain")
	os.MkdirAll(sub, 0o755)
	os.MkdirAll(plain, 0o755)
	os.WriteFile(filepath.Join(repo, "AGENTS.md"), []byte("repo rules\n"), 0o644)
	os.WriteFile(filepath.Join(sub, "AGENTS.md"), []byte("sub rules"), 0o644)

	check := func(name, dir, wantText string, wantNeed bool) {
		t.Helper()
		text, need, err := store.Instructions(home, dir)
		if err != nil || text != wantText || need != wantNeed {
			t.Errorf("%s: Instructions(%s) = %q, %v, %v; want %q, %v", name, dir, text, need, err, wantText, wantNeed)
		}
	}
	check("untrusted sub", sub, "", true)
	check("untrusted dir under an AGENTS.md", filepath.Join(sub), "", true)
	check("no AGENTS.md anywhere", plain, "", false)
	store.Trust(home, sub)
	check("trusted sub only", sub, "<!-- "+sub+"/AGENTS.md -->\nsub rules", false)
	store.Trust(home, repo)
	check("trusted repo", sub, "<!-- "+repo+"/AGENTS.md -->\nrepo rules\n\n<!-- "+sub+"/AGENTS.md -->\nsub rules", false)
	os.WriteFile(filepath.Join(home, "AGENTS.md"), []byte("mine"), 0o644)
	check("user's own first", repo, "<!-- "+filepath.Join(home, "AGENTS.md")+" -->\nmine\n\n<!-- "+repo+"/AGENTS.md -->\nrepo rules", false)
}
