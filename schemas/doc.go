// Package schemas holds the JSON Schemas (draft 2020-12) that define e's
// automation protocol, and validates values against them with one-line
// errors.
//
// The schema files are the contract; spec/protocol.md describes the same
// protocol in prose. Files live beside this package and are embedded:
//
//	methods/<method>.params.json   params of each e rpc method
//	methods/<method>.result.json   its result
//	envelope/{request,response,error}.json
//	events/<type>.json             one per event type, stamps optional
//	lines/{event,ask,notice,result}.json
//	oneshot/{request,answer}.json  version-1 lines
//	result.json, defs.json         the turn result, shared definitions
//	store/, extension/             persisted and extension formats
//
// A schema's name is its path without ".json", except that method schemas
// are named "<method>.params" and "<method>.result"; Schema and Document
// use these names. Each file's $id is
// https://github.com/e-agent/e/schemas/<path>, so relative $refs resolve
// between files and inside Document.
//
// index.json lists every schema by kind; it is checked against the files
// by the tests (go test ./schemas -run TestIndexFile -update rewrites it).
//
// Errors are one line: a prefix naming what was validated (the method,
// "oneshot", "event <type>", …), the JSON path of the offending value
// (params.tools[2]) and what was expected and what came (V3), e.g.
//
//	session.create: params.tool_mode: expected "all" or "none", got false
//	session.prompt: params.prompt: required
//
// Schemas compile lazily, each on its first use, so a process validates
// only what it needs and start-up does no schema work.
//
// # The validator
//
// Validation is done by a small interpreter of the JSON Schema draft 2020-12
// keywords these files use (validator.go), not by a general library linked
// into e: the reference library, santhosh-tekuri/jsonschema, compiles every
// draft's meta-schemas in its package init, which alone cost about 8 ms of
// e rpc's 10 ms budget from process start to the hello response. The tests
// keep the two in step: every file must compile with the reference, and
// both must agree on thousands of generated instances per schema.
package schemas
