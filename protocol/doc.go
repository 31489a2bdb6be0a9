// Package protocol holds the wire types of e's automation protocol (e rpc):
// the params and result of every method, every event, every line e rpc
// writes, the request and response envelopes, the version-1 one-shot lines
// and the built-in tools' calls as tool_batch announces them.
//
// Every type is generated from the JSON Schemas in schemas/ by
// internal/gen (go generate ./...); none is edited by hand, and CI fails
// when regenerating changes anything. Descriptions in the schemas are the
// doc comments here; enums are named string types with a constant per
// value; a field the schema lets be null is a pointer, a field it lets be
// absent is tagged omitzero.
//
// A client decodes a line by its shape: with "type", an event (NewEvent
// gives the struct for a known type; unknown types must be skipped), an
// AskLine or a NoticeLine; without it, a Response or an ErrorResponse.
package protocol

//go:generate go run ../internal/gen -root ..
