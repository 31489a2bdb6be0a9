package acp

import "github.com/e-agent/e/protocol"

// fate is what ACP makes of one e event type.
type fate struct {
	translated bool   // Translator.Event has a case for it
	what       string // the session/update it becomes, or why it sends none
}

// eventFates covers every e event type of schemas/events, so that none is
// dropped without a word: a new event type fails TestEveryEventHasAFate
// until it is given a case in Translator.Event or a reason here.
var eventFates = map[string]fate{
	protocol.EventTypeText:        {translated: true, what: kindMessage},
	protocol.EventTypeReasoning:   {translated: true, what: kindThought},
	protocol.EventTypeToolBatch:   {translated: true, what: kindToolCall + ", one per call"},
	protocol.EventTypeToolStart:   {translated: true, what: kindToolUpd + " in_progress"},
	protocol.EventTypeToolOutput:  {translated: true, what: kindToolUpd + " with the output's tail"},
	protocol.EventTypeToolEnd:     {translated: true, what: kindToolUpd + " completed or failed"},
	protocol.EventTypeUsage:       {translated: true, what: kindUsage + ", when the context window is known"},
	protocol.EventTypeSessionName: {translated: true, what: kindInfo + " title"},

	protocol.EventTypeTurnStart: {what: "session/prompt is the turn's start; ACP has no update for it"},
	protocol.EventTypeTurnEnd: {what: "the session/prompt response (stopReason) ends the turn; " +
		"the result's cost goes out as " + kindUsage},
	protocol.EventTypeError:        {what: "the session/prompt response carries the turn's error"},
	protocol.EventTypeErrorDetails: {what: "ACP's error has no field for a provider's error body; the response's message carries the error"},
	protocol.EventTypeWarning:      {what: "ACP has no update for a warning"},
	protocol.EventTypeCompacting:   {what: "ACP has no update for compaction"},
	protocol.EventTypeCompacted:    {what: "ACP has no update for compaction; the next " + kindUsage + " shows its effect"},
	protocol.EventTypeRetry:        {what: "ACP has no update for a retry; the streamed chunks just go on"},
	protocol.EventTypeRecovered:    {what: "ACP has no update for a retry"},
	protocol.EventTypeDiscarded:    {what: "ACP has no way to take back streamed chunks"},
	protocol.EventTypeSteered:      {what: "e acp never steers: a prompt while one runs is refused (-32602)"},
	protocol.EventTypeSlept:        {what: "the sleep call's " + kindToolUpd + " says it ended"},
	protocol.EventTypeSleepStopped: {what: "the sleep call's " + kindToolUpd + " says it ended"},
	protocol.EventTypeShellOutput:  {what: "ACP has no user shell command (session.shell), the only source of it"},
}
