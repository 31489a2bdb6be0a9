// Package eventfate checks, for the tests of a dialect's front end (pi,
// ACP), that its translator accounts for every event type of
// schemas/events: each is translated by the translator's type switch or
// said to be sent no further, with why, so that a new event type fails a
// test instead of being dropped without a word. It reads the translator's
// source and internal/agent's EventType methods; only tests import it.
package eventfate

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/e-agent/e/schemas"
)

// Fate is what a dialect makes of one e event type.
type Fate struct {
	Translated bool   // the translator's type switch has a case for it
	What       string // the lines it becomes, or why the dialect sends none
}

// Check compares fates, the dialect's list, with the event types of
// schemas/events and with the cases of the outermost type switch of
// function fn in file (relative to the dialect's package directory, a
// sibling of internal/agent). Each problem is one error.
func Check(dialect, file, fn string, fates map[string]Fate) []error {
	fed, err := switchCases(file, fn)
	if err != nil {
		return []error{err}
	}
	var errs []error
	known := map[string]bool{}
	for _, typ := range schemas.Events() {
		known[typ] = true
		f, ok := fates[typ]
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("event %q of schemas/events has no fate in eventFates: translate it in %s or say why %s sends nothing", typ, fn, dialect))
		case f.What == "":
			errs = append(errs, fmt.Errorf("eventFates[%q] says nothing", typ))
		case f.Translated && !fed[typ]:
			errs = append(errs, fmt.Errorf("eventFates[%q] says %s translates it, but it has no case for it", typ, fn))
		case !f.Translated && fed[typ]:
			errs = append(errs, fmt.Errorf("eventFates[%q] says %s gets nothing, but %s has a case for it", typ, dialect, fn))
		}
	}
	for typ := range fates {
		if !known[typ] {
			errs = append(errs, fmt.Errorf("eventFates names %q, which is no event type of schemas/events", typ))
		}
	}
	return errs
}

// switchCases returns the event types the type switch of function fn in
// file has cases for, naming each agent type by its EventType method.
func switchCases(file, fn string) (map[string]bool, error) {
	types, err := agentEventTypes()
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, nil, 0)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	var bad error
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
						bad = fmt.Errorf("eventfate: %s: %s's case %s is no agent event type", file, fn, fset.Position(e.Pos()))
						continue
					}
					out[types[sel.Sel.Name]] = true
				}
			}
			return false // the outermost type switch only
		})
	}
	if bad != nil {
		return nil, bad
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("eventfate: %s: no type switch in %s", file, fn)
	}
	return out, nil
}

// agentEventTypes maps internal/agent's event types to their EventType
// method's value, read from the source.
func agentEventTypes() (map[string]string, error) {
	files, err := filepath.Glob(filepath.Join("..", "agent", "*.go"))
	if err != nil || len(files) == 0 {
		return nil, errors.New("eventfate: no Go files in ../agent (run from a package directory of internal)")
	}
	fset := token.NewFileSet()
	out := map[string]string{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			return nil, fmt.Errorf("eventfate: %w", err)
		}
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
	return out, nil
}
