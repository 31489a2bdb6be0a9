package pi

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/e-agent/e/schemas"
)

// TestEveryEventHasAFate: each event type of schemas/events is either
// translated by Feed or listed in eventFates with why pi gets nothing, so
// a new event type fails here instead of being dropped without a word.
func TestEveryEventHasAFate(t *testing.T) {
	fed := switchCases(t, "translate.go", "Feed")
	checkFates(t, schemas.Events(), fed, eventFates)
}

func checkFates(t *testing.T, types []string, fed map[string]bool, fates map[string]fate) {
	t.Helper()
	known := map[string]bool{}
	for _, typ := range types {
		known[typ] = true
		f, ok := fates[typ]
		switch {
		case !ok:
			t.Errorf("event %q of schemas/events has no fate in eventFates: translate it in Feed or say why pi sends nothing", typ)
		case f.what == "":
			t.Errorf("eventFates[%q] says nothing", typ)
		case f.fed && !fed[typ]:
			t.Errorf("eventFates[%q] says Feed translates it, but Feed has no case for it", typ)
		case !f.fed && fed[typ]:
			t.Errorf("eventFates[%q] says pi gets nothing, but Feed has a case for it", typ)
		}
	}
	for typ := range fates {
		if !known[typ] {
			t.Errorf("eventFates names %q, which is no event type of schemas/events", typ)
		}
	}
}

// switchCases returns the event types the type switch of function fn in
// file has cases for, naming each agent type by its EventType method.
func switchCases(t *testing.T, file, fn string) map[string]bool {
	t.Helper()
	types := agentEventTypes(t)
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); !ok || fd.Name.Name != fn {
			continue
		}
		ast.Inspect(d, func(n ast.Node) bool {
			sw, ok := n.(*ast.TypeSwitchStmt)
			if !ok {
				return true
			}
			for _, c := range sw.Body.List {
				for _, e := range c.(*ast.CaseClause).List {
					if s, ok := e.(*ast.StarExpr); ok {
						e = s.X
					}
					sel, ok := e.(*ast.SelectorExpr)
					if !ok || types[sel.Sel.Name] == "" {
						t.Fatalf("%s: %s's case %s is no agent event type", file, fn, fset.Position(e.Pos()))
					}
					out[types[sel.Sel.Name]] = true
				}
			}
			return false // the outermost type switch only
		})
	}
	if len(out) == 0 {
		t.Fatalf("%s: no type switch in %s", file, fn)
	}
	return out
}

// agentEventTypes maps internal/agent's event types to their EventType
// method's value, read from the source.
func agentEventTypes(t *testing.T) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, filepath.Join("..", "agent"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, f := range pkgs["agent"].Files {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv == nil || fd.Name.Name != "EventType" || len(fd.Body.List) != 1 {
				continue
			}
			ret, ok := fd.Body.List[0].(*ast.ReturnStmt)
			if !ok || len(ret.Results) != 1 {
				continue
			}
			lit, ok := ret.Results[0].(*ast.BasicLit)
			if !ok {
				continue
			}
			recv := fd.Recv.List[0].Type
			if s, ok := recv.(*ast.StarExpr); ok {
				recv = s.X
			}
			v, _ := strconv.Unquote(lit.Value)
			out[recv.(*ast.Ident).Name] = v
		}
	}
	return out
}
