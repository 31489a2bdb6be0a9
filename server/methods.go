package server

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/e-agent/e/internal/agent"
	"github.com/e-agent/e/internal/model"
	"github.com/e-agent/e/internal/store"
	"github.com/e-agent/e/internal/tool"
	"github.com/e-agent/e/schemas"
)

// shutdownGrace is how long extensions get to exit after a shutdown message.
const shutdownGrace = 2 * time.Second

var (
	handlers map[string]func(*Server, *request)
	methods  []string // sorted handler names: hello's method list
)

func init() {
	handlers = map[string]func(*Server, *request){
		"hello":             (*Server).hello_,
		"models.list":       (*Server).modelsList,
		"session.create":    (*Server).sessionCreate,
		"session.list":      (*Server).sessionList,
		"session.info":      (*Server).sessionInfo,
		"session.prompt":    (*Server).sessionPrompt,
		"session.steer":     (*Server).sessionSteer,
		"session.interrupt": (*Server).sessionInterrupt,
		"session.compact":   (*Server).sessionCompact,
		"session.set":       (*Server).sessionSet,
		"session.messages":  (*Server).sessionMessages,
		"session.fork":      (*Server).sessionFork,
		"session.export":    (*Server).sessionExport,
		"session.close":     (*Server).sessionClose,
		"ask.reply":         (*Server).askReply,
		"shutdown":          nil, // handled by Serve: it ends the process
	}
	methods = slices.Sorted(maps.Keys(handlers))
}

// decode reads params the schema accepted into T. Where the schema is
// wider than Go's types (a number beyond int64), it answers r with an error
// and reports false: a request never brings the server down.
func decode[T any](s *Server, r *request) (T, bool) {
	var v T
	if err := json.Unmarshal(r.params, &v); err != nil {
		s.writeError(r.id, fmt.Sprintf("%s: params: %v", r.method, err))
		return v, false
	}
	return v, true
}

func (s *Server) hello_(r *request) {
	p, ok := decode[HelloParams](s, r)
	if !ok {
		return
	}
	s.mu.Lock()
	s.hello = true
	s.ask = p.Ask != nil && *p.Ask
	held := s.held
	s.held = nil
	s.mu.Unlock()
	s.writeResult(r.id, HelloResult{
		Protocol: Protocol, Version: s.Opts.Version, Channel: s.Opts.Channel, Commit: s.Opts.Commit,
		Cwd: s.Cwd, Home: s.Home, Methods: methods, Ask: s.ask,
	})
	for _, n := range held {
		s.writeJSON(n)
	}
}

func (s *Server) modelsList(r *request) {
	s.writeResult(r.id, ModelsListResult{Default: s.Default, Models: s.Engine.Catalog.Models()})
}

// CreateSpec holds the session.create parameters that a one-shot line and e -p share (O4).
type CreateSpec struct {
	Cwd, Model, Effort, ToolMode, Resume, Name *string
	Tools                                      *[]string
	Save                                       *bool
	Approval                                   *string // approval policy: never, writes, all
	ApprovalTimeoutMS                          *int64
}

// approval returns the approval settings a spec asks for, on top of cur.
func approval(cur agent.Approval, policy *string, timeoutMS *int64) (agent.Approval, error) {
	if policy != nil {
		p, err := agent.CheckPolicy(*policy)
		if err != nil {
			return cur, err
		}
		cur.Policy = p
	}
	if timeoutMS != nil {
		cur.Timeout = time.Duration(*timeoutMS) * time.Millisecond
	}
	return cur, nil
}

// toolNames returns every tool name the process knows: built-in and extension.
func (s *Process) toolNames() []string {
	names := tool.Names()
	if s.Engine.Ext != nil {
		for _, d := range s.Engine.Ext.Tools() {
			names = append(names, d.Name)
		}
	}
	return names
}

// create makes a session from a spec; param names errors as "params.x".
func (s *Process) create(method, prefix string, c CreateSpec) (*session, error) {
	errf := func(field, format string, args ...any) error {
		return fmt.Errorf("%s: %s%s: %s", method, prefix, field, fmt.Sprintf(format, args...))
	}
	cwd := s.Cwd
	if c.Cwd != nil {
		cwd = *c.Cwd
		if !filepath.IsAbs(cwd) {
			cwd = filepath.Join(s.Cwd, cwd)
		}
	}
	var header *store.Header
	var entries []store.Entry
	var log *store.Log
	var warnings []string // what reading the resumed log repaired or skipped
	save := c.Save != nil && *c.Save && !s.Opts.NoSave
	if c.Resume != nil {
		path := *c.Resume
		if !filepath.IsAbs(path) {
			path = filepath.Join(s.Cwd, path)
		}
		var err error
		if save {
			log, header, entries, err = store.OpenWritable(path)
			if err == nil {
				warnings = log.Warnings()
			}
		} else {
			var rr *store.ReadResult
			if rr, err = store.Read(path); err == nil {
				header, entries, warnings = &rr.Header, rr.Entries, rr.Warnings
			}
		}
		if err != nil {
			return nil, errf("resume", "%v", err)
		}
		entries = store.Branch(entries)
		if c.Cwd == nil {
			cwd = header.Cwd
		}
	}
	fail := func(err error) (*session, error) {
		if log != nil {
			log.Close()
		}
		return nil, err
	}
	cwd = filepath.Clean(cwd)
	if st, err := os.Stat(cwd); err != nil {
		return fail(errf("cwd", "%s does not exist", cwd))
	} else if !st.IsDir() {
		return fail(errf("cwd", "%s is not a directory", cwd))
	}
	modelID, effort := s.Default, s.Opts.Effort
	if header != nil {
		modelID, effort = header.Model, header.Effort
		for _, en := range entries {
			if en.Type == store.TypeSettings {
				modelID, effort = en.Model, en.Effort
			}
		}
		if s.Opts.Model != "" {
			modelID = s.Opts.Model
		}
	}
	if c.Model != nil {
		modelID = *c.Model
		if c.Effort == nil {
			effort = s.Opts.Effort
		}
	}
	if c.Effort != nil {
		effort = *c.Effort
	}
	info, err := s.Engine.Catalog.Lookup(modelID)
	if err != nil {
		return fail(errf("model", "%v", err))
	}
	modelID = info.ID // a bare name is recorded and reported as the full id
	if _, err := s.Engine.Catalog.Provider(modelID); err != nil {
		return fail(errf("model", "%v", err)) // e.g. no API key: say so now, not at every prompt
	}
	effort, err = s.Engine.Catalog.CheckEffort(modelID, effort)
	if err != nil {
		return fail(errf("effort", "%v", err))
	}
	appr, err := approval(agent.Approval{Policy: s.Opts.Approval}, c.Approval, c.ApprovalTimeoutMS)
	if err != nil {
		return fail(errf("approval", "%v", err))
	}
	// Tools narrow what the process allows, never widen it (C3, C4, L1).
	all := s.toolNames()
	allowed := all
	if s.Opts.NoTools || (c.ToolMode != nil && *c.ToolMode == "none") {
		allowed = nil
	}
	if c.Tools != nil {
		var narrowed []string
		for i, name := range *c.Tools {
			if !slices.Contains(all, name) {
				return fail(errf(fmt.Sprintf("tools[%d]", i), "unknown tool %q (known: %v)", name, all))
			}
			if slices.Contains(allowed, name) && !slices.Contains(narrowed, name) {
				narrowed = append(narrowed, name)
			}
		}
		allowed = narrowed
	}
	instructions, needTrust, err := store.Instructions(s.Home, cwd)
	if err != nil {
		return fail(errf("cwd", "%v", err))
	}
	if needTrust {
		return fail(fmt.Errorf("%s: directory %s has an AGENTS.md but is not trusted: run `e trust %s` first (C9)", method, cwd, cwd))
	}
	id := store.NewID()
	h := store.Header{Type: "session", Version: store.Version, ID: id, Cwd: cwd, Created: time.Now().UTC(), Model: modelID, Effort: effort}
	if c.Name != nil {
		h.Name = *c.Name
	}
	name := ""
	if header != nil { // resumed: its log's header, and its id
		h, id, name = *header, header.ID, header.Name // a name entry in the history overrides it
	} else if save {
		if log, err = store.Create(s.Home, h); err != nil {
			return fail(fmt.Errorf("%s: %w", method, err))
		}
	}
	sess := s.Engine.NewSession(agent.Options{
		ID: id, Cwd: cwd, Model: modelID, Effort: effort, Tools: allowed, Log: log,
		Entries: entries, System: instructions, Name: name, Warnings: warnings, Approval: appr,
	})
	if c.Name != nil && header != nil {
		if err := sess.Rename(*c.Name); err != nil {
			sess.Close()
			return nil, fmt.Errorf("%s: %w", method, err)
		}
	} else if c.Name != nil {
		sess.SetName(*c.Name)
	}
	if header != nil && (modelID != header.Model || effort != header.Effort) && save {
		if _, _, err := sess.Set(&modelID, &effort); err != nil {
			sess.Close()
			return nil, fmt.Errorf("%s: %w", method, err)
		}
	}
	return &session{Session: sess, header: h}, nil
}

func (s *Server) register(ss *session) {
	s.mu.Lock()
	s.sessions[ss.ID()] = ss
	s.mu.Unlock()
	if s.Ext != nil {
		s.Ext.Notify("session.created", map[string]any{"session": ss.ID(), "cwd": ss.Cwd()})
	}
}

func (s *Server) sessionCreate(r *request) {
	p, ok := decode[SessionCreateParams](s, r)
	if !ok {
		return
	}
	ss, err := s.create(r.method, "params.", CreateSpec{Cwd: p.Cwd, Model: p.Model, Effort: p.Effort,
		ToolMode: p.ToolMode, Resume: p.Resume, Name: p.Name, Tools: p.Tools, Save: p.Save,
		Approval: p.Approval, ApprovalTimeoutMS: p.ApprovalTimeoutMS})
	if err != nil {
		s.writeError(r.id, err.Error())
		return
	}
	s.register(ss)
	in := ss.Info()
	s.writeResult(r.id, SessionCreateResult{Session: ss.ID(), Model: in.Model, Effort: in.Effort, Cwd: ss.Cwd(),
		Path: strPtr(in.Path), Approval: ss.Approval().Policy})
}

func strPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func (s *Server) sessionList(r *request) {
	p, ok := decode[SessionListParams](s, r)
	if !ok {
		return
	}
	cwd := s.Cwd
	if p.Cwd != nil {
		cwd = *p.Cwd
		if !filepath.IsAbs(cwd) {
			cwd = filepath.Join(s.Cwd, cwd)
		}
	}
	list, err := store.List(s.Home, filepath.Clean(cwd), p.All != nil && *p.All)
	if err != nil {
		s.writeError(r.id, r.method+": "+err.Error())
		return
	}
	if list == nil {
		list = []store.Summary{}
	}
	s.writeResult(r.id, SessionListResult{Sessions: list})
}

func (s *Server) sessionInfo(r *request) {
	p, ok := decode[SessionParams](s, r)
	if !ok {
		return
	}
	ss, err := s.session(r, p.Session)
	if err != nil {
		s.reply(r, nil, err)
		return
	}
	in := ss.Info()
	s.writeResult(r.id, SessionInfoResult{Session: ss.ID(), Model: in.Model, Effort: in.Effort, Cwd: ss.Cwd(),
		Path: strPtr(in.Path), Name: strPtr(in.Name), Title: strPtr(in.Title), Messages: in.Messages, Running: in.Running})
}

func (s *Server) sessionPrompt(r *request) {
	p, ok := decode[SessionPromptParams](s, r)
	if !ok {
		return
	}
	ss, err := s.session(r, p.Session)
	if err != nil {
		s.reply(r, nil, err)
		return
	}
	var images []model.Part
	if p.Images != nil {
		if images, err = agent.LoadImages(ss.Cwd(), *p.Images); err != nil {
			s.writeError(r.id, r.method+": params."+err.Error())
			return
		}
		if len(images) > 0 {
			if info, _ := s.Engine.Catalog.Lookup(ss.Info().Model); !info.ImageInput {
				s.writeError(r.id, fmt.Sprintf("%s: params.images: model %s does not accept images (I2)", r.method, info.ID))
				return
			}
		}
	}
	if err := ss.Begin(); err != nil {
		s.writeError(r.id, r.method+": "+err.Error())
		return
	}
	ss.turn.Add(1)
	s.goTurn(func() {
		defer ss.turn.Done()
		res := ss.Prompt(s.ctx, p.Prompt, images, s.events(ss.ID(), r.id))
		id := ss.ID()
		res.Session = &id
		res.Path = strPtr(ss.Info().Path)
		s.writeResult(r.id, res)
	})
}

func (s *Server) sessionSteer(r *request) {
	p, ok := decode[SessionSteerParams](s, r)
	if !ok {
		return
	}
	ss, err := s.session(r, p.Session)
	if err == nil {
		err = ss.Steer(p.Text)
	}
	if err != nil {
		s.writeError(r.id, r.method+": "+trimMethod(r, err))
		return
	}
	s.writeResult(r.id, SessionSteerResult{Held: true})
}

func trimMethod(r *request, err error) string {
	msg := err.Error()
	if len(msg) > len(r.method)+2 && msg[:len(r.method)+2] == r.method+": " {
		return msg[len(r.method)+2:]
	}
	return msg
}

func (s *Server) sessionInterrupt(r *request) {
	p, ok := decode[SessionParams](s, r)
	if !ok {
		return
	}
	ss, err := s.session(r, p.Session)
	if err != nil {
		s.reply(r, nil, err)
		return
	}
	s.goTurn(func() {
		ss.Interrupt()
		ss.turn.Wait() // the turn's response goes before this one
		s.writeResult(r.id, Empty{})
	})
}

func (s *Server) sessionCompact(r *request) {
	p, ok := decode[SessionCompactParams](s, r)
	if !ok {
		return
	}
	ss, err := s.session(r, p.Session)
	if err != nil {
		s.reply(r, nil, err)
		return
	}
	if err := ss.Begin(); err != nil {
		s.writeError(r.id, r.method+": "+err.Error())
		return
	}
	focus := ""
	if p.Focus != nil {
		focus = *p.Focus
	}
	ss.turn.Add(1)
	s.goTurn(func() {
		defer ss.turn.Done()
		res, err := ss.Compact(s.ctx, focus, s.events(ss.ID(), r.id))
		if err != nil {
			s.writeError(r.id, r.method+": "+err.Error())
			return
		}
		s.writeResult(r.id, SessionCompactResult{TokensBefore: res.TokensBefore, TokensAfter: res.TokensAfter,
			SummaryChars: res.SummaryChars, Usage: agent.NewUsage(res.Usage)})
	})
}

func (s *Server) sessionSet(r *request) {
	p, ok := decode[SessionSetParams](s, r)
	if !ok {
		return
	}
	ss, err := s.session(r, p.Session)
	if err != nil {
		s.reply(r, nil, err)
		return
	}
	// Name the parameter at fault (V3); Set checks both again, atomically (T1).
	in := ss.Info()
	modelID, effort := in.Model, in.Effort
	if p.Model != nil {
		info, err := s.Engine.Catalog.Lookup(*p.Model)
		if err != nil {
			s.writeError(r.id, r.method+": params.model: "+err.Error())
			return
		}
		modelID, effort = info.ID, ""
	}
	if p.Effort != nil {
		effort = *p.Effort
	}
	if _, err := s.Engine.Catalog.CheckEffort(modelID, effort); err != nil {
		s.writeError(r.id, r.method+": params.effort: "+err.Error())
		return
	}
	if _, err := s.Engine.Catalog.Provider(modelID); err != nil {
		s.writeError(r.id, r.method+": params.model: "+err.Error())
		return
	}
	appr, err := approval(ss.Approval(), p.Approval, p.ApprovalTimeoutMS)
	if err != nil {
		s.writeError(r.id, r.method+": params.approval: "+err.Error())
		return
	}
	m, ef, err := ss.Set(p.Model, p.Effort)
	if err == nil {
		err = ss.SetApproval(appr)
	}
	if err != nil {
		s.writeError(r.id, r.method+": "+err.Error())
		return
	}
	s.writeResult(r.id, SessionSetResult{Model: m, Effort: ef, Approval: appr.Policy})
}

func (s *Server) sessionMessages(r *request) {
	p, ok := decode[SessionParams](s, r)
	if !ok {
		return
	}
	ss, err := s.session(r, p.Session)
	if err != nil {
		s.reply(r, nil, err)
		return
	}
	msgs := []Message{}
	for _, en := range ss.Entries() {
		if en.Type != store.TypeMessage {
			continue
		}
		var m model.Message
		if json.Unmarshal(en.Message, &m) != nil {
			continue
		}
		msgs = append(msgs, Message{ID: en.ID, Parent: en.Parent, Time: en.Time, Role: m.Role, Content: m.Content})
	}
	s.writeResult(r.id, SessionMessagesResult{Messages: msgs})
}

func (s *Server) sessionFork(r *request) {
	p, ok := decode[SessionParams](s, r)
	if !ok {
		return
	}
	ss, err := s.session(r, p.Session)
	if err != nil {
		s.reply(r, nil, err)
		return
	}
	in := ss.Info()
	entries := store.Branch(ss.Entries())
	id := store.NewID()
	h := store.Header{Type: "session", Version: store.Version, ID: id, Cwd: ss.Cwd(), Created: time.Now().UTC(),
		Model: in.Model, Effort: in.Effort, Name: in.Name}
	var log *store.Log
	if in.Path != "" {
		h.Parent = in.Path
		if log, err = store.Fork(s.Home, h, entries); err != nil {
			s.writeError(r.id, r.method+": "+err.Error())
			return
		}
	}
	fork := s.Engine.NewSession(agent.Options{ID: id, Cwd: ss.Cwd(), Model: in.Model, Effort: in.Effort,
		Tools: ss.Tools(), Log: log, Entries: entries, Name: in.Name, System: ss.System()})
	nss := &session{Session: fork, header: h}
	s.register(nss)
	s.writeResult(r.id, SessionForkResult{Session: id, Path: strPtr(fork.Info().Path)})
}

func (s *Server) sessionExport(r *request) {
	p, ok := decode[SessionExportParams](s, r)
	if !ok {
		return
	}
	ss, err := s.session(r, p.Session)
	if err != nil {
		s.reply(r, nil, err)
		return
	}
	in := ss.Info()
	path := store.DefaultExportPath(in.Path, ss.Cwd(), ss.ID())
	if p.Path != nil {
		path = *p.Path
		if !filepath.IsAbs(path) {
			path = filepath.Join(ss.Cwd(), path)
		}
	}
	title := in.Title
	if in.Name != "" {
		title = in.Name
	}
	if title == "" {
		title = "e session " + ss.ID()
	}
	h := ss.header
	h.Model, h.Effort = in.Model, in.Effort
	if err := exportFile(path, title, h, store.Branch(ss.Entries())); err != nil {
		s.writeError(r.id, r.method+": "+err.Error())
		return
	}
	s.writeResult(r.id, SessionExportResult{Path: path, Title: title})
}

func exportFile(path, title string, h store.Header, entries []store.Entry) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if err := store.ExportHTML(f, title, h, entries); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func (s *Server) sessionClose(r *request) {
	p, ok := decode[SessionParams](s, r)
	if !ok {
		return
	}
	ss, err := s.session(r, p.Session)
	if err != nil {
		s.reply(r, nil, err)
		return
	}
	s.mu.Lock()
	delete(s.sessions, p.Session)
	s.mu.Unlock()
	s.goTurn(func() {
		err := ss.Close()
		ss.turn.Wait()
		if s.Ext != nil {
			s.Ext.Notify("session.closed", map[string]any{"session": ss.ID()})
		}
		if err != nil {
			s.writeError(r.id, r.method+": "+err.Error())
			return
		}
		s.writeResult(r.id, Empty{})
	})
}

func (s *Server) askReply(r *request) {
	p, ok := decode[AskReplyParams](s, r)
	if !ok {
		return
	}
	result := p.Result
	if string(result) == "null" {
		result = nil
	}
	if err := s.relay.Reply(p.Ask, result); err != nil {
		s.writeError(r.id, err.Error())
		return
	}
	s.writeResult(r.id, Empty{})
}

// oneShot serves a version-1 line (O1–O5): a fresh memory-only agent (or a
// saved one with save:true), one turn, a flat answer, no events.
func (s *Server) oneShot(id json.RawMessage, line []byte) {
	if err := schemas.ValidateOneShot(line); err != nil {
		s.writeError(id, err.Error())
		return
	}
	var o OneShot
	if err := json.Unmarshal(line, &o); err != nil {
		s.writeError(id, "oneshot: "+err.Error())
		return
	}
	ss, err := s.create("oneshot", "", CreateSpec{Cwd: o.Cwd, Model: o.Model, Effort: o.Effort, ToolMode: o.ToolMode,
		Resume: o.Resume, Name: o.Name, Tools: o.Tools, Save: o.Save})
	if err != nil {
		s.writeError(id, err.Error())
		return
	}
	var images []model.Part
	if o.Images != nil && len(*o.Images) > 0 {
		if images, err = agent.LoadImages(ss.Cwd(), *o.Images); err != nil {
			ss.Close()
			s.writeError(id, "oneshot: "+err.Error())
			return
		}
	}
	if err := ss.Begin(); err != nil {
		ss.Close()
		s.writeError(id, "oneshot: "+err.Error())
		return
	}
	s.goTurn(func() {
		res := ss.Prompt(s.ctx, o.Prompt, images, func(agent.Event) {})
		path := ss.Info().Path
		res.Session = strPtr(path) // v1: the JSONL path when saved (O3)
		res.Path = strPtr(path)
		ss.Close()
		b, err := json.Marshal(res)
		if err != nil {
			s.writeError(id, "oneshot: "+err.Error())
			return
		}
		if len(b) > 2 {
			s.writeRaw(concat(`{"id":`, id, `,`, b[1:]))
		}
	})
}

// Create makes a session for a caller other than e rpc (e -p): errors name
// the option as method's field.
func (s *Process) Create(method string, c CreateSpec) (*agent.Session, error) {
	ss, err := s.create(method, "", c)
	if err != nil {
		return nil, err
	}
	return ss.Session, nil
}
