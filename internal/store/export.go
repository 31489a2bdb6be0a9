package store

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"iter"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/e-agent/e/internal/regfile"
)

// DefaultExportPath is where session.export writes when the caller names no
// path (M13): beside a saved log, with .html for .jsonl; for a memory-only
// session (logPath ""), e-session-<id>.html in the session's cwd.
func DefaultExportPath(logPath, cwd, sessionID string) string {
	if logPath != "" {
		return strings.TrimSuffix(logPath, ".jsonl") + ".html"
	}
	return filepath.Join(cwd, "e-session-"+sessionID+".html")
}

// ExportHTML writes branch as one self-contained HTML page (M13): an
// embedded stylesheet, no script, no external asset (a CSP forbids fetching
// any). Answers are rendered markdown with highlighted code; each tool call
// shows with its result; the header sums the session's usage. Every text is
// redacted (U3) and escaped once, by html/template or by the markdown
// renderer.
func ExportHTML(w io.Writer, title string, h Header, branch []Entry) error {
	page := exportPage{Title: Redact(title), Header: h, CSS: codeCSS()}
	results := toolResults(branch)
	// Two passes, so that the page holds one item at a time, never the
	// whole branch rendered (H1): this one counts what the header shows,
	// rendering nothing; the template's range renders each item in turn.
	x := &exporter{branch: branch, results: results, owner: -1, dry: true}
	models := map[string]bool{}
	var cost float64
	priced := false
	for i, e := range branch {
		if e.Call != nil {
			page.Calls++
			page.Usage = addUsage(page.Usage, e.Call.Usage)
			if e.Call.CostUSD != nil {
				cost += *e.Call.CostUSD
				priced = true
			}
			if !models[e.Call.Model] {
				models[e.Call.Model] = true
				page.Models = append(page.Models, e.Call.Model)
			}
		}
		it, ok := x.item(i, e)
		if !ok {
			continue
		}
		if it.Role == "user" {
			page.Prompts++
		}
		for _, p := range it.Parts {
			if p.Tool != nil && it.Role != "shell" { // a user's command is no tool call of the model's
				page.Tools++
				if p.Tool.Failed {
					page.Failures++
				}
			}
		}
	}
	page.Items = func(yield func(item) bool) {
		x := &exporter{branch: branch, results: results, owner: -1}
		for i, e := range branch {
			if it, ok := x.item(i, e); ok && !yield(it) {
				return
			}
		}
	}
	if priced {
		page.Cost = fmt.Sprintf("$%.4f", cost)
	}
	if err := exportTmpl.Execute(w, page); err != nil {
		return fmt.Errorf("store: export: %w", err)
	}
	return nil
}

// ExportFile writes the page of ExportHTML to path (0600), creating its
// directory. The page appears whole or not at all (writeAtomic, Y2).
func ExportFile(path, title string, h Header, branch []Entry) error {
	return writeAtomic(path, func(w io.Writer) error { return ExportHTML(w, title, h, branch) })
}

// writeAtomic writes what write writes to a temporary file beside path and
// renames it onto path, so a failure midway (ENOSPC, a stop) leaves path as
// it was, never a partial page, and no temporary file behind. path may be
// a regular file or a link to one (the link's target is replaced), never a
// FIFO, device, socket or directory: those are refused, naming what they
// are (Y1).
func writeAtomic(path string, write func(io.Writer) error) error {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
		fi, err := os.Stat(path)
		if err != nil {
			return fmt.Errorf("store: export: %w", err)
		}
		if err := regfile.Check(path, fi); err != nil {
			return fmt.Errorf("store: export: %w", err)
		}
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("store: export: %w", err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("store: export: %w", err)
	}
	fail := func(err error) error {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	bw := bufio.NewWriterSize(f, 64<<10)
	if err := write(bw); err != nil {
		return fail(err)
	}
	if err := bw.Flush(); err != nil {
		return fail(fmt.Errorf("store: export %s: %w", path, err))
	}
	if err := f.Sync(); err != nil {
		return fail(fmt.Errorf("store: export %s: %w", path, err))
	}
	if err := f.Close(); err != nil {
		return fail(fmt.Errorf("store: export %s: %w", path, err))
	}
	if err := os.Rename(f.Name(), path); err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("store: export: %w", err)
	}
	return nil
}

type exportPage struct {
	Title  string
	Header Header
	CSS    template.CSS
	Models []string // models that answered, in order of first use
	// Prompts counts user messages, Calls model calls, Tools tool calls.
	Prompts, Calls, Tools, Failures int
	Usage                           Usage
	Cost                            string // "" when no call had a price
	Items                           iter.Seq[item]
}

// item is one entry as shown.
type item struct {
	Kind string // message, note, compaction, error, interrupted
	Time time.Time
	Role string
	Call *ModelCall
	// Parts of a message; Note the text of any other kind.
	Parts []part
	Note  string
	Body  template.HTML // compaction: the rendered summary
}

type part struct {
	Type  string        // text, markdown, reasoning, tool, image, other
	Text  string        // text, reasoning, other; image: the media type
	HTML  template.HTML // markdown
	Tool  *toolView
	Image template.URL // a validated data: URL
}

// toolView is one tool call with its result.
type toolView struct {
	Name    string
	Args    []arg
	Result  string
	Have    bool   // the result is in the branch
	Outcome string // completed, failed, denied, interrupted; "" when unrecorded
	Failed  bool
	Time    string // "1.2 s"; "" when unrecorded
	Lines   int
	Long    bool       // folded
	Diff    []diffLine // edit: old → new
}

// editDiff replaces an edit call's old and new arguments, both text, by
// their diff.
func editDiff(args []arg) ([]arg, []diffLine) {
	var old, new *arg
	for i := range args {
		switch args[i].Key {
		case "old":
			old = &args[i]
		case "new":
			new = &args[i]
		}
	}
	if old == nil || new == nil {
		return args, nil
	}
	d := lineDiff(old.Text, new.Text)
	var rest []arg
	for _, a := range args {
		if a.Key != "old" && a.Key != "new" {
			rest = append(rest, a)
		}
	}
	return rest, d
}

// arg is one argument: text is shown as is (a command as its command line,
// not as escaped JSON), other values as indented JSON.
type arg struct {
	Key   string
	Text  string
	Block bool          // shown as a <pre>
	Code  template.HTML // a highlighted command
}

// Results longer than this are folded.
const (
	foldLines = 12
	foldChars = 1500
)

// result is where a call's result is: the branch index of its tool
// message, whose text the exporter decodes when it shows the call, so
// that no copy of every result is held at once.
type result struct {
	entry  int
	failed bool
	run    *ToolRun
}

// callKey names one tool call: the branch index of the assistant message
// that made it, and its id. Ids alone repeat (a provider or the offline
// model numbers each answer's calls from call_0_0), so a result belongs to
// the call of that id in the last assistant message before it.
type callKey struct {
	entry int
	id    string
}

// toolResults maps each tool call of the branch to its result. A result
// with no such call in the assistant message before it is left out, and
// shows on its own.
func toolResults(branch []Entry) map[callKey]result {
	out := map[callKey]result{}
	owner, calls := -1, map[string]bool{}
	for i, e := range branch {
		if e.Type != TypeMessage {
			continue
		}
		m := decodeShape(e)
		if m.Role == "assistant" {
			owner, calls = i, map[string]bool{}
			for _, p := range m.Parts {
				if p.Type == "tool_call" {
					calls[p.ID] = true
				}
			}
			continue
		}
		if m.Role != "tool" {
			continue
		}
		for _, p := range m.Parts {
			if p.Type != "tool_result" || !calls[p.CallID] {
				continue
			}
			r := result{entry: i, failed: p.IsError}
			for i := range e.Runs {
				if e.Runs[i].CallID == p.CallID {
					r.run = &e.Runs[i]
				}
			}
			out[callKey{owner, p.CallID}] = r
			delete(calls, p.CallID) // a second result for the call stands alone
		}
	}
	return out
}

// exporter turns entries into items, pairing tool calls with results.
type exporter struct {
	branch  []Entry
	results map[callKey]result
	// dry counts without rendering: texts, markdown and arguments are left out.
	dry bool
	// msg is the tool message last decoded for its results, at branch index at.
	msg rawMessage
	at  int
	// owner is the branch index of the last assistant message, whose calls
	// the results that follow it answer; shown the results already paired.
	owner int
	shown map[callKey]bool
}

func (x *exporter) item(i int, e Entry) (item, bool) {
	it := item{Time: e.Time}
	switch e.Type {
	case TypeMessage:
		return x.message(i, e)
	case TypeSettings:
		it.Kind, it.Note = "note", fmt.Sprintf("model %s, effort %s from here", e.Model, e.Effort)
	case TypeCompaction:
		it.Kind, it.Note = "compaction", fmt.Sprintf("earlier conversation compacted (%d tokens before)", e.Tokens)
		it.Body = renderMarkdown(Redact(e.Summary))
	case TypeName:
		it.Kind, it.Note = "note", "named "+Redact(e.Name)
	case TypeTitle:
		return it, false // the page's title
	case TypeInterrupted:
		it.Kind, it.Note = "interrupted", "turn interrupted"
	case TypeError:
		it.Kind, it.Note = "error", Redact(e.Error)
	case TypeShell:
		return shellItem(e), e.Shell != nil
	case TypeAttempt:
		n := 0
		if e.Call != nil {
			n = e.Call.Attempts
		}
		it.Kind, it.Note = "note", fmt.Sprintf("attempt %d failed, retried: %s", n, Redact(e.Error))
	default:
		it.Kind, it.Note = "note", "entry "+e.Type
	}
	return it, true
}

type rawMessage struct {
	Role  string
	Parts []rawPart
}

type rawPart struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	CallID    string          `json:"call_id"`
	IsError   bool            `json:"is_error"`
	MediaType string          `json:"media_type"`
	Data      string          `json:"data"`
}

func decodeMessage(e Entry) (rawMessage, bool) {
	var m rawMessage
	if e.Type != TypeMessage {
		return m, false
	}
	var msg struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(e.Message, &msg) != nil {
		return m, false
	}
	m.Role = msg.Role
	var s string
	if json.Unmarshal(msg.Content, &s) == nil {
		m.Parts = []rawPart{{Type: "text", Text: s}}
		return m, true
	}
	json.Unmarshal(msg.Content, &m.Parts)
	return m, true
}

// decodeShape is decodeMessage without the parts' texts, arguments and
// data, all a count needs: decoding them is most of an export's work.
func decodeShape(e Entry) rawMessage {
	var msg struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(e.Message, &msg) != nil {
		return rawMessage{}
	}
	m := rawMessage{Role: msg.Role}
	if len(msg.Content) > 0 && msg.Content[0] == '"' {
		m.Parts = []rawPart{{Type: "text"}}
		return m
	}
	var parts []struct {
		Type    string `json:"type"`
		ID      string `json:"id"`
		CallID  string `json:"call_id"`
		IsError bool   `json:"is_error"`
	}
	json.Unmarshal(msg.Content, &parts)
	m.Parts = make([]rawPart, len(parts))
	for i, p := range parts {
		m.Parts[i] = rawPart{Type: p.Type, ID: p.ID, CallID: p.CallID, IsError: p.IsError}
	}
	return m
}

var base64Data = regexp.MustCompile(`^[A-Za-z0-9+/]*={0,2}$`)

func (x *exporter) message(i int, e Entry) (item, bool) {
	var m rawMessage
	switch {
	case x.dry:
		m = decodeShape(e)
	case x.at == i && x.msg.Parts != nil: // a tool message resultText decoded
		m = x.msg
	default:
		m, _ = decodeMessage(e)
	}
	it := item{Kind: "message", Role: m.Role, Time: e.Time, Call: e.Call}
	if m.Role == "assistant" {
		x.owner, x.shown = i, map[callKey]bool{}
	}
	for _, p := range m.Parts {
		switch p.Type {
		case "text":
			if x.dry {
				it.Parts = append(it.Parts, part{Type: "text"})
			} else if m.Role == "assistant" {
				it.Parts = append(it.Parts, part{Type: "markdown", HTML: renderMarkdown(Redact(p.Text))})
			} else {
				it.Parts = append(it.Parts, part{Type: "text", Text: Redact(p.Text)})
			}
		case "reasoning":
			if !x.dry {
				p.Text = Redact(p.Text)
			}
			it.Parts = append(it.Parts, part{Type: "reasoning", Text: p.Text})
		case "tool_call":
			it.Parts = append(it.Parts, part{Type: "tool", Tool: x.tool(callKey{i, p.ID}, p.Name, p.Arguments)})
		case "tool_result":
			// Shown with its call; a result whose call is not on the
			// branch stands alone.
			if k := (callKey{x.owner, p.CallID}); x.shown[k] {
				delete(x.shown, k)
				continue
			}
			if !x.dry {
				p.Text = Redact(p.Text)
			}
			it.Parts = append(it.Parts, part{Type: "tool", Tool: orphan(p.Text, p.IsError)})
		case "image":
			pt := part{Type: "image", Text: p.MediaType}
			switch p.MediaType {
			case "image/png", "image/jpeg", "image/gif", "image/webp":
				// Only a known image type with plain base64 may become a URL.
				if base64Data.MatchString(p.Data) {
					pt.Image = template.URL("data:" + p.MediaType + ";base64," + p.Data)
				}
			}
			it.Parts = append(it.Parts, pt)
		default:
			it.Parts = append(it.Parts, part{Type: "other", Text: p.Type})
		}
	}
	// A tool message whose results all show with their calls shows nothing.
	return it, m.Role != "tool" || len(it.Parts) > 0
}

func (x *exporter) tool(k callKey, name string, args json.RawMessage) *toolView {
	v := &toolView{Name: name}
	if !x.dry {
		v.Args = formatArgs(name, args)
	}
	if name == "edit" {
		v.Args, v.Diff = editDiff(v.Args)
	}
	r, ok := x.results[k]
	if !ok {
		return v
	}
	x.shown[k] = true
	v.Have, v.Failed = true, r.failed
	if !x.dry {
		v.Result = x.resultText(r.entry, k.id)
	}
	if r.run != nil {
		v.Outcome = r.run.Outcome
		v.Time = duration(r.run.DurationMS)
	}
	v.Lines, v.Long = fold(v.Result)
	return v
}

// resultText is the redacted text of the first result for call id in the
// tool message at branch index i (toolResults pairs that one).
func (x *exporter) resultText(i int, id string) string {
	if x.msg.Parts == nil || x.at != i {
		x.msg, _ = decodeMessage(x.branch[i])
		x.at = i
	}
	for _, p := range x.msg.Parts {
		if p.Type == "tool_result" && p.CallID == id {
			return Redact(p.Text)
		}
	}
	return ""
}

// shellItem shows a user's shell command (session.shell, pi's bash) as a
// call of its own: the command highlighted, how it ended, its output.
func shellItem(e Entry) item {
	r := e.Shell
	args, _ := json.Marshal(map[string]string{"command": Redact(r.Command)})
	v := &toolView{Name: "shell", Args: formatArgs("bash", args), Have: true, Result: Redact(r.Output)}
	var ended string
	switch {
	case r.Cancelled:
		v.Outcome = "interrupted"
	case r.TimedOut:
		v.Outcome, v.Failed, ended = "failed", true, "timed out"
	case r.ExitCode == nil:
		v.Outcome, v.Failed, ended = "failed", true, "killed"
	case *r.ExitCode != 0:
		v.Outcome, v.Failed, ended = "failed", true, fmt.Sprintf("exit status %d", *r.ExitCode)
	default:
		v.Outcome = "completed"
	}
	v.Lines, v.Long = fold(v.Result)
	it := item{Kind: "message", Role: "shell", Time: e.Time, Parts: []part{{Type: "tool", Tool: v}}}
	if ended != "" {
		it.Parts = append(it.Parts, part{Type: "other", Text: ended})
	}
	if r.Exclude {
		it.Parts = append(it.Parts, part{Type: "other", Text: "kept out of the model's context"})
	}
	return it
}

func orphan(text string, failed bool) *toolView {
	v := &toolView{Name: "result", Have: true, Result: text, Failed: failed}
	v.Lines, v.Long = fold(text)
	return v
}

// fold counts text's lines and says whether it is long enough to fold.
func fold(text string) (lines int, long bool) {
	lines = strings.Count(strings.TrimSuffix(text, "\n"), "\n") + 1
	return lines, lines > foldLines || len(text) > foldChars
}

// formatArgs lists an arguments object's members in their order.
func formatArgs(tool string, raw json.RawMessage) []arg {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return []arg{{Key: "arguments", Text: string(raw), Block: true}}
	}
	var out []arg
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			break
		}
		key, _ := t.(string)
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			break
		}
		a := arg{Key: key}
		var s string
		if json.Unmarshal(v, &s) == nil {
			a.Text = Redact(s)
		} else {
			a.Text = Redact(indentJSON(v))
		}
		a.Block = strings.Contains(a.Text, "\n") || len(a.Text) > 80
		if tool == "bash" && key == "command" {
			a.Code = highlight(a.Text, "bash")
		}
		out = append(out, a)
	}
	return out
}

// indentJSON indents v without escaping <, > and & (they are escaped once,
// by the template).
func indentJSON(v json.RawMessage) string {
	var x any
	if json.Unmarshal(v, &x) != nil {
		return string(v)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	enc.Encode(x)
	return strings.TrimSuffix(b.String(), "\n")
}

func duration(ms int64) string {
	if ms < 1000 {
		return fmt.Sprintf("%d ms", ms)
	}
	return fmt.Sprintf("%.1f s", float64(ms)/1000)
}

func addUsage(a, b Usage) Usage {
	return Usage{a.Input + b.Input, a.Output + b.Output, a.CacheRead + b.CacheRead,
		a.CacheWrite5m + b.CacheWrite5m, a.CacheWrite1h + b.CacheWrite1h, a.Reasoning + b.Reasoning}
}

var exportTmpl = template.Must(template.New("page").Funcs(template.FuncMap{
	"clock":    func(t time.Time) string { return t.UTC().Format("15:04:05") },
	"stamp":    func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"duration": duration,
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src data:; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<meta name="generator" content="e">
<title>{{.Title}}</title>
<style>
/* Colours are variables, so the dark scheme below is one list of values. */
:root{color-scheme:light dark;--fg:#1d1d1f;--bg:#fff;--muted:#666;--soft:#444;--line:#ddd;--faint:#eee;--panel:#f6f8fa;--th:#f6f6f6;--code:#f0f0f0;
--user:#2f6fde;--user-bg:#f5f8fe;--asst:#2a9d55;--tool:#999;--fail-line:#e5a3a3;--fail-bg:#fffafa;--fail-pre:#fdecec;--fail-fg:#7a1212;
--ok-badge:#e6f4ea;--ok-fg:#1e6b34;--bad-badge:#fde8e8;--bad-fg:#a61b1b;--warn-badge:#fff1d6;--warn-fg:#8a5a00;--warn-line:#e0b050;
--add-bg:#dafbe1;--add-fg:#116329;--del-bg:#ffebe9;--del-fg:#82071e}
@media (prefers-color-scheme: dark){:root{--fg:#e6edf3;--bg:#0d1117;--muted:#8b949e;--soft:#c9d1d9;--line:#30363d;--faint:#21262d;--panel:#161b22;--th:#161b22;--code:#262c36;
--user:#4c8dff;--user-bg:#111a2b;--asst:#3fb950;--tool:#6e7681;--fail-line:#8e3b3b;--fail-bg:#1c1112;--fail-pre:#2a1416;--fail-fg:#ffb3ad;
--ok-badge:#12361f;--ok-fg:#7ee787;--bad-badge:#3d1417;--bad-fg:#ff9b93;--warn-badge:#3a2a0a;--warn-fg:#e3b341;--warn-line:#9e7a20;
--add-bg:#033a16;--add-fg:#aff5b4;--del-bg:#67060c;--del-fg:#ffdcd7}}
body{font:15px/1.55 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:var(--fg);background:var(--bg)}
a{color:var(--user)}
h1{font-size:1.5rem;margin:0 0 .5rem}
header{border-bottom:1px solid var(--line);padding-bottom:1rem;margin-bottom:1.5rem}
header dl{display:grid;grid-template-columns:max-content 1fr;gap:.15rem 1rem;margin:0;font-size:13px}
header dt{color:var(--muted)}header dd{margin:0}
table.usage{border-collapse:collapse;font-size:13px;margin-top:.75rem}
table.usage th,table.usage td{border:1px solid var(--line);padding:.2rem .6rem;text-align:right}
table.usage th{background:var(--th);font-weight:600}
.msg{border-left:4px solid var(--line);margin:1rem 0;padding:.25rem 1rem}
.user{border-color:var(--user);background:var(--user-bg)}.assistant{border-color:var(--asst)}.tool{border-color:var(--tool)}
.meta{font-size:12px;color:var(--muted);display:flex;gap:.75rem;align-items:baseline}
.role{font-weight:600;text-transform:uppercase;color:var(--soft)}
pre{white-space:pre-wrap;word-wrap:break-word;margin:.4rem 0;font:13px/1.4 ui-monospace,SFMono-Regular,Menlo,monospace;background:var(--panel);padding:.5rem;border-radius:4px}
code{font:13px ui-monospace,SFMono-Regular,Menlo,monospace;background:var(--code);padding:0 .2rem;border-radius:3px}
pre code{background:none;padding:0}
.text{white-space:pre-wrap}
.call{border:1px solid var(--line);border-radius:6px;margin:.6rem 0;padding:.4rem .7rem}
.call.failed{border-color:var(--fail-line);background:var(--fail-bg)}
.call .head{font-size:13px;display:flex;gap:.6rem;align-items:baseline}
.call .name{font-weight:600;font-family:ui-monospace,monospace}
.badge{font-size:11px;padding:0 .4rem;border-radius:8px;background:var(--ok-badge);color:var(--ok-fg)}
.badge.failed,.badge.denied{background:var(--bad-badge);color:var(--bad-fg)}.badge.interrupted{background:var(--warn-badge);color:var(--warn-fg)}
.args{font-size:13px;margin:.3rem 0}.args .key{color:var(--muted);font-family:ui-monospace,monospace}
.result pre{background:var(--panel);border:1px solid var(--faint)}
.failed .result pre{background:var(--fail-pre)}
pre.diff{padding:.3rem 0}pre.diff span{display:block;padding:0 .5rem}
pre.diff .add{background:var(--add-bg);color:var(--add-fg)}pre.diff .del{background:var(--del-bg);color:var(--del-fg)}
.marker{color:var(--muted);font-size:13px;margin:1.2rem 0;text-align:center;border-top:1px dashed var(--line);padding-top:.4rem}
.marker.interrupted{color:var(--warn-fg);border-color:var(--warn-line)}
.error{border:1px solid var(--fail-line);background:var(--fail-pre);color:var(--fail-fg);padding:.5rem .8rem;border-radius:6px;margin:1rem 0;font-size:14px}
details{margin:.4rem 0}summary{cursor:pointer;color:var(--muted);font-size:13px}
.img{color:var(--muted)}img{max-width:100%}
table{border-collapse:collapse}td,th{border:1px solid var(--line);padding:.2rem .5rem}
{{.CSS}}
</style>
</head>
<body>
<header>
<h1>{{.Title}}</h1>
<dl>
<dt>session</dt><dd>{{.Header.ID}}</dd>
<dt>directory</dt><dd>{{.Header.Cwd}}</dd>
<dt>created</dt><dd>{{.Header.Created.UTC.Format "2006-01-02 15:04:05 UTC"}}</dd>
<dt>model</dt><dd>{{.Header.Model}}{{range .Models}}{{if ne . $.Header.Model}} · {{.}}{{end}}{{end}}</dd>
<dt>effort</dt><dd>{{if .Header.Effort}}{{.Header.Effort}}{{else}}none{{end}}</dd>
<dt>turns</dt><dd>{{.Prompts}} prompts · {{.Calls}} model calls · {{.Tools}} tool calls{{if .Failures}} ({{.Failures}} failed){{end}}</dd>
<dt>cost</dt><dd>{{if .Cost}}{{.Cost}}{{else}}unknown (no price for the model){{end}}</dd>
{{- if .Header.Parent}}
<dt>forked from</dt><dd>{{.Header.Parent}}</dd>
{{- end}}
</dl>
<table class="usage">
<tr><th>input</th><th>output</th><th>cache read</th><th>cache write 5m</th><th>cache write 1h</th></tr>
<tr><td>{{.Usage.Input}}</td><td>{{.Usage.Output}}</td><td>{{.Usage.CacheRead}}</td><td>{{.Usage.CacheWrite5m}}</td><td>{{.Usage.CacheWrite1h}}</td></tr>
</table>
</header>
<main>
{{- if .Header.Parent}}
<div class="marker fork">forked from {{.Header.Parent}}</div>
{{- end}}
{{- range .Items}}
{{- if eq .Kind "message"}}
<section class="msg {{.Role}}">
<div class="meta"><span class="role">{{.Role}}</span><time datetime="{{stamp .Time}}">{{clock .Time}}</time>
{{- with .Call}}<span>{{.Model}} · {{duration .DurationMS}}{{if gt .Attempts 1}} · {{.Attempts}} attempts{{end}} · {{.Usage.Input}} in / {{.Usage.Output}} out</span>{{end}}</div>
{{- range .Parts}}
{{- if eq .Type "text"}}
<div class="text">{{.Text}}</div>
{{- else if eq .Type "markdown"}}
<div class="md">{{.HTML}}</div>
{{- else if eq .Type "reasoning"}}
<details><summary>reasoning</summary><div class="text">{{.Text}}</div></details>
{{- else if eq .Type "tool"}}
{{- with .Tool}}
<div class="call{{if .Failed}} failed{{end}}">
<div class="head"><span class="name">{{.Name}}</span>
{{- if .Outcome}}<span class="badge {{.Outcome}}">{{.Outcome}}</span>{{else if .Failed}}<span class="badge failed">failed</span>{{end}}
{{- if .Time}}<span>{{.Time}}</span>{{end}}</div>
{{- range .Args}}
{{- if .Code}}{{.Code}}
{{- else if .Block}}<div class="args"><span class="key">{{.Key}}</span><pre>{{.Text}}</pre></div>
{{- else}}<div class="args"><span class="key">{{.Key}}</span> {{.Text}}</div>{{end}}
{{- end}}
{{- if .Diff}}
<pre class="diff">{{range .Diff}}<span class="{{.Class}}">{{.Op}}{{.Text}}</span>{{end}}</pre>
{{- end}}
{{- if .Have}}
{{- if .Long}}
<details class="result"><summary>output, {{.Lines}} lines</summary><pre>{{.Result}}</pre></details>
{{- else}}
<div class="result"><pre>{{.Result}}</pre></div>
{{- end}}
{{- else}}
<div class="meta">no result</div>
{{- end}}
</div>
{{- end}}
{{- else if eq .Type "image"}}
{{- if .Image}}<img src="{{.Image}}" alt="{{.Text}}">{{else}}<div class="meta">[image {{.Text}} omitted]</div>{{end}}
{{- else}}
<div class="meta">[{{.Text}}]</div>
{{- end}}
{{- end}}
</section>
{{- else if eq .Kind "error"}}
<div class="error" role="alert"><b>error</b> <time datetime="{{stamp .Time}}">{{clock .Time}}</time><pre>{{.Note}}</pre></div>
{{- else if eq .Kind "compaction"}}
<div class="marker compaction">{{.Note}} · <time datetime="{{stamp .Time}}">{{clock .Time}}</time>
<details><summary>summary</summary><div class="md">{{.Body}}</div></details></div>
{{- else}}
<div class="marker {{.Kind}}">{{.Note}} · <time datetime="{{stamp .Time}}">{{clock .Time}}</time></div>
{{- end}}
{{- end}}
</main>
</body>
</html>
`))
