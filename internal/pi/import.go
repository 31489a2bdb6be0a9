package pi

import (
	"encoding/json"
	"errors"

	"github.com/e-agent/e/internal/model"
	"github.com/e-agent/e/internal/session"
)

// piSession collects e entries converted from a pi session file's message
// lines (sessionfile.go's decoder).
type piSession struct {
	entries []session.Entry
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
	ParentSession    string          `json:"parentSession"` // the header's
	TargetID         string          `json:"targetId"`      // context_edit
	Replacement      json.RawMessage `json:"replacement"`   // context_edit
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
	StopReason    string   `json:"stopReason"`
	ErrorMessage  string   `json:"errorMessage"`
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
