package pi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/e-agent/e/internal/model"
	"github.com/e-agent/e/internal/session"
	"github.com/tidwall/gjson"
)

// The sessions e --mode rpc and e --mode json save are pi 1.6.0 session
// files (session-format.md), written by fileCodec as each entry is
// appended (the session layer's Behaviour.Codec; e rpc keeps e's own log
// format) and read back by it when the session is resumed, so that pi
// resumes what e wrote and e goes on with what pi wrote, in the same file.
// The lines are those get_entries shows (piChain): a header, then a
// model_change and a thinking_level_change for the model the session
// started with, then the entries, each naming its parent.

// fileCodec is the pi session-file format of one log (session.Codec).
type fileCodec struct {
	cat      func(id string) (model.Info, bool)
	fallback string          // the model of a file whose model e does not have
	opened   func(id string) // called with the session's id once the file is made or read
	chain    *piChain
	// prev is the last pi entry made; held when it is an answer without a
	// model call (the text an interrupted answer had streamed), written
	// once the entry after it says whether it was interrupted.
	prev *Entry
	held bool

	// sysMu guards system, the system message the front gives before a
	// session's first prompt (setSystem): the first user message's entry
	// follows it in the file, as pi persists it.
	sysMu  sync.Mutex
	system *SystemMessage
}

// setSystem gives the system message of the session's first model call.
func (fc *fileCodec) setSystem(m SystemMessage) {
	fc.sysMu.Lock()
	defer fc.sysMu.Unlock()
	fc.system = &m
}

// systemAt is the system message given, stamped ts (converter.system).
func (fc *fileCodec) systemAt(ts int64) (SystemMessage, bool) {
	fc.sysMu.Lock()
	defer fc.sysMu.Unlock()
	if fc.system == nil {
		return SystemMessage{}, false
	}
	m := *fc.system
	m.Timestamp = ts
	return m, true
}

// fileCodec is the session layer's Behaviour.Codec: the codec of a new log,
// with the catalog of the host, made by then. The front keeps each by its
// session's id, to give it the session's system message (fileSystem).
func (fr *front) fileCodec() session.Codec {
	fc := newFileCodec(func(id string) (model.Info, bool) {
		info, err := fr.h.Model(id)
		return info, err == nil
	}, fr.h.DefaultModel())
	if cur := fr.last.Load(); cur != nil {
		// A fork or clone copies history that has had its first model
		// call: its file's system message is the session's it comes from
		// (the same prompt and tools); a new session's first prompt sets
		// its own (fileSystem).
		fc.setSystem(systemMessage(cur, 0))
	}
	fc.opened = func(id string) {
		fr.codecMu.Lock()
		defer fr.codecMu.Unlock()
		if fr.codecs == nil {
			fr.codecs = map[string]*fileCodec{}
		}
		fr.codecs[id] = fc
	}
	return fc
}

// fileSystem gives the file of sess, if it has one, the system message of
// its first model call, before the prompt's entry is appended; no lock of
// the session is held.
func (fr *front) fileSystem(sess *session.Session) {
	fr.codecMu.Lock()
	fc := fr.codecs[sess.ID()]
	fr.codecMu.Unlock()
	if fc != nil {
		fc.setSystem(systemMessage(sess, 0))
	}
}

// newFileCodec is the codec of one log; cat looks a model up in e's
// catalog, fallback is the model of a file whose last model e lacks.
func newFileCodec(cat func(id string) (model.Info, bool), fallback string) *fileCodec {
	return &fileCodec{cat: cat, fallback: fallback}
}

// start makes the chain of entries of a file for header h, with
// converter c.
func (fc *fileCodec) start(c *converter, h session.Header) {
	c.system = func(ts int64) (SystemMessage, bool) { return fc.systemAt(ts) }
	fc.chain = c.chain()
	if fc.opened != nil {
		fc.opened(h.ID)
	}
}

// Owns reports whether header is a pi session header (a timestamp; e's
// log header has "created").
func (fc *fileCodec) Owns(header []byte) bool {
	if !gjson.ValidBytes(header) {
		return false
	}
	h := gjson.GetManyBytes(header, "type", "timestamp", "created")
	return h[0].Type == gjson.String && h[0].Str == "session" && h[1].Type == gjson.String && !h[2].Exists()
}

// Header writes pi's header and the session's opening model_change and
// thinking_level_change (the ids get_entries gives them).
func (fc *fileCodec) Header(dst []byte, h session.Header) ([]byte, error) {
	c := newConverter(fc.cat, h)
	fc.start(c, h)
	ts := h.Created.UTC().Format(isoMillis)
	hd := SessionHeader{Type: "session", Version: 3, ID: h.ID, Timestamp: ts, Cwd: h.Cwd, ParentSession: h.Parent}
	mc := Entry{Type: "model_change", ID: h.ID + ".model", Timestamp: ts, Provider: c.info.Provider, ModelID: c.info.Name}
	tl := Entry{Type: "thinking_level_change", ID: h.ID + ".thinking", ParentID: &mc.ID, Timestamp: ts,
		ThinkingLevel: levelOf(h.Effort)}
	fc.chain.root = tl.ID
	return appendLines(dst, hd, mc, tl)
}

// Entry writes the pi entries of e, but an answer without a model call,
// held until the next entry or Flush. The entry written last is kept too:
// an interruption after it (a user message) adds an empty aborted answer.
func (fc *fileCodec) Entry(dst []byte, e session.Entry) ([]byte, error) {
	var prev []Entry
	if fc.prev != nil {
		prev = []Entry{*fc.prev}
	}
	out := fc.chain.add(prev, e)
	if len(prev) > 0 && !fc.held {
		out = out[1:] // written already
	}
	fc.held = false
	if n := len(out); n > 0 {
		fc.prev = &out[n-1]
		if a, ok := out[n-1].Message.(AssistantMessage); ok && e.Type == session.EntryMessage && e.Call == nil && a.StopReason != "toolUse" {
			fc.held = true
			out = out[:n-1]
		}
	}
	lines := make([]any, len(out))
	for i := range out {
		lines[i] = out[i]
	}
	return appendLines(dst, lines...)
}

// Flush writes the held answer, if any.
func (fc *fileCodec) Flush(dst []byte) []byte {
	if !fc.held {
		return dst
	}
	b, err := appendLines(dst, *fc.prev)
	if err != nil {
		return dst
	}
	fc.held = false
	return b
}

// appendLines appends each v as one line of pi's JSON.
func appendLines(dst []byte, vs ...any) ([]byte, error) {
	for _, v := range vs {
		b, err := marshal(v)
		if err != nil {
			return dst, fmt.Errorf("pi: session file: %w", err)
		}
		dst = append(append(dst, b...), '\n')
	}
	return dst, nil
}

// Decode reads a pi session file, every branch, in file order: pi's
// entries as e's (a settings entry for a model_change and the
// thinking_level_change after it, one tool message for consecutive tool
// results, a shell entry for a bashExecution message, an error or attempt
// entry for a failed answer, an interrupted one after an aborted answer).
// The model_change and thinking_level_change before any other entry are
// the header's model and effort. Entries e has no counterpart of (system
// and custom messages, labels, usage, context edits) are left out, their
// children reparented to their parent. A last line cut short is ignored.
func (fc *fileCodec) Decode(path string, data []byte) (session.Header, []session.Entry, error) {
	d := decoder{fc: fc, eID: map[string]string{}}
	lines := bytes.Split(data, []byte("\n"))
	for i, raw := range lines {
		raw = bytes.TrimSpace(raw)
		if len(raw) == 0 {
			continue
		}
		var l piLine
		if err := json.Unmarshal(raw, &l); err != nil {
			if i == len(lines)-1 {
				break // torn
			}
			return session.Header{}, nil, fmt.Errorf("pi: session %s: line %d: %w", path, i+1, err)
		}
		if !d.started {
			if l.Type != "session" {
				return session.Header{}, nil, fmt.Errorf("pi: session %s: no session header", path)
			}
			d.header(l)
			continue
		}
		d.leaf = l.ID
		if err := d.add(l); err != nil {
			return session.Header{}, nil, fmt.Errorf("pi: session %s: entry %s: %w", path, l.ID, err)
		}
	}
	if !d.started {
		return session.Header{}, nil, fmt.Errorf("pi: session %s: no session header", path)
	}
	if d.h.Model == "" {
		d.h.Model = fc.fallback
	}
	// The chain goes on where the file left it, at the model and level in
	// force there.
	c := newConverter(fc.cat, d.h)
	for _, en := range d.entries {
		if en.Type == session.EntrySettings {
			c.info, _ = fc.cat(en.Model)
			c.effort = en.Effort
		}
	}
	// A file with a system message or a user message has its first
	// model call behind it: no system message goes in later.
	c.sysDone = d.asked
	fc.start(c, d.h)
	fc.chain.root = d.root
	for id, piID := range d.lastPi {
		fc.chain.last[id] = piID
	}
	// Lines e leaves out at the file's end (a custom entry, a label) stay
	// on the active branch: what e appends hangs after the last line.
	switch n := len(d.entries); {
	case d.leaf == "":
	case n > 0 && d.eID[d.leaf] == d.entries[n-1].ID:
		fc.chain.last[d.entries[n-1].ID] = d.leaf
	case n == 0 && d.eID[d.leaf] == "":
		fc.chain.root = d.leaf
	}
	return d.h, d.entries, nil
}

// decoder is the state of one Decode.
type decoder struct {
	fc      *fileCodec
	h       session.Header
	started bool
	entries []session.Entry
	eID     map[string]string // pi entry id → the e entry holding it ("": a root)
	lastPi  map[string]string // e entry id → its last pi entry, when not its own id
	root    string            // the last pi entry of the header's settings
	model   string            // e's id of the model in force
	level   string            // pi's level in force
	asked   bool              // a system or user message was read
	leaf    string            // the last line's id
}

func (d *decoder) header(l piLine) {
	d.started = true
	at, _ := time.Parse(time.RFC3339Nano, l.Timestamp)
	d.h = session.Header{Type: "session", ID: l.ID, Cwd: l.Cwd, Created: at.UTC(), Parent: l.ParentSession}
	d.lastPi = map[string]string{}
}

// parent is e's parent of pi line l.
func (d *decoder) parent(l piLine) string {
	if l.ParentID == nil {
		return ""
	}
	return d.eID[*l.ParentID]
}

// skip leaves l out: its children hang on its parent.
func (d *decoder) skip(l piLine) { d.eID[l.ID] = d.parent(l) }

// into makes pi line l part of e entry id (its last pi line).
func (d *decoder) into(l piLine, id string) {
	d.eID[l.ID] = id
	d.lastPi[id] = l.ID
}

func (d *decoder) push(l piLine, en session.Entry) {
	en.ID, en.Parent = l.ID, d.parent(l)
	if en.Time.IsZero() {
		en.Time, _ = time.Parse(time.RFC3339Nano, l.Timestamp)
	}
	d.entries = append(d.entries, en)
	d.eID[l.ID] = l.ID
}

// settings makes l's model or level change e's: the header's before any
// other entry, else a settings entry (joined with the change just before
// it, pi's pair); a model e lacks is left out.
func (d *decoder) settings(l piLine) {
	if l.Type == "model_change" {
		id := l.Provider + "/" + l.ModelID
		if _, ok := d.fc.cat(id); !ok {
			d.skip(l)
			return
		}
		d.model = id
	} else {
		d.level = l.ThinkingLevel
	}
	effort := ""
	if info, ok := d.fc.cat(d.model); ok {
		effort = Effort(info, Clamp(info, cmpOr(d.level, levelOf(info.DefaultEffort))))
	}
	if len(d.entries) == 0 && d.parent(l) == "" {
		d.h.Model, d.h.Effort = d.model, effort
		d.eID[l.ID], d.root = "", l.ID
		return
	}
	if n := len(d.entries); n > 0 && l.ParentID != nil && d.eID[*l.ParentID] == d.entries[n-1].ID &&
		d.entries[n-1].Type == session.EntrySettings && d.lastPi[d.entries[n-1].ID] == "" {
		d.entries[n-1].Model, d.entries[n-1].Effort = d.model, effort
		d.into(l, d.entries[n-1].ID)
		return
	}
	d.push(l, session.Entry{Type: session.EntrySettings, Model: d.model, Effort: effort})
}

func (d *decoder) add(l piLine) error {
	switch l.Type {
	case "model_change", "thinking_level_change":
		d.settings(l)
	case "compaction":
		en := session.Entry{Type: session.EntryCompaction, Summary: l.Summary, Tokens: l.TokensBefore}
		if l.FirstKeptEntryID != l.ID {
			en.Kept = d.eID[l.FirstKeptEntryID]
			if en.Kept == "" {
				en.Kept = l.FirstKeptEntryID
			}
		}
		d.push(l, en)
	case "session_info":
		if l.Name == nil {
			d.skip(l)
			return nil
		}
		d.push(l, session.Entry{Type: session.EntryName, Name: *l.Name})
	case "context_edit":
		// pi's hiding of a retried attempt: the failed answer before it
		// becomes e's attempt entry; any other edit e does not keep.
		if n := len(d.entries); n > 0 && l.TargetID == d.entries[n-1].ID && d.entries[n-1].Type == session.EntryError &&
			d.entries[n-1].Call != nil && string(l.Replacement) == "null" {
			d.entries[n-1].Type = session.EntryAttempt
			d.into(l, d.entries[n-1].ID)
			return nil
		}
		d.skip(l)
	case "message":
		var m piMessage
		if err := json.Unmarshal(l.Message, &m); err != nil {
			return err
		}
		return d.message(l, m)
	default:
		d.skip(l)
	}
	return nil
}

// message converts a message line, as import.go's piSession.message does,
// and pi's failed and aborted answers.
func (d *decoder) message(l piLine, m piMessage) error {
	d.asked = d.asked || m.Role == "system" || m.Role == "user"
	switch m.Role {
	case "toolResult":
		// Consecutive results join the tool message before them.
		if n := len(d.entries); n > 0 && l.ParentID != nil && d.eID[*l.ParentID] == d.entries[n-1].ID {
			var prev model.Message
			if d.entries[n-1].Type == session.EntryMessage && json.Unmarshal(d.entries[n-1].Message, &prev) == nil &&
				prev.Role == model.RoleTool {
				ps := piSession{entries: d.entries}
				if err := ps.message(session.Entry{ID: l.ID}, m); err != nil {
					return err
				}
				d.entries = ps.entries
				d.into(l, d.entries[n-1].ID)
				return nil
			}
		}
	case "assistant":
		if m.StopReason == "error" || m.StopReason == "aborted" {
			return d.failed(l, m)
		}
	case "user", "bashExecution":
	default: // system, custom, branchSummary, compactionSummary: no e entry
		d.skip(l)
		return nil
	}
	ps := piSession{}
	if err := ps.message(session.Entry{ID: l.ID}, m); err != nil {
		return err
	}
	for _, en := range ps.entries {
		d.push(l, en)
	}
	return nil
}

// failed converts an answer pi ended with an error (e's error entry, an
// attempt once a context_edit hides it) or aborted (e's interrupted
// entry, after the text it had streamed).
func (d *decoder) failed(l piLine, m piMessage) error {
	ps := piSession{}
	if err := ps.message(session.Entry{ID: l.ID}, m); err != nil {
		return err
	}
	if len(ps.entries) == 0 {
		d.skip(l)
		return nil
	}
	msg := ps.entries[0]
	var call *session.ModelCall
	if msg.Call != nil && m.DurationMS != nil { // e's message of a failure without a model call has no duration
		c := *msg.Call
		call = &c
	}
	if m.StopReason == "error" {
		en := session.Entry{Type: session.EntryError, Error: m.ErrorMessage, Call: call}
		if hasContent(msg.Message) {
			en.Message = msg.Message
		}
		d.push(l, en)
		return nil
	}
	if hasContent(msg.Message) {
		msg.Call = nil
		d.push(l, msg)
		cut := piLine{ID: l.ID + ".aborted", ParentID: &l.ID, Timestamp: l.Timestamp}
		d.push(cut, session.Entry{Type: session.EntryInterrupted, Call: call})
		d.into(l, cut.ID)
		return nil
	}
	d.push(l, session.Entry{Type: session.EntryInterrupted, Call: call})
	return nil
}

// hasContent reports whether raw, an e message, has any content.
func hasContent(raw json.RawMessage) bool {
	var m model.Message
	return json.Unmarshal(raw, &m) == nil && len(m.Content) > 0
}
