package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"path/filepath"
	"regexp"
	"strings"
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

// ExportHTML writes branch as one self-contained HTML page (M13): inline
// style, no script, no external asset (a CSP forbids fetching any), every
// text escaped by html/template.
func ExportHTML(w io.Writer, title string, h Header, branch []Entry) error {
	page := exportPage{Title: Redact(title), Header: h}
	for _, e := range branch {
		it := exportItem(e)
		// Secrets never reach a file (U3): the page shows them redacted.
		it.Note, it.Body = Redact(it.Note), Redact(it.Body)
		for i := range it.Parts {
			it.Parts[i].Text = Redact(it.Parts[i].Text)
		}
		page.Items = append(page.Items, it)
	}
	if err := exportTmpl.Execute(w, page); err != nil {
		return fmt.Errorf("store: export: %w", err)
	}
	return nil
}

type exportPage struct {
	Title  string
	Header Header
	Items  []item
}

// item is one entry as shown: a message with its parts, or a note.
type item struct {
	Kind  string // "message" or "note"
	Role  string
	Parts []part
	Note  string
	Body  string // compaction summary
}

type part struct {
	Type    string // text, reasoning, tool_call, tool_result, image, other
	Text    string
	Name    string
	IsError bool
	Image   template.URL // a validated data: URL
}

func exportItem(e Entry) item {
	switch e.Type {
	case TypeMessage:
		return messageItem(e.Message)
	case TypeSettings:
		return item{Kind: "note", Note: fmt.Sprintf("model %s, effort %s", e.Model, e.Effort)}
	case TypeCompaction:
		return item{Kind: "note", Note: fmt.Sprintf("earlier conversation compacted (%d tokens before)", e.Tokens), Body: e.Summary}
	case TypeName:
		return item{Kind: "note", Note: "named " + e.Name}
	case TypeTitle:
		return item{Kind: "note", Note: "titled " + e.Name}
	case TypeInterrupted:
		return item{Kind: "note", Note: "turn interrupted"}
	}
	return item{Kind: "note", Note: "entry " + e.Type}
}

var base64Data = regexp.MustCompile(`^[A-Za-z0-9+/]*={0,2}$`)

func messageItem(m json.RawMessage) item {
	var msg struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	json.Unmarshal(m, &msg)
	it := item{Kind: "message", Role: msg.Role}
	var s string
	if json.Unmarshal(msg.Content, &s) == nil {
		it.Parts = []part{{Type: "text", Text: s}}
		return it
	}
	var parts []struct {
		Type      string          `json:"type"`
		Text      string          `json:"text"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		IsError   bool            `json:"is_error"`
		MediaType string          `json:"media_type"`
		Data      string          `json:"data"`
	}
	json.Unmarshal(msg.Content, &parts)
	for _, p := range parts {
		switch p.Type {
		case "text", "reasoning":
			it.Parts = append(it.Parts, part{Type: p.Type, Text: p.Text})
		case "tool_call":
			var args bytes.Buffer
			if json.Indent(&args, p.Arguments, "", "  ") != nil {
				args.Reset()
				args.Write(p.Arguments)
			}
			it.Parts = append(it.Parts, part{Type: "tool_call", Name: p.Name, Text: args.String()})
		case "tool_result":
			it.Parts = append(it.Parts, part{Type: "tool_result", Text: p.Text, IsError: p.IsError})
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
	return it
}

var exportTmpl = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src data:; style-src 'unsafe-inline'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="e">
<title>{{.Title}}</title>
<style>
body{font:15px/1.5 system-ui,sans-serif;max-width:56rem;margin:2rem auto;padding:0 1rem;color:#1d1d1f;background:#fff}
header p{color:#666;font-size:13px}
.msg{border-left:4px solid #ccc;margin:1rem 0;padding:.25rem 1rem}
.user{border-color:#2f6fde}.assistant{border-color:#2a9d55}.tool{border-color:#999}
.role{font-weight:600;font-size:13px;text-transform:uppercase;color:#555}
pre{white-space:pre-wrap;word-wrap:break-word;margin:.5rem 0;font:13px/1.4 ui-monospace,monospace;background:#f6f6f6;padding:.5rem}
.text{white-space:pre-wrap}
.error pre{background:#fdecec}
.note{color:#666;font-size:13px;margin:1rem 0;text-align:center}
details{margin:.5rem 0;color:#555}
img{max-width:100%}
</style>
</head>
<body>
<header>
<h1>{{.Title}}</h1>
<p>session {{.Header.ID}} · {{.Header.Cwd}} · {{.Header.Model}} ({{.Header.Effort}}) · {{.Header.Created.Format "2006-01-02 15:04 MST"}}</p>
</header>
<main>
{{- range .Items}}
{{- if eq .Kind "message"}}
<section class="msg {{.Role}}">
<div class="role">{{.Role}}</div>
{{- range .Parts}}
{{- if eq .Type "text"}}
<div class="text">{{.Text}}</div>
{{- else if eq .Type "reasoning"}}
<details><summary>reasoning</summary><div class="text">{{.Text}}</div></details>
{{- else if eq .Type "tool_call"}}
<div class="call">tool call <b>{{.Name}}</b><pre>{{.Text}}</pre></div>
{{- else if eq .Type "tool_result"}}
<div class="result{{if .IsError}} error{{end}}">{{if .IsError}}tool error{{else}}tool result{{end}}<pre>{{.Text}}</pre></div>
{{- else if eq .Type "image"}}
{{- if .Image}}<img src="{{.Image}}" alt="{{.Text}}">{{else}}<div class="note">[image {{.Text}} omitted]</div>{{end}}
{{- else}}
<div class="note">[{{.Text}}]</div>
{{- end}}
{{- end}}
</section>
{{- else}}
<div class="note">{{.Note}}{{if .Body}}<pre>{{.Body}}</pre>{{end}}</div>
{{- end}}
{{- end}}
</main>
</body>
</html>
`))
