package schemas

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"sync"
)

// The embedded schemas. Folders written by others (store/, extension/) are
// picked up by the second pattern without a change here.
//
//go:embed *.json */*.json
var files embed.FS

// base is the $id prefix of every file: the file's $id is base + its path.
const base = "https://github.com/e-agent/e/schemas/"

// draft is the dialect of every schema and of Document.
const draft = "https://json-schema.org/draft/2020-12/schema"

// indexFile is not a schema: it lists them.
const indexFile = "index.json"

// catalog is what the embedded file names say; it is built once, from names
// alone (no file is parsed), so it costs microseconds.
type catalog struct {
	paths   map[string]string // schema name → file path
	methods []string          // sorted
	events  map[string]bool
	index   []byte // index.json as built from the files
}

var (
	catalogOnce sync.Once
	cat         *catalog
)

func theCatalog() *catalog {
	catalogOnce.Do(func() { cat = newCatalog(files) })
	return cat
}

func newCatalog(fsys fs.FS) *catalog {
	c := &catalog{paths: map[string]string{}, events: map[string]bool{}}
	// Sections of the index: methods by name, then one per folder and
	// "shared" for top-level files.
	methods := map[string]map[string]string{}
	sections := map[string]map[string]string{}
	fs.WalkDir(fsys, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".json") || path == indexFile {
			return err
		}
		name := nameOf(path)
		c.paths[name] = path
		dir, file, nested := strings.Cut(path, "/")
		switch {
		case dir == "methods":
			if m, kind, ok := cutKind(name); ok {
				if methods[m] == nil {
					methods[m] = map[string]string{}
				}
				methods[m][kind] = path
			}
		case !nested:
			addTo(sections, "shared", name, path)
		default:
			if dir == "events" {
				c.events[strings.TrimSuffix(file, ".json")] = true
			}
			addTo(sections, dir, strings.TrimSuffix(file, ".json"), path)
		}
		return nil
	})
	for m, kinds := range methods {
		if kinds["params"] != "" && kinds["result"] != "" {
			c.methods = append(c.methods, m)
		}
	}
	slices.Sort(c.methods)
	index := map[string]any{"methods": methods}
	for k, v := range sections {
		index[k] = v
	}
	b, err := json.MarshalIndent(index, "", "  ")
	if err != nil {
		panic(err) // maps of strings always marshal
	}
	c.index = append(b, '\n')
	return c
}

func addTo(sections map[string]map[string]string, section, name, path string) {
	if sections[section] == nil {
		sections[section] = map[string]string{}
	}
	sections[section][name] = path
}

// nameOf returns the schema name of a file path.
func nameOf(path string) string {
	name := strings.TrimSuffix(path, ".json")
	if m, ok := strings.CutPrefix(name, "methods/"); ok {
		return m
	}
	return name
}

// cutKind splits "session.create.params" into the method and "params".
func cutKind(name string) (method, kind string, ok bool) {
	i := strings.LastIndexByte(name, '.')
	if i < 0 {
		return "", "", false
	}
	method, kind = name[:i], name[i+1:]
	return method, kind, kind == "params" || kind == "result"
}

// compiled holds the schemas compiled so far. Each compiles on first use:
// compiling all of them up front would cost e rpc's start-up for schemas
// most clients never touch.
var compiled struct {
	sync.Mutex
	c *compiler
}

// compile returns the compiled schema of name.
func compile(name string) (*node, error) {
	path, ok := theCatalog().paths[name]
	if !ok {
		return nil, fmt.Errorf("schemas: no schema %q", name)
	}
	compiled.Lock()
	defer compiled.Unlock()
	if compiled.c == nil {
		compiled.c = &compiler{docs: map[string]any{}, nodes: map[string]*node{}}
	}
	n, err := compiled.c.load(path, "")
	if err != nil {
		// Leave no half-compiled node behind for the next caller.
		compiled.c = nil
		return nil, fmt.Errorf("schemas: compile %s: %w", path, err)
	}
	return n, nil
}

// Methods returns the names of the e rpc methods, sorted.
func Methods() []string { return slices.Clone(theCatalog().methods) }

// Events returns the event types of schemas/events, sorted: the set every
// dialect's translator maps (internal/pi, internal/acp) and tests read
// instead of keeping their own list.
func Events() []string { return slices.Sorted(maps.Keys(theCatalog().events)) }

// Schema returns one schema file by name ("session.create.params",
// "events/text", "result", "store/header"), or the index of all schemas
// for "index".
func Schema(name string) ([]byte, bool) {
	c := theCatalog()
	if name == "index" {
		return slices.Clone(c.index), true
	}
	path, ok := c.paths[name]
	if !ok {
		return nil, false
	}
	b, err := files.ReadFile(path)
	return b, err == nil
}

var document = sync.OnceValue(func() []byte {
	c := theCatalog()
	defs := map[string]any{}
	for name, path := range c.paths {
		b, err := files.ReadFile(path)
		if err != nil {
			panic(err) // the path came from the same FS
		}
		v, err := decode(b)
		if err != nil {
			panic(fmt.Sprintf("schemas: %s: %v", path, err)) // TestSchemasCompile
		}
		// Every file becomes a resource of its own, so that its
		// $schema and relative $refs keep their meaning.
		if m, ok := v.(map[string]any); ok && m["$id"] == nil {
			m["$id"] = base + path
		}
		defs[name] = v
	}
	doc := map[string]any{
		"$schema": draft,
		"$id":     base + "document.json",
		"title":   "e automation protocol: every schema, keyed by name",
		"$defs":   defs,
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		panic(err) // decoded JSON always marshals
	}
	return append(b, '\n')
})

// Document returns every schema as one JSON Schema document: each file is
// an embedded resource under "$defs", keyed by its name, keeping its $id so
// that references between files still resolve.
func Document() []byte { return slices.Clone(document()) }

// ValidateParams checks the params of a request to method (M*, V1–V3).
// Absent or null params count as {}. An unknown method yields the error
// text e rpc sends for it (M17): rpc: unknown method "foo".
func ValidateParams(method string, params []byte) error {
	if !slices.Contains(theCatalog().methods, method) {
		return fmt.Errorf("rpc: unknown method %q", method)
	}
	var v any = map[string]any{}
	if t := bytes.TrimSpace(params); len(t) > 0 && string(t) != "null" {
		var err error
		if v, err = decode(t); err != nil {
			var dup *DuplicateKeyError
			if errors.As(err, &dup) {
				return fmt.Errorf("%s: params%w", method, err) // hello: params.ask: appears twice…
			}
			return fmt.Errorf("%s: params: %w", method, err)
		}
	}
	return validate(method, "params", method+".params", v)
}

// ValidateResult checks the result of a response to method.
func ValidateResult(method string, result []byte) error {
	if !slices.Contains(theCatalog().methods, method) {
		return fmt.Errorf("schemas: unknown method %q", method)
	}
	return validateBytes(method, "result", method+".result", result)
}

// ValidateEvent checks one event line by its type (P8). stamped requires
// the session and request fields that e rpc adds (S2); e -p --json prints
// events without them.
func ValidateEvent(line []byte, stamped bool) error {
	v, err := decode(line)
	if err != nil {
		return fmt.Errorf("event: %w", err)
	}
	t, err := typed("event", v)
	if err != nil {
		return err
	}
	if !theCatalog().events[t] {
		return fmt.Errorf("event: unknown type %q", t)
	}
	return validateEvent(v, t, stamped)
}

func validateEvent(v any, t string, stamped bool) error {
	prefix := "event " + t
	if err := validate(prefix, "", "events/"+t, v); err != nil {
		return err
	}
	if stamped {
		return validate(prefix, "", "lines/event", v)
	}
	return nil
}

// ValidateLine checks any line e rpc prints, choosing the schema by the
// line's shape (F3): with a type, an event (stamped), an ask or a notice
// line; without one, a response if it has "result", a v1 one-shot answer
// if it has "output", else an error response.
func ValidateLine(line []byte) error {
	v, err := decode(line)
	if err != nil {
		return fmt.Errorf("line: %w", err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("line: expected object, got %s", typeName(v))
	}
	if _, ok := m["type"]; ok {
		t, err := typed("line", v)
		switch {
		case err != nil:
			return err
		case t == "ask":
			return validate("ask", "", "lines/ask", v)
		case t == "notice":
			return validate("notice", "", "lines/notice", v)
		case t == "tool_call" || t == "tool_call_cancelled":
			return validate(t, "", "lines/"+t, v)
		case theCatalog().events[t]:
			return validateEvent(v, t, true)
		}
		return fmt.Errorf("line: unknown type %q", t)
	}
	if _, ok := m["result"]; ok {
		return validate("response", "", "envelope/response", v)
	}
	if _, ok := m["output"]; ok {
		return validate("oneshot answer", "", "oneshot/answer", v)
	}
	return validate("error response", "", "envelope/error", v)
}

// ValidateOneShot checks a version-1 request line (O1–O4), e.g.
// "oneshot: prompt: required".
func ValidateOneShot(line []byte) error {
	return validateBytes("oneshot", "", "oneshot/request", line)
}

// ValidateResultLine checks the last line of e -p --json (P7).
func ValidateResultLine(line []byte) error {
	return validateBytes("result line", "", "lines/result", line)
}

// typed returns the "type" of a decoded line.
func typed(prefix string, v any) (string, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return "", fmt.Errorf("%s: expected object, got %s", prefix, typeName(v))
	}
	t, ok := m["type"]
	if !ok {
		return "", fmt.Errorf("%s: type: required", prefix)
	}
	s, ok := t.(string)
	if !ok {
		return "", fmt.Errorf("%s: type: expected string, got %s", prefix, typeName(t))
	}
	return s, nil
}

func validateBytes(prefix, root, name string, b []byte) error {
	v, err := decode(b)
	if err != nil {
		if root != "" {
			return fmt.Errorf("%s: %s: %w", prefix, root, err)
		}
		return fmt.Errorf("%s: %w", prefix, err)
	}
	return validate(prefix, root, name, v)
}

// validate checks v against the schema name. Errors start with prefix;
// paths start with root ("params", "result" or "" for a whole line).
func validate(prefix, root, name string, v any) error {
	s, err := compile(name)
	if err != nil {
		return fmt.Errorf("%s: %w", prefix, err)
	}
	var fails []fail
	s.check(v, nil, &fails)
	if len(fails) == 0 {
		return nil
	}
	path, msg := explain(v, fails)
	if p := render(root, v, path); p != "" {
		return fmt.Errorf("%s: %s: %s", prefix, p, msg)
	}
	return fmt.Errorf("%s: %s", prefix, msg)
}
