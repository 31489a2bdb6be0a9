package main

import (
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"go/types"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// piSchema is a pi command schema of three commands; facts is spliced in
// as the last one's x-e keyword ("" for none).
func piSchema(facts string) []byte {
	xe := ""
	if facts != "" {
		xe = `"x-e": ` + facts + `,`
	}
	return []byte(`{"$defs": {
		"get_state": {"x-e": {"query": true}, "type": "object"},
		"abort": {"x-e": {"stop": true, "responds": true}, "type": "object"},
		"set_name": {` + xe + ` "type": "object"}}}`)
}

// TestPiCommands checks that every pi command must carry its dispatch
// facts, known ones only, that agree with each other (issue 29).
func TestPiCommands(t *testing.T) {
	tests := []struct {
		name    string
		facts   string
		want    []piCommand
		wantErr string
	}{
		{name: "facts of each", facts: "{}", want: []piCommand{
			{typ: "abort", piFacts: piFacts{Stop: true, Responds: true}},
			{typ: "get_state", piFacts: piFacts{Query: true}},
			{typ: "set_name"}}},
		{name: "no facts", wantErr: `pi/command.json: $defs/set_name: no "x-e" facts`},
		{name: "unknown fact", facts: `{"quick": true}`, wantErr: `$defs/set_name: x-e: json: unknown field "quick"`},
		{name: "query that stops", facts: `{"query": true, "stop": true}`, wantErr: "$defs/set_name: x-e: a query neither stops"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := piCommands("pi/command.json", piSchema(tt.facts))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("piCommands error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(piCommand{})); diff != "" {
				t.Errorf("commands (-want +got):\n%s", diff)
			}
		})
	}
}

// typeCheck type-checks the files of one package, returning the first error.
func typeCheck(t *testing.T, imp types.Importer, srcs ...string) error {
	t.Helper()
	fset := token.NewFileSet()
	var files []*ast.File
	for i, src := range srcs {
		f, err := parser.ParseFile(fset, "f"+string(rune('0'+i))+".go", src, 0)
		if err != nil {
			t.Fatalf("parse: %v\n%s", err, src)
		}
		files = append(files, f)
	}
	_, err := (&types.Config{Importer: imp}).Check("p", fset, files, nil)
	return err
}

// handlerCase is a generated dispatch table's stand-in package completed
// with handlers: it must build, or fail naming wantErr.
type handlerCase struct {
	name, handlers, wantErr string
}

// checkHandlers type-checks the generated src beside stub and each case's
// handlers.
func checkHandlers(t *testing.T, imp types.Importer, src, stub string, tests []handlerCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := typeCheck(t, imp, src, stub+tt.handlers)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("does not build: %v\n%s", err, src)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("type check = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

// TestPiDispatchNeedsHandlers type-checks the generated pi table against a
// stand-in of package pi: with every command's handler it builds, each
// handler taking its command's struct; without one, it does not, naming it.
func TestPiDispatchNeedsHandlers(t *testing.T) {
	cs, err := piCommands("pi/command.json", piSchema("{}"))
	if err != nil {
		t.Fatal(err)
	}
	src, err := format.Source(piDispatchFile(cs))
	if err != nil {
		t.Fatal(err)
	}
	stub := `package pi
type front struct{}
type command struct{}
type CommandGetState struct{}
type CommandAbort struct{}
type CommandSetName struct{}
func answer[P any](func(*front, P) (any, error)) func(*front, *command) { return nil }
func answerLater[P any](func(*front, *command, P)) func(*front, *command) { return nil }
func (*front) getState(CommandGetState) (any, error) { return nil, nil }
func (*front) abort(*command, CommandAbort) {}
`
	tests := []handlerCase{
		{name: "every handler", handlers: "func (*front) setName(CommandSetName) (any, error) { return nil, nil }"},
		{name: "handler missing", wantErr: "has no field or method setName"},
		{name: "handler of another command's struct", handlers: "func (*front) setName(CommandGetState) (any, error) { return nil, nil }",
			wantErr: "setName"},
		{name: "responding handler as a simple one", handlers: "func (*front) setName(*command, CommandSetName) {}", wantErr: "setName"},
	}
	checkHandlers(t, nil, string(src), stub, tests)
	compact := strings.Join(strings.Fields(string(src)), " ")
	for _, want := range []string{
		`"get_state": answer[CommandGetState]((*front).getState)`, `"abort": answerLater[CommandAbort]((*front).abort)`,
	} {
		if !strings.Contains(compact, want) {
			t.Errorf("generated table lacks %s:\n%s", want, src)
		}
	}
	if got := between(string(src), "var queries", "}"); !strings.Contains(got, `"get_state": true`) || strings.Contains(got, "abort") {
		t.Errorf("queries = %s, want get_state alone", got)
	}
	if got := between(string(src), "var stops", "}"); !strings.Contains(got, `"abort": true`) || strings.Contains(got, "get_state") {
		t.Errorf("stops = %s, want abort alone", got)
	}
}

// between is the text of s from the first from to the next to after it.
func between(s, from, to string) string {
	_, s, _ = strings.Cut(s, from)
	s, _, _ = strings.Cut(s, to)
	return s
}

// acpTestDoc is an ACP schema with a request, a notification and the
// client's routing definitions that name them.
func acpTestDoc() acpDoc {
	obj := func(method string, props ...string) map[string]any {
		ps := map[string]any{}
		for _, p := range props {
			ps[p] = map[string]any{"type": "string"}
		}
		return map[string]any{"type": "object", "x-method": method, "x-side": "agent", "properties": ps}
	}
	route := func(defs ...string) map[string]any {
		var alts []any
		for _, d := range defs {
			alts = append(alts, map[string]any{"allOf": []any{map[string]any{"$ref": "#/$defs/" + d}}})
		}
		return map[string]any{"properties": map[string]any{"params": map[string]any{"anyOf": alts}}}
	}
	return acpDoc{Defs: map[string]map[string]any{
		"PromptRequest":      obj("session/prompt", "sessionId", "prompt"),
		"PromptResponse":     {"type": "object", "x-method": "session/prompt", "x-side": "agent"},
		"CancelNotification": obj("session/cancel", "sessionId"),
		"ClientRequest":      route("PromptRequest"),
		"ClientNotification": route("CancelNotification"),
	}}
}

// TestACPDispatch checks each ACP method's facts against the schema: the
// client must send it as that kind of message, its params type must stand
// for its definition, its session param must be one of its properties.
func TestACPDispatch(t *testing.T) {
	types := []acpType{{name: "PromptParams", def: "PromptRequest"}, {name: "SessionIDParams", def: "CloseSessionRequest", also: []string{"CancelNotification"}}}
	tests := []struct {
		name    string
		ms      []acpMethod
		want    []string // lines the output has
		wantErr string
	}{
		{name: "request and notification", ms: []acpMethod{
			{method: "session/prompt", params: "PromptParams", session: "sessionId", later: true},
			{method: "session/cancel", params: "SessionIDParams", session: "sessionId", notification: true},
		}, want: []string{
			`"session/prompt": answerLater[PromptParams]("session/prompt", (*Agent).sessionPrompt),`,
			`"session/cancel": notified[SessionIDParams]("session/cancel", (*Agent).sessionCancel),`,
			`"session/cancel": "sessionId",`,
		}},
		{name: "unknown method", ms: []acpMethod{{method: "session/fly", params: "PromptParams"}},
			wantErr: "method session/fly: ACP's client sends no request of that x-method"},
		{name: "notification taken for a request", ms: []acpMethod{{method: "session/cancel", params: "SessionIDParams"}},
			wantErr: "method session/cancel: ACP's client sends no request"},
		{name: "params type of another definition", ms: []acpMethod{{method: "session/prompt", params: "SessionIDParams"}},
			wantErr: "params type SessionIDParams stands for [CloseSessionRequest CancelNotification], not ACP's PromptRequest"},
		{name: "session param the definition lacks", ms: []acpMethod{{method: "session/prompt", params: "PromptParams", session: "session"}},
			wantErr: "session param session: ACP's PromptRequest has no such property"},
		{name: "notification without params", ms: []acpMethod{{method: "session/cancel", notification: true}},
			wantErr: "a notification needs its params type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src, err := acpDispatch(acpTestDoc(), types, tt.ms)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("acpDispatch error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			out, err := format.Source(src)
			if err != nil {
				t.Fatal(err)
			}
			compact := strings.Join(strings.Fields(string(out)), " ")
			for _, w := range tt.want {
				if !strings.Contains(compact, w) {
					t.Errorf("output lacks %s:\n%s", w, out)
				}
			}
		})
	}
}

// TestACPDispatchNeedsHandlers type-checks the generated ACP tables
// against a stand-in of package acp: without a method's handler, or with
// one taking another params type, they do not build.
func TestACPDispatchNeedsHandlers(t *testing.T) {
	types := []acpType{{name: "PromptParams", def: "PromptRequest"}, {name: "SessionIDParams", def: "CloseSessionRequest", also: []string{"CancelNotification"}}}
	src, err := acpDispatch(acpTestDoc(), types, []acpMethod{
		{method: "session/prompt", params: "PromptParams", session: "sessionId"},
		{method: "session/cancel", params: "SessionIDParams", session: "sessionId", notification: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	imp := jsonImporter()
	stub := `package acp
import "encoding/json"
type Agent struct{}
type Error struct{}
type PromptParams struct{}
type SessionIDParams struct{}
type handler func(*Agent, json.RawMessage) (any, func() (any, *Error, func()), *Error)
func answer[P any](string, func(*Agent, P) (any, *Error)) handler { return nil }
func notified[P any](string, func(*Agent, P)) func(*Agent, json.RawMessage) { return nil }
func (*Agent) sessionCancel(SessionIDParams) {}
`
	tests := []handlerCase{
		{name: "every handler", handlers: "func (*Agent) sessionPrompt(PromptParams) (any, *Error) { return nil, nil }"},
		{name: "handler missing", wantErr: "has no field or method sessionPrompt"},
		{name: "handler of another params type", handlers: "func (*Agent) sessionPrompt(SessionIDParams) (any, *Error) { return nil, nil }",
			wantErr: "sessionPrompt"},
	}
	checkHandlers(t, imp, string(src), stub, tests)
}

// jsonImporter is an importer of a stand-in encoding/json: RawMessage alone.
func jsonImporter() types.Importer {
	pkg := types.NewPackage("encoding/json", "json")
	name := types.NewTypeName(token.NoPos, pkg, "RawMessage", nil)
	types.NewNamed(name, types.NewSlice(types.Typ[types.Byte]), nil)
	pkg.Scope().Insert(name)
	pkg.MarkComplete()
	return importerFunc(func(path string) (*types.Package, error) { return pkg, nil })
}

type importerFunc func(string) (*types.Package, error)

func (f importerFunc) Import(path string) (*types.Package, error) { return f(path) }

// TestDispatchNeedsHandlers type-checks e rpc's generated table against a
// stand-in of package server: with every method's handler taking its
// method's generated params struct it builds; without one, with one taking
// another method's struct or the raw request alone, it does not, naming it.
func TestDispatchNeedsHandlers(t *testing.T) {
	src, err := format.Source(dispatchFile([]method{
		{name: "hello", facts: facts{Ordered: true}},
		{name: "session.follow_up", facts: facts{Session: "session"}},
		{name: "shutdown", facts: facts{Loop: true}},
	}))
	if err != nil {
		t.Fatal(err)
	}
	imp := packageImporter(t, "github.com/e-agent/e/protocol", `package protocol
type HelloParams struct{}
type SessionFollowUpParams struct{ Session string }
type ShutdownParams struct{}
`)
	stub := `package server
import "github.com/e-agent/e/protocol"
type Server struct{}
type request struct{}
type handler func(*Server, *request) (any, error)
func typed[P any](func(*Server, *request, P) (any, error)) handler { return nil }
func (*Server) hello(*request, protocol.HelloParams) (any, error) { return nil, nil }
`
	tests := []handlerCase{
		{name: "every handler", handlers: "func (*Server) sessionFollowUp(*request, protocol.SessionFollowUpParams) (any, error) { return nil, nil }"},
		{name: "handler missing", wantErr: "has no field or method sessionFollowUp"},
		{name: "handler of another method's params", handlers: "func (*Server) sessionFollowUp(*request, protocol.HelloParams) (any, error) { return nil, nil }",
			wantErr: "sessionFollowUp"},
		{name: "handler decoding its own params", handlers: "func (*Server) sessionFollowUp(*request) (any, error) { return nil, nil }",
			wantErr: "sessionFollowUp"},
	}
	checkHandlers(t, imp, string(src), stub, tests)
	compact := strings.Join(strings.Fields(string(src)), " ")
	for _, want := range []string{
		`"session.follow_up": typed[protocol.SessionFollowUpParams]((*Server).sessionFollowUp)`, `"shutdown": nil`,
		`var sessionParam = map[string]string{ "session.follow_up": "session", }`, `var ordered = map[string]bool{ "hello": true, }`,
	} {
		if !strings.Contains(compact, want) {
			t.Errorf("generated table lacks %s:\n%s", want, src)
		}
	}
}

// packageImporter is an importer of one stand-in package, path, type-checked
// from src.
func packageImporter(t *testing.T, path, src string) types.Importer {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "stub.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	pkg, err := (&types.Config{}).Check(path, fset, []*ast.File{f}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return importerFunc(func(p string) (*types.Package, error) {
		if p != path {
			return nil, fmt.Errorf("no package %s in this test", p)
		}
		return pkg, nil
	})
}
