package pi

import (
	"encoding/json"

	"github.com/e-agent/e/internal/model"
)

// The wire shapes of pi's messages (message-types.md); schemas/pi/defs.json
// is their contract.

// Cost is what a usage cost, in USD.
type Cost struct {
	Input      float64 `json:"input"`
	Output     float64 `json:"output"`
	CacheRead  float64 `json:"cacheRead"`
	CacheWrite float64 `json:"cacheWrite"`
	Total      float64 `json:"total"`
	// FromProvider is pi's totalFromProvider, set on a finished message:
	// false, e prices usage itself.
	FromProvider *bool `json:"totalFromProvider,omitempty"`
}

// Usage is pi's token usage: cacheWrite is both of e's cache-write
// categories, cacheWrite1h the one-hour part of it.
type Usage struct {
	Input        int64 `json:"input"`
	Output       int64 `json:"output"`
	CacheRead    int64 `json:"cacheRead"`
	CacheWrite   int64 `json:"cacheWrite"`
	CacheWrite1h int64 `json:"cacheWrite1h,omitempty"`
	// Reasoning is the part of Output spent reasoning, on a finished
	// answer whose provider reports it (withReasoning).
	Reasoning   *int64 `json:"reasoning,omitempty"`
	TotalTokens int64  `json:"totalTokens"`
	Cost        Cost   `json:"cost"`
}

// Add returns u + v.
func (u Usage) Add(v Usage) Usage {
	return Usage{u.Input + v.Input, u.Output + v.Output, u.CacheRead + v.CacheRead, u.CacheWrite + v.CacheWrite,
		u.CacheWrite1h + v.CacheWrite1h, nil, u.TotalTokens + v.TotalTokens, Cost{u.Cost.Input + v.Cost.Input,
			u.Cost.Output + v.Cost.Output, u.Cost.CacheRead + v.Cost.CacheRead, u.Cost.CacheWrite + v.Cost.CacheWrite,
			u.Cost.Total + v.Cost.Total, nil}}
}

// NewUsage converts e's usage, priced at p (nil: no cost).
func NewUsage(u model.Usage, p *model.Price) Usage {
	out := Usage{Input: u.Input, Output: u.Output, CacheRead: u.CacheRead, CacheWrite: u.CacheWrite5m + u.CacheWrite1h,
		CacheWrite1h: u.CacheWrite1h, TotalTokens: u.Prompt() + u.Output}
	if p != nil {
		out.Cost = Cost{Input: float64(u.Input) * p.Input / 1e6, Output: float64(u.Output) * p.Output / 1e6,
			CacheRead:  float64(u.CacheRead) * p.CacheRead / 1e6,
			CacheWrite: (float64(u.CacheWrite5m)*p.CacheWrite5m + float64(u.CacheWrite1h)*p.CacheWrite1h) / 1e6}
		out.Cost.Total = out.Cost.Input + out.Cost.Output + out.Cost.CacheRead + out.Cost.CacheWrite
	}
	return out
}

// withReasoning returns u with its reasoning count as pi's providers
// report it: its OpenAI ones always (0 when the API sent none), its
// Anthropic one when the API sent a count (e keeps only a non-zero one).
func withReasoning(u Usage, api string, n int64) Usage {
	if n > 0 || api == model.APIOpenAIChat || api == model.APIOpenAIResponses {
		u.Reasoning = &n
	}
	return u
}

// pricedUsage is the usage of a finished model call, which pi marks as
// priced by e (not reported by the provider).
func pricedUsage(u model.Usage, p *model.Price) Usage {
	out, fromProvider := NewUsage(u, p), false
	out.Cost.FromProvider = &fromProvider
	return out
}

// Content is one content block: text, thinking, image or toolCall.
type Content struct {
	Type      string          // "text", "thinking", "image", "toolCall"
	Text      string          // text and thinking
	Signature string          // thinking
	Data      []byte          // image
	MimeType  string          // image
	ID, Name  string          // toolCall
	Arguments json.RawMessage // toolCall
}

// MarshalJSON writes the fields of c's type, each required one present.
func (c Content) MarshalJSON() ([]byte, error) {
	switch c.Type {
	case "thinking":
		return json.Marshal(struct {
			Type      string `json:"type"`
			Thinking  string `json:"thinking"`
			Signature string `json:"thinkingSignature,omitempty"`
		}{c.Type, c.Text, c.Signature})
	case "image":
		return json.Marshal(struct {
			Type     string `json:"type"`
			Data     []byte `json:"data"`
			MimeType string `json:"mimeType"`
		}{c.Type, c.Data, c.MimeType})
	case "toolCall":
		args := c.Arguments
		if len(args) == 0 || args[0] != '{' {
			args = json.RawMessage("{}")
		}
		return json.Marshal(struct {
			Type      string          `json:"type"`
			ID        string          `json:"id"`
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}{c.Type, c.ID, c.Name, args})
	}
	return json.Marshal(struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}{"text", c.Text})
}

// UserMessage is a user message (pi's schema also allows a string content;
// pi 1.6.0 writes blocks).
type UserMessage struct {
	Role      string    `json:"role"` // "user"
	Content   []Content `json:"content"`
	Timestamp int64     `json:"timestamp"`
}

// SystemMessage declares the prompt and tools: pi persists one at a
// session's first model call. e's prompt is one text (its content), not
// pi's named sections.
type SystemMessage struct {
	Role       string     `json:"role"` // "system"
	Content    string     `json:"content"`
	ToolsAdded []ToolDecl `json:"toolsAdded"`
	Timestamp  int64      `json:"timestamp"`
}

// ToolDecl is a tool a system message declares.
type ToolDecl struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// AssistantMessage is an assistant message.
type AssistantMessage struct {
	Role          string    `json:"role"` // "assistant"
	Content       []Content `json:"content"`
	API           string    `json:"api"`
	Provider      string    `json:"provider"`
	Model         string    `json:"model"`
	ThinkingLevel string    `json:"thinkingLevel,omitempty"`
	Usage         Usage     `json:"usage"`
	StopReason    string    `json:"stopReason"` // pending, stop, length, toolUse, error, aborted
	ErrorMessage  string    `json:"errorMessage,omitempty"`
	Timestamp     int64     `json:"timestamp"`
	DurationMS    *int64    `json:"durationMs,omitempty"` // the model call's, on a finished message
	// The provider's id of the answer and its own finish reason, as the
	// API sent them (model.Response), on a finished message.
	ResponseID    string `json:"responseId,omitempty"`
	RawStopReason string `json:"rawStopReason,omitempty"`
}

// ToolResult is the content and details of a tool result. As pi's, a
// partial result has details ({}), a final one none.
type ToolResult struct {
	Content []Content `json:"content"`
	Details any       `json:"details,omitempty"`
	// StructuredContent is the result as data, as pi's read (the text)
	// and bash (BashStructured) give it on tool_execution_end.
	StructuredContent any `json:"structuredContent,omitempty"`
}

// BashStructured is the structuredContent of a bash call whose command
// exited by itself.
type BashStructured struct {
	Output          string  `json:"output"`
	Truncated       bool    `json:"truncated"`
	ExitCode        int     `json:"exit_code"`
	WallTimeSeconds float64 `json:"wall_time_seconds"`
}

// ToolResultMessage is a tool result message.
type ToolResultMessage struct {
	Role       string    `json:"role"` // "toolResult"
	ToolCallID string    `json:"toolCallId"`
	ToolName   string    `json:"toolName"`
	Content    []Content `json:"content"`
	IsError    bool      `json:"isError"`
	Timestamp  int64     `json:"timestamp"`
	DurationMS *int64    `json:"durationMs,omitempty"` // the tool's run, when it ran
}

// BashExecutionMessage records a user shell command (the bash command).
type BashExecutionMessage struct {
	Role               string `json:"role"` // "bashExecution"
	Command            string `json:"command"`
	Output             string `json:"output"`
	ExitCode           *int   `json:"exitCode,omitempty"` // none for a killed command, as pi's
	Cancelled          bool   `json:"cancelled"`
	Truncated          bool   `json:"truncated"`
	ExcludeFromContext bool   `json:"excludeFromContext,omitempty"`
	Timestamp          int64  `json:"timestamp"`
}

// CompactionSummaryMessage stands for compacted history.
type CompactionSummaryMessage struct {
	Role         string `json:"role"` // "compactionSummary"
	Summary      string `json:"summary"`
	TokensBefore int64  `json:"tokensBefore"`
	Timestamp    int64  `json:"timestamp"`
}

// CompactionResult is what a compaction produced.
type CompactionResult struct {
	Summary              string            `json:"summary"`
	FirstKeptEntryID     string            `json:"firstKeptEntryId"`
	TokensBefore         int64             `json:"tokensBefore"`
	EstimatedTokensAfter int64             `json:"estimatedTokensAfter"`
	Usage                *Usage            `json:"usage,omitempty"`
	Details              CompactionDetails `json:"details"`
}

// Event is one session event: a struct whose JSON has a "type" field.
type Event = any

// The events (json.md).
type (
	AgentStart struct {
		Type string `json:"type"`
	}
	AgentEnd struct {
		Type      string `json:"type"`
		Messages  []any  `json:"messages"`
		WillRetry bool   `json:"willRetry"`
	}
	AgentSettled struct {
		Type    string `json:"type"`
		Aborted bool   `json:"aborted"`
	}
	TurnStart struct {
		Type string `json:"type"`
	}
	TurnEnd struct {
		Type        string              `json:"type"`
		Message     any                 `json:"message"`
		ToolResults []ToolResultMessage `json:"toolResults"`
	}
	MessageStart struct {
		Type    string `json:"type"`
		Message any    `json:"message"`
	}
	MessageEnd struct {
		Type    string `json:"type"`
		Message any    `json:"message"`
	}
	MessageUpdate struct {
		Type  string         `json:"type"`
		Usage Usage          `json:"usage"`
		Event AssistantEvent `json:"assistantMessageEvent"`
	}
	ToolExecutionStart struct {
		Type       string          `json:"type"`
		ToolCallID string          `json:"toolCallId"`
		ToolName   string          `json:"toolName"`
		Args       json.RawMessage `json:"args"`
	}
	ToolExecutionUpdate struct {
		Type          string          `json:"type"`
		ToolCallID    string          `json:"toolCallId"`
		ToolName      string          `json:"toolName"`
		Args          json.RawMessage `json:"args"`
		PartialResult ToolResult      `json:"partialResult"`
	}
	ToolExecutionEnd struct {
		Type       string     `json:"type"`
		ToolCallID string     `json:"toolCallId"`
		ToolName   string     `json:"toolName"`
		Result     ToolResult `json:"result"`
		IsError    bool       `json:"isError"`
		DurationMS *int64     `json:"durationMs,omitempty"`
	}
	QueueUpdate struct {
		Type     string   `json:"type"`
		Steering []string `json:"steering"`
		FollowUp []string `json:"followUp"`
	}
	SessionInfoChanged struct {
		Type string `json:"type"`
		Name string `json:"name,omitempty"`
	}
	ThinkingLevelChanged struct {
		Type  string `json:"type"`
		Level string `json:"level"`
	}
	CompactionStart struct {
		Type   string `json:"type"`
		Reason string `json:"reason"`
	}
	CompactionEnd struct {
		Type         string            `json:"type"`
		Reason       string            `json:"reason"`
		Result       *CompactionResult `json:"result,omitempty"`
		Aborted      bool              `json:"aborted"`
		WillRetry    bool              `json:"willRetry"`
		ErrorMessage string            `json:"errorMessage,omitempty"`
	}
	AutoRetryStart struct {
		Type         string `json:"type"`
		Attempt      int    `json:"attempt"`
		MaxAttempts  int    `json:"maxAttempts"`
		DelayMS      int64  `json:"delayMs"`
		ErrorMessage string `json:"errorMessage"`
	}
	// EntryAppended announces an entry added to the session outside a
	// message: pi's context_edit that hides a failed attempt from the
	// model's context.
	EntryAppended struct {
		Type  string `json:"type"`
		Entry Entry  `json:"entry"`
	}
	AutoRetryEnd struct {
		Type       string `json:"type"`
		Success    bool   `json:"success"`
		Attempt    int    `json:"attempt"`
		FinalError string `json:"finalError,omitempty"`
	}
	BashExecutionUpdate struct {
		Type  string `json:"type"`
		ID    string `json:"id,omitempty"`
		Delta string `json:"delta"`
	}
)

// AssistantEvent is the assistantMessageEvent of a message_update: which
// fields are set depends on Type.
type AssistantEvent struct {
	Type         string   `json:"type"`
	ContentIndex int      `json:"contentIndex"`
	Delta        *string  `json:"delta,omitempty"`
	Content      *string  `json:"content,omitempty"`
	ID           string   `json:"id,omitempty"`
	ToolName     string   `json:"toolName,omitempty"`
	ToolCall     *Content `json:"toolCall,omitempty"`
}

// CompactionDetails lists the files the compacted history read and
// modified (pi's compaction details).
type CompactionDetails struct {
	ReadFiles     []string `json:"readFiles"`
	ModifiedFiles []string `json:"modifiedFiles"`
}
