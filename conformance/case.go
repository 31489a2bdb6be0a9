package conformance

import (
	"bufio"
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Case is one golden case: a txtar file with a case.json header, fixture
// files under cwd/ and home/, the client script, the expected server lines
// and the model tape. spec/conformance.md describes the format.
type Case struct {
	ID           string            `json:"id"`
	Level        string            `json:"level"` // MUST, SHOULD or MAY
	Requirements []string          `json:"requirements"`
	TimeoutMS    int               `json:"timeout_ms,omitempty"`
	ServerArgs   []string          `json:"server_args,omitempty"`
	Model        string            `json:"model,omitempty"`
	Strict       bool              `json:"strict,omitempty"`
	Exit         string            `json:"exit,omitempty"`
	Stderr       []string          `json:"stderr,omitempty"`
	Env          map[string]string `json:"env,omitempty"`
	Skip         string            `json:"skip,omitempty"`
	Requires     []string          `json:"requires,omitempty"`  // commands the case's fixtures run, e.g. "python3"
	Untrusted    bool              `json:"untrusted,omitempty"` // do not run "e trust CWD" first (cases about trust, C9)
	Dialect      string            `json:"dialect,omitempty"`   // the front end spoken: "e-rpc" (default), "pi-rpc", "acp"
	Mode         string            `json:"mode,omitempty"`      // "rpc" (default) or "print"
	Args         []string          `json:"args,omitempty"`      // print mode: the arguments replacing "rpc"

	File        string `json:"-"` // the txtar file it was loaded from
	Description string `json:"-"` // the txtar comment

	files  []archiveFile // cwd/… and home/… fixtures
	client []step
	expect []*expectation
	tape   []tapeEntry

	stdin    []byte         // print mode: the piped stdin
	stdout   *string        // print mode: the exact text stdout must be
	stdoutRE *regexp.Regexp // print mode: stdout must match
	stderrRE *regexp.Regexp // stderr must match
	fileExp  []*fileExpectation
}

// printMode reports whether c runs e -p rather than e rpc.
func (c *Case) printMode() bool { return c.Mode == "print" }

// jsonOutput reports whether a print case's stdout is JSON lines, matched
// by its expect section.
func (c *Case) jsonOutput() bool { return c.printMode() && c.expect != nil }

// step is one line of the client section.
type step struct {
	line   int    // line in the case file
	kind   string // "send", "raw", "pad", "wait", "close", "exit", "signal"
	text   []byte // send: the line without LF; raw: exact bytes; pad: the template
	size   int    // pad: total line length without LF
	labels []string
}

// expectation is one expected server line.
type expectation struct {
	line   int
	label  string
	raw    string
	value  map[string]any
	stream string // the dialect's classify names it
	event  bool
	// optional lines ("? {…}") may be absent: one the next line of its
	// stream does not match is skipped.
	optional bool
	// repeat ("?* {…}"): optional, and it takes every line of its stream
	// that matches it, none included, until one matches the expectation
	// after it.
	repeat bool
	// float ("~ {…}"): required, but not in its stream's order: the first
	// line of its stream that matches it, whenever it comes, meets it (an
	// answer to a line that raced work, whose place the timing decides).
	float bool
}

//go:embed case.schema.json
var caseSchemaJSON []byte

// The schemas compiled from case.schema.json, by index.
const (
	schemaHeader = iota
	schemaTape
	schemaFile
)

var caseSchemas = sync.OnceValues(func() (*[3]*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(caseSchemaJSON))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	const id = "https://e-agent.dev/conformance/case.schema.json"
	if err := c.AddResource(id, doc); err != nil {
		return nil, err
	}
	header, err := c.Compile(id)
	if err != nil {
		return nil, err
	}
	tape, err := c.Compile(id + "#/$defs/tape")
	if err != nil {
		return nil, err
	}
	file, err := c.Compile(id + "#/$defs/file")
	if err != nil {
		return nil, err
	}
	return &[3]*jsonschema.Schema{header, tape, file}, nil
})

// CaseSchema returns the JSON Schema of the case.json header (its $defs
// hold the tape format).
func CaseSchema() []byte { return bytes.Clone(caseSchemaJSON) }

func validateSchema(which int, data []byte) error {
	s, err := caseSchemas()
	if err != nil {
		return fmt.Errorf("case schema: %w", err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return err
	}
	if err := s[which].Validate(inst); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			return errors.New(strings.ReplaceAll(strings.TrimSpace(fmt.Sprint(ve)), "\n", "; "))
		}
		return err
	}
	return nil
}

// LoadCase reads and checks one case file: the header against the case
// schema, the tape, every expectation's matchers, and the client's waits
// against the labels of the expectations.
func LoadCase(path string) (*Case, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("conformance: %w", err)
	}
	return loadCase(path, data)
}

func loadCase(path string, data []byte) (*Case, error) {
	c, err := parseCase(data)
	if err != nil {
		return nil, fmt.Errorf("conformance: %s: %w", path, err)
	}
	c.File = path
	if want := strings.TrimSuffix(filepath.Base(path), ".txtar"); c.ID != want {
		return nil, fmt.Errorf("conformance: %s: id %q must equal the file name %q", path, c.ID, want)
	}
	return c, nil
}

// LoadDir loads every *.txtar case of dir, sorted by id.
func LoadDir(dir string) ([]*Case, error) {
	return loadAll(os.DirFS(dir), dir)
}

// LoadFS loads every *.txtar case at the root of fsys (such as the cases
// embedded in e-conformance), sorted by id; name says where they come
// from, in errors and in each case's File.
func LoadFS(fsys fs.FS, name string) ([]*Case, error) {
	return loadAll(fsys, name)
}

func loadAll(fsys fs.FS, dir string) ([]*Case, error) {
	names, err := fs.Glob(fsys, "*.txtar")
	if err != nil {
		return nil, fmt.Errorf("conformance: %w", err)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("conformance: no *.txtar cases in %s", dir)
	}
	var cases []*Case
	var errs []error
	for _, n := range names {
		data, err := fs.ReadFile(fsys, n)
		if err != nil {
			errs = append(errs, fmt.Errorf("conformance: %w", err))
			continue
		}
		c, err := loadCase(filepath.Join(dir, n), data)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		cases = append(cases, c)
	}
	sort.Slice(cases, func(i, j int) bool { return cases[i].ID < cases[j].ID })
	return cases, errors.Join(errs...)
}

func parseCase(data []byte) (*Case, error) {
	a := parseArchive(data)
	c := &Case{Description: strings.TrimSpace(string(a.comment))}
	seen := map[string]bool{}
	for _, f := range a.files {
		if seen[f.name] {
			return nil, fmt.Errorf("section %q appears twice", f.name)
		}
		seen[f.name] = true
		var err error
		switch {
		case f.name == "case.json":
			if err = validateSchema(schemaHeader, f.data); err == nil {
				err = json.Unmarshal(f.data, c)
			}
		case f.name == "client":
			c.client, err = parseClient(f)
		case f.name == "expect":
			c.expect, err = parseExpect(f)
		case f.name == "tape.json":
			if err = validateSchema(schemaTape, f.data); err == nil {
				err = parseTape(f.data, &c.tape)
			}
		case f.name == "stdin":
			c.stdin = f.data
		case f.name == "stdout":
			s := string(f.data)
			c.stdout = &s
		case f.name == "stdout.re":
			c.stdoutRE, err = sectionRE(f.data)
		case f.name == "stderr.re":
			c.stderrRE, err = sectionRE(f.data)
		case f.name == "files":
			c.fileExp, err = parseFiles(f)
		case strings.HasPrefix(f.name, "cwd/") || strings.HasPrefix(f.name, "home/"):
			if !filepath.IsLocal(f.name) {
				err = errors.New("fixture path escapes its directory")
			}
			c.files = append(c.files, f)
		default:
			err = errors.New("unknown section (want case.json, client, expect, tape.json, stdin, stdout, stdout.re, stderr.re, files, cwd/…, home/…)")
		}
		if err != nil {
			return nil, fmt.Errorf("section %s: %w", f.name, err)
		}
	}
	if !seen["case.json"] {
		return nil, errors.New("missing case.json section")
	}
	if c.printMode() && c.Dialect == DialectACP {
		return nil, fmt.Errorf("case.json: a print case runs e -p (dialect %s) or e --mode json (%s); %s has none", DialectERPC, DialectPi, DialectACP)
	}
	d := dialectOf(c)
	for _, e := range c.expect {
		lc, err := d.classify(e.value, c, nil)
		if err != nil {
			return nil, fmt.Errorf("section expect: line %d: %w", e.line, err)
		}
		e.stream, e.event = lc.key, lc.event
	}
	if err := checkMode(c, seen); err != nil {
		return nil, err
	}
	known := map[string]bool{}
	for _, r := range Requirements() {
		known[r.ID] = true
	}
	for _, id := range c.Requirements {
		if !known[id] {
			return nil, fmt.Errorf("case.json: unknown requirement %s", id)
		}
	}
	labels := map[string]bool{}
	for _, e := range c.expect {
		if e.label == "" {
			continue
		}
		if labels[e.label] {
			return nil, fmt.Errorf("expect line %d: label @%s used twice", e.line, e.label)
		}
		labels[e.label] = true
	}
	for _, s := range c.client {
		for _, l := range s.labels {
			if !labels[l] {
				return nil, fmt.Errorf("client line %d: #wait %s: no expect line has that label", s.line, l)
			}
		}
	}
	return c, nil
}

// checkMode checks that the sections fit the case's mode: an rpc case is
// driven by its client section, a print case by its arguments and stdin.
func checkMode(c *Case, seen map[string]bool) error {
	if !c.printMode() {
		if c.Args != nil {
			return errors.New(`case.json: "args" is for print cases ("mode": "print"); an rpc case uses server_args`)
		}
		if !seen["client"] {
			return errors.New("missing client section")
		}
		for _, s := range []string{"stdin", "stdout", "stdout.re"} {
			if seen[s] {
				return fmt.Errorf("section %s is for print cases (\"mode\": \"print\")", s)
			}
		}
		return nil
	}
	if seen["client"] {
		return errors.New(`a print case has no client section: its input is "args" and the stdin section`)
	}
	if c.ServerArgs != nil {
		return errors.New(`case.json: a print case has no server_args: all its arguments are in "args"`)
	}
	n := 0
	for _, s := range []string{"expect", "stdout", "stdout.re"} {
		if seen[s] {
			n++
		}
	}
	if n > 1 {
		return errors.New("a print case checks stdout with one of expect (JSON lines), stdout or stdout.re")
	}
	for _, e := range c.expect {
		if !e.event || e.stream != "process" {
			return fmt.Errorf("expect line %d: e -p --json prints only typed lines without \"request\"", e.line)
		}
		e.stream = printStream
	}
	if seen["expect"] && c.expect == nil {
		c.expect = []*expectation{} // an empty expect section still means JSON lines
	}
	return nil
}

// printStream is the one stream of a print case's JSON lines.
const printStream = "print"

// sectionRE compiles a regexp section; its final LF is not part of it.
func sectionRE(data []byte) (*regexp.Regexp, error) {
	return regexp.Compile(strings.TrimSuffix(string(data), "\n"))
}

func parseClient(f archiveFile) ([]step, error) {
	var steps []step
	for i, line := range lines(f.data) {
		n := f.line + i
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "# ") || line == "#" {
			continue
		}
		if !strings.HasPrefix(line, "#") {
			steps = append(steps, step{line: n, kind: "send", text: []byte(line)})
			continue
		}
		word, rest, _ := strings.Cut(line[1:], " ")
		rest = strings.TrimSpace(rest)
		s := step{line: n, kind: word}
		switch word {
		case "wait":
			s.labels = strings.Fields(strings.ReplaceAll(rest, "@", ""))
			if len(s.labels) == 0 {
				return nil, fmt.Errorf("line %d: #wait needs a label", n)
			}
		case "raw":
			var str string
			if err := json.Unmarshal([]byte(rest), &str); err != nil {
				return nil, fmt.Errorf("line %d: #raw wants one JSON string: %w", n, err)
			}
			s.text = []byte(str)
		case "pad":
			size, tmpl, _ := strings.Cut(rest, " ")
			var err error
			if s.size, err = parseSize(size); err != nil {
				return nil, fmt.Errorf("line %d: #pad: %w", n, err)
			}
			if strings.Count(tmpl, "$pad") != 1 || len(tmpl)-4 > s.size {
				return nil, fmt.Errorf("line %d: #pad SIZE LINE: LINE must contain $pad once and be shorter than SIZE", n)
			}
			s.text = []byte(tmpl)
		case "close", "exit":
		case "signal":
			if signals[rest] == nil {
				return nil, fmt.Errorf("line %d: #signal wants TERM, HUP, INT or KILL", n)
			}
			s.text = []byte(rest)
		default:
			return nil, fmt.Errorf("line %d: unknown directive #%s (comments start with \"# \")", n, word)
		}
		steps = append(steps, s)
	}
	return steps, nil
}

// parseSize reads "123", "10MiB", "10MiB+1", "64KiB-2".
func parseSize(s string) (int, error) {
	base, delta := s, 0
	if i := strings.LastIndexAny(s, "+-"); i > 0 {
		d, err := strconv.Atoi(s[i:])
		if err != nil {
			return 0, fmt.Errorf("bad size %q", s)
		}
		base, delta = s[:i], d
	}
	mult := 1
	for suf, m := range map[string]int{"KiB": 1 << 10, "MiB": 1 << 20} {
		if strings.HasSuffix(base, suf) {
			base, mult = strings.TrimSuffix(base, suf), m
		}
	}
	n, err := strconv.Atoi(base)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("bad size %q", s)
	}
	return n*mult + delta, nil
}

func parseExpect(f archiveFile) ([]*expectation, error) {
	var out []*expectation
	for i, line := range lines(f.data) {
		n := f.line + i
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		e := &expectation{line: n}
		if rest, ok := strings.CutPrefix(t, "~"); ok {
			e.float, t = true, strings.TrimSpace(rest)
		}
		if rest, ok := strings.CutPrefix(t, "?"); ok && !e.float {
			e.optional, t = true, strings.TrimSpace(rest)
			if rest, ok := strings.CutPrefix(t, "*"); ok {
				e.repeat, t = true, strings.TrimSpace(rest)
			}
			if strings.HasPrefix(t, "@") {
				return nil, fmt.Errorf("line %d: an optional line cannot have a label: a #wait on it could wait forever", n)
			}
		}
		if strings.HasPrefix(t, "@") {
			label, rest, _ := strings.Cut(t[1:], " ")
			e.label, t = label, strings.TrimSpace(rest)
		}
		e.raw = t
		v, err := decode([]byte(t))
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("line %d: an expected line must be a JSON object", n)
		}
		if err := lintValue("", obj); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		e.value = obj
		out = append(out, e)
	}
	return out, nil
}

func isPattern(v any) bool {
	s, ok := v.(string)
	return ok && (strings.HasPrefix(s, "$") && !strings.HasPrefix(s, "$$") || placeholderRE.MatchString(s))
}

// lines splits on LF, keeping a CR if one is there (fixtures may test it).
func lines(data []byte) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<26)
	sc.Split(func(d []byte, atEOF bool) (int, []byte, error) {
		if i := bytes.IndexByte(d, '\n'); i >= 0 {
			return i + 1, d[:i], nil
		}
		if atEOF && len(d) > 0 {
			return len(d), d, nil
		}
		return 0, nil, nil
	})
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}
