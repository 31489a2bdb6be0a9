//go:build race

package conformance

// raceEnabled reports whether this test binary was built with -race; the
// server it builds is then a -race build too, so the conformance cases
// exercise the reference server under the race detector.
const raceEnabled = true
