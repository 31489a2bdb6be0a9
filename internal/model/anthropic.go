package model

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/e-agent/e/internal/jsonscan"
)

// NewAnthropic returns a provider speaking the Anthropic Messages streaming
// API (POST {BaseURL}/v1/messages, BaseURL like https://api.anthropic.com).
// The system prompt and the last message are marked for prompt caching;
// an effort turns extended thinking on with a fixed budget.
func NewAnthropic(s ProviderSettings) Provider {
	return &anthropic{newHTTPProvider(s, "anthropic", "https://api.anthropic.com")}
}

type anthropic struct{ p httpProvider }

// Signature tags of Anthropic thinking and redacted thinking blocks.
const (
	sigAnthropic         = "anthropic"
	sigAnthropicRedacted = "anthropic-redacted"
)

// Thinking budgets per effort, and the room for the answer beside them.
var anthropicBudget = map[string]int{"low": 2048, "medium": 8192, "high": 24576}

const (
	anthropicMaxTokens = 8192
	// anthropicMaxOutput is the smallest output limit of current thinking
	// models (Claude Opus 4); max_tokens never exceeds it.
	anthropicMaxOutput = 32000
)

type anthropicRequest struct {
	Model     string             `json:"model"`
	MaxTokens int                `json:"max_tokens"`
	System    []anthropicBlock   `json:"system,omitempty"`
	Messages  []anthropicMessage `json:"messages"`
	Tools     []anthropicTool    `json:"tools,omitempty"`
	Thinking  *anthropicThinking `json:"thinking,omitempty"`
	Stream    bool               `json:"stream"`
	// OutputFormat is the output schema (Request.OutputSchema): Anthropic's
	// structured outputs, behind the beta header anthropicStructuredBeta.
	OutputFormat *anthropicOutputFormat `json:"output_format,omitempty"`
	ToolChoice   *anthropicToolChoice   `json:"tool_choice,omitempty"`
}

type anthropicToolChoice struct {
	Type string `json:"type"`           // "tool" or "any"
	Name string `json:"name,omitempty"` // with "tool"
}

// anthropicOutputTool names the tool whose input is the answer
// (Request.OutputTool).
const anthropicOutputTool = "output"

// outputToolSchema is the input schema of the output tool for schema: the
// schema itself when it is an object's, else an object whose "value" is
// one (Anthropic takes only object schemas for tool input); wrapped says
// which.
func outputToolSchema(schema json.RawMessage) (input json.RawMessage, wrapped bool) {
	var top struct {
		Type any `json:"type"`
	}
	if json.Unmarshal(schema, &top) == nil && top.Type == "object" {
		return schema, false
	}
	return json.RawMessage(`{"type":"object","required":["value"],"properties":{"value":` + string(schema) + `}}`), true
}

// outputAnswer turns the output tool's call in m into the answer's text,
// emitted as one text delta; the other parts stay.
func outputAnswer(m Message, schema json.RawMessage, emit func(Delta)) Message {
	_, wrapped := outputToolSchema(schema)
	for i, p := range m.Content {
		if p.Type != PartToolCall || p.Name != anthropicOutputTool {
			continue
		}
		text := string(p.Arguments)
		if wrapped {
			var in struct {
				Value json.RawMessage `json:"value"`
			}
			if json.Unmarshal(p.Arguments, &in) == nil && in.Value != nil {
				text = string(in.Value)
			}
		}
		emit(Delta{Kind: DeltaText, Text: text})
		m.Content[i] = Part{Type: PartText, Text: text}
	}
	return m
}

type anthropicOutputFormat struct {
	Type   string          `json:"type"` // "json_schema"
	Schema json.RawMessage `json:"schema"`
}

// anthropicStructuredBeta is the beta that accepts output_format.
const anthropicStructuredBeta = "structured-outputs-2025-11-13"

type anthropicThinking struct {
	Type         string `json:"type"`
	BudgetTokens int    `json:"budget_tokens"`
}

type anthropicTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type anthropicMessage struct {
	Role    string           `json:"role"`
	Content []anthropicBlock `json:"content"`
}

// anthropicBlock is a content block of any type; only its type's fields are set.
type anthropicBlock struct {
	Type         string           `json:"type"`
	Text         string           `json:"text,omitempty"`
	Thinking     *string          `json:"thinking,omitempty"` // present, if empty, on thinking blocks
	Signature    string           `json:"signature,omitempty"`
	Data         string           `json:"data,omitempty"`
	Source       *anthropicSource `json:"source,omitempty"`
	ID           string           `json:"id,omitempty"`
	Name         string           `json:"name,omitempty"`
	Input        json.RawMessage  `json:"input,omitempty"`
	ToolUseID    string           `json:"tool_use_id,omitempty"`
	Content      string           `json:"content,omitempty"`
	IsError      bool             `json:"is_error,omitempty"`
	CacheControl *cacheControl    `json:"cache_control,omitempty"`
}

type anthropicSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
}

type cacheControl struct {
	Type string `json:"type"`
}

var ephemeral = &cacheControl{Type: "ephemeral"}

func (an *anthropic) body(req *Request) (anthropicRequest, error) {
	body := anthropicRequest{Model: req.Model, MaxTokens: anthropicMaxTokens, Stream: true,
		Messages: []anthropicMessage{}}
	if req.Effort != "" {
		budget, ok := anthropicBudget[req.Effort]
		if !ok {
			return body, fmt.Errorf("unknown effort %q (want low, medium or high)", req.Effort)
		}
		body.Thinking = &anthropicThinking{Type: "enabled", BudgetTokens: budget}
		body.MaxTokens = min(budget+anthropicMaxTokens, anthropicMaxOutput)
	}
	if req.System != "" {
		body.System = []anthropicBlock{{Type: "text", Text: req.System, CacheControl: ephemeral}}
	}
	for _, m := range req.Messages {
		role, blocks := anthropicBlocks(m)
		if len(blocks) == 0 {
			continue
		}
		// Tool results and a following user message are one user turn.
		if n := len(body.Messages); n > 0 && body.Messages[n-1].Role == role {
			body.Messages[n-1].Content = append(body.Messages[n-1].Content, blocks...)
			continue
		}
		body.Messages = append(body.Messages, anthropicMessage{Role: role, Content: blocks})
	}
	// Cache the conversation up to its end: the last block that may carry
	// cache_control (thinking blocks may not).
	if n := len(body.Messages); n > 0 {
		blocks := body.Messages[n-1].Content
		for i := len(blocks) - 1; i >= 0; i-- {
			if t := blocks[i].Type; t != "thinking" && t != "redacted_thinking" {
				blocks[i].CacheControl = ephemeral
				break
			}
		}
	}
	for _, t := range req.Tools {
		schema := t.Parameters
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		body.Tools = append(body.Tools, anthropicTool{Name: t.Name, Description: t.Description, InputSchema: schema})
	}
	switch {
	case req.OutputSchema != nil && req.OutputTool:
		// A forced tool: the only one when no other is offered, else one
		// of those the model must call; extended thinking does not go
		// with a forced tool choice.
		input, _ := outputToolSchema(req.OutputSchema)
		body.Tools = append(body.Tools, anthropicTool{Name: anthropicOutputTool,
			Description: "Give your final answer as this tool's input, and only through it.", InputSchema: input})
		body.ToolChoice = &anthropicToolChoice{Type: "any"}
		if len(req.Tools) == 0 {
			body.ToolChoice = &anthropicToolChoice{Type: "tool", Name: anthropicOutputTool}
		}
		body.Thinking = nil
		body.MaxTokens = anthropicMaxTokens
	case req.OutputSchema != nil:
		body.OutputFormat = &anthropicOutputFormat{Type: "json_schema", Schema: req.OutputSchema}
	}
	return body, nil
}

// anthropicBlocks maps one Message to a role and its content blocks. Empty
// text is left out (the API rejects it), as is reasoning without an
// Anthropic signature, which cannot be replayed.
func anthropicBlocks(m Message) (string, []anthropicBlock) {
	role := "user"
	if m.Role == RoleAssistant {
		role = "assistant"
	}
	var blocks []anthropicBlock
	for _, p := range m.Content {
		switch p.Type {
		case PartText:
			if p.Text != "" {
				blocks = append(blocks, anthropicBlock{Type: "text", Text: p.Text})
			}
		case PartImage:
			blocks = append(blocks, anthropicBlock{Type: "image", Source: &anthropicSource{Type: "base64",
				MediaType: p.MediaType, Data: base64.StdEncoding.EncodeToString(p.Data)}})
		case PartReasoning:
			if sig, ok := untagSignature(sigAnthropic, p.Signature); ok {
				blocks = append(blocks, anthropicBlock{Type: "thinking", Thinking: &p.Text, Signature: sig})
			} else if data, ok := untagSignature(sigAnthropicRedacted, p.Signature); ok {
				blocks = append(blocks, anthropicBlock{Type: "redacted_thinking", Data: data})
			}
		case PartToolCall:
			input := p.Arguments
			if t := bytes.TrimSpace(input); len(t) == 0 || t[0] != '{' {
				input = json.RawMessage("{}") // the model's broken arguments; the result says so
			}
			blocks = append(blocks, anthropicBlock{Type: "tool_use", ID: p.ID, Name: p.Name, Input: input})
		case PartToolResult:
			blocks = append(blocks, anthropicBlock{Type: "tool_result", ToolUseID: p.CallID, Content: p.Text,
				IsError: p.IsError})
		}
	}
	return role, blocks
}

// anthropicUsage holds the usage fields; message_delta repeats some of
// them cumulatively, so absent fields must be told from zeros.
type anthropicUsage struct {
	InputTokens              *int64 `json:"input_tokens"`
	OutputTokens             *int64 `json:"output_tokens"`
	CacheCreationInputTokens *int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     *int64 `json:"cache_read_input_tokens"`
	CacheCreation            *struct {
		Ephemeral5m *int64 `json:"ephemeral_5m_input_tokens"`
		Ephemeral1h *int64 `json:"ephemeral_1h_input_tokens"`
	} `json:"cache_creation"`
	OutputTokensDetails *struct {
		ThinkingTokens *int64 `json:"thinking_tokens"`
	} `json:"output_tokens_details"`
}

// merge overwrites u's fields with those present in v.
func (u *anthropicUsage) merge(v *anthropicUsage) {
	if v == nil {
		return
	}
	for _, f := range []struct{ dst, src **int64 }{
		{&u.InputTokens, &v.InputTokens}, {&u.OutputTokens, &v.OutputTokens},
		{&u.CacheCreationInputTokens, &v.CacheCreationInputTokens}, {&u.CacheReadInputTokens, &v.CacheReadInputTokens},
	} {
		if *f.src != nil {
			*f.dst = *f.src
		}
	}
	if v.CacheCreation != nil {
		u.CacheCreation = v.CacheCreation
	}
	if v.OutputTokensDetails != nil {
		u.OutputTokensDetails = v.OutputTokensDetails
	}
}

// usage converts to the disjoint categories: input_tokens already excludes
// the cache; writes split by TTL, all 5-minute when no breakdown is given.
func (u *anthropicUsage) usage() Usage {
	n := func(p *int64) int64 {
		if p == nil {
			return 0
		}
		return *p
	}
	out := Usage{Input: n(u.InputTokens), Output: n(u.OutputTokens), CacheRead: n(u.CacheReadInputTokens)}
	if d := u.OutputTokensDetails; d != nil {
		out.Reasoning = n(d.ThinkingTokens)
	}
	if c := u.CacheCreation; c != nil && (c.Ephemeral5m != nil || c.Ephemeral1h != nil) {
		out.CacheWrite5m, out.CacheWrite1h = n(c.Ephemeral5m), n(c.Ephemeral1h)
	} else {
		out.CacheWrite5m = n(u.CacheCreationInputTokens)
	}
	return out
}

type anthropicEvent struct {
	Type    string `json:"type"`
	Index   int    `json:"index"`
	Message *struct {
		ID    string          `json:"id"`
		Model string          `json:"model"`
		Usage *anthropicUsage `json:"usage"`
	} `json:"message"`
	ContentBlock *struct {
		Type      string `json:"type"`
		Text      string `json:"text"`
		Thinking  string `json:"thinking"`
		Signature string `json:"signature"`
		Data      string `json:"data"`
		ID        string `json:"id"`
		Name      string `json:"name"`
	} `json:"content_block"`
	Delta *struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		Thinking    string `json:"thinking"`
		Signature   string `json:"signature"`
		PartialJSON string `json:"partial_json"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"`
	Usage *anthropicUsage `json:"usage"`
}

func (an *anthropic) Stream(ctx context.Context, req *Request, emit func(Delta)) (*Response, error) {
	body, err := an.body(req)
	if err != nil {
		c := &call{p: &an.p, model: req.Model}
		return nil, c.fail("request", false, "", err.Error(), err)
	}
	h := http.Header{}
	h.Set("anthropic-version", "2023-06-01")
	if body.OutputFormat != nil {
		h.Set("anthropic-beta", anthropicStructuredBeta)
	}
	if an.p.key != "" {
		h.Set("x-api-key", an.p.key)
	}
	c, err := an.p.start(ctx, req.Model, "/v1/messages", h, body, "message_stop")
	if err != nil {
		return nil, err
	}
	defer c.close()
	a := newAnswer(emit)
	resp := &Response{RequestID: c.reqID, StopReason: StopEnd}
	var usage anthropicUsage
	blocks := map[int]int{}  // content block index → part
	sigs := map[int]string{} // content block index → signature so far
	var fast anthropicDelta
	for {
		ev, err := c.next()
		if err != nil {
			return a.streamed(resp), err
		}
		if fast.scan(ev.Data) {
			if i, ok := blocks[fast.index]; ok {
				a.addQuoted(i, fast.text)
			}
			continue
		}
		var e anthropicEvent
		if err := c.decode(ev, &e); err != nil {
			return a.streamed(resp), err
		}
		switch e.Type {
		case "message_start":
			if e.Message != nil {
				resp.ResponseID = e.Message.ID
				if e.Message.Model != req.Model { // as pi's: a fallback answered
					resp.ResponseModel = e.Message.Model
				}
				usage.merge(e.Message.Usage)
			}
		case "content_block_start":
			b := e.ContentBlock
			if b == nil {
				continue
			}
			switch b.Type {
			case "text":
				blocks[e.Index] = a.open(PartText)
				a.add(blocks[e.Index], b.Text)
			case "thinking":
				blocks[e.Index] = a.open(PartReasoning)
				a.add(blocks[e.Index], b.Thinking)
				sigs[e.Index] = b.Signature
				a.sign(blocks[e.Index], tagSignature(sigAnthropic, b.Signature))
			case "redacted_thinking":
				blocks[e.Index] = a.open(PartReasoning)
				a.sign(blocks[e.Index], tagSignature(sigAnthropicRedacted, b.Data))
			case "tool_use":
				// The block's input is always {} here; the arguments follow
				// as input_json_delta fragments.
				blocks[e.Index] = a.openCall(b.ID, b.Name, "")
			}
		case "content_block_delta":
			i, ok := blocks[e.Index]
			if !ok || e.Delta == nil {
				continue
			}
			switch d := e.Delta; d.Type {
			case "text_delta":
				a.add(i, d.Text)
			case "thinking_delta":
				a.add(i, d.Thinking)
			case "signature_delta":
				sigs[e.Index] += d.Signature
				a.sign(i, tagSignature(sigAnthropic, sigs[e.Index]))
			case "input_json_delta":
				a.addArgs(i, d.PartialJSON)
			}
		case "message_delta":
			usage.merge(e.Usage)
			if e.Delta != nil {
				if e.Delta.StopReason != "" {
					resp.FinishReason = e.Delta.StopReason
				}
				switch e.Delta.StopReason {
				case "tool_use":
					resp.StopReason = StopToolUse
				case "max_tokens", "model_context_window_exceeded":
					resp.StopReason = StopMaxToken
				case "":
				default: // end_turn, stop_sequence, pause_turn, refusal
					resp.StopReason = StopEnd
				}
			}
		case "message_stop":
			resp.Message = a.message()
			resp.Usage = usage.usage()
			if req.OutputTool && req.OutputSchema != nil {
				resp.Message = outputAnswer(resp.Message, req.OutputSchema, emit)
				if len(resp.Message.ToolCalls()) == 0 {
					resp.StopReason = StopEnd
				}
			}
			return resp, nil
		case "error":
			kind, msg := parseErrorBody(ev.Data)
			return a.streamed(resp), c.eventErr(kind, msg, ev.Data)
		}
	}
}

// anthropicDelta reads the text and thinking deltas of content blocks
// without reflection (see package jsonscan).
type anthropicDelta struct {
	top, delta    [3]jsonscan.Member
	shape, fields jsonscan.Shape // top's and top[2]'s
	index         int
	text          []byte // the delta's JSON string
}

var (
	anthropicFields      = []string{"type", "index", "message", "content_block", "delta", "usage"}
	anthropicDeltaFields = []string{"type", "text", "thinking", "signature", "partial_json", "stop_reason"}
)

// scan reports whether data is a text or thinking content_block_delta it
// has read; any other event is for the slow path.
func (d *anthropicDelta) scan(data []byte) bool {
	if d.top[0].Key == "" { // once: the scans reset the values
		d.delta = [3]jsonscan.Member{{Key: "type"}, {Key: "text"}, {Key: "thinking"}}
		d.fields = jsonscan.Shape{Fields: anthropicDeltaFields, Want: d.delta[:]}
		d.top = [3]jsonscan.Member{{Key: "type"}, {Key: "index"}, {Key: "delta", In: &d.fields}}
		d.shape = jsonscan.Shape{Fields: anthropicFields, Want: d.top[:]}
	}
	if !d.shape.Object(data) || string(d.top[0].Val) != `"content_block_delta"` {
		return false
	}
	var ok bool
	if d.index, ok = jsonscan.Int(d.top[1].Val); !ok || d.top[2].Val == nil {
		return false
	}
	switch string(d.delta[0].Val) {
	case `"text_delta"`:
		d.text = d.delta[1].Val
	case `"thinking_delta"`:
		d.text = d.delta[2].Val
	default:
		return false
	}
	return jsonscan.IsString(d.text)
}
