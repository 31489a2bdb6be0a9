// Command gen writes e's wire bindings from the JSON Schemas in schemas/, the
// way gopls's protocol generator writes its types from the LSP meta-model: a
// machine-readable spec in, types out, never edited by hand.
//
// It first writes schemas/tools/<name>.json, the reference of each built-in
// tool (from internal/tool, so the two cannot drift), then reads every schema
// of the e rpc protocol (methods/, events/, lines/, envelope/, oneshot/,
// tools/, result.json, defs.json) and writes
//
//	protocol/protocol.go                       Go structs, package protocol
//	clients/typescript/src/protocol.ts         TypeScript declarations
//	clients/python/e_client/protocol.py        Python TypedDicts and Literals
//	internal/agent/event_gen.go                the engine's events and turn result (agent.go)
//	internal/pi/wire_gen.go                    pi's wire types, from schemas/pi (pi.go)
//	internal/acp/wire_gen.go                   ACP's wire types, the part e speaks of the
//	                                           vendored conformance/acpschema (acp.go)
//	internal/extension/wire_gen.go             the extension protocol's shapes e decodes,
//	                                           from schemas/extension (extension.go)
//	server/dispatch_gen.go                     e rpc's handler table (each method's params
//	                                           decoded into their struct for its typed
//	                                           handler), hello's method list and each
//	                                           method's session parameter, from the
//	                                           methods' "x-e" facts (dispatch.go)
//	internal/pi/dispatch_gen.go                pi's command table (each command decoded into
//	                                           its struct for its typed handler) and query and
//	                                           stop sets, from the commands' "x-e" facts (pi.go)
//	internal/acp/dispatch_gen.go               ACP's method and notification tables and each
//	                                           method's session param, from acpMethods, checked
//	                                           against the vendored schema's x-method (acp.go)
//
// Run it with go generate ./... (the directive is in protocol/doc.go); CI
// fails when regenerating changes any of these files.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"go/format"
	"io"
	"log"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("gen: ")
	root := flag.String("root", ".", "the repository root")
	flag.Parse()
	files, err := generate(*root)
	if err != nil {
		log.Fatal(err)
	}
	for _, path := range sortedKeys(files) {
		if err := writeIfChanged(filepath.Join(*root, path), files[path]); err != nil {
			log.Fatal(err)
		}
	}
	// Remove the schemas of tools that no longer exist.
	old, err := filepath.Glob(filepath.Join(*root, "schemas", "tools", "*.json"))
	if err != nil {
		log.Fatal(err)
	}
	for _, f := range old {
		rel, _ := filepath.Rel(*root, f)
		if _, ok := files[filepath.ToSlash(rel)]; !ok {
			if err := os.Remove(f); err != nil {
				log.Fatal(err)
			}
		}
	}
}

// generate returns every generated file by its path from root: the tool
// schemas first, since the bindings are made from them too.
func generate(root string) (map[string][]byte, error) {
	files, err := toolSchemas()
	if err != nil {
		return nil, err
	}
	m, err := load(filepath.Join(root, "schemas"), files)
	if err != nil {
		return nil, err
	}
	goSrc, err := format.Source(m.goFile())
	if err != nil {
		return nil, fmt.Errorf("gofmt of the Go output: %w", err)
	}
	files["protocol/protocol.go"] = goSrc
	am, err := load(filepath.Join(root, "schemas"), files)
	if err != nil {
		return nil, err
	}
	agentSrc, err := agentGoFile(am)
	if err != nil {
		return nil, err
	}
	if files[agentOut], err = format.Source(agentSrc); err != nil {
		return nil, fmt.Errorf("gofmt of the agent Go output: %w", err)
	}
	files["clients/typescript/src/protocol.ts"] = m.tsFile()
	files["clients/python/e_client/protocol.py"] = m.pyFile()
	ms, err := loadMethods(filepath.Join(root, "schemas"))
	if err != nil {
		return nil, err
	}
	if files[dispatchOut], err = format.Source(dispatchFile(ms)); err != nil {
		return nil, fmt.Errorf("gofmt of the dispatch output: %w", err)
	}
	pm, err := loadPi(filepath.Join(root, "schemas"))
	if err != nil {
		return nil, err
	}
	if files[piOut], err = format.Source(pm.piGoFile()); err != nil {
		return nil, fmt.Errorf("gofmt of the pi Go output: %w", err)
	}
	cs, err := loadPiCommands(filepath.Join(root, "schemas"))
	if err != nil {
		return nil, err
	}
	if files[piDispatchOut], err = format.Source(piDispatchFile(cs)); err != nil {
		return nil, fmt.Errorf("gofmt of the pi dispatch output: %w", err)
	}
	xm, err := loadExt(filepath.Join(root, "schemas"))
	if err != nil {
		return nil, err
	}
	extSrc, err := xm.extGoFile()
	if err != nil {
		return nil, err
	}
	if files[extOut], err = format.Source(extSrc); err != nil {
		return nil, fmt.Errorf("gofmt of the extension Go output: %w", err)
	}
	doc, err := loadACP(root)
	if err != nil {
		return nil, err
	}
	acpSrc, err := acpEmit(doc, acpTypes, acpConsts)
	if err != nil {
		return nil, err
	}
	if files[acpOut], err = format.Source(acpSrc); err != nil {
		return nil, fmt.Errorf("gofmt of the acp Go output: %w", err)
	}
	acpSrc, err = acpDispatch(doc, acpTypes, acpMethods)
	if err != nil {
		return nil, err
	}
	if files[acpDispatchOut], err = format.Source(acpSrc); err != nil {
		return nil, fmt.Errorf("gofmt of the acp dispatch output: %w", err)
	}
	return files, nil
}

// writeIfChanged leaves an unchanged file alone, so that its mtime (and any
// build cache keyed on it) survives a no-op go generate.
func writeIfChanged(path string, b []byte) error {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, b) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// header is the first line of every generated file (go help generate).
const header = "Code generated by go run ./internal/gen from schemas/. DO NOT EDIT."

// The schema folders that make up the e rpc protocol, in output order, and
// the suffix their type names get.
var sections = []struct{ dir, suffix string }{
	{"", ""}, // defs.json, result.json
	{"envelope", ""},
	{"methods", ""},
	{"events", "Event"},
	{"lines", "Line"},
	{"oneshot", ""},
	{"tools", "ToolCall"},
}

// Special names where the folder-and-suffix rule reads badly.
var fileNames = map[string]string{
	"envelope/error":   "ErrorResponse",
	"oneshot/request":  "OneShotRequest",
	"oneshot/answer":   "OneShotAnswer",
	"lines/event":      "EventStamps",
	"envelope/request": "Request",
}

// kind is the shape of a type expression.
type kind int

const (
	kAny    kind = iota // any JSON value
	kObject             // an object with no declared properties
	kString
	kInt
	kNumber
	kBool
	kArray
	kNamed // a declared type: struct, enum or alias
	kGo    // a Go type written by hand (pi's unions: piUnions)
)

// texpr is a type expression.
type texpr struct {
	kind     kind
	nullable bool
	elem     *texpr // kArray
	decl     *decl  // kNamed
	constant string // kString with a const value
	goType   string // kGo
}

// decl is a named type.
type decl struct {
	name   string
	title  string
	desc   string
	doc    string // title and description together
	source string // schemas/<path>[#pointer]
	// One of: a struct (fields, embeds), an enum of strings, an alias.
	fields []*field
	embeds []*decl
	enum   []string
	alias  *texpr
	isEnum bool
	// event is the event type name, for event structs.
	event string
}

type field struct {
	json     string
	doc      string
	t        texpr
	required bool
	// hasDefault: the schema gives the value an absent property means, so
	// a zero value may be left out (pi's dialect: see piGoType).
	hasDefault bool
}

// model is every declaration, in output order.
type model struct {
	decls   []*decl
	byKey   map[string]*decl // resolved $ref URL → decl
	docs    map[string]any   // file URL → decoded schema
	methods []string         // sorted
	events  []*decl          // sorted by type
	lines   []*decl          // ask, notice, ... (lines/ other than event)
	tools   []*decl
	names   map[string]bool
	order   map[uintptr][]string // an object's keys in file order, by map identity
	// pi is set for the pi dialect's model (pi.go): unions of several
	// shapes are allowed there, named by piUnions or else any.
	pi bool
}

const base = "https://github.com/e-agent/e/schemas/"

// load reads the schemas under dir; fresh holds generated schema files by
// path from the repository root, which take the place of those on disk.
func load(dir string, fresh map[string][]byte) (*model, error) {
	m := &model{byKey: map[string]*decl{}, docs: map[string]any{}, names: map[string]bool{}, order: map[uintptr][]string{}}
	var files []string
	for _, s := range sections {
		matches, err := filepath.Glob(filepath.Join(dir, s.dir, "*.json"))
		if err != nil {
			return nil, err
		}
		var rels []string
		for _, f := range matches {
			rel, _ := filepath.Rel(dir, f)
			rels = append(rels, filepath.ToSlash(rel))
		}
		if s.dir == "tools" {
			rels = nil // only the fresh ones
		}
		for path := range fresh {
			if rel, ok := strings.CutPrefix(path, "schemas/"); ok && strings.HasPrefix(rel, s.dir+"/") {
				rels = append(rels, rel)
			}
		}
		slices.Sort(rels)
		rels = slices.Compact(rels) // a fresh file on disk too
		for _, rel := range rels {
			if rel == "index.json" || rel == "tools/"+builtinFile {
				continue
			}
			b, ok := fresh["schemas/"+rel]
			if !ok {
				if b, err = os.ReadFile(filepath.Join(dir, rel)); err != nil {
					return nil, err
				}
			}
			v, err := m.decode(b)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", rel, err)
			}
			m.docs[base+rel] = v
			files = append(files, rel)
		}
	}
	// Shared definitions first, so that their names win.
	for _, rel := range files {
		doc := m.docs[base+rel].(map[string]any)
		if defs, ok := doc["$defs"].(map[string]any); ok && rel == "defs.json" {
			for _, k := range sortedKeys(defs) {
				if _, err := m.declare(base+rel+"#/$defs/"+k, camel(k), defs[k].(map[string]any), base+rel); err != nil {
					return nil, err
				}
			}
		}
	}
	for _, rel := range files {
		if rel == "defs.json" {
			continue
		}
		doc := m.docs[base+rel].(map[string]any)
		dir, file := splitRel(rel)
		d, err := m.declare(base+rel, fileTypeName(rel), doc, base+rel)
		if err != nil {
			return nil, err
		}
		switch dir {
		case "methods":
			if method, ok := strings.CutSuffix(file, ".params"); ok {
				m.methods = append(m.methods, method)
			}
		case "events":
			d.event = file
			m.events = append(m.events, d)
		case "lines":
			if file != "event" && file != "result" {
				m.lines = append(m.lines, d)
			}
		case "tools":
			m.tools = append(m.tools, d)
		}
	}
	return m, nil
}

// splitRel splits "events/text.json" into "events" and "text".
func splitRel(rel string) (dir, file string) {
	stem := strings.TrimSuffix(rel, ".json")
	dir, file, nested := strings.Cut(stem, "/")
	if !nested {
		return "", dir
	}
	return dir, file
}

// fileTypeName is the type name of a whole schema file.
func fileTypeName(rel string) string {
	dir, file := splitRel(rel)
	if name := fileNames[dir+"/"+file]; name != "" {
		return name
	}
	for _, s := range sections {
		if s.dir == dir {
			return camel(file) + s.suffix
		}
	}
	return camel(file)
}

// declare names the schema s found at key (its URL) and returns its decl.
func (m *model) declare(key, name string, s map[string]any, file string) (*decl, error) {
	if d, ok := m.byKey[key]; ok {
		return d, nil
	}
	if m.names[name] {
		return nil, fmt.Errorf("%s: type name %s is taken", key, name)
	}
	if n := piNames[strings.TrimPrefix(key, base)]; m.pi && n != "" {
		name = n
	}
	m.names[name] = true
	d := &decl{name: name, source: strings.TrimPrefix(key, base)}
	m.byKey[key] = d
	m.decls = append(m.decls, d)
	d.doc = describe(s)
	d.title, _ = s["title"].(string)
	d.desc, _ = s["description"].(string)
	switch {
	case isEnum(s):
		d.isEnum = true
		d.enum, _ = enumValues(s)
	case isStruct(s):
		for _, sub := range list(s["allOf"]) {
			ref, _ := sub.(map[string]any)["$ref"].(string)
			if ref == "" {
				return nil, fmt.Errorf("%s: allOf: only $refs are supported", key)
			}
			t, err := m.ref(file, ref)
			if err != nil {
				return nil, err
			}
			d.embeds = append(d.embeds, t.decl)
		}
		props, _ := s["properties"].(map[string]any)
		required := map[string]bool{}
		for _, r := range list(s["required"]) {
			required[r.(string)] = true
		}
		for _, k := range orderedKeys(m, file, key, props) {
			p := props[k].(map[string]any)
			t, err := m.expr(file, ptrOf(key)+"/properties/"+k, name+camel(k), p)
			if err != nil {
				return nil, fmt.Errorf("%s: %s: %w", key, k, err)
			}
			_, def := p["default"]
			d.fields = append(d.fields, &field{json: k, doc: describe(p), t: t, required: required[k] || inherited(d.embeds, k), hasDefault: def})
		}
	default:
		t, err := m.expr(file, ptrOf(key), name+"Value", s)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		d.alias = &t
	}
	return d, nil
}

// orderedKeys returns the properties in the schema file's own order.
func orderedKeys(m *model, file, key string, props map[string]any) []string {
	if props == nil {
		return nil
	}
	return m.order[reflect.ValueOf(props).Pointer()]
}

// decode decodes a JSON document like json.Unmarshal into any, recording
// the key order of every object, which a map loses.
func (m *model) decode(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	v, err := m.value(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("data after the document")
	}
	return v, nil
}

func (m *model) value(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch tok {
	case json.Delim('{'):
		obj := map[string]any{}
		var keys []string
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return nil, err
			}
			v, err := m.value(dec)
			if err != nil {
				return nil, err
			}
			obj[k.(string)] = v
			keys = append(keys, k.(string))
		}
		m.order[reflect.ValueOf(obj).Pointer()] = keys
		_, err := dec.Token()
		return obj, err
	case json.Delim('['):
		arr := []any{}
		for dec.More() {
			v, err := m.value(dec)
			if err != nil {
				return nil, err
			}
			arr = append(arr, v)
		}
		_, err := dec.Token()
		return arr, err
	}
	return tok, nil
}

// expr returns the type expression of the schema s; inline objects and enums
// are declared under name.
func (m *model) expr(file, ptr, name string, s map[string]any) (texpr, error) {
	if ref, ok := s["$ref"].(string); ok {
		return m.ref(file, ref)
	}
	if alts := list(s["anyOf"]); len(alts) > 0 {
		if m.pi && nonNull(alts) > 1 {
			if g := piUnions[strings.TrimPrefix(file, base)+"#"+ptr]; g != "" {
				return texpr{kind: kGo, goType: g}, nil
			}
			return texpr{kind: kAny}, nil
		}
		var t texpr
		nullable, found := false, false
		for i, a := range alts {
			am := a.(map[string]any)
			if am["type"] == "null" {
				nullable = true
				continue
			}
			if found {
				return texpr{}, fmt.Errorf("anyOf: only one non-null branch is supported")
			}
			var err error
			if t, err = m.expr(file, fmt.Sprintf("%s/anyOf/%d", ptr, i), name, am); err != nil {
				return texpr{}, err
			}
			found = true
		}
		t.nullable = t.nullable || nullable
		return t, nil
	}
	if c, ok := s["const"].(string); ok {
		return texpr{kind: kString, constant: c}, nil
	}
	if _, ok := s["const"].(bool); ok {
		return texpr{kind: kBool}, nil // a flag that is always true or false: a bool still holds it
	}
	if isEnum(s) {
		vals, nullable := enumValues(s)
		if len(vals) == 0 {
			return texpr{kind: kAny}, nil
		}
		d, err := m.declare(file+"#"+ptr, name, map[string]any{"enum": anys(vals), "description": s["description"]}, file)
		if err != nil {
			return texpr{}, err
		}
		return texpr{kind: kNamed, decl: d, nullable: nullable}, nil
	}
	types, nullable := typesOf(s)
	if len(types) == 0 {
		return texpr{kind: kAny}, nil
	}
	if len(types) > 1 {
		return texpr{kind: kAny, nullable: nullable}, nil
	}
	t := texpr{nullable: nullable}
	switch types[0] {
	case "string":
		t.kind = kString
	case "integer":
		t.kind = kInt
	case "number":
		t.kind = kNumber
	case "boolean":
		t.kind = kBool
	case "array":
		t.kind = kArray
		items, _ := s["items"].(map[string]any)
		if items == nil {
			items = map[string]any{}
		}
		e, err := m.expr(file, ptr+"/items", name+"Item", items)
		if err != nil {
			return texpr{}, err
		}
		t.elem = &e
	case "object":
		if !isStruct(s) {
			t.kind = kObject
			break
		}
		d, err := m.declare(file+"#"+ptr, name, s, file)
		if err != nil {
			return texpr{}, err
		}
		t.kind, t.decl = kNamed, d
	default:
		return texpr{}, fmt.Errorf("unsupported type %q", types[0])
	}
	return t, nil
}

// ref resolves a $ref relative to file.
func (m *model) ref(file, ref string) (texpr, error) {
	target, frag, _ := strings.Cut(ref, "#")
	url := file
	if target != "" {
		url = resolve(file, target)
	}
	key := url
	if frag != "" {
		key += "#" + frag
	}
	if d, ok := m.byKey[key]; ok {
		return texpr{kind: kNamed, decl: d}, nil
	}
	doc, ok := m.docs[url]
	if !ok {
		return texpr{}, fmt.Errorf("$ref %s: no such file", ref)
	}
	if frag == "" {
		// A whole file not declared yet: declare it now under its own name.
		d, err := m.declare(url, fileTypeName(strings.TrimPrefix(url, base)), doc.(map[string]any), url)
		if err != nil {
			return texpr{}, err
		}
		return texpr{kind: kNamed, decl: d}, nil
	}
	node := doc
	for _, tok := range strings.Split(strings.TrimPrefix(frag, "/"), "/") {
		mm, ok := node.(map[string]any)
		if !ok {
			return texpr{}, fmt.Errorf("$ref %s: no such node", ref)
		}
		node = mm[tok]
	}
	s, ok := node.(map[string]any)
	if !ok {
		return texpr{}, fmt.Errorf("$ref %s: no such node", ref)
	}
	d, err := m.declare(key, camel(frag[strings.LastIndexByte(frag, '/')+1:]), s, url)
	if err != nil {
		return texpr{}, err
	}
	return texpr{kind: kNamed, decl: d}, nil
}

// inherited reports whether a base of an allOf requires the property k: the
// instance must then have it whatever the schema's own list says.
func inherited(embeds []*decl, k string) bool {
	for _, e := range embeds {
		for _, f := range e.fields {
			if f.json == k && f.required {
				return true
			}
		}
		if inherited(e.embeds, k) {
			return true
		}
	}
	return false
}

// ptrOf returns the JSON pointer part of a key ("" for a whole file).
func ptrOf(key string) string {
	_, ptr, _ := strings.Cut(key, "#")
	return ptr
}

func resolve(file, rel string) string {
	dir := file[:strings.LastIndexByte(file, '/')+1]
	for strings.HasPrefix(rel, "../") {
		rel = rel[3:]
		dir = dir[:strings.LastIndexByte(strings.TrimSuffix(dir, "/"), '/')+1]
	}
	return dir + strings.TrimPrefix(rel, "./")
}

// nonNull counts the branches of an anyOf other than {"type": "null"}.
func nonNull(alts []any) int {
	n := 0
	for _, a := range alts {
		if a.(map[string]any)["type"] != "null" {
			n++
		}
	}
	return n
}

func isEnum(s map[string]any) bool { _, ok := s["enum"]; return ok }

func isStruct(s map[string]any) bool {
	_, props := s["properties"]
	_, all := s["allOf"]
	return props || all
}

func enumValues(s map[string]any) (vals []string, nullable bool) {
	for _, v := range list(s["enum"]) {
		if v == nil {
			nullable = true
			continue
		}
		vals = append(vals, v.(string))
	}
	return vals, nullable
}

func typesOf(s map[string]any) (types []string, nullable bool) {
	switch t := s["type"].(type) {
	case string:
		types = []string{t}
	case []any:
		for _, x := range t {
			types = append(types, x.(string))
		}
	}
	if i := slices.Index(types, "null"); i >= 0 {
		return slices.Delete(types, i, i+1), true
	}
	return types, false
}

func describe(s map[string]any) string {
	d, _ := s["description"].(string)
	if t, _ := s["title"].(string); t != "" {
		if d == "" {
			return t + "."
		}
		return t + ": " + d
	}
	return d
}

func list(v any) []any { l, _ := v.([]any); return l }

func anys(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// initialisms are written in capitals in Go names.
var initialisms = map[string]string{"id": "ID", "ms": "MS", "usd": "USD", "url": "URL", "json": "JSON", "http": "HTTP", "ui": "UI", "cwd": "Cwd", "1h": "1H", "5m": "5M"}

// camel turns "session.create", "tool_batch" or "cache_write_5m_tokens"
// into a Go name.
func camel(s string) string {
	var b strings.Builder
	for _, w := range strings.FieldsFunc(s, func(r rune) bool { return r == '.' || r == '_' || r == '-' || r == '/' }) {
		if up, ok := initialisms[w]; ok {
			b.WriteString(up)
			continue
		}
		b.WriteString(strings.ToUpper(w[:1]) + w[1:])
	}
	return b.String()
}
