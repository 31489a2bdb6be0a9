package schemas

import (
	"fmt"
	"slices"
	"sync"
)

// The pi dialect (e --mode rpc, e --mode json) has schemas of its own under
// pi/: one file per record family, one $defs entry per command, response
// and event type, so that a line is checked against the one shape its type
// names and an error names that shape's field.

// piTypes lists the $defs of each pi file, read once from the files.
var piTypes = sync.OnceValue(func() map[string][]string {
	out := map[string][]string{}
	for _, f := range []string{"command", "response", "event", "extension_ui_request"} {
		b, _ := files.ReadFile("pi/" + f + ".json")
		v, err := decode(b)
		if err != nil {
			panic(fmt.Sprintf("schemas: pi/%s.json: %v", f, err)) // TestSchemasCompile
		}
		defs, _ := v.(map[string]any)["$defs"].(map[string]any)
		for k := range defs {
			out[f] = append(out[f], k)
		}
		slices.Sort(out[f])
	}
	return out
})

// PiCommands returns the command types of the pi dialect, sorted.
func PiCommands() []string { return slices.Clone(piTypes()["command"]) }

// ValidatePiCommand checks one command line against the schema of the
// command its type names and returns that type. Errors read "TYPE: FIELD:
// why"; a line without a usable type gets an error naming it.
func ValidatePiCommand(line []byte) (string, error) {
	v, err := decode(line)
	if err != nil {
		return "", err
	}
	t, err := typed("command", v)
	if err != nil {
		return "", err
	}
	if !slices.Contains(piTypes()["command"], t) {
		return t, fmt.Errorf("unknown command type %q", t)
	}
	return t, validateRef(t, "pi/command.json", "/$defs/"+t, v)
}

// ValidatePiLine checks one line of the pi dialect other than a command: a
// response (by its command, or a failure), an extension_ui_request (by its
// method) or response, a session header, or an event (by its type).
func ValidatePiLine(line []byte) error {
	v, err := decode(line)
	if err != nil {
		return fmt.Errorf("pi line: %w", err)
	}
	t, err := typed("pi line", v)
	if err != nil {
		return err
	}
	m := v.(map[string]any)
	switch t {
	case "response":
		if ok, _ := m["success"].(bool); !ok {
			return validateRef("pi response", "pi/response.json", "/$defs/failure", v)
		}
		c, _ := m["command"].(string)
		if !slices.Contains(piTypes()["response"], c) || c == "failure" || c == "cancelled" {
			return fmt.Errorf("pi response: command: unknown %q", c)
		}
		return validateRef("pi response "+c, "pi/response.json", "/$defs/"+c, v)
	case "extension_ui_request":
		meth, _ := m["method"].(string)
		if !slices.Contains(piTypes()["extension_ui_request"], meth) {
			return fmt.Errorf("pi extension_ui_request: method: unknown %q", meth)
		}
		return validateRef("pi extension_ui_request", "pi/extension_ui_request.json", "/$defs/"+meth, v)
	case "session":
		return validateRef("pi session header", "pi/session_header.json", "", v)
	case "extension_ui_response":
		return validateRef("pi extension_ui_response", "pi/extension_ui_response.json", "", v)
	}
	if !slices.Contains(piTypes()["event"], t) || len(t) > 4 && t[:4] == "ame_" {
		return fmt.Errorf("pi line: unknown type %q", t)
	}
	return validateRef("pi event "+t, "pi/event.json", "/$defs/"+t, v)
}

// validateRef checks v against the schema at ptr (a JSON pointer, "" for
// the root) in file.
func validateRef(prefix, file, ptr string, v any) error {
	compiled.Lock()
	if compiled.c == nil {
		compiled.c = &compiler{docs: map[string]any{}, nodes: map[string]*node{}}
	}
	n, err := compiled.c.load(file, ptr)
	if err != nil {
		compiled.c = nil
	}
	compiled.Unlock()
	if err != nil {
		return fmt.Errorf("%s: schemas: compile %s#%s: %w", prefix, file, ptr, err)
	}
	var fails []fail
	n.check(v, nil, &fails)
	if len(fails) == 0 {
		return nil
	}
	path, msg := explain(v, fails)
	if p := render("", v, path); p != "" {
		return fmt.Errorf("%s: %s: %s", prefix, p, msg)
	}
	return fmt.Errorf("%s: %s", prefix, msg)
}
