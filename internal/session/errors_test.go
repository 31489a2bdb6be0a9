package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/e-agent/e/internal/agent"
	"github.com/e-agent/e/internal/store"
	"github.com/e-agent/e/schemas"
)

// TestCodesMatchSchema: the codes are exactly the schema's enum (E1), in
// the same order, so the spec, the schema and the code cannot drift.
func TestCodesMatchSchema(t *testing.T) {
	b, ok := schemas.Schema("defs")
	if !ok {
		t.Fatal("no defs schema")
	}
	var defs struct {
		Defs struct {
			ErrorCode struct {
				Enum []Code `json:"enum"`
			} `json:"error_code"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(b, &defs); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(defs.Defs.ErrorCode.Enum, Codes); diff != "" {
		t.Errorf("error codes (-schema +Codes):\n%s", diff)
	}
}

func TestCodeOf(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want Code
	}{
		{name: "session error", err: &Error{Code: CodeUntrusted, Err: errors.New("x")}, want: CodeUntrusted},
		{name: "wrapped session error", err: fmt.Errorf("a: %w", &Error{Code: CodeNoTurn, Err: errors.New("x")}), want: CodeNoTurn},
		{name: "locked log", err: fmt.Errorf("store: open p: %w", store.ErrLocked), want: CodeLocked},
		{name: "missing file", err: fmt.Errorf("store: read: %w", fs.ErrNotExist), want: CodeNotFound},
		{name: "busy", err: fmt.Errorf("session s %w", agent.ErrBusy), want: CodeTurnRunning},
		{name: "idle", err: fmt.Errorf("session s %w", agent.ErrIdle), want: CodeNoTurn},
		{name: "anything else", err: errors.New("disk on fire"), want: CodeInternal},
		{name: "wrap keeps the cause's code", err: wrap(CodeInvalidParams, "resume", fmt.Errorf("x: %w", fs.ErrNotExist)), want: CodeNotFound},
		{name: "wrap falls back to its default", err: wrap(CodeInvalidParams, "model", errors.New("unknown model")), want: CodeInvalidParams},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := CodeOf(tt.err); got != tt.want {
				t.Errorf("CodeOf(%v) = %q, want %q", tt.err, got, tt.want)
			}
		})
	}
}

func TestErrorText(t *testing.T) {
	e := &Error{Code: CodeInvalidParams, Param: "tools[1]", Err: errors.New(`unknown tool "x"`)}
	if got, want := e.Error(), `tools[1]: unknown tool "x"`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}
