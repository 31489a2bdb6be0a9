// Package conformance runs golden cases against any implementation of the
// e rpc protocol (and of e's other front ends: e -p, pi's RPC dialect,
// ACP), as a black box over pipes: it starts the server command
// in fresh temporary directories, plays the client lines of a case, serves
// the model from the case's tape as an OpenAI-compatible Chat Completions
// endpoint, and matches what the server prints against the expected lines,
// stream by stream, with placeholders and matchers for volatile values.
//
// The case format, the matching rules and the model-tape contract servers
// must honour are specified in spec/conformance.md. The command
// e-conformance is the front end; go test runs the golden cases too.
package conformance
