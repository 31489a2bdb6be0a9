package server

import (
	"encoding/json"
	"time"

	"github.com/e-agent/e/internal/agent"
	"github.com/e-agent/e/internal/session"
)

// Wire shapes of e rpc. Params are the generated types of package protocol,
// decoded only after their schema (schemas/methods/<method>.params.json)
// accepted the line, so pointer fields mean "omitted or null" (V1). The
// results below are checked against schemas/methods/<method>.result.json
// by the tests.

type HelloResult struct {
	Protocol int      `json:"protocol"`
	Version  string   `json:"version"`
	Channel  string   `json:"channel"`
	Commit   string   `json:"commit"`
	Cwd      string   `json:"cwd"`
	Home     string   `json:"home"`
	Methods  []string `json:"methods"`
	Ask      bool     `json:"ask"`
}

type ModelsListResult struct {
	Default string              `json:"default"`
	Models  []session.ModelInfo `json:"models"`
}

type SessionCreateResult struct {
	Session  string  `json:"session"`
	Model    string  `json:"model"`
	Effort   string  `json:"effort"`
	Cwd      string  `json:"cwd"`
	Path     *string `json:"path"`
	Approval string  `json:"approval,omitempty"` // always set by e; optional in the schema (additive)
}

type SessionListResult struct {
	Sessions []session.Summary `json:"sessions"`
}

type SessionInfoResult struct {
	Session  string  `json:"session"`
	Model    string  `json:"model"`
	Effort   string  `json:"effort"`
	Cwd      string  `json:"cwd"`
	Path     *string `json:"path"`
	Name     *string `json:"name"`
	Title    *string `json:"title"`
	Messages int     `json:"messages"`
	Running  bool    `json:"running"`
}

// SessionPromptResult is the turn result.
type SessionPromptResult = agent.Result

type SessionSteerResult struct {
	Held bool `json:"held"`
}

type SessionUnsteerResult struct {
	Withdrawn []string `json:"withdrawn"`
}

type SessionEntriesResult struct {
	Entries []session.Entry `json:"entries"`
	Leaf    *string         `json:"leaf"`
}

type SessionCompactResult struct {
	TokensBefore int64       `json:"tokens_before"`
	TokensAfter  int64       `json:"tokens_after"`
	SummaryChars int         `json:"summary_chars"`
	Summary      string      `json:"summary"`
	FirstKept    *string     `json:"first_kept"`
	Usage        agent.Usage `json:"usage"`
}

type SessionSetResult struct {
	Model    string `json:"model"`
	Effort   string `json:"effort"`
	Approval string `json:"approval,omitempty"` // always set by e; optional in the schema (additive)
}

type SessionMessagesResult struct {
	Messages []Message `json:"messages"`
}

// Message is one message of session.messages, in the persisted shape: the
// log entry's id, parent and time beside the message itself.
type Message struct {
	ID      string         `json:"id"`
	Parent  string         `json:"parent"`
	Time    time.Time      `json:"time"`
	Role    string         `json:"role"`
	Content []session.Part `json:"content"`
}

type SessionForkResult struct {
	Session string  `json:"session"`
	Path    *string `json:"path"`
}

type SessionExportResult struct {
	Path  string `json:"path"`
	Title string `json:"title"`
}

// Empty is the result of methods that return nothing.
type Empty struct{}

// Notice is a process line about extensions (X6, X7).
type Notice struct {
	Type      string          `json:"type"`                // "notice"
	Extension string          `json:"extension,omitempty"` // "" for a notice about an approval ask
	Session   string          `json:"session,omitempty"`   // the approval ask's session
	Level     string          `json:"level"`
	Message   string          `json:"message"`
	Method    string          `json:"method,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	Ask       int64           `json:"ask,omitempty"` // the ask this notice cancels
}
