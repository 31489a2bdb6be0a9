package pi

import "github.com/e-agent/e/protocol"

// fate is what pi's dialect makes of one e event type.
type fate struct {
	fed  bool   // Translator.Feed has a case for it
	what string // the pi lines it becomes, or why it sends none
}

// eventFates covers every e event type of schemas/events, so that none is
// dropped without a word: a new event type fails TestEveryEventHasAFate
// until it is given a case in Feed or a reason here.
var eventFates = map[string]fate{
	protocol.EventTypeTurnStart:  {fed: true, what: "agent_start, turn_start, the prompt's message_start/end"},
	protocol.EventTypeText:       {fed: true, what: "message_update text_delta"},
	protocol.EventTypeReasoning:  {fed: true, what: "message_update thinking_delta"},
	protocol.EventTypeUsage:      {fed: true, what: "the assistant message's usage, its blocks' ends"},
	protocol.EventTypeToolBatch:  {fed: true, what: "message_update toolcall_*, message_end"},
	protocol.EventTypeToolStart:  {fed: true, what: "tool_execution_start"},
	protocol.EventTypeToolOutput: {fed: true, what: "tool_execution_update"},
	protocol.EventTypeToolEnd:    {fed: true, what: "tool_execution_end, the tool result's message"},
	protocol.EventTypeCompacting: {fed: true, what: "compaction_start"},
	protocol.EventTypeCompacted:  {fed: true, what: "compaction_end"},
	protocol.EventTypeRetry:      {fed: true, what: "agent_end willRetry, auto_retry_start"},
	protocol.EventTypeRecovered:  {fed: true, what: "auto_retry_end success, after the answer's message_end"},
	protocol.EventTypeError:      {fed: true, what: "the failed message's errorMessage, compaction_end's"},
	protocol.EventTypeSteered:    {fed: true, what: "the steer's user message_start/end"},
	protocol.EventTypeTurnEnd:    {fed: true, what: "message_end, turn_end"},

	protocol.EventTypeWarning: {what: "pi has no warning line: the front writes it to stderr (sink)"},
	protocol.EventTypeErrorDetails: {what: "pi's messages have no field for a provider's error body; " +
		"errorMessage carries the error's text"},
	protocol.EventTypeSessionName: {what: "pi has no line for a title e gives a session; pi's clients name one by set_session_name"},
	protocol.EventTypeSlept:       {what: "the sleep call's tool_execution_end says it ended"},
	protocol.EventTypeSleepStopped: {what: "the sleep call's tool_execution_end says it ended; " +
		"a steer's own message follows"},
	protocol.EventTypeDiscarded: {what: "pi has no line for dropped text: message_update streamed it " +
		"already, and a retry's agent_end (willRetry) says that attempt failed"},
	protocol.EventTypeShellOutput: {what: "only the bash command's own run streams it, which reads it itself " +
		"(rpc.go); it never reaches a turn's sink"},
}
