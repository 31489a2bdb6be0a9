package agent

import (
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Stop reasons: why a turn ended (N2), the result's and turn_end's
// stop_reason. The set is open: a client treats one it does not know as an
// error.
const (
	StopCompleted     = "completed"
	StopInterrupted   = "interrupted"
	StopError         = "error"
	StopModelCalls    = "max_model_calls"
	StopTokens        = "max_tokens"
	StopCostUSD       = "max_cost_usd"
	StopDurationMS    = "max_duration_ms"
	StopInvalidOutput = "invalid_output"
)

// Budget limits one turn (N1); a zero field is no limit. It is no wire
// shape: e rpc's params, settings and e -p's flags each carry the four
// limits their own way.
type Budget struct {
	MaxModelCalls int64
	MaxTokens     int64 // every token of every model call, compaction included
	MaxCostUSD    float64
	MaxDurationMS int64
}

// Over returns b with each limit over set in place of b's: a prompt's
// budget over the session's, the session's over the process's.
func (b Budget) Over(under Budget) Budget {
	if b.MaxModelCalls == 0 {
		b.MaxModelCalls = under.MaxModelCalls
	}
	if b.MaxTokens == 0 {
		b.MaxTokens = under.MaxTokens
	}
	if b.MaxCostUSD == 0 {
		b.MaxCostUSD = under.MaxCostUSD
	}
	if b.MaxDurationMS == 0 {
		b.MaxDurationMS = under.MaxDurationMS
	}
	return b
}

// TurnOptions are what one prompt asks of its turn beyond its text.
type TurnOptions struct {
	Budget Budget
	// Output, when set, is the schema the turn's final answer must be
	// valid against (J1).
	Output *OutputSchema
}

// StoppedError ends a turn a budget stopped, or whose answer stayed
// invalid against the output schema: Reason is the stop reason.
type StoppedError struct {
	Reason  string
	Message string
}

func (e *StoppedError) Error() string { return e.Message }

// errDurationBudget is the cause of the turn's context when
// max_duration_ms ran out.
var errDurationBudget = errors.New("agent: max_duration_ms reached")

// overBudget returns the stop of the first budget reached, or nil.
func (t *turn) overBudget() *StoppedError {
	b := t.opts.Budget
	used := t.usage.Prompt() + t.usage.Output
	switch {
	case b.MaxModelCalls > 0 && t.calls >= b.MaxModelCalls:
		return &StoppedError{StopModelCalls, fmt.Sprintf("stopped: max_model_calls %d reached (%d calls made)", b.MaxModelCalls, t.calls)}
	case b.MaxTokens > 0 && used >= b.MaxTokens:
		return &StoppedError{StopTokens, fmt.Sprintf("stopped: max_tokens %d reached (%d tokens used)", b.MaxTokens, used)}
	case b.MaxCostUSD > 0:
		if c := t.info.Cost(t.usage); c != nil && *c >= b.MaxCostUSD {
			return &StoppedError{StopCostUSD, fmt.Sprintf("stopped: max_cost_usd %s reached ($%.2f spent)", money(b.MaxCostUSD), *c)}
		}
	}
	if b.MaxDurationMS > 0 {
		if ms := time.Since(t.began).Milliseconds(); ms >= b.MaxDurationMS {
			return t.durationStop()
		}
	}
	return nil
}

func (t *turn) durationStop() *StoppedError {
	return &StoppedError{StopDurationMS, fmt.Sprintf("stopped: max_duration_ms %d reached (%d ms elapsed)",
		t.opts.Budget.MaxDurationMS, time.Since(t.began).Milliseconds())}
}

// money writes a limit in dollars with at least two decimals: 0.50, 1.25,
// 0.005.
func money(usd float64) string {
	s := strconv.FormatFloat(usd, 'f', -1, 64)
	if f := strconv.FormatFloat(usd, 'f', 2, 64); len(f) >= len(s) {
		return f
	}
	return s
}
