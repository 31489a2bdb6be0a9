package pi

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/e-agent/e/internal/model"
	"github.com/e-agent/e/internal/regfile"
	"github.com/e-agent/e/internal/session"
)

// A session file pi wrote (session-format.md) given to --session or
// switch_session is read, not written: its active branch becomes the
// starting history of a new e session (saved in pi's folder, the pi file
// its parent), so pi's file stays as pi left it.

// piSession is a pi session file's active branch in e's terms.
type piSession struct {
	id, cwd string
	entries []session.Entry
	model   string // provider/modelId of the last model_change, "" when none
	level   string // of the last thinking_level_change
	name    string
}

// isPiSession reports whether path starts with a pi session header (pi's
// has a timestamp; e's log header has "created").
func isPiSession(path string) bool {
	f, _, err := regfile.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadBytes('\n')
	if err != nil && len(line) == 0 {
		return false
	}
	var h struct {
		Type      string          `json:"type"`
		Timestamp *string         `json:"timestamp"`
		Created   json.RawMessage `json:"created"`
	}
	return json.Unmarshal(line, &h) == nil && h.Type == "session" && h.Timestamp != nil && h.Created == nil
}

// piLine is one line of a pi session file, the fields e reads.
type piLine struct {
	Type             string          `json:"type"`
	ID               string          `json:"id"`
	ParentID         *string         `json:"parentId"`
	Timestamp        string          `json:"timestamp"`
	Cwd              string          `json:"cwd"`
	Message          json.RawMessage `json:"message"`
	Provider         string          `json:"provider"`
	ModelID          string          `json:"modelId"`
	ThinkingLevel    string          `json:"thinkingLevel"`
	Summary          string          `json:"summary"`
	FirstKeptEntryID string          `json:"firstKeptEntryId"`
	TokensBefore     int64           `json:"tokensBefore"`
	Name             *string         `json:"name"`
}

// piMessage is an AgentMessage, the fields e keeps.
type piMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID string          `json:"toolCallId"`
	IsError    bool            `json:"isError"`
	DurationMS *int64          `json:"durationMs"`
	ToolName   string          `json:"toolName"`
	Details    json.RawMessage `json:"details"`
	// assistant: what e keeps of the model call (session.ModelCall)
	Provider      string   `json:"provider"`
	Model         string   `json:"model"`
	ResponseID    string   `json:"responseId"`
	ResponseModel string   `json:"responseModel"`
	RawStopReason string   `json:"rawStopReason"`
	Usage         *piUsage `json:"usage"`
	// bashExecution
	Command            string `json:"command"`
	Output             string `json:"output"`
	ExitCode           *int   `json:"exitCode"`
	Cancelled          bool   `json:"cancelled"`
	Truncated          bool   `json:"truncated"`
	ExcludeFromContext bool   `json:"excludeFromContext"`
	FullOutputPath     string `json:"fullOutputPath"`
}

// piUsage is an assistant message's usage.
type piUsage struct {
	Input      int64 `json:"input"`
	Output     int64 `json:"output"`
	CacheRead  int64 `json:"cacheRead"`
	CacheWrite int64 `json:"cacheWrite"`
	Reasoning  int64 `json:"reasoning"`
	Cost       struct {
		Total *float64 `json:"total"`
	} `json:"cost"`
}

// piBlock is one content block.
type piBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	Signature string          `json:"thinkingSignature"`
	Data      []byte          `json:"data"`
	MimeType  string          `json:"mimeType"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// maxSessionBytes is the largest pi session file e reads, as for its own
// logs (store.MaxLogBytes; Y1).
const maxSessionBytes = 1 << 30

// readPiSession reads path's active branch: from its last entry back
// through parentId to the root. Entries e has no counterpart for (custom,
// label, usage, system messages …) are left out.
func readPiSession(path string) (*piSession, error) {
	data, err := regfile.ReadFile(path, maxSessionBytes)
	if err != nil {
		return nil, fmt.Errorf("pi: session %s: %w", path, err)
	}
	var lines []piLine
	for i, raw := range bytes.Split(data, []byte("\n")) {
		raw = bytes.TrimSpace(raw)
		if len(raw) == 0 {
			continue
		}
		var l piLine
		if err := json.Unmarshal(raw, &l); err != nil {
			return nil, fmt.Errorf("pi: session %s: line %d: %w", path, i+1, err)
		}
		lines = append(lines, l)
	}
	if len(lines) == 0 || lines[0].Type != "session" {
		return nil, fmt.Errorf("pi: session %s: no session header", path)
	}
	ps := &piSession{id: lines[0].ID, cwd: lines[0].Cwd}
	byID := map[string]piLine{}
	for _, l := range lines[1:] {
		byID[l.ID] = l
	}
	var branch []piLine
	for i := len(lines) - 1; i > 0 && len(branch) == 0; i-- {
		for l, ok := lines[i], true; ok; {
			branch = append(branch, l)
			if l.ParentID == nil {
				break
			}
			l, ok = byID[*l.ParentID]
		}
	}
	for i, j := 0, len(branch)-1; i < j; i, j = i+1, j-1 {
		branch[i], branch[j] = branch[j], branch[i]
	}
	for _, l := range branch {
		if err := ps.add(l); err != nil {
			return nil, fmt.Errorf("pi: session %s: entry %s: %w", path, l.ID, err)
		}
	}
	return ps, nil
}

// add converts one entry of the branch.
func (ps *piSession) add(l piLine) error {
	at, _ := time.Parse(time.RFC3339Nano, l.Timestamp)
	en := session.Entry{ID: l.ID, Time: at}
	switch l.Type {
	case "message":
		var m piMessage
		if err := json.Unmarshal(l.Message, &m); err != nil {
			return err
		}
		return ps.message(en, m)
	case "model_change", "thinking_level_change":
		// A settings entry with both (its Effort pi's level until
		// fromPi knows the model), so that each answer names the model
		// and level it was made with; pi's pair at a session's start
		// becomes one.
		if l.Type == "model_change" {
			ps.model = l.Provider + "/" + l.ModelID
		} else {
			ps.level = l.ThinkingLevel
		}
		en.Type, en.Model, en.Effort = session.EntrySettings, ps.model, ps.level
		if n := len(ps.entries); n > 0 && ps.entries[n-1].Type == session.EntrySettings {
			en.ID, en.Time = ps.entries[n-1].ID, ps.entries[n-1].Time
			ps.entries[n-1] = en
			return nil
		}
	case "compaction":
		en.Type, en.Summary, en.Tokens = session.EntryCompaction, l.Summary, l.TokensBefore
		if l.FirstKeptEntryID != l.ID {
			en.Kept = l.FirstKeptEntryID
		}
	case "session_info":
		if l.Name == nil {
			return nil
		}
		en.Type, en.Name, ps.name = session.EntryName, *l.Name, *l.Name
	default:
		return nil
	}
	ps.entries = append(ps.entries, en)
	return nil
}

// message converts a message entry; consecutive tool results join one e
// tool message (e keeps one per batch of calls).
func (ps *piSession) message(en session.Entry, m piMessage) error {
	var msg model.Message
	switch m.Role {
	case "user":
		parts, err := blocks(m.Content)
		if err != nil {
			return err
		}
		msg = model.Message{Role: model.RoleUser, Content: parts}
	case "assistant":
		parts, err := blocks(m.Content)
		if err != nil {
			return err
		}
		msg = model.Message{Role: model.RoleAssistant, Content: parts}
		if m.Usage != nil {
			call := &session.ModelCall{Model: m.Provider + "/" + m.Model, Attempts: 1, ResponseID: m.ResponseID,
				FinishReason: m.RawStopReason, ResponseModel: m.ResponseModel, CostUSD: m.Usage.Cost.Total}
			u := &call.Usage
			u.Input, u.Output, u.CacheRead, u.CacheWrite5m, u.Reasoning = m.Usage.Input, m.Usage.Output, m.Usage.CacheRead, m.Usage.CacheWrite, m.Usage.Reasoning
			if m.DurationMS != nil {
				call.DurationMS = *m.DurationMS
			}
			en.Call = call
		}
	case "toolResult":
		parts, err := blocks(m.Content)
		if err != nil {
			return err
		}
		text := ""
		for _, p := range parts {
			text += p.Text
		}
		res := model.Part{Type: model.PartToolResult, CallID: m.ToolCallID, Text: text, IsError: m.IsError}
		var run []session.ToolRun
		if m.DurationMS != nil || m.ToolName == "bash" && len(m.Details) > 0 {
			r := session.ToolRun{CallID: m.ToolCallID, Outcome: "completed"}
			if m.IsError {
				r.Outcome = "failed"
			}
			if m.DurationMS != nil {
				r.DurationMS = *m.DurationMS
			}
			if m.ToolName == "bash" && bashDetails(m.Details) != nil { // bash's {truncation, fullOutputPath}
				r.Details = m.Details
			}
			run = []session.ToolRun{r}
		}
		if n := len(ps.entries); n > 0 && ps.entries[n-1].Type == session.EntryMessage {
			var prev model.Message
			if json.Unmarshal(ps.entries[n-1].Message, &prev) == nil && prev.Role == model.RoleTool {
				prev.Content = append(prev.Content, res)
				b, err := json.Marshal(prev)
				ps.entries[n-1].Message = b
				ps.entries[n-1].Runs = append(ps.entries[n-1].Runs, run...)
				return err
			}
		}
		msg = model.Message{Role: model.RoleTool, Content: []model.Part{res}}
		en.Runs = run
	case "bashExecution":
		en.Type = session.EntryShell
		en.Shell = &session.ShellRun{Command: m.Command, Output: m.Output, ExitCode: m.ExitCode, Cancelled: m.Cancelled,
			Truncated: m.Truncated, Exclude: m.ExcludeFromContext, FullOutputPath: m.FullOutputPath}
		ps.entries = append(ps.entries, en)
		return nil
	default: // system, custom: no e counterpart
		return nil
	}
	b, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	en.Type, en.Message = session.EntryMessage, b
	ps.entries = append(ps.entries, en)
	return nil
}

// blocks converts content: a string, or text, thinking, image and
// toolCall blocks.
func blocks(raw json.RawMessage) ([]model.Part, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []model.Part{{Type: model.PartText, Text: s}}, nil
	}
	var bs []piBlock
	if err := json.Unmarshal(raw, &bs); err != nil {
		return nil, errors.New("content: neither a string nor content blocks")
	}
	var parts []model.Part
	for _, b := range bs {
		switch b.Type {
		case "text":
			parts = append(parts, model.Part{Type: model.PartText, Text: b.Text})
		case "thinking":
			parts = append(parts, model.Part{Type: model.PartReasoning, Text: b.Thinking, Signature: b.Signature})
		case "image":
			parts = append(parts, model.Part{Type: model.PartImage, MediaType: b.MimeType, Data: b.Data})
		case "toolCall":
			args := b.Arguments
			if len(args) == 0 {
				args = json.RawMessage("{}")
			}
			parts = append(parts, model.Part{Type: model.PartToolCall, ID: b.ID, Name: b.Name, Arguments: args})
		}
	}
	return parts, nil
}
