package pi

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/e-agent/e/internal/regfile"
)

// Template is one of pi's prompt templates (prompt-templates.md): a
// Markdown file whose name, without .md, is a "/name args" command that
// expands to its body.
type Template struct {
	Name        string
	Description string // the front matter's, else the body's first non-empty line (60 characters, then "...")
	Content     string // the body, front matter removed
	Path        string
	Scope       string // "user" (the config dir's prompts/) or "project" (cwd/.pi/prompts/)
	BaseDir     string
}

// LoadTemplates reads the templates pi loads by default: the direct .md
// children of agentDir/prompts, then, when project is set (pi loads them
// only for a trusted project), those of cwd/.pi/prompts. A file that
// cannot be read is skipped.
func LoadTemplates(agentDir, cwd string, project bool) []Template {
	out := loadTemplateDir(filepath.Join(agentDir, "prompts"), "user", agentDir)
	if project {
		out = append(out, loadTemplateDir(filepath.Join(cwd, ".pi", "prompts"), "project", filepath.Join(cwd, ".pi"))...)
	}
	return out
}

func loadTemplateDir(dir, scope, base string) []Template {
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []Template
	for _, de := range des {
		path := filepath.Join(dir, de.Name())
		if !strings.HasSuffix(de.Name(), ".md") {
			continue
		}
		if st, err := os.Stat(path); err != nil || !st.Mode().IsRegular() { // a symlink counts when it names a file
			continue
		}
		data, err := regfile.ReadFile(path, maxConfigBytes)
		if err != nil {
			continue
		}
		t := parseTemplate(string(data))
		t.Name, t.Path, t.Scope, t.BaseDir = strings.TrimSuffix(de.Name(), ".md"), path, scope, base
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// parseTemplate splits a template file into its front matter's
// description and its body, as pi does: line ends normalised, a leading
// "---" line up to the next "\n---" is the front matter, the body after
// it trimmed. Only the front matter's "description: VALUE" line is read
// (a plain or quoted scalar).
func parseTemplate(data string) Template {
	data = strings.TrimPrefix(data, "\uFEFF")
	data = strings.ReplaceAll(strings.ReplaceAll(data, "\r\n", "\n"), "\r", "\n")
	var t Template
	body := data
	if strings.HasPrefix(data, "---") {
		if end := strings.Index(data[3:], "\n---"); end >= 0 {
			front := data[min(4, 3+end) : 3+end]
			body = strings.TrimSpace(data[3+end+4:])
			sc := bufio.NewScanner(strings.NewReader(front))
			for sc.Scan() {
				if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "description" {
					t.Description = yamlScalar(strings.TrimSpace(v))
				}
			}
		}
	}
	t.Content = body
	if t.Description == "" {
		for _, line := range strings.Split(body, "\n") {
			if strings.TrimSpace(line) == "" {
				continue
			}
			t.Description = line
			if utf8.RuneCountInString(line) > 60 {
				t.Description = string([]rune(line)[:60]) + "..."
			}
			break
		}
	}
	return t
}

// yamlScalar is a one-line YAML scalar's value: quotes removed.
func yamlScalar(v string) string {
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		if s, err := strconv.Unquote(v); err == nil {
			return s
		}
	}
	if len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\'' {
		return strings.ReplaceAll(v[1:len(v)-1], "''", "'")
	}
	return v
}

// commandLine is a "/name args" prompt.
var commandLine = regexp.MustCompile(`^/(\S+)(?:\s+([\s\S]*))?$`)

// Expand returns text with the template it names expanded ("/name args"
// with args substituted), or text unchanged when it names none.
func Expand(text string, templates []Template) string {
	m := commandLine.FindStringSubmatch(text)
	if m == nil {
		return text
	}
	for _, t := range templates {
		if t.Name == m[1] {
			return substituteArgs(t.Content, parseArgs(m[2]))
		}
	}
	return text
}

// parseArgs splits a command's arguments as pi does: on white space, with
// '…' or "…" quoting an argument only where one starts (so "doesn't"
// stays a word), a backslash before the open quote's character keeping
// it, an unclosed quote kept as text, and an empty quoted argument kept.
func parseArgs(s string) []string {
	rs := []rune(s)
	var args []string
	var cur strings.Builder
	has := false
	var quote rune
	quoteAt := 0
	for i := 0; i < len(rs); i++ {
		c := rs[i]
		switch {
		case quote != 0:
			switch {
			case c == '\\' && i+1 < len(rs) && rs[i+1] == quote:
				cur.WriteRune(quote)
				i++
			case c == quote:
				quote = 0
			default:
				cur.WriteRune(c)
			}
		case (c == '"' || c == '\'') && !has:
			quote, quoteAt, has = c, i, true
		case unicode.IsSpace(c):
			if has {
				args = append(args, cur.String())
				cur.Reset()
				has = false
			}
		default:
			cur.WriteRune(c)
			has = true
		}
		if quote != 0 && i == len(rs)-1 {
			// Unclosed: the quote is text, and what follows it is read again.
			quote = 0
			cur.Reset()
			cur.WriteRune(rs[quoteAt])
			i = quoteAt
		}
	}
	if has {
		args = append(args, cur.String())
	}
	return args
}

// placeholder matches pi's argument placeholders: ${N:-default},
// ${@:-default} (and ARGUMENTS), ${@:N}, ${@:N:L}, $N, $@, $ARGUMENTS.
var placeholder = regexp.MustCompile(`\$\{(\d+|ARGUMENTS|@):-([^}]*)\}|\$\{@:(\d+)(?::(\d+))?\}|\$(ARGUMENTS|@|\d+)`)

// substituteArgs fills content's placeholders from args, in one pass (a
// value holding a placeholder is not substituted again).
func substituteArgs(content string, args []string) string {
	all := strings.Join(args, " ")
	arg := func(n string) string {
		i, err := strconv.Atoi(n)
		if err != nil || i < 1 || i > len(args) {
			return ""
		}
		return args[i-1]
	}
	return placeholder.ReplaceAllStringFunc(content, func(match string) string {
		m := placeholder.FindStringSubmatch(match)
		switch {
		case m[1] != "":
			v := all
			if m[1] != "@" && m[1] != "ARGUMENTS" {
				v = arg(m[1])
			}
			if v == "" {
				return m[2]
			}
			return v
		case m[3] != "":
			start, _ := strconv.Atoi(m[3])
			start = max(start-1, 0) // ${@:0} is ${@:1}, as in bash
			if start > len(args) {
				return ""
			}
			rest := args[start:]
			if m[4] != "" {
				n, _ := strconv.Atoi(m[4])
				rest = rest[:min(n, len(rest))]
			}
			return strings.Join(rest, " ")
		case m[5] == "@" || m[5] == "ARGUMENTS":
			return all
		}
		return arg(m[5])
	})
}
