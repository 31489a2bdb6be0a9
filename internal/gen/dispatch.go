package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// dispatchOut is e rpc's generated dispatch, beside its hand-written
// handlers (server/methods.go).
const dispatchOut = "server/dispatch_gen.go"

// facts is what a method's params schema says of its dispatch, in its
// "x-e" keyword (validators ignore keywords they do not know).
type facts struct {
	// Session names the parameter naming the session the request belongs
	// to: its requests run in order, apart from other sessions' (H1).
	Session string `json:"session"`
	// Loop is set for a request the loop serves itself (shutdown): no
	// handler.
	Loop bool `json:"loop"`
	// Ordered is set for a request later lines depend on (hello: its ask
	// decides whether a create may take client tools; an interrupt: the
	// client's answer to the question it interrupts comes next): it is
	// served before the next line is read, unless its session's earlier
	// requests still run, when it keeps its place after them. It must
	// never wait on anything.
	Ordered bool `json:"ordered"`
}

// method is one e rpc method and its facts.
type method struct {
	name string
	facts
}

// loadMethods reads every method's facts from schemas/methods, in name order.
func loadMethods(dir string) ([]method, error) {
	matches, err := filepath.Glob(filepath.Join(dir, "methods", "*.params.json"))
	if err != nil {
		return nil, err
	}
	var out []method
	for _, f := range matches { // Glob sorts
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var doc struct {
			XE *json.RawMessage `json:"x-e"`
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		m := method{name: strings.TrimSuffix(filepath.Base(f), ".params.json")}
		if doc.XE != nil {
			d := json.NewDecoder(bytes.NewReader(*doc.XE))
			d.DisallowUnknownFields()
			if err := d.Decode(&m.facts); err != nil {
				return nil, fmt.Errorf("%s: x-e: %w", f, err)
			}
		}
		out = append(out, m)
	}
	return out, nil
}

// handlerName is the Go name of a method's handler: session.create →
// sessionCreate, ask.reply → askReply, session.follow_up → sessionFollowUp.
func handlerName(method string) string {
	parts := strings.FieldsFunc(method, func(r rune) bool { return r == '.' || r == '_' })
	for i := 1; i < len(parts); i++ {
		parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
	}
	return strings.Join(parts, "")
}

// dispatchFile is server/dispatch_gen.go: the handler table, hello's
// method list and each method's session parameter.
func dispatchFile(ms []method) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "// %s\n\npackage server\n\n", header)
	b.WriteString("import \"github.com/e-agent/e/protocol\"\n\n")
	b.WriteString("// handlers has one entry per method of schemas/methods: the params, which\n")
	b.WriteString("// the method's schema accepted, decoded into the method's generated struct\n")
	b.WriteString("// (protocol.<Method>Params) and handed to (*Server).<name> by the method's\n")
	b.WriteString("// name (session.create: sessionCreate), so a method added to the schemas\n")
	b.WriteString("// does not build until its handler exists, taking that struct. A method the\n")
	b.WriteString("// loop serves itself (x-e loop: shutdown) has none.\n")
	b.WriteString("var handlers = map[string]handler{\n")
	for _, m := range ms {
		if m.Loop {
			fmt.Fprintf(&b, "\t%q: nil,\n", m.name)
			continue
		}
		fmt.Fprintf(&b, "\t%q: typed[protocol.%s]((*Server).%s),\n", m.name, fileTypeName("methods/"+m.name+".params.json"), handlerName(m.name))
	}
	b.WriteString("}\n\n")
	b.WriteString("// methods is hello's list: every method, sorted.\n")
	b.WriteString("var methods = []string{\n")
	for _, m := range ms {
		fmt.Fprintf(&b, "\t%q,\n", m.name)
	}
	b.WriteString("}\n\n")
	b.WriteString("// sessionParam names, per method, the parameter naming the session whose\n")
	b.WriteString("// earlier requests it waits for (x-e session, H1); a method not here waits\n")
	b.WriteString("// for none.\n")
	b.WriteString("var sessionParam = map[string]string{\n")
	for _, m := range ms {
		if m.Session != "" {
			fmt.Fprintf(&b, "\t%q: %q,\n", m.name, m.Session)
		}
	}
	b.WriteString("}\n\n")
	var ordered []string
	for _, m := range ms {
		if m.Ordered {
			ordered = append(ordered, m.name)
		}
	}
	writeSet(&b, "ordered is every method served before the next line is read, when its\n"+
		"session is idle (x-e ordered): later requests depend on its effect.", "ordered", ordered)
	return b.Bytes()
}

// writeSet writes the set of keys as a map[string]bool variable, after its
// doc comment (lines apart by "\n").
func writeSet(b *bytes.Buffer, doc, name string, keys []string) {
	for line := range strings.SplitSeq(doc, "\n") {
		fmt.Fprintf(b, "// %s\n", line)
	}
	fmt.Fprintf(b, "var %s = map[string]bool{\n", name)
	for _, k := range keys {
		fmt.Fprintf(b, "\t%q: true,\n", k)
	}
	b.WriteString("}\n")
}
