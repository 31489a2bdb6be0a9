package pi

import "fmt"

// prime-agent's flavour of the dialect (spec/pi.md: prime-agent), chosen by
// --flavor prime or by running e as prime-agent: as pi 1.6.0's but for the
// queue's event (session_action_update in place of queue_update) and
// get_state's fields (sessionActions and goal in place of
// pendingMessageCount), read from prime-agent's rpc-types.ts and
// agent-session.ts (commit e319a66, after v0.8.0).

// primeOnly are prime-agent's commands e does not implement (rpc-types.ts):
// its agent messages, refinement, schedules, heartbeats and observation.
var primeOnly = map[string]bool{
	"refine": true, "send_message": true,
	"agent_messages_status": true, "agent_messages_pause": true, "agent_messages_resume": true, "agent_messages_clear": true,
	"list_schedules": true, "add_schedule": true, "cancel_schedule": true,
	"list_heartbeats": true, "get_heartbeat": true, "set_heartbeat": true, "update_heartbeat": true, "manage_heartbeat": true,
	"observe": true, "unobserve": true,
}

// unknownCommand is the refusal of a command type no schema declares: pi's
// "Unknown command", and for prime-agent's commands in its flavour, that e
// does not support it.
func (fr *front) unknownCommand(typ string) error {
	if fr.flags.Flavor == "prime" && primeOnly[typ] {
		return fmt.Errorf("e does not support prime-agent's %s command", typ)
	}
	return fmt.Errorf("Unknown command: %s", typ)
}

// queueEvent is the event of a change of the queues: pi's queue_update, or
// prime-agent's session_action_update.
func (fr *front) queueEvent(q QueueUpdate) Event {
	if fr.flags.Flavor != "prime" {
		return q
	}
	return SessionActionUpdate{Type: "session_action_update", Actions: sessionActions(q)}
}

// sessionActions is prime-agent's SessionActionSnapshot of the queues.
func sessionActions(q QueueUpdate) SessionActions {
	return SessionActions{QueuedCount: int64(len(q.Steering) + len(q.FollowUp)),
		Steering: nonNil(q.Steering), FollowUps: nonNil(q.FollowUp)}
}

// nonNil is s, or an empty slice: prime's arrays are never null.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
