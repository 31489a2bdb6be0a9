package acp

// The ACP v1 shapes e sends and reads are generated into wire_gen.go from
// ACP's published schema (conformance/acpschema, vendored from
// agentclientprotocol) by internal/gen; only the fields e uses are declared
// and unknown fields are ignored on input. This file holds the version e speaks
// and Error's methods.

// ProtocolVersion is the latest (and only) ACP version e speaks.
const ProtocolVersion = 1

func (e *Error) Error() string { return e.Message }

func errorf(code int, msg string) *Error { return &Error{Code: code, Message: msg} }
