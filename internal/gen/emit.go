package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// A small writer that wraps doc text into comment lines.
type out struct{ strings.Builder }

func (o *out) p(format string, args ...any) { fmt.Fprintf(o, format+"\n", args...) }

// comment writes text as comment lines of at most about 90 columns, each
// starting with prefix.
func (o *out) comment(indent, prefix, text string) {
	if text == "" {
		return
	}
	if strings.Contains(prefix, "*") {
		text = strings.ReplaceAll(text, "*/", `*\/`) // inside /** */
	}
	line := ""
	for _, w := range strings.Fields(text) {
		if line != "" && len(line)+1+len(w) > 90 {
			o.p("%s%s%s", indent, prefix, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	o.p("%s%s%s", indent, prefix, line)
}

// ---- Go ----

func (m *model) goFile() []byte {
	var o out
	o.p("// %s", header)
	o.p("")
	o.p("package protocol")
	o.p("")
	o.p(`import "encoding/json"`)
	o.p("")
	for _, d := range m.decls {
		o.comment("", "// ", goDoc(d))
		switch {
		case d.isEnum:
			o.p("type %s string", d.name)
			o.p("")
			o.p("const (")
			for _, v := range d.enum {
				o.p("\t%s %s = %q", d.name+camel(v), d.name, v)
			}
			o.p(")")
		case d.alias != nil:
			o.p("type %s = %s", d.name, goType(*d.alias))
		default:
			o.p("type %s struct {", d.name)
			for _, e := range d.embeds {
				o.p("\t%s", e.name)
			}
			for _, f := range d.fields {
				doc := f.doc
				if f.t.constant != "" {
					doc = strings.TrimSpace(doc + " Always " + strconv.Quote(f.t.constant) + ".")
				}
				o.comment("\t", "// ", doc)
				tag := f.json
				if !f.required {
					tag += ",omitzero"
				}
				o.p("\t%s %s `json:%q`", camel(f.json), goType(f.t), tag)
			}
			o.p("}")
			if d.event != "" {
				o.p("")
				o.p("// EventType returns %q.", d.event)
				o.p("func (%s) EventType() string { return %q }", d.name, d.event)
			}
		}
		o.p("")
	}
	o.p("// The e rpc methods.")
	o.p("const (")
	for _, meth := range m.methods {
		o.p("\tMethod%s = %q", camel(meth), meth)
	}
	o.p(")")
	o.p("")
	o.p("// The event types.")
	o.p("const (")
	for _, e := range m.events {
		o.p("\tEventType%s = %q", camel(e.event), e.event)
	}
	o.p(")")
	o.p("")
	o.p("// NewEvent returns a pointer to a new event of type t, to decode an event line")
	o.p("// into; ok is false for a type this package does not know (a client skips it).")
	o.p("func NewEvent(t string) (ev any, ok bool) {")
	o.p("\tswitch t {")
	for _, e := range m.events {
		o.p("\tcase %q:", e.event)
		o.p("\t\treturn new(%s), true", e.name)
	}
	o.p("\t}")
	o.p("\treturn nil, false")
	o.p("}")
	return []byte(o.String())
}

// goDoc is a declaration's doc comment, starting with its name.
func goDoc(d *decl) string {
	var doc string
	switch {
	case d.title != "" && d.desc != "":
		doc = d.name + " is the " + d.title + ". " + d.desc
	case d.title != "":
		doc = d.name + " is the " + d.title + "."
	case d.desc != "":
		doc = d.name + " is " + lowerFirst(d.desc)
	default:
		doc = d.name + " is a wire type."
	}
	if !strings.HasSuffix(doc, ".") {
		doc += "."
	}
	return doc + " Schema: " + d.source + "."
}

func goType(t texpr) string {
	var s string
	switch t.kind {
	case kAny, kObject:
		return "json.RawMessage" // null is a RawMessage too
	case kString:
		s = "string"
	case kInt:
		s = "int64"
	case kNumber:
		s = "float64"
	case kBool:
		s = "bool"
	case kArray:
		s = "[]" + goType(*t.elem)
	case kNamed:
		s = t.decl.name
	}
	if t.nullable {
		return "*" + s
	}
	return s
}

// ---- TypeScript ----

func (m *model) tsFile() []byte {
	var o out
	o.p("// %s", header)
	o.p("// The wire types of e's automation protocol (e rpc), for TypeScript clients.")
	o.p("")
	for _, d := range m.decls {
		o.p("/**")
		o.comment("", " * ", orDefault(d.doc, d.name+".")+" ("+d.source+")")
		o.p(" */")
		switch {
		case d.isEnum:
			o.p("export type %s = %s;", d.name, tsLiterals(d.enum))
		case d.alias != nil:
			o.p("export type %s = %s;", d.name, tsType(*d.alias))
		default:
			ext := ""
			if len(d.embeds) > 0 {
				var names []string
				for _, e := range d.embeds {
					names = append(names, e.name)
				}
				ext = " extends " + strings.Join(names, ", ")
			}
			o.p("export interface %s%s {", d.name, ext)
			for _, f := range d.fields {
				if f.doc != "" {
					o.p("  /**")
					o.comment("  ", " * ", f.doc)
					o.p("   */")
				}
				opt := ""
				if !f.required {
					opt = "?"
				}
				o.p("  %s%s: %s;", tsKey(f.json), opt, tsType(f.t))
			}
			o.p("}")
		}
		o.p("")
	}
	o.p("/** Every event, discriminated by type. A client must skip types it does not know. */")
	o.p("export type Event =")
	for i, e := range m.events {
		o.p("  | %s%s", e.name, semi(i, len(m.events)))
	}
	o.p("")
	o.p(`/** The event types. */`)
	o.p(`export type EventType = Event["type"];`)
	o.p("")
	o.p("/** A well-formed call of any built-in tool (tools/builtin.json). */")
	o.p("export type BuiltinToolCall = %s;", joinNames(m.tools, " | "))
	o.p("")
	o.p("/** Every line e rpc writes on stdout. */")
	o.p("export type ServerLine = Event | %s | Response | ErrorResponse;", joinNames(m.lines, " | "))
	o.p("")
	o.p("/** Each method's params and result. */")
	o.p("export interface Methods {")
	for _, meth := range m.methods {
		o.p("  %q: { params: %sParams; result: %sResult };", meth, camel(meth), camel(meth))
	}
	o.p("}")
	o.p("")
	o.p("/** The name of an e rpc method. */")
	o.p("export type MethodName = keyof Methods;")
	o.p("")
	o.p("/** A request line for method M. */")
	o.p("export interface RequestOf<M extends MethodName> {")
	o.p("  id?: unknown;")
	o.p("  method: M;")
	o.p(`  params?: Methods[M]["params"] | null;`)
	o.p("}")
	o.p("")
	o.p("/** Every line a client may write on e rpc's stdin. */")
	o.p("export type ClientLine = { [M in MethodName]: RequestOf<M> }[MethodName] | OneShotRequest;")
	return []byte(o.String())
}

func tsType(t texpr) string {
	var s string
	switch t.kind {
	case kAny:
		return "unknown"
	case kObject:
		s = "{ [key: string]: unknown }"
	case kString:
		s = "string"
		if t.constant != "" {
			s = strconv.Quote(t.constant)
		}
	case kInt, kNumber:
		s = "number"
	case kBool:
		s = "boolean"
	case kArray:
		e := tsType(*t.elem)
		if strings.ContainsAny(e, " |") {
			e = "(" + e + ")"
		}
		s = e + "[]"
	case kNamed:
		s = t.decl.name
	}
	if t.nullable {
		return s + " | null"
	}
	return s
}

func tsLiterals(vals []string) string {
	var q []string
	for _, v := range vals {
		q = append(q, strconv.Quote(v))
	}
	return strings.Join(q, " | ")
}

func tsKey(k string) string {
	for _, r := range k {
		if !(r == '_' || r == '$' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9') {
			return strconv.Quote(k)
		}
	}
	return k
}

// ---- Python ----

func (m *model) pyFile() []byte {
	var o out
	o.p("# %s", header)
	o.p(`"""The wire types of e's automation protocol (e rpc), for Python clients.`)
	o.p("")
	o.p("Every object type is a TypedDict: lines decode with json.loads into plain")
	o.p("dicts that these types describe. Enums are Literals.")
	o.p(`"""`)
	o.p("")
	o.p("from __future__ import annotations")
	o.p("")
	o.p("from typing import Any, Literal, NotRequired, TypedDict, Union")
	o.p("")
	// Literal and scalar aliases first, then classes with their bases before
	// them, then aliases of classes: each module-level name is evaluated when
	// it is defined.
	var classes, late []*decl
	for _, d := range m.decls {
		switch {
		case d.isEnum:
			o.p("")
			o.comment("", "#: ", orDefault(d.doc, d.name)+" ("+d.source+")")
			o.p("%s = Literal[%s]", d.name, pyLiterals(d.enum))
		case d.alias != nil && d.alias.kind != kNamed:
			o.p("")
			o.comment("", "#: ", orDefault(d.doc, d.name)+" ("+d.source+")")
			o.p("%s = %s", d.name, pyType(*d.alias, true))
		case d.alias != nil:
			late = append(late, d)
		default:
			classes = append(classes, d)
		}
	}
	done := map[*decl]bool{}
	var class func(d *decl)
	class = func(d *decl) {
		if done[d] {
			return
		}
		done[d] = true
		var bases []string
		inherited := map[string]bool{}
		for _, e := range d.embeds {
			class(e)
			bases = append(bases, e.name)
			for _, f := range e.fields {
				inherited[f.json] = true
			}
		}
		if bases == nil {
			bases = []string{"TypedDict"}
		}
		o.p("")
		o.p("")
		o.p("class %s(%s):", d.name, strings.Join(bases, ", "))
		o.p(`    """`)
		o.comment("    ", "", strings.ReplaceAll(orDefault(d.doc, d.name+".")+" ("+d.source+")", `\`, `\\`))
		o.p(`    """`)
		n := 0
		for _, f := range d.fields {
			if inherited[f.json] {
				continue // the base's declaration stands; TypedDicts cannot override
			}
			if pyKeywords[f.json] {
				panic(fmt.Sprintf("gen: %s: field %q is a Python keyword", d.source, f.json))
			}
			o.p("")
			o.comment("    ", "#: ", f.doc)
			o.p("    %s: %s", f.json, pyType(f.t, f.required))
			n++
		}
		if n == 0 && len(d.embeds) == 0 {
			o.p("")
			o.p("    pass")
		}
	}
	for _, d := range classes {
		class(d)
	}
	o.p("")
	for _, d := range late {
		o.p("")
		o.comment("", "#: ", orDefault(d.doc, d.name)+" ("+d.source+")")
		o.p("%s = %s", d.name, pyType(*d.alias, true))
	}
	o.p("")
	o.p("#: Every event, discriminated by type. A client must skip types it does not know.")
	o.p("Event = Union[%s]", joinNames(m.events, ", "))
	o.p("")
	o.p("#: The event TypedDict of each event type.")
	o.p("EVENT_TYPES: dict[str, type] = {")
	for _, e := range m.events {
		o.p("    %q: %s,", e.event, e.name)
	}
	o.p("}")
	o.p("")
	o.p("#: A well-formed call of any built-in tool (tools/builtin.json).")
	o.p("BuiltinToolCall = Union[%s]", joinNames(m.tools, ", "))
	o.p("")
	o.p("#: Every line e rpc writes on stdout.")
	o.p("ServerLine = Union[Event, %s, Response, ErrorResponse]", joinNames(m.lines, ", "))
	o.p("")
	o.p("#: Every line a client may write on e rpc's stdin.")
	o.p("ClientLine = Union[Request, OneShotRequest]")
	o.p("")
	o.p("#: Each method's params and result TypedDicts.")
	o.p("METHODS: dict[str, tuple[type, type]] = {")
	for _, meth := range m.methods {
		o.p("    %q: (%sParams, %sResult),", meth, camel(meth), camel(meth))
	}
	o.p("}")
	return []byte(o.String())
}

func pyType(t texpr, required bool) string {
	var s string
	switch t.kind {
	case kAny:
		s = "Any"
	case kObject:
		s = "dict[str, Any]"
	case kString:
		s = "str"
		if t.constant != "" {
			s = "Literal[" + strconv.Quote(t.constant) + "]"
		}
	case kInt:
		s = "int"
	case kNumber:
		s = "float"
	case kBool:
		s = "bool"
	case kArray:
		s = "list[" + pyType(*t.elem, true) + "]"
	case kNamed:
		s = t.decl.name
	}
	if t.nullable && t.kind != kAny {
		s += " | None"
	}
	if !required {
		s = "NotRequired[" + s + "]"
	}
	return s
}

var pyKeywords = map[string]bool{}

func init() {
	for _, k := range strings.Fields("False None True and as assert async await break class continue def del elif else except finally for from global if import in is lambda nonlocal not or pass raise return try while with yield") {
		pyKeywords[k] = true
	}
}

func pyLiterals(vals []string) string {
	var q []string
	for _, v := range vals {
		q = append(q, strconv.Quote(v))
	}
	return strings.Join(q, ", ")
}

// ---- shared ----

func joinNames(ds []*decl, sep string) string {
	var names []string
	for _, d := range ds {
		names = append(names, d.name)
	}
	slices.Sort(names)
	return strings.Join(names, sep)
}

func semi(i, n int) string {
	if i == n-1 {
		return ";"
	}
	return ""
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	// Keep acronyms and names (M1, JSONL) as they are.
	if len(s) > 1 && strings.ToUpper(s[1:2]) == s[1:2] {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}
