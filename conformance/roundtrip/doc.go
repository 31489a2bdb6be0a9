// Package roundtrip holds one test, in a package of its own so that it
// runs beside the conformance package's: every golden case, driven by the
// runner through e-conformance record as its server, is recorded and the
// recording replays green (issue 10, item 5).
package roundtrip
