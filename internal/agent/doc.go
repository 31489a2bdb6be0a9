// Package agent runs turns: a prompt goes to the session's model, the
// model's tool calls run in bounded waves, their results go back to the
// model, and so on until the model stops. Every step is reported as a typed
// Event; the turn ends with exactly one TurnEnd and one Result on every path
// (success, failure, interrupt).
//
// # Sessions
//
// A Session is one conversation in one working directory. It runs one turn
// at a time; Steer and Interrupt act on the running turn from any goroutine.
// The engine knows nothing of JSON Lines or request ids: callers pass a sink
// that receives the events in order.
//
// # History
//
// The conversation is kept as store entries (messages, settings changes,
// compactions, titles) so a saved session, a memory-only one and a fork all
// share one representation. An interrupted turn records a tool result for
// every call that did not finish, so the history stays valid for the next
// prompt.
package agent
