// Package cli holds the conventions e's commands share (e, e-conformance):
// how help is asked for, and usage errors that name the nearest flag.
package cli

import (
	"flag"
	"strings"

	"github.com/e-agent/e/internal/suggest"
)

// WantsHelp reports whether args ask for help (-h, -help, --help) before
// any "--".
func WantsHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--help":
			return true
		}
	}
	return false
}

// FlagMessage says what was wrong with args for fs, from fs.Parse's err: for
// an unknown flag, "unknown flag --x (did you mean --y?)" when a defined
// flag is close; any other error as it is.
func FlagMessage(fs *flag.FlagSet, err error) string {
	name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: ")
	if !ok {
		return err.Error()
	}
	name = strings.TrimLeft(name, "-")
	msg := "unknown flag " + Dashes(name)
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	if near, ok := suggest.Nearest(name, names); ok {
		msg += " (did you mean " + Dashes(near) + "?)"
	}
	return msg
}

// Dashes writes a flag name as the help pages do: -p, --json.
func Dashes(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}
