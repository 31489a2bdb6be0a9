package model

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/e-agent/e/internal/jsonscan"
)

const openAIBaseURL = "https://api.openai.com/v1"

// sigChat tags the signature of Chat Completions reasoning: the name of
// the delta field it came in.
const sigChat = "openai-chat"

// NewOpenAIChat returns a provider speaking the Chat Completions streaming
// API (POST {BaseURL}/chat/completions), the dialect of OpenAI-compatible
// servers (Ollama, vLLM, llama.cpp, LM Studio). Reasoning streamed as
// delta.reasoning_content, delta.reasoning or delta.reasoning_text is
// reported (its part's signature names the field); it is never sent back.
func NewOpenAIChat(s ProviderSettings) Provider {
	return &openAIChat{newHTTPProvider(s, "openai", openAIBaseURL)}
}

type openAIChat struct{ p httpProvider }

type chatRequest struct {
	Model           string             `json:"model"`
	Messages        []chatMessage      `json:"messages"`
	Tools           []chatTool         `json:"tools,omitempty"`
	ReasoningEffort string             `json:"reasoning_effort,omitempty"`
	Stream          bool               `json:"stream"`
	StreamOptions   *chatStreamOptions `json:"stream_options"`
	// ResponseFormat is the output schema (Request.OutputSchema).
	ResponseFormat *chatResponseFormat `json:"response_format,omitempty"`
}

type chatResponseFormat struct {
	Type       string         `json:"type"` // "json_schema"
	JSONSchema chatJSONSchema `json:"json_schema"`
}

type chatJSONSchema struct {
	Name   string          `json:"name"`
	Schema json.RawMessage `json:"schema"`
	Strict bool            `json:"strict"`
}

// outputName names the output schema where an API wants a name for it.
const outputName = "output"

type chatStreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type chatMessage struct {
	Role       string         `json:"role"`
	Content    any            `json:"content"` // string, []chatPart, or nil beside tool calls
	ToolCalls  []chatToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

type chatPart struct {
	Type     string        `json:"type"` // "text" or "image_url"
	Text     string        `json:"text,omitempty"`
	ImageURL *chatImageURL `json:"image_url,omitempty"`
}

type chatImageURL struct {
	URL string `json:"url"`
}

type chatToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function chatFunction `json:"function"`
}

type chatFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type chatTool struct {
	Type     string      `json:"type"`
	Function chatToolDef `json:"function"`
}

type chatToolDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

func (o *openAIChat) body(req *Request) chatRequest {
	body := chatRequest{Model: req.Model, ReasoningEffort: req.Effort, Stream: true,
		StreamOptions: &chatStreamOptions{IncludeUsage: true}}
	if req.System != "" {
		body.Messages = append(body.Messages, chatMessage{Role: "system", Content: req.System})
	}
	for _, m := range req.Messages {
		body.Messages = append(body.Messages, chatMessages(m)...)
	}
	for _, t := range req.Tools {
		body.Tools = append(body.Tools, chatTool{Type: "function",
			Function: chatToolDef{Name: t.Name, Description: t.Description, Parameters: t.Parameters}})
	}
	if req.OutputSchema != nil {
		body.ResponseFormat = &chatResponseFormat{Type: "json_schema",
			JSONSchema: chatJSONSchema{Name: outputName, Schema: req.OutputSchema, Strict: true}}
	}
	return body
}

// chatMessages maps one Message: tool results become one "tool" message
// each; a user message of a single text is sent as a plain string, which
// every compatible server understands.
func chatMessages(m Message) []chatMessage {
	var out []chatMessage
	var parts []chatPart
	var calls []chatToolCall
	var text strings.Builder
	for _, p := range m.Content {
		switch p.Type {
		case PartText:
			parts = append(parts, chatPart{Type: "text", Text: p.Text})
			text.WriteString(p.Text)
		case PartImage:
			parts = append(parts, chatPart{Type: "image_url", ImageURL: &chatImageURL{URL: dataURL(p)}})
		case PartToolCall:
			calls = append(calls, chatToolCall{ID: p.ID, Type: "function",
				Function: chatFunction{Name: p.Name, Arguments: callArgs(p.Arguments)}})
		case PartToolResult:
			out = append(out, chatMessage{Role: "tool", ToolCallID: p.CallID, Content: p.Text})
		}
	}
	switch {
	case m.Role == RoleAssistant && (text.Len() > 0 || len(calls) > 0):
		msg := chatMessage{Role: "assistant", ToolCalls: calls}
		if text.Len() > 0 {
			msg.Content = text.String()
		}
		out = append(out, msg)
	case m.Role == RoleAssistant:
	case len(parts) == 1 && parts[0].Type == "text":
		out = append(out, chatMessage{Role: "user", Content: parts[0].Text})
	case len(parts) > 0:
		out = append(out, chatMessage{Role: "user", Content: parts})
	}
	return out
}

// dataURL encodes an image part as a base64 data URL.
func dataURL(p Part) string {
	return "data:" + p.MediaType + ";base64," + base64.StdEncoding.EncodeToString(p.Data)
}

// callArgs returns a tool call's arguments as the JSON text OpenAI expects.
// Arguments kept as a JSON string (the model's broken JSON) go back as sent.
func callArgs(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	if len(raw) == 0 {
		return "{}"
	}
	return string(raw)
}

func openAIHeader(key string) http.Header {
	h := http.Header{}
	if key != "" {
		h.Set("Authorization", "Bearer "+key)
	}
	return h
}

type chatChunk struct {
	ID      string `json:"id"`
	Model   string `json:"model"`
	Choices []struct {
		Delta struct {
			Content          string `json:"content"`
			ReasoningContent string `json:"reasoning_content"`
			Reasoning        string `json:"reasoning"`
			ReasoningText    string `json:"reasoning_text"`
			ToolCalls        []struct {
				Index    *int   `json:"index"`
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens        int64 `json:"prompt_tokens"`
		CompletionTokens    int64 `json:"completion_tokens"`
		PromptTokensDetails struct {
			CachedTokens int64 `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
		CompletionTokensDetails struct {
			ReasoningTokens int64 `json:"reasoning_tokens"`
		} `json:"completion_tokens_details"`
		ReasoningTokens int64 `json:"reasoning_tokens"` // some compatible servers report it here
	} `json:"usage"`
	Error json.RawMessage `json:"error"`
}

func (o *openAIChat) Stream(ctx context.Context, req *Request, emit func(Delta)) (*Response, error) {
	c, err := o.p.start(ctx, req.Model, "/chat/completions", openAIHeader(o.p.key), o.body(req), "data: [DONE]")
	if err != nil {
		return nil, err
	}
	defer c.close()
	a := newAnswer(emit)
	resp := &Response{RequestID: c.reqID}
	byIndex := map[int]int{} // the server's tool call index → part
	last := -1               // the latest tool call part
	var finish string
	var fast chatDelta
	first := true
	for {
		ev, err := c.next()
		if err != nil {
			return a.streamed(resp), err
		}
		if string(ev.Data) == "[DONE]" {
			break
		}
		// The first chunk takes the slow path, which reads the answer's id
		// (every chunk repeats it).
		if !first && string(ev.Event) != "error" && fast.scan(ev.Data) {
			if len(fast.content) > 2 { // a non-empty string
				a.addQuoted(a.tail(PartText), fast.content)
			}
			continue
		}
		var ch chatChunk
		if string(ev.Event) != "error" {
			if err := c.decode(ev, &ch); err != nil {
				return a.streamed(resp), err
			}
		}
		if string(ev.Event) == "error" || len(ch.Error) > 0 {
			kind, msg := parseErrorBody(ev.Data)
			return a.streamed(resp), c.eventErr(kind, msg, ev.Data)
		}
		first = false
		if resp.ResponseID == "" {
			resp.ResponseID = ch.ID
		}
		// As pi's: the first model named that is not the one asked for
		// (chunks of text alone, the fast path's, are not read for it).
		if resp.ResponseModel == "" && ch.Model != "" && ch.Model != req.Model {
			resp.ResponseModel = ch.Model
		}
		if u := ch.Usage; u != nil {
			resp.Usage = Usage{Input: max(u.PromptTokens-u.PromptTokensDetails.CachedTokens, 0),
				Output: u.CompletionTokens, CacheRead: u.PromptTokensDetails.CachedTokens,
				Reasoning: cmp.Or(u.CompletionTokensDetails.ReasoningTokens, u.ReasoningTokens)}
		}
		if len(ch.Choices) == 0 {
			continue
		}
		ch0 := ch.Choices[0]
		if ch0.FinishReason != "" {
			finish = ch0.FinishReason
		}
		d := ch0.Delta
		// Servers name the reasoning field differently, and some send the
		// same text in two of them: the first non-empty one counts, and the
		// reasoning part's signature records which it was.
		for _, r := range [...]struct{ field, text string }{{"reasoning_content", d.ReasoningContent},
			{"reasoning", d.Reasoning}, {"reasoning_text", d.ReasoningText}} {
			if r.text != "" {
				i := a.tail(PartReasoning)
				if a.parts[i].Signature == "" {
					a.sign(i, tagSignature(sigChat, r.field))
				}
				a.add(i, r.text)
				break
			}
		}
		if d.Content != "" {
			a.add(a.tail(PartText), d.Content)
		}
		for _, tc := range d.ToolCalls {
			i, ok := last, tc.Index == nil && tc.ID == "" && last >= 0
			if tc.Index != nil {
				i, ok = byIndex[*tc.Index]
			}
			// A server reusing an index for a new call gives it a new id.
			if ok && tc.ID != "" && a.parts[i].ID != tc.ID {
				ok = false
			}
			if !ok {
				id := tc.ID
				if id == "" { // some compatible servers send none
					id = fmt.Sprintf("call_%d", len(a.calls))
				}
				i = a.openCall(id, tc.Function.Name, tc.Function.Arguments)
				if tc.Index != nil {
					byIndex[*tc.Index] = i
				}
				last = i
				continue
			}
			a.addArgs(i, tc.Function.Arguments)
		}
	}
	resp.Message, resp.FinishReason = a.message(), finish
	switch {
	case finish == "length":
		resp.StopReason = StopMaxToken
	case a.hasCalls():
		resp.StopReason = StopToolUse
	default:
		resp.StopReason = StopEnd
	}
	return resp, nil
}

// chatDelta reads the chunks that only carry content, one choice without
// a finish reason, without reflection (see package jsonscan), in one scan.
type chatDelta struct {
	top, choice            [2]jsonscan.Member
	delta                  [4]jsonscan.Member
	shape, choices, fields jsonscan.Shape // top's, top[0]'s and choice[0]'s
	content                []byte         // the JSON string, or nil or null
}

var (
	chatFields       = []string{"choices", "usage", "error"}
	chatChoiceFields = []string{"delta", "finish_reason"}
	chatDeltaFields  = []string{"content", "reasoning_content", "reasoning", "reasoning_text", "tool_calls"}
)

// scan reports whether data is such a chunk; any other is for the slow path.
func (d *chatDelta) scan(data []byte) bool {
	// choices: exactly one object, whose delta is an object.
	if d.top[0].Key == "" { // once: the scans reset the values
		d.delta = [4]jsonscan.Member{{Key: "content"}, {Key: "reasoning_content"}, {Key: "reasoning"}, {Key: "tool_calls"}}
		d.fields = jsonscan.Shape{Fields: chatDeltaFields, Want: d.delta[:]}
		d.choice = [2]jsonscan.Member{{Key: "delta", In: &d.fields}, {Key: "finish_reason"}}
		d.choices = jsonscan.Shape{Fields: chatChoiceFields, Want: d.choice[:], One: true}
		d.top = [2]jsonscan.Member{{Key: "choices", In: &d.choices}, {Key: "usage"}}
		d.shape = jsonscan.Shape{Fields: chatFields, Want: d.top[:]}
	}
	if !d.shape.Object(data) || d.top[0].Val == nil || !jsonscan.IsNull(d.top[1].Val) ||
		d.choice[0].Val == nil || !jsonscan.IsNull(d.choice[1].Val) ||
		!jsonscan.IsNull(d.delta[1].Val) || !jsonscan.IsNull(d.delta[2].Val) || !jsonscan.IsNull(d.delta[3].Val) {
		return false
	}
	d.content = d.delta[0].Val
	return jsonscan.IsNull(d.content) || jsonscan.IsString(d.content)
}
