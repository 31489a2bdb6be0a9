package conformance

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// fileExpectation is one line of a case's files section: what the files
// a glob matches must be once the server has exited (spec/conformance.md,
// "The files section").
type fileExpectation struct {
	line        int
	raw         string
	Glob        string      `json:"glob"`
	Count       *int        `json:"count"`
	Mode        string      `json:"mode"`
	Contains    stringOrSet `json:"contains"`
	NotContains stringOrSet `json:"not_contains"`
}

// stringOrSet is a string or a list of strings.
type stringOrSet []string

func (s *stringOrSet) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*s = []string{one}
		return nil
	}
	var list []string
	if err := json.Unmarshal(b, &list); err != nil {
		return err
	}
	*s = list
	return nil
}

func parseFiles(f archiveFile) ([]*fileExpectation, error) {
	var out []*fileExpectation
	for i, line := range lines(f.data) {
		n := f.line + i
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		if err := validateSchema(schemaFile, []byte(t)); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		fe := &fileExpectation{line: n, raw: t}
		if err := json.Unmarshal([]byte(t), fe); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if _, err := path.Match(strings.ReplaceAll(fe.Glob, "**", "x"), ""); err != nil {
			return nil, fmt.Errorf("line %d: glob %q: %w", n, fe.Glob, err)
		}
		out = append(out, fe)
	}
	return out, nil
}

// checkFiles checks the files section against the tree under root. Bound
// placeholders ({{name}}) in globs, contains and not_contains are replaced
// first (in a glob, as literal text).
func checkFiles(exp []*fileExpectation, root string, bindings map[string]any) *Divergence {
	if len(exp) == 0 {
		return nil
	}
	var all []string // every regular file, slash-separated, relative to root
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			rel, _ := filepath.Rel(root, p)
			all = append(all, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		return &Divergence{Step: "files", Message: "walking the case's directories: " + err.Error()}
	}
	sort.Strings(all)
	for _, fe := range exp {
		step := fmt.Sprintf("files line %d", fe.line)
		glob := placeholderRE.ReplaceAllStringFunc(fe.Glob, func(p string) string {
			return globEscaper.Replace(expandPlaceholders(p, bindings))
		})
		var matched []string
		for _, rel := range all {
			if globMatch(strings.Split(glob, "/"), strings.Split(rel, "/")) {
				matched = append(matched, rel)
			}
		}
		switch {
		case fe.Count != nil && len(matched) != *fe.Count:
			return &Divergence{Step: step, Message: fmt.Sprintf("%d files match %s, want %d", len(matched), glob, *fe.Count),
				Expected: fe.raw, Got: strings.Join(matched, " ")}
		case fe.Count == nil && len(matched) == 0:
			return &Divergence{Step: step, Message: "no file matches " + glob, Expected: fe.raw, Got: "(none)"}
		}
		for _, rel := range matched {
			if div := checkFile(fe, step, root, rel, bindings); div != nil {
				return div
			}
		}
	}
	return nil
}

func checkFile(fe *fileExpectation, step, root, rel string, bindings map[string]any) *Divergence {
	p := filepath.Join(root, filepath.FromSlash(rel))
	if fe.Mode != "" {
		want, _ := strconv.ParseUint(fe.Mode, 8, 32)
		st, err := os.Stat(p)
		if err != nil {
			return &Divergence{Step: step, Message: err.Error()}
		}
		if got := st.Mode().Perm(); uint64(got) != want {
			return &Divergence{Step: step, Message: fmt.Sprintf("%s has mode %04o, want %s", rel, got, fe.Mode), Expected: fe.raw}
		}
	}
	if len(fe.Contains) == 0 && len(fe.NotContains) == 0 {
		return nil
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return &Divergence{Step: step, Message: err.Error()}
	}
	for _, s := range fe.Contains {
		s = expandPlaceholders(s, bindings)
		if !strings.Contains(string(data), s) {
			return &Divergence{Step: step, Message: fmt.Sprintf("%s does not contain %q", rel, s), Expected: fe.raw, Got: shorten(string(data))}
		}
	}
	for _, s := range fe.NotContains {
		s = expandPlaceholders(s, bindings)
		if i := strings.Index(string(data), s); i >= 0 {
			from := max(0, i-60)
			return &Divergence{Step: step, Message: fmt.Sprintf("%s contains %q", rel, s), Expected: fe.raw,
				Got: shorten(string(data[from:min(len(data), i+len(s)+60)]))}
		}
	}
	return nil
}

// globMatch matches a slash-split path against a slash-split pattern whose
// elements are path.Match patterns, "**" standing for any number of
// directories (none included).
func globMatch(pat, name []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for i := 0; i <= len(name); i++ {
				if globMatch(pat[1:], name[i:]) {
					return true
				}
			}
			return false
		}
		if len(name) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], name[0]); !ok {
			return false
		}
		pat, name = pat[1:], name[1:]
	}
	return len(name) == 0
}

var globEscaper = strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`)

// expandPlaceholders replaces each bound {{name}} in s by its string.
func expandPlaceholders(s string, bindings map[string]any) string {
	return placeholderRE.ReplaceAllStringFunc(s, func(p string) string {
		v, ok := bindings[p[2:len(p)-2]]
		if !ok {
			return p
		}
		return inString(v)
	})
}
