// Package golden holds the conformance cases of e's protocol (one txtar
// file per case, format in spec/conformance.md), embedded so that the
// e-conformance binary carries them and runs from any directory.
package golden

import "embed"

// Cases holds every *.txtar case and known-failing.txt (when present) at
// its root.
//
//go:embed *.txtar *.txt
var Cases embed.FS
