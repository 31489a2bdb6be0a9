package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Approval policies: which tool calls wait for the client's consent before
// they run (session.create/session.set "approval").
const (
	ApproveNever  = "never"  // no call asks
	ApproveWrites = "writes" // calls that write, run commands, or are not e's own (extension, mcp)
	ApproveAll    = "all"    // every call asks
)

// Policies lists the approval policies, for error messages and schemas.
var Policies = []string{ApproveNever, ApproveWrites, ApproveAll}

// Decision is the client's answer to an approval request.
type Decision struct {
	Allow bool
	// Always allows every later call of the same tool in this session
	// without asking again.
	Always bool
	// Reason says why a call was rejected; it becomes the call's content.
	Reason string
}

// Approver asks the client whether a tool call may run. It returns when the
// client answers or ctx ends (the turn was interrupted, or the question
// timed out); the engine tells those apart.
// Approve is called for one call at a time, in provider order; timeout is
// the session's bound on the question (0: none), already applied to ctx.
type Approver interface {
	Approve(ctx context.Context, session string, c Call, timeout time.Duration) Decision
}

// asks reports whether policy makes a call of category wait for approval.
func asks(policy, category string) bool {
	switch policy {
	case ApproveAll:
		return true
	case ApproveWrites:
		return category != "read" && category != "search" && category != "wait"
	}
	return false
}

// CheckPolicy validates an approval policy name; "" means never.
func CheckPolicy(policy string) (string, error) {
	if policy == "" {
		return ApproveNever, nil
	}
	if !slices.Contains(Policies, policy) {
		return "", fmt.Errorf("unknown approval policy %q (known: %v)", policy, Policies)
	}
	return policy, nil
}

// Approval is a session's approval policy and how long a question waits.
type Approval struct {
	Policy string
	// Timeout bounds each question; 0 waits until the turn is interrupted.
	// An unanswered question denies its call.
	Timeout time.Duration
}

// Approval returns the session's approval settings.
func (s *Session) Approval() Approval {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.approval
}

// SetApproval changes the approval settings for the following calls. Tools
// allowed "for the session" stay allowed.
func (s *Session) SetApproval(a Approval) error {
	p, err := CheckPolicy(a.Policy)
	if err != nil {
		return err
	}
	if a.Timeout < 0 {
		return fmt.Errorf("approval timeout %v is negative", a.Timeout)
	}
	a.Policy = p
	s.mu.Lock()
	defer s.mu.Unlock()
	s.approval = a
	return nil
}

// approve asks for c under the session's policy. It returns "" when the
// call may run, else the outcome ("denied" or "interrupted") and the
// reason.
func (t *turn) approve(c Call) (outcome, reason string) {
	s := t.s
	s.mu.Lock()
	a, always := s.approval, s.alwaysAllowed[c.Name]
	s.mu.Unlock()
	policy := a.Policy
	if !asks(policy, c.Category) || always {
		return "", ""
	}
	if t.ctx.Err() != nil {
		return "interrupted", "interrupted before it was approved"
	}
	if s.approver == nil {
		return "denied", fmt.Sprintf("approval policy %q needs a client to approve %s calls and none can be asked", policy, c.Category)
	}
	ctx := t.ctx
	if a.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, a.Timeout)
		defer cancel()
	}
	d := s.approver.Approve(ctx, s.id, c, a.Timeout)
	switch {
	case t.ctx.Err() != nil && !d.Allow:
		return "interrupted", "interrupted while waiting for approval"
	case errors.Is(ctx.Err(), context.DeadlineExceeded) && !d.Allow:
		return "denied", fmt.Sprintf("no answer within %d ms", a.Timeout.Milliseconds())
	case !d.Allow:
		if d.Reason == "" {
			d.Reason = "rejected by the client"
		}
		return "denied", d.Reason
	}
	if d.Always {
		s.mu.Lock()
		if s.alwaysAllowed == nil {
			s.alwaysAllowed = map[string]bool{}
		}
		s.alwaysAllowed[c.Name] = true
		s.mu.Unlock()
	}
	return "", ""
}
