package acp

import "encoding/json"

// The ACP v1 shapes e sends and reads, named as in ACP's schema
// (schemas/acp/schema.json, vendored from agentclientprotocol). Only the
// fields e uses are declared; unknown fields are ignored on input.

// ProtocolVersion is the latest (and only) ACP version e speaks.
const ProtocolVersion = 1

// JSON-RPC and ACP error codes.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternal       = -32603
	CodeAuthRequired   = -32000
	CodeNotFound       = -32002
)

// Error is a JSON-RPC error object.
type Error struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return e.Message }

func errorf(code int, msg string) *Error { return &Error{Code: code, Message: msg} }

type InitializeParams struct {
	ProtocolVersion    int                `json:"protocolVersion"`
	ClientCapabilities ClientCapabilities `json:"clientCapabilities"`
}

type ClientCapabilities struct {
	FS struct {
		ReadTextFile  bool `json:"readTextFile"`
		WriteTextFile bool `json:"writeTextFile"`
	} `json:"fs"`
	Terminal bool `json:"terminal"`
}

type InitializeResult struct {
	ProtocolVersion   int               `json:"protocolVersion"`
	AgentCapabilities AgentCapabilities `json:"agentCapabilities"`
	AuthMethods       []any             `json:"authMethods"`
	AgentInfo         Implementation    `json:"agentInfo"`
}

type AgentCapabilities struct {
	LoadSession         bool                `json:"loadSession"`
	PromptCapabilities  PromptCapabilities  `json:"promptCapabilities"`
	MCPCapabilities     MCPCapabilities     `json:"mcpCapabilities"`
	SessionCapabilities SessionCapabilities `json:"sessionCapabilities"`
}

type PromptCapabilities struct {
	Image           bool `json:"image"`
	Audio           bool `json:"audio"`
	EmbeddedContext bool `json:"embeddedContext"`
}

type MCPCapabilities struct {
	HTTP bool `json:"http"`
	SSE  bool `json:"sse"`
}

// Marker is an empty object: "supported" in ACP's capability objects.
type Marker struct{}

type SessionCapabilities struct {
	List   *Marker `json:"list,omitempty"`
	Resume *Marker `json:"resume,omitempty"`
	Close  *Marker `json:"close,omitempty"`
}

type Implementation struct {
	Name    string `json:"name"`
	Title   string `json:"title,omitempty"`
	Version string `json:"version"`
}

// MCPServer is one entry of mcpServers; e speaks the stdio transport.
type MCPServer struct {
	Type    string     `json:"type,omitempty"` // "" (stdio), "http", "sse"
	Name    string     `json:"name"`
	Command string     `json:"command"`
	Args    []string   `json:"args"`
	Env     []EnvEntry `json:"env"`
	URL     string     `json:"url,omitempty"`
}

type EnvEntry struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type NewSessionParams struct {
	Cwd        string      `json:"cwd"`
	MCPServers []MCPServer `json:"mcpServers"`
}

type NewSessionResult struct {
	SessionID     string         `json:"sessionId"`
	ConfigOptions []ConfigOption `json:"configOptions"`
}

type LoadSessionParams struct {
	SessionID  string      `json:"sessionId"`
	Cwd        string      `json:"cwd"`
	MCPServers []MCPServer `json:"mcpServers"`
}

type LoadSessionResult struct {
	ConfigOptions []ConfigOption `json:"configOptions"`
}

type ListSessionsParams struct {
	Cwd    *string `json:"cwd"`
	Cursor *string `json:"cursor"`
}

type ListSessionsResult struct {
	Sessions []SessionInfo `json:"sessions"`
}

type SessionInfo struct {
	SessionID string  `json:"sessionId"`
	Cwd       string  `json:"cwd"`
	Title     *string `json:"title"`
	UpdatedAt string  `json:"updatedAt,omitempty"`
}

type SessionIDParams struct {
	SessionID string `json:"sessionId"`
}

type PromptParams struct {
	SessionID string            `json:"sessionId"`
	Prompt    []json.RawMessage `json:"prompt"`
	// Meta is ACP's extension data; e reads its traceparent (W3C Trace
	// Context), as other ACP agents do.
	Meta json.RawMessage `json:"_meta"`
}

type PromptResult struct {
	StopReason string `json:"stopReason"`
}

// Stop reasons.
const (
	StopEndTurn         = "end_turn"
	StopMaxTurnRequests = "max_turn_requests"
	StopCancelled       = "cancelled"
	StopMaxTokens       = "max_tokens"
	StopRefusal         = "refusal"
)

type SetConfigOptionParams struct {
	SessionID string          `json:"sessionId"`
	ConfigID  string          `json:"configId"`
	Value     json.RawMessage `json:"value"`
}

type SetConfigOptionResult struct {
	ConfigOptions []ConfigOption `json:"configOptions"`
}

// ConfigOption is a select session config option.
type ConfigOption struct {
	ID           string         `json:"id"`
	Name         string         `json:"name"`
	Description  string         `json:"description,omitempty"`
	Category     string         `json:"category,omitempty"`
	Type         string         `json:"type"` // "select"
	CurrentValue string         `json:"currentValue"`
	Options      []ConfigChoice `json:"options"`
}

type ConfigChoice struct {
	Value       string `json:"value"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

// Notification is session/update's params.
type Notification struct {
	SessionID string `json:"sessionId"`
	Update    Update `json:"update"`
}

// Update is one session/update payload; SessionUpdate names its kind and
// the fields that kind uses are set.
type Update struct {
	SessionUpdate string `json:"sessionUpdate,omitempty"` // empty in request_permission's toolCall

	// agent_message_chunk, agent_thought_chunk, user_message_chunk
	Content *ContentBlock `json:"content,omitempty"`

	// tool_call, tool_call_update
	ToolCallID string            `json:"toolCallId,omitempty"`
	Title      *string           `json:"title,omitempty"`
	Kind       string            `json:"kind,omitempty"`
	Status     string            `json:"status,omitempty"`
	ToolOutput []ToolCallContent `json:"-"` // marshalled as "content" (see MarshalJSON)
	Locations  []Location        `json:"locations,omitempty"`
	RawInput   json.RawMessage   `json:"rawInput,omitempty"`
	RawOutput  any               `json:"rawOutput,omitempty"`

	// usage_update
	Used *int64 `json:"used,omitempty"`
	Size *int64 `json:"size,omitempty"`
	Cost *Cost  `json:"cost,omitempty"`

	// config_option_update
	ConfigOptions []ConfigOption `json:"configOptions,omitempty"`
}

// MarshalJSON writes a tool call's content under "content", where the
// message chunks keep their single content block.
func (u Update) MarshalJSON() ([]byte, error) {
	type plain Update
	if u.ToolOutput == nil {
		return json.Marshal(plain(u))
	}
	return json.Marshal(struct {
		plain
		Content []ToolCallContent `json:"content"`
	}{plain(u), u.ToolOutput})
}

// Title of a session_info_update travels in Update.Title.

type ContentBlock struct {
	Type string `json:"type"` // "text"
	Text string `json:"text"`
}

type ToolCallContent struct {
	Type    string       `json:"type"` // "content"
	Content ContentBlock `json:"content"`
}

type Location struct {
	Path string `json:"path"`
}

type Cost struct {
	Amount   float64 `json:"amount"`
	Currency string  `json:"currency"`
}

// PermissionParams is session/request_permission's params.
type PermissionParams struct {
	SessionID string             `json:"sessionId"`
	ToolCall  Update             `json:"toolCall"`
	Options   []PermissionOption `json:"options"`
}

type PermissionOption struct {
	OptionID string `json:"optionId"`
	Name     string `json:"name"`
	Kind     string `json:"kind"`
}

type PermissionResult struct {
	Outcome struct {
		Outcome  string `json:"outcome"` // "cancelled" or "selected"
		OptionID string `json:"optionId"`
	} `json:"outcome"`
}
