package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/e-agent/e/internal/jsonenc"
)

// Roles of a Message.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool" // carries tool results, one Part each
)

// Part kinds.
const (
	PartText       = "text"
	PartReasoning  = "reasoning"
	PartImage      = "image"
	PartToolCall   = "tool_call"
	PartToolResult = "tool_result"
)

// Message is one message of a conversation, in the shape e persists
// (see schemas/store/message.json).
type Message struct {
	Role    string `json:"role"`
	Content []Part `json:"content"`
}

// Part is one piece of a Message's content. Which fields are set depends on Type.
type Part struct {
	Type string `json:"type"`
	Text string `json:"text,omitempty"` // text, reasoning, tool_result output
	// Signature is opaque provider data that must travel back with a
	// reasoning part (Anthropic thinking signatures, OpenAI encrypted reasoning).
	Signature string `json:"signature,omitempty"`

	MediaType string `json:"media_type,omitempty"` // image: image/png …
	Data      []byte `json:"data,omitempty"`       // image bytes (base64 in JSON)

	ID        string          `json:"id,omitempty"`        // tool_call: provider call id
	Name      string          `json:"name,omitempty"`      // tool_call: tool name
	Arguments json.RawMessage `json:"arguments,omitempty"` // tool_call: JSON object

	CallID  string `json:"call_id,omitempty"`  // tool_result: the tool_call's ID
	IsError bool   `json:"is_error,omitempty"` // tool_result: the call failed
}

// Text joins the text parts of m.
func (m Message) Text() string {
	var s string
	for _, p := range m.Content {
		if p.Type == PartText {
			s += p.Text
		}
	}
	return s
}

// ToolCalls returns the tool_call parts of m in provider order.
func (m Message) ToolCalls() []Part {
	var calls []Part
	for _, p := range m.Content {
		if p.Type == PartToolCall {
			calls = append(calls, p)
		}
	}
	return calls
}

// ToolDef is a tool offered to the model.
type ToolDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"` // JSON Schema of the arguments object
}

// Request is one model call.
type Request struct {
	Model    string // catalog id without the provider prefix, e.g. "gpt-5.5"
	System   string
	Messages []Message
	Tools    []ToolDef
	Effort   string // "" when the model has no effort levels
	// Attempt counts retries of this same call, from 0. Providers ignore it;
	// the offline model uses it to fail only the first attempt of /error retryable.
	Attempt int
	// OutputSchema, when set, is the JSON Schema the answer must be a
	// value of (J1), compact JSON: each API sends it in its own field
	// (OpenAI Responses text.format, Chat Completions response_format,
	// Anthropic output_format); the offline model answers with a minimal
	// value of it when its directives say nothing else.
	OutputSchema json.RawMessage
	// OutputTool asks for the answer as the input of a tool call the model
	// must make (Anthropic's forced tool) instead of OutputSchema's field,
	// for a model without structured output; the call comes back as the
	// answer's text. The other APIs ignore it.
	OutputTool bool
}

// CorrectionPrefix starts the user message of a turn's corrective call,
// which feeds back why the answer was not valid against the output schema
// (J2): the offline model's directives stay those of the prompt before it.
const CorrectionPrefix = "e: your answer is not valid against the output schema:"

// Usage holds the five disjoint token categories (U1): Input excludes cache
// reads and writes. Reasoning is not a sixth: it is the part of Output the
// model spent reasoning, when the provider reports it (0 when it does not).
type Usage struct {
	Input        int64 `json:"input_tokens"`
	Output       int64 `json:"output_tokens"`
	CacheRead    int64 `json:"cache_read_tokens"`
	CacheWrite5m int64 `json:"cache_write_5m_tokens"`
	CacheWrite1h int64 `json:"cache_write_1h_tokens"`
	Reasoning    int64 `json:"reasoning_tokens,omitempty"`
}

// Add returns u + v.
func (u Usage) Add(v Usage) Usage {
	return Usage{u.Input + v.Input, u.Output + v.Output, u.CacheRead + v.CacheRead,
		u.CacheWrite5m + v.CacheWrite5m, u.CacheWrite1h + v.CacheWrite1h, u.Reasoning + v.Reasoning}
}

// Prompt is input + cache reads + cache writes (U1).
func (u Usage) Prompt() int64 { return u.Input + u.CacheRead + u.CacheWrite5m + u.CacheWrite1h }

// Delta kinds.
const (
	DeltaText      = "text"
	DeltaReasoning = "reasoning"
	DeltaToolCall  = "tool_call" // a fragment of a tool call's arguments
)

// Delta is one streamed piece of a model's answer.
type Delta struct {
	Kind string
	Text string // text and reasoning deltas; argument fragment for tool_call
	// Tool-call fragments: Index is the call's position in the answer; ID and
	// Name are set on the first fragment of a call.
	Index int
	ID    string
	Name  string
}

// Stop reasons.
const (
	StopEnd      = "end"        // the model finished its answer
	StopToolUse  = "tool_use"   // the model wants tool results
	StopMaxToken = "max_tokens" // cut by the output limit
)

// Response is the whole answer of one model call, assembled by the provider.
type Response struct {
	Message    Message // role assistant; tool calls fully assembled
	Usage      Usage
	StopReason string
	RequestID  string // the provider's request id (an HTTP header), when it sent one
	// ResponseID is the id the API gave this answer (a chat completion's
	// chatcmpl-…, an Anthropic message's msg_…, a response's resp_…), and
	// FinishReason its own word for why it ended (stop, tool_calls,
	// end_turn, completed, incomplete.max_output_tokens …), each "" when
	// the stream had none. StopReason is e's reading of FinishReason.
	ResponseID   string
	FinishReason string
	// ResponseModel is the model the answer says answered when it is not
	// the one asked for (a provider's alias or fallback; pi's
	// responseModel), "" otherwise: a chat completion chunk's model, an
	// Anthropic message's; the Responses API's is not read (pi reads none).
	ResponseModel string
}

// Provider streams one model call. Stream calls emit for every delta, in
// order, from the calling goroutine, and returns the assembled Response,
// whose text parts hold exactly the text deltas emitted: the agent takes
// the turn's text from them rather than keeping a copy of every delta.
// It returns an *Error for provider failures; it does not retry (the agent
// owns retries). Cancelling ctx stops the call promptly with ctx.Err().
// A call that fails after emitting deltas returns, with its error, a
// Response whose Message holds what was emitted (what the user saw of an
// answer cut short) and ResponseID and ResponseModel as the stream gave
// them, if it gave them (it may have before any delta); Usage and
// StopReason are then unset.
type Provider interface {
	Stream(ctx context.Context, req *Request, emit func(Delta)) (*Response, error)
}

// ReadHook is told by a provider stream when it works through what it has
// read of its response: Hold when a Read of the connection returns,
// Release before the next Read (which may block) and when the call ends.
// Both come from the goroutine that called Stream. What that goroutine
// emits in between (the deltas of the events of one Read) can then be
// written out in one go, before it waits again (jsonl.Hold).
type ReadHook interface {
	Hold()
	Release()
}

type readHookKey struct{}

// WithReadHook returns ctx carrying h for the HTTP provider streams of the
// calls made with it.
func WithReadHook(ctx context.Context, h ReadHook) context.Context {
	return context.WithValue(ctx, readHookKey{}, h)
}

// readHook returns the ReadHook of ctx, or nil.
func readHook(ctx context.Context) ReadHook {
	h, _ := ctx.Value(readHookKey{}).(ReadHook)
	return h
}

// Error is a failed model call, classified.
type Error struct {
	Retryable  bool
	Provider   string        // "openai", "anthropic", custom provider name, "e"
	Model      string        // catalog id
	Stage      string        // "connect", "request", "stream", "decode"
	Status     int           // HTTP status, 0 when none
	RequestID  string        // provider request id, when known
	Type       string        // provider error type, e.g. "rate_limit_error", "overloaded_error", "stall"
	RetryAfter time.Duration // from retry-after; read only when RetryAfterGiven
	// RetryAfterGiven says the provider named a wait, which may be 0:
	// retry at once rather than back off.
	RetryAfterGiven bool
	Message         string // human-readable, one line
	Body            string // bounded diagnostic text (≤ 4 KiB), secrets redacted
	// KeyEnv is the environment variable of a key the provider refused
	// (HTTP 401); "" otherwise.
	KeyEnv string
	Err    error // underlying error, if any
}

func (e *Error) Error() string {
	s := "model: " + e.Provider
	if e.Status != 0 {
		s += fmt.Sprintf(": HTTP %d", e.Status)
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.KeyEnv != "" {
		s += " (the API key is the value of " + e.KeyEnv + ": check it)"
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// IsRetryable reports whether err is a model error worth retrying.
func IsRetryable(err error) bool {
	var me *Error
	return errors.As(err, &me) && me.Retryable
}

// AppendJSON appends m encoded as json.Marshal encodes it (content null
// when nil). Text parts, a long answer's bulk, are encoded by hand; parts
// with image data or tool arguments go through encoding/json, whose
// errors (arguments that are not JSON) it returns.
func (m Message) AppendJSON(dst []byte) ([]byte, error) {
	b, _, err := m.AppendJSONText(dst)
	return b, err
}

// AppendJSONText is AppendJSON that also returns, when m's content is one
// text part and nothing else, that part's text as AppendJSON encoded it
// (a JSON string, as jsonenc.AppendString writes it): a view of the
// returned slice, nil otherwise. A long answer's text then need not be
// encoded again for the turn's result.
func (m Message) AppendJSONText(dst []byte) (b, text []byte, err error) {
	dst = append(jsonenc.AppendString(append(dst, `{"role":`...), m.Role), `,"content":`...)
	if m.Content == nil {
		return append(dst, "null}"...), nil, nil
	}
	dst = append(dst, '[')
	from, to := 0, 0 // the last string written: the text, when it is alone
	for i, p := range m.Content {
		if i > 0 {
			dst = append(dst, ',')
		}
		if p.Data != nil || p.Arguments != nil {
			b, err := json.Marshal(p)
			if err != nil {
				return dst, nil, err
			}
			dst = append(dst, b...)
			continue
		}
		dst = jsonenc.AppendString(append(dst, `{"type":`...), p.Type)
		for _, f := range [...]struct{ key, val string }{{`,"text":`, p.Text}, {`,"signature":`, p.Signature},
			{`,"media_type":`, p.MediaType}, {`,"id":`, p.ID}, {`,"name":`, p.Name}, {`,"call_id":`, p.CallID}} {
			if f.val != "" {
				from = len(dst) + len(f.key)
				dst = jsonenc.AppendString(append(dst, f.key...), f.val)
				to = len(dst)
			}
		}
		if p.IsError {
			dst = append(dst, `,"is_error":true`...)
		}
		dst = append(dst, '}')
	}
	dst = append(dst, "]}"...)
	if len(m.Content) == 1 {
		if p := m.Content[0]; p.Type == PartText && p.Text != "" && p.Signature == "" && p.MediaType == "" &&
			p.ID == "" && p.Name == "" && p.CallID == "" && !p.IsError && p.Data == nil && p.Arguments == nil {
			text = dst[from:to:to]
		}
	}
	return dst, text, nil
}
