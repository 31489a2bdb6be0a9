package agent

import (
	"encoding/json"

	"github.com/e-agent/e/internal/model"
	"github.com/e-agent/e/internal/sandbox"
	"github.com/e-agent/e/internal/store"
	"github.com/e-agent/e/internal/tool"
)

// Event is one session event (P8). Each concrete type marshals to a JSON
// object whose "type" field is EventType(); the server adds the "session"
// and "request" stamps, e -p --json prints it as is. The events a turn
// streams by the thousand, *Text and *Reasoning, are pointers (a struct
// value in an interface costs an allocation per event), valid only while
// the sink runs: the turn sets the same one anew for its next delta, so a
// sink that keeps one keeps a copy. The rest are values.
type Event interface {
	EventType() string
}

// Call is one tool call as announced in tool_batch.
type Call struct {
	ID        int             `json:"id"` // unique within the session, from 1
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Category  string          `json:"category"` // read, write, execute, search, wait, extension
	Target    string          `json:"target"`   // path or command; "" when none
}

// Usage is model.Usage as it appears in usage events and results, with the
// derived prompt_tokens (U1).
type Usage struct {
	model.Usage
	PromptTokens int64 `json:"prompt_tokens"`
}

// NewUsage returns u with prompt_tokens filled in.
func NewUsage(u model.Usage) Usage { return Usage{Usage: u, PromptTokens: u.Prompt()} }

// ErrorDetails describes a terminal failure (U2).
type ErrorDetails struct {
	Stage      string `json:"stage"` // "model", "tool", "compaction", "input"
	Provider   string `json:"provider"`
	Model      string `json:"model"`
	Status     *int   `json:"status"`     // HTTP status, null when none
	RequestID  string `json:"request_id"` // "" when unknown
	ErrorType  string `json:"error_type"`
	Retryable  bool   `json:"retryable"`
	Decision   string `json:"retry_decision"` // "not_retryable", "exhausted", "cancelled"
	Attempts   int    `json:"attempts"`
	Message    string `json:"message"`
	Diagnostic string `json:"diagnostic"` // ≤ 4 KiB, secrets redacted
	Time       string `json:"time"`       // RFC 3339
}

type (
	TurnStart struct{}
	Text      struct {
		Delta string `json:"delta"`
	}
	Reasoning struct {
		Delta string `json:"delta"`
	}
	ToolBatch struct {
		Calls []Call `json:"calls"`
	}
	ToolStart struct {
		ID int `json:"id"`
	}
	ToolOutput struct {
		ID    int    `json:"id"`
		Delta string `json:"delta"`
		// Snapshot is bash's output so far as pi's bash tool reports it in an
		// update (tool.Env.SpillUpdate), for the pi dialect. Not on e's wire.
		Snapshot *tool.OutputSnapshot `json:"-"`
	}
	ToolEnd struct {
		ID      int    `json:"id"`
		Outcome string `json:"outcome"` // completed, failed, denied, interrupted
		Summary string `json:"summary"`
		Content string `json:"content"`
		// Shell is how a bash call's command ended when it exited by
		// itself (tool.Result.Shell), for front ends that show it as data
		// (the pi dialect's structuredContent). Not on e's wire.
		Shell *tool.ShellResult `json:"-"`
		// Details are pi's details of the result (tool.Result.Details),
		// for the pi dialect. Not on e's wire.
		Details json.RawMessage `json:"-"`
	}
	Compacting struct {
		Reason       string `json:"reason"` // "manual" or "auto"
		TokensBefore int64  `json:"tokens_before"`
	}
	Compacted struct {
		TokensBefore int64 `json:"tokens_before"`
		TokensAfter  int64 `json:"tokens_after"`
		SummaryChars int   `json:"summary_chars"`
	}
	UsageEvent struct {
		Usage
		// The provider's id of the answer and its own finish reason
		// (model.Response), absent when it sent none.
		ResponseID   string `json:"response_id,omitempty"`
		FinishReason string `json:"finish_reason,omitempty"`
		// ResponseModel is the model the answer says answered when it is
		// not the one asked for (model.Response), for front ends that show
		// it (the pi dialect's responseModel). Not on e's wire.
		ResponseModel string `json:"-"`
		// Signatures are the signatures of the answer's reasoning parts
		// that have text, in order, for front ends that show them with the
		// streamed reasoning (the pi dialect's thinkingSignature). Not on
		// e's wire: session.messages has them.
		Signatures []string `json:"-"`
	}
	Warning struct {
		Message string `json:"message"`
	}
	Error struct {
		Message string `json:"message"`
	}
	ErrorDetailsEvent struct {
		Details ErrorDetails `json:"details"`
	}
	Retry struct {
		Attempt int    `json:"attempt"` // the attempt about to start, from 2
		DelayMS int64  `json:"delay_ms"`
		Reason  string `json:"reason"`
		// Logged is the failed attempt's entry in the history (nil when it
		// could not be written), for front ends that announce it (the pi
		// dialect's entry_appended). Not on e's wire: session.entries has it.
		Logged *store.Entry `json:"-"`
	}
	Recovered struct {
		Attempts int `json:"attempts"`
	}
	SessionName struct {
		Name string `json:"name"`
	}
	Steered struct {
		Text string `json:"text"`
	}
	Slept struct {
		ID int   `json:"id"`
		MS int64 `json:"ms"`
	}
	SleepStopped struct {
		ID     int    `json:"id"`
		MS     int64  `json:"ms"`
		Reason string `json:"reason"` // "steer" or "interrupt"
	}
	Discarded struct {
		Reason string `json:"reason"` // "steer" (never used) or "retry" (partial answer of a failed attempt)
		Text   string `json:"text"`
	}
	TurnEnd struct {
		Aborted    bool   `json:"aborted"`
		StopReason string `json:"stop_reason,omitempty"` // why the turn ended (N2): Stop*; always set
		// ResponseID is the provider's id of the answer an interruption
		// cut short, when it gave one, for front ends that show it (the pi
		// dialect's responseId). Not on e's wire.
		ResponseID string `json:"-"`
		// ResponseModel is likewise the model that answer named (pi's
		// responseModel), "" when it named none or the one asked for.
		ResponseModel string `json:"-"`
	}
)

func (TurnStart) EventType() string         { return "turn_start" }
func (*Text) EventType() string             { return "text" }
func (*Reasoning) EventType() string        { return "reasoning" }
func (ToolBatch) EventType() string         { return "tool_batch" }
func (ToolStart) EventType() string         { return "tool_start" }
func (ToolOutput) EventType() string        { return "tool_output" }
func (ToolEnd) EventType() string           { return "tool_end" }
func (Compacting) EventType() string        { return "compacting" }
func (Compacted) EventType() string         { return "compacted" }
func (UsageEvent) EventType() string        { return "usage" }
func (Warning) EventType() string           { return "warning" }
func (Error) EventType() string             { return "error" }
func (ErrorDetailsEvent) EventType() string { return "error_details" }
func (Retry) EventType() string             { return "retry" }
func (Recovered) EventType() string         { return "recovered" }
func (SessionName) EventType() string       { return "session_name" }
func (Steered) EventType() string           { return "steered" }
func (Slept) EventType() string             { return "slept" }
func (SleepStopped) EventType() string      { return "sleep_stopped" }
func (Discarded) EventType() string         { return "discarded" }
func (TurnEnd) EventType() string           { return "turn_end" }

// Result is the turn result: the session.prompt response, the flat v1
// one-shot answer (beside its id) and the last line of e -p --json.
type Result struct {
	Output       string        `json:"output"`       // all text of the turn
	FinalOutput  string        `json:"final_output"` // text of the last assistant message
	Model        string        `json:"model"`
	Effort       string        `json:"effort"`
	Aborted      bool          `json:"aborted"`
	Error        *string       `json:"error"`
	ErrorDetails *ErrorDetails `json:"error_details"`
	Warnings     []string      `json:"warnings"`
	Usage        Usage         `json:"usage"`
	CostUSD      *float64      `json:"cost_usd"`
	Tools        ToolCounts    `json:"tools"`
	Session      *string       `json:"session"`
	Path         *string       `json:"path"`
	// StopReason says why the turn ended (N2): one of the Stop* values.
	StopReason string `json:"stop_reason"`
	// StructuredOutput is the final answer as a value of the prompt's
	// output schema (J2); null unless the turn completed with one.
	StructuredOutput json.RawMessage `json:"structured_output"`
	// Sandbox is the sandbox the turn's commands ran in (W5); nil when
	// not known here (the session layer sets it).
	Sandbox *sandbox.Report `json:"sandbox,omitempty"`

	// FinalOutputJSON is FinalOutput encoded as a JSON string, as
	// jsonenc.AppendString encodes it, when the turn has that at hand (a
	// long answer's entry); nil otherwise. Read only: a view of the
	// session's history.
	FinalOutputJSON []byte `json:"-"`
}

// ToolCounts counts a turn's tool calls.
type ToolCounts struct {
	Calls    int `json:"calls"`
	Failures int `json:"failures"`
}

// Marshal encodes ev as a JSON object with its "type" first.
func Marshal(ev Event) ([]byte, error) {
	body, err := json.Marshal(ev)
	if err != nil {
		return nil, err
	}
	head := `{"type":"` + ev.EventType() + `"`
	if string(body) == "{}" {
		return []byte(head + "}"), nil
	}
	return append([]byte(head+","), body[1:]...), nil
}
