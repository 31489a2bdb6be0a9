package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/e-agent/e/internal/agent"
	"github.com/e-agent/e/internal/session"
	"github.com/e-agent/e/internal/trace"
	"github.com/e-agent/e/protocol"
	"github.com/e-agent/e/schemas"
)

func (s *Server) hello(r *request, p protocol.HelloParams) (any, error) {
	ask := p.Ask != nil && *p.Ask
	s.mu.Lock()
	s.ask = ask
	s.mu.Unlock()
	// Greeted only once the response is queued, so no notice overtakes it (X7).
	r.then = func() {
		s.mu.Lock()
		s.greeted = true
		held := s.held
		s.held = nil
		s.mu.Unlock()
		for _, n := range held {
			s.writeJSON(n)
		}
	}
	o := s.host.Options()
	return protocol.HelloResult{Protocol: Protocol, Version: o.Version, Channel: o.Channel, Commit: o.Commit,
		Cwd: s.host.Cwd(), Home: s.host.Home(), Methods: methods, Ask: ask, Sandbox: sandboxSupport(s.host)}, nil
}

// sandboxSupport is what this machine can enforce and the process's
// policy, for hello (W5).
func sandboxSupport(h *session.Host) protocol.HelloResultSandbox {
	sup := h.SandboxSupport()
	out := protocol.HelloResultSandbox{Modes: []protocol.SandboxMode{}, NetworkIsolation: sup.Network,
		LandlockAbi: int64(sup.Landlock), Missing: strPtr(sup.Missing), Process: sandboxPolicy(h.Sandbox())}
	for _, m := range sup.Modes {
		out.Modes = append(out.Modes, protocol.SandboxMode(m))
	}
	return out
}

// sandboxPolicy is a session's sandbox on the wire (W5).
func sandboxPolicy(p session.SandboxPolicy) protocol.SandboxPolicy {
	return protocol.SandboxPolicy{Mode: protocol.SandboxMode(p.Mode), WritableRoots: append([]string{}, p.Roots...), Network: p.Reaches()}
}

func (s *Server) modelsList(*request, protocol.ModelsListParams) (any, error) {
	return protocol.ModelsListResult{Default: s.host.DefaultModel(), Models: modelInfos(s.host.Models())}, nil
}

// createSpec builds the session spec of session.create and one-shot lines.
func createSpec(p protocol.SessionCreateParams) session.Spec {
	spec := session.Spec{Model: p.Model, Effort: p.Effort, Name: p.Name,
		NoTools: p.ToolMode != nil && *p.ToolMode == "none", Save: p.Save != nil && *p.Save,
		Approval: (*string)(p.Approval), ApprovalTimeout: millis(p.ApprovalTimeoutMS),
		Budget: budget(p.MaxModelCalls, p.MaxTokens, p.MaxCostUSD, p.MaxDurationMS)}
	if p.McpServers != nil {
		spec.MCP = mcpServers(*p.McpServers)
	}
	if p.Cwd != nil {
		spec.Cwd = *p.Cwd
	}
	if p.Resume != nil {
		spec.Resume = *p.Resume
	}
	spec.Sandbox, spec.Network = (*string)(p.Sandbox), p.Network
	if p.WritableRoots != nil {
		spec.WritableRoots = *p.WritableRoots
		if spec.WritableRoots == nil {
			spec.WritableRoots = []string{} // [] replaces the process's roots with none
		}
	}
	if p.Tools != nil {
		spec.Tools = *p.Tools
		if spec.Tools == nil {
			spec.Tools = []string{}
		}
	}
	return spec
}

// mcpServers converts session.create's mcp_servers for the session layer.
func mcpServers(list []protocol.McpServer) []session.MCPServer {
	out := make([]session.MCPServer, 0, len(list))
	for _, m := range list {
		c := session.MCPServer{Name: m.Name, Command: m.Command}
		if m.Args != nil {
			c.Args = *m.Args
		}
		if len(m.Env) > 0 {
			// The schema accepted it: an object of strings, or null.
			_ = json.Unmarshal(m.Env, &c.Env)
		}
		out = append(out, c)
	}
	return out
}

func (s *Server) sessionCreate(r *request, p protocol.SessionCreateParams) (any, error) {
	spec := createSpec(p)
	spec.UI = ui{s}
	if err := s.clientTools(r, p, &spec); err != nil {
		return nil, err
	}
	ss, err := s.host.Create(s.ctx, spec)
	if err != nil {
		return nil, err
	}
	in := ss.Info()
	res := protocol.SessionCreateResult{Session: in.ID, Model: in.Model, Effort: in.Effort, Cwd: in.Cwd, Path: strPtr(in.Path),
		Approval: protocol.Approval(in.Approval), Warning: strPtr(in.Warning), Sandbox: sandboxPolicy(in.Sandbox)}
	if in.ReadOnly {
		res.ReadOnly = &in.ReadOnly
	}
	return res, nil
}

// budget is the limits a request set (N1); null or absent is none.
func budget(calls, tokens *int64, cost *float64, ms *int64) agent.Budget {
	deref := func(p *int64) int64 {
		if p == nil {
			return 0
		}
		return *p
	}
	b := agent.Budget{MaxModelCalls: deref(calls), MaxTokens: deref(tokens), MaxDurationMS: deref(ms)}
	if cost != nil {
		b.MaxCostUSD = *cost
	}
	return b
}

func millis(ms *int64) *time.Duration {
	if ms == nil {
		return nil
	}
	d := time.Duration(*ms) * time.Millisecond
	return &d
}

func strPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func (s *Server) sessionList(r *request, p protocol.SessionListParams) (any, error) {
	cwd := ""
	if p.Cwd != nil {
		cwd = *p.Cwd
	}
	all := p.All != nil && *p.All
	list, err := s.host.List(cwd, all)
	if err != nil {
		return nil, err
	}
	res := protocol.SessionListResult{Sessions: summaries(list)}
	if !all {
		// Said, so a caller that finds none knows where e looked.
		dir := s.host.Resolve(cwd)
		res.Cwd = &dir
	}
	return res, nil
}

func (s *Server) sessionInfo(r *request, p protocol.SessionInfoParams) (any, error) {
	ss, err := s.host.Get(p.Session)
	if err != nil {
		return nil, err
	}
	in := ss.Info()
	return protocol.SessionInfoResult{Session: in.ID, Model: in.Model, Effort: in.Effort, Cwd: in.Cwd,
		Path: strPtr(in.Path), Name: strPtr(in.Name), Title: strPtr(in.Title), Messages: int64(in.Messages), Running: in.Running,
		Sandbox: sandboxPolicy(in.Sandbox)}, nil
}

// started records that r answers turn t, and returns the later that
// writes r's response when t ends.
func (s *Server) started(r *request, t *session.Turn, result func() (any, error)) later {
	s.answers(r, t)
	return func() (any, error) {
		<-t.Done()
		return result()
	}
}

// answers records that r answers turn t, so an interrupt or close of t
// answers after r.
func (s *Server) answers(r *request, t *session.Turn) {
	r.turn, r.answered = t, make(chan struct{})
	s.mu.Lock()
	s.answered[t] = r.answered
	s.mu.Unlock()
}

// afterAnswer returns a later that waits for t's response (when t is not
// nil) and then answers with result.
func (s *Server) afterAnswer(t *session.Turn, result func() (any, error)) later {
	var answered chan struct{}
	if t != nil {
		s.mu.Lock()
		answered = s.answered[t] // nil once t's response is out
		s.mu.Unlock()
	}
	return func() (any, error) {
		if answered != nil {
			<-answered
		}
		return result()
	}
}

func (s *Server) sessionPrompt(r *request, p protocol.SessionPromptParams) (any, error) {
	ss, err := s.host.Get(p.Session)
	if err != nil {
		return nil, err
	}
	var images []string
	if p.Images != nil {
		images = *p.Images
	}
	ctx, sink := s.streamEvents(withRequest(s.ctx, r.id), ss.ID(), r.id)
	if p.Traceparent != nil && *p.Traceparent != "" {
		// The schema checks the form; an all-zero id is W3C's "invalid" too.
		if err := trace.CheckTraceparent(*p.Traceparent); err != nil {
			return nil, &session.Error{Code: session.CodeInvalidParams, Param: "traceparent", Err: err}
		}
		ctx = trace.WithParent(ctx, *p.Traceparent)
	}
	t, err := ss.PromptWith(ctx, p.Prompt, images, session.PromptOptions{OutputSchema: p.OutputSchema,
		Budget: budget(p.MaxModelCalls, p.MaxTokens, p.MaxCostUSD, p.MaxDurationMS)}, sink)
	if err != nil {
		return nil, err
	}
	return s.started(r, t, func() (any, error) {
		res := t.Result()
		return turnReply{turnResult(res), res.FinalOutputJSON}, nil
	}), nil
}

// sessionFollowUp queues a prompt for when the session's running work
// ends; its response, like session.prompt's, is its turn's result, or why
// it never ran (dropped by an interrupt or close: code interrupted).
func (s *Server) sessionFollowUp(r *request, p protocol.SessionFollowUpParams) (any, error) {
	ss, err := s.host.Get(p.Session)
	if err != nil {
		return nil, err
	}
	var images []string
	if p.Images != nil {
		images = *p.Images
	}
	ctx, sink := s.streamEvents(withRequest(s.ctx, r.id), ss.ID(), r.id)
	f, err := ss.FollowUp(ctx, session.FollowUpSpec{Text: p.Prompt, Images: images, Sink: sink,
		// Recorded as the turn begins, before an interrupt can stop it.
		Started: func(t *session.Turn) { s.answers(r, t) }})
	if err != nil {
		return nil, err
	}
	return later(func() (any, error) {
		<-f.Ready()
		t, err := f.Turn()
		if err != nil {
			return nil, err
		}
		<-t.Done()
		res := t.Result()
		return turnReply{turnResult(res), res.FinalOutputJSON}, nil
	}), nil
}

func (s *Server) sessionSteer(r *request, p protocol.SessionSteerParams) (any, error) {
	ss, err := s.host.Get(p.Session)
	if err != nil {
		return nil, err
	}
	if err := ss.Steer(p.Text); err != nil {
		return nil, err
	}
	return protocol.SessionSteerResult{Held: true}, nil
}

func (s *Server) sessionUnsteer(r *request, p protocol.SessionUnsteerParams) (any, error) {
	ss, err := s.host.Get(p.Session)
	if err != nil {
		return nil, err
	}
	w := ss.WithdrawSteers()
	if w == nil {
		w = []string{}
	}
	return protocol.SessionUnsteerResult{Withdrawn: w}, nil
}

func (s *Server) sessionEntries(r *request, p protocol.SessionEntriesParams) (any, error) {
	ss, err := s.host.Get(p.Session)
	if err != nil {
		return nil, err
	}
	all := ss.Entries()
	res := SessionEntriesResult{Entries: all}
	if len(all) > 0 {
		res.Leaf = &all[len(all)-1].ID
	}
	if p.Since != nil {
		i := slices.IndexFunc(all, func(e session.Entry) bool { return e.ID == *p.Since })
		if i < 0 {
			return nil, &session.Error{Code: session.CodeInvalidParams, Param: "since",
				Err: fmt.Errorf("the session has no entry %q", *p.Since)}
		}
		res.Entries = all[i+1:]
	}
	if res.Entries == nil {
		res.Entries = []session.Entry{}
	}
	return res, nil
}

func (s *Server) sessionInterrupt(r *request, p protocol.SessionInterruptParams) (any, error) {
	ss, err := s.host.Get(p.Session)
	if err != nil {
		return nil, err
	}
	// Stopped now, in request order; answered after the turn's own response.
	t := ss.Stop()
	return s.afterAnswer(t, func() (any, error) { return protocol.SessionInterruptResult{}, nil }), nil
}

func (s *Server) sessionCompact(r *request, p protocol.SessionCompactParams) (any, error) {
	ss, err := s.host.Get(p.Session)
	if err != nil {
		return nil, err
	}
	focus := ""
	if p.Focus != nil {
		focus = *p.Focus
	}
	t, err := ss.Compact(s.ctx, focus, s.events(ss.ID(), r.id))
	if err != nil {
		return nil, err
	}
	return s.started(r, t, func() (any, error) {
		res, err := t.Compacted()
		if err != nil {
			return nil, err
		}
		summary, kept, _ := ss.LastCompaction()
		return protocol.SessionCompactResult{TokensBefore: res.TokensBefore, TokensAfter: res.TokensAfter,
			SummaryChars: int64(res.SummaryChars), Summary: summary, FirstKept: strPtr(kept), Usage: usage(agent.NewUsage(res.Usage))}, nil
	}), nil
}

func (s *Server) sessionSet(r *request, p protocol.SessionSetParams) (any, error) {
	ss, err := s.host.Get(p.Session)
	if err != nil {
		return nil, err
	}
	m, ef, err := ss.Set(p.Model, p.Effort)
	if err != nil {
		return nil, err
	}
	// The schema bounds both, so this cannot fail after Set succeeded.
	policy, err := ss.SetApproval((*string)(p.Approval), millis(p.ApprovalTimeoutMS))
	if err != nil {
		return nil, err
	}
	if p.Name != nil {
		if err := ss.Rename(*p.Name); err != nil {
			return nil, err
		}
	}
	if p.AutoCompact != nil {
		ss.SetAutoCompact(*p.AutoCompact)
	}
	if p.AutoRetry != nil {
		ss.SetAutoRetry(*p.AutoRetry)
	}
	return protocol.SessionSetResult{Model: m, Effort: ef, Approval: protocol.Approval(policy)}, nil
}

func (s *Server) sessionRename(r *request, p protocol.SessionRenameParams) (any, error) {
	ss, err := s.host.Get(p.Session)
	if err != nil {
		return nil, err
	}
	return protocol.SessionRenameResult{}, ss.Rename(p.Name)
}

func (s *Server) sessionShell(r *request, p protocol.SessionShellParams) (any, error) {
	ss, err := s.host.Get(p.Session)
	if err != nil {
		return nil, err
	}
	spec := session.ShellSpec{Command: p.Command, Exclude: p.Exclude != nil && *p.Exclude}
	if d := millis(p.TimeoutMS); d != nil {
		spec.Timeout = *d
	}
	t, err := ss.Shell(s.ctx, spec, s.events(ss.ID(), r.id))
	if err != nil {
		return nil, err
	}
	return s.started(r, t, func() (any, error) {
		res, err := t.Shell()
		if err != nil {
			return nil, err
		}
		out := protocol.SessionShellResult{Entry: res.Entry, Output: res.Output, Cancelled: res.Cancelled,
			TimedOut: res.TimedOut, Truncated: res.Truncated, Sandbox: sandboxPolicy(ss.Info().Sandbox)}
		if res.ExitCode != nil {
			code := int64(*res.ExitCode)
			out.ExitCode = &code
		}
		return out, nil
	}), nil
}

func (s *Server) sessionMessages(r *request, p protocol.SessionMessagesParams) (any, error) {
	ss, err := s.host.Get(p.Session)
	if err != nil {
		return nil, err
	}
	return protocol.SessionMessagesResult{Messages: logMessages(ss.Messages())}, nil
}

func (s *Server) sessionFork(r *request, p protocol.SessionForkParams) (any, error) {
	ss, err := s.host.Get(p.Session)
	if err != nil {
		return nil, err
	}
	at := ""
	if p.At != nil {
		at = *p.At
	}
	fork, err := ss.Fork(s.ctx, at)
	if err != nil {
		return nil, err
	}
	return protocol.SessionForkResult{Session: fork.ID(), Path: strPtr(fork.Path())}, nil
}

func (s *Server) sessionExport(r *request, p protocol.SessionExportParams) (any, error) {
	ss, err := s.host.Get(p.Session)
	if err != nil {
		return nil, err
	}
	path := ""
	if p.Path != nil {
		path = *p.Path
	}
	path, title, err := ss.Export(path)
	if err != nil {
		return nil, err
	}
	return protocol.SessionExportResult{Path: path, Title: title}, nil
}

func (s *Server) sessionClose(r *request, p protocol.SessionCloseParams) (any, error) {
	ss, err := s.host.Get(p.Session)
	if err != nil {
		return nil, err
	}
	// Detached now, in request order: later requests no longer find it.
	t := ss.Detach()
	return s.afterAnswer(t, func() (any, error) {
		if err := ss.Close(s.ctx); err != nil {
			return nil, err
		}
		return protocol.SessionCloseResult{}, nil
	}), nil
}

func (s *Server) askReply(r *request, p protocol.AskReplyParams) (any, error) {
	result := p.Result
	if string(result) == "null" {
		result = nil
	}
	if err := s.relay.Reply(p.Ask, result); err != nil {
		return nil, &session.Error{Code: session.CodeUnknownAsk, Err: err}
	}
	return protocol.AskReplyResult{}, nil
}

// oneShotMethod names a version-1 line in its errors.
const oneShotMethod = "oneshot"

// oneShot serves a version-1 line (O1–O5): a fresh memory-only agent (or a
// saved one with save:true), one turn, a flat answer, no events.
func (s *Server) oneShot(id json.RawMessage, line []byte) {
	r := &request{id: id, method: oneShotMethod}
	if err := schemas.ValidateOneShot(line); err != nil {
		s.writeError(id, err.Error(), "")
		return
	}
	var o protocol.OneShotRequest
	if err := schemas.Decode(line, &o); err != nil {
		var de *schemas.DecodeError
		if errors.As(err, &de) {
			err = &session.Error{Code: session.CodeInvalidParams, Param: de.Field, Err: errors.New(de.Reason)}
		} else {
			err = &session.Error{Code: session.CodeInvalidParams, Err: err}
		}
		s.reply(r, nil, err)
		return
	}
	spec := createSpec(protocol.SessionCreateParams{Cwd: o.Cwd, Model: o.Model, Effort: o.Effort,
		ToolMode: o.ToolMode, Resume: o.Resume, Name: o.Name, Tools: o.Tools, Save: o.Save})
	spec.UI = ui{s}
	ss, err := s.host.Create(s.ctx, spec)
	if err != nil {
		s.reply(r, nil, err)
		return
	}
	var images []string
	if o.Images != nil {
		images = *o.Images
	}
	t, err := ss.Prompt(s.ctx, o.Prompt, images, func(agent.Event) {})
	if err != nil {
		ss.Close(s.ctx)
		s.reply(r, nil, err)
		return
	}
	ok := s.goReply(func() {
		<-t.Done()
		res := t.Result()
		res.Session = res.Path // v1: the JSONL path when saved (O3)
		ss.Close(s.ctx)
		b, err := json.Marshal(turnResult(res))
		if err != nil {
			s.reply(r, nil, err)
			return
		}
		s.writeRaw(concat(`{"id":`, id, `,`, b[1:]))
	})
	if !ok {
		ss.Close(s.ctx)
		s.reply(r, nil, errShuttingDown)
	}
}
