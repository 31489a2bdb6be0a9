package session

import (
	"errors"
	"io/fs"

	"github.com/e-agent/e/internal/agent"
	"github.com/e-agent/e/internal/store"
)

// Code is a stable, machine-readable error kind. Front ends put it on their
// wire beside the message; clients branch on it, never on the text.
type Code string

// The codes. Front ends use the first four for their own framing errors.
const (
	CodeParseError     Code = "parse_error"     // the line is not JSON
	CodeInvalidRequest Code = "invalid_request" // JSON, but not a request object
	CodeUnknownMethod  Code = "unknown_method"  // no such method
	CodeInvalidParams  Code = "invalid_params"  // params break the schema or a rule of the method
	CodeUnknownSession Code = "unknown_session" // no open session has that id
	CodeTurnRunning    Code = "turn_running"    // the session already runs a turn (S5)
	CodeNoTurn         Code = "no_turn"         // steer with no running turn
	CodeLocked         Code = "locked"          // the log is open for writing elsewhere (C6)
	CodeUntrusted      Code = "untrusted"       // the cwd has an AGENTS.md but is not trusted (C9)
	CodeNotFound       Code = "not_found"       // a named file or directory does not exist
	CodeUnsupported    Code = "unsupported"     // the model cannot do it (images without image input)
	CodeUnknownAsk     Code = "unknown_ask"     // ask.reply for an ask that is not open
	CodeUnknownCall    Code = "unknown_call"    // tool.result for a client tool call that is not pending (G2)
	CodeInterrupted    Code = "interrupted"     // session.compact stopped by session.interrupt, close or shutdown; a follow-up they dropped
	CodeInternal       Code = "internal"        // anything else: e's or the system's fault
)

// Codes lists every code, in the order the spec documents them.
var Codes = []Code{CodeParseError, CodeInvalidRequest, CodeUnknownMethod, CodeInvalidParams,
	CodeUnknownSession, CodeTurnRunning, CodeNoTurn, CodeLocked, CodeUntrusted, CodeNotFound,
	CodeUnsupported, CodeUnknownAsk, CodeUnknownCall, CodeInterrupted, CodeInternal}

// Error is an error of the session layer. Param names the input at fault
// ("cwd", "model", "tools[2]", "images[0]"), "" when no single one is;
// front ends spell it their way (e rpc: "params.cwd").
type Error struct {
	Code  Code
	Param string
	Err   error
}

func (e *Error) Error() string {
	if e.Param != "" {
		return e.Param + ": " + e.Err.Error()
	}
	return e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// CodeOf returns the code of the first *Error in err's chain; without one,
// the code the cause implies (a locked log, a missing file), else
// CodeInternal.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return codeOfCause(err)
}

func codeOfCause(err error) Code {
	switch {
	case errors.Is(err, store.ErrLocked):
		return CodeLocked
	case errors.Is(err, fs.ErrNotExist):
		return CodeNotFound
	case errors.Is(err, agent.ErrBusy):
		return CodeTurnRunning
	case errors.Is(err, agent.ErrIdle):
		return CodeNoTurn
	}
	return CodeInternal
}

// wrap gives err a code: the one its cause implies, else def.
func wrap(def Code, param string, err error) *Error {
	c := codeOfCause(err)
	if c == CodeInternal {
		c = def
	}
	return &Error{Code: c, Param: param, Err: err}
}
