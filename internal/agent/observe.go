package agent

import (
	"time"

	"github.com/e-agent/e/internal/model"
)

// Observer is told, once each, about every model call and tool call, for
// an operator log. It is called from turn goroutines, never per streamed
// delta; a nil Engine.Observer costs nothing.
type Observer interface {
	ModelCall(ModelCallRecord)
	ModelRetry(ModelRetryRecord)
	ToolCall(ToolCallRecord)
}

// ModelCallRecord describes one model call, retries included.
type ModelCallRecord struct {
	Session    string
	Purpose    string // "turn" or "compaction"
	Provider   string
	Model      string // catalog id
	Status     string // "ok", "error" or "cancelled"
	HTTPStatus int    // of the last attempt; 0 when none
	Attempts   int
	FirstByte  time.Duration // of the last attempt; 0 when nothing came
	Duration   time.Duration // from the first attempt's start
	Usage      model.Usage
	CostUSD    *float64
	RequestID  string // the provider's, when it sent one
	StopReason string
	Error      string // when Status is "error"
}

// ModelRetryRecord is one retry about to wait.
type ModelRetryRecord struct {
	Session, Model string
	Attempt        int // the attempt about to start, from 2
	Delay          time.Duration
	Reason         string
	// HTTPStatus and RequestID are the failed attempt's (0 and "" when
	// unknown): what an operator quotes to the provider.
	HTTPStatus int
	RequestID  string
}

// ToolCallRecord describes one finished tool call.
type ToolCallRecord struct {
	Session  string
	ID       int
	Name     string
	Category string // read, write, execute, search, wait, extension
	Outcome  string // completed, failed, denied, interrupted
	Summary  string // e.g. "exit 3", "12 lines"
	Duration time.Duration
	// Arguments are the call's arguments, for content logging only.
	Arguments []byte
}
