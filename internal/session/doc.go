// Package session is e's one session layer: it owns the process's
// sessions and the rules every front end shares (create, resume, fork and
// close: C1–C9, T1, T2), model and effort selection, tool policy, trust,
// settings, the extension host's attachment and the lifecycle of turns.
//
// Front ends (e rpc in package server, e -p in cmd/e, pi's dialect, ACP)
// are thin layers over it: they decode their wire, call a Host or a
// Session, and encode what comes back. Nothing here writes to a stream.
//
// A Host is one process. Host.Create makes a Session; Session.Prompt and
// Session.Compact start a Turn, which runs on a goroutine the Host owns and
// has its own done channel: Interrupt and Close wait on the turn they
// found, never on anything shared across turns. Errors carry a Code
// (see Error) that front ends put on their wire.
package session
