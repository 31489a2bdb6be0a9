// Package acp is e acp: e as an Agent Client Protocol (ACP v1) agent on a
// pair of streams, JSON-RPC 2.0 with one message per line. It is a front end
// like e rpc: sessions, turns and tools come from the same layer, and this
// package only translates. See spec/acp.md.
//
// The translation from e's events to session/update notifications is pure
// (Translator), so it is table-tested without a process; Conn is the
// JSON-RPC framing; Agent serves the ACP methods over a server.Process.
package acp
