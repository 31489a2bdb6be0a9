package model

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/e-agent/e/internal/jsonscan"
)

// NewOpenAIResponses returns a provider speaking the OpenAI Responses
// streaming API (POST {BaseURL}/responses). Calls are stateless (store:false);
// with an effort set, reasoning comes back encrypted and is replayed on the
// next call, with the reasoning summary as its text.
func NewOpenAIResponses(s ProviderSettings) Provider {
	return &openAIResponses{newHTTPProvider(s, "openai", openAIBaseURL)}
}

type openAIResponses struct{ p httpProvider }

// sigResponses tags encrypted reasoning made by the Responses API.
const sigResponses = "openai-responses"

type responsesRequest struct {
	Model        string              `json:"model"`
	Instructions string              `json:"instructions,omitempty"`
	Input        []any               `json:"input"`
	Tools        []responsesTool     `json:"tools,omitempty"`
	Reasoning    *responsesReasoning `json:"reasoning,omitempty"`
	Include      []string            `json:"include,omitempty"`
	Store        bool                `json:"store"`
	Stream       bool                `json:"stream"`
	// Text carries the output schema (Request.OutputSchema).
	Text *responsesText `json:"text,omitempty"`
}

type responsesText struct {
	Format responsesFormat `json:"format"`
}

type responsesFormat struct {
	Type   string          `json:"type"` // "json_schema"
	Name   string          `json:"name"`
	Schema json.RawMessage `json:"schema"`
	Strict bool            `json:"strict"`
}

type responsesReasoning struct {
	Effort  string `json:"effort"`
	Summary string `json:"summary"`
}

type responsesTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	// Strict defaults to true in this API, which rejects ordinary schemas
	// (optional properties, open objects).
	Strict bool `json:"strict"`
}

type responsesMessage struct {
	Type    string             `json:"type"` // "message"
	Role    string             `json:"role"`
	Content []responsesContent `json:"content"`
}

type responsesContent struct {
	Type     string `json:"type"` // input_text, input_image, output_text, summary_text
	Text     string `json:"text,omitempty"`
	ImageURL string `json:"image_url,omitempty"`
	Detail   string `json:"detail,omitempty"`
}

type responsesReasoningItem struct {
	Type             string             `json:"type"` // "reasoning"
	Summary          []responsesContent `json:"summary"`
	EncryptedContent string             `json:"encrypted_content"`
}

type responsesFunctionCall struct {
	Type      string `json:"type"` // "function_call"
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type responsesFunctionOutput struct {
	Type   string `json:"type"` // "function_call_output"
	CallID string `json:"call_id"`
	Output string `json:"output"`
}

func (o *openAIResponses) body(req *Request) responsesRequest {
	body := responsesRequest{Model: req.Model, Instructions: req.System, Input: []any{}, Stream: true}
	if req.Effort != "" {
		body.Reasoning = &responsesReasoning{Effort: req.Effort, Summary: "auto"}
		body.Include = []string{"reasoning.encrypted_content"}
	}
	for _, m := range req.Messages {
		body.Input = append(body.Input, responsesItems(m)...)
	}
	for _, t := range req.Tools {
		body.Tools = append(body.Tools, responsesTool{Type: "function", Name: t.Name,
			Description: t.Description, Parameters: t.Parameters})
	}
	if req.OutputSchema != nil {
		body.Text = &responsesText{Format: responsesFormat{Type: "json_schema", Name: outputName, Schema: req.OutputSchema, Strict: true}}
	}
	return body
}

// responsesItems maps one Message to input items in order: consecutive
// text and images form one message item; reasoning, calls and results are
// items of their own.
func responsesItems(m Message) []any {
	var out []any
	var msg *responsesMessage
	content := func(c responsesContent) {
		if msg == nil {
			msg = &responsesMessage{Type: "message", Role: m.Role}
			out = append(out, msg)
		}
		msg.Content = append(msg.Content, c)
	}
	textType := "input_text"
	if m.Role == RoleAssistant {
		textType = "output_text"
	}
	for _, p := range m.Content {
		switch p.Type {
		case PartText:
			content(responsesContent{Type: textType, Text: p.Text})
			continue
		case PartImage:
			content(responsesContent{Type: "input_image", ImageURL: dataURL(p), Detail: "auto"})
			continue
		case PartReasoning:
			sig, ok := untagSignature(sigResponses, p.Signature)
			if !ok {
				continue // reasoning of another provider, or none to replay
			}
			item := responsesReasoningItem{Type: "reasoning", Summary: []responsesContent{}, EncryptedContent: sig}
			if p.Text != "" {
				item.Summary = append(item.Summary, responsesContent{Type: "summary_text", Text: p.Text})
			}
			out = append(out, item)
		case PartToolCall:
			out = append(out, responsesFunctionCall{Type: "function_call", CallID: p.ID, Name: p.Name,
				Arguments: callArgs(p.Arguments)})
		case PartToolResult:
			out = append(out, responsesFunctionOutput{Type: "function_call_output", CallID: p.CallID, Output: p.Text})
		}
		msg = nil
	}
	return out
}

// responsesEvent is the union of the streamed events used here.
type responsesEvent struct {
	Type         string               `json:"type"`
	OutputIndex  int                  `json:"output_index"`
	SummaryIndex int                  `json:"summary_index"`
	Delta        string               `json:"delta"`
	Item         *responsesOutputItem `json:"item"`
	Response     *responsesResult     `json:"response"`
}

type responsesResult struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	Usage  *struct {
		InputTokens        int64 `json:"input_tokens"`
		OutputTokens       int64 `json:"output_tokens"`
		InputTokensDetails struct {
			CachedTokens int64 `json:"cached_tokens"`
		} `json:"input_tokens_details"`
		OutputTokensDetails struct {
			ReasoningTokens int64 `json:"reasoning_tokens"`
		} `json:"output_tokens_details"`
	} `json:"usage"`
	Error             *errorObject `json:"error"`
	IncompleteDetails *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
}

type responsesOutputItem struct {
	Type             string `json:"type"`
	CallID           string `json:"call_id"`
	Name             string `json:"name"`
	Arguments        string `json:"arguments"`
	EncryptedContent string `json:"encrypted_content"`
}

func (o *openAIResponses) Stream(ctx context.Context, req *Request, emit func(Delta)) (*Response, error) {
	c, err := o.p.start(ctx, req.Model, "/responses", openAIHeader(o.p.key), o.body(req), "response.completed")
	if err != nil {
		return nil, err
	}
	defer c.close()
	a := newAnswer(emit)
	resp := &Response{RequestID: c.reqID}
	items := map[int]int{}   // output_index → part
	summary := map[int]int{} // output_index → summary_index last seen
	// part returns the part of an output item, opening one of typ for
	// servers that skip response.output_item.added.
	part := func(ev responsesEvent, typ string) int {
		if i, ok := items[ev.OutputIndex]; ok {
			return i
		}
		items[ev.OutputIndex] = a.open(typ)
		return items[ev.OutputIndex]
	}
	var fast responsesDelta
	for {
		ev, err := c.next()
		if err != nil {
			return a.streamed(resp), err
		}
		if fast.scan(ev) {
			e := responsesEvent{OutputIndex: fast.output, SummaryIndex: fast.summary}
			i := part(e, fast.kind)
			if fast.kind == PartReasoning {
				if s, ok := summary[e.OutputIndex]; ok && s != e.SummaryIndex {
					a.add(i, "\n\n")
				}
				summary[e.OutputIndex] = e.SummaryIndex
			}
			a.addQuoted(i, fast.delta)
			continue
		}
		if fast.valid && repeatsText(string(fast.typ)) {
			continue // valid JSON that repeats what the deltas said: not decoded
		}
		var e responsesEvent
		if !fast.valid || !fast.event(&e) {
			if err := c.decode(ev, &e); err != nil {
				return a.streamed(resp), err
			}
		}
		if e.Type == "" {
			e.Type = string(ev.Event)
		}
		switch e.Type {
		case "response.created":
			// The id, known from the start, for an answer cut short.
			if r := e.Response; r != nil {
				resp.ResponseID = r.ID
			}
		case "response.output_item.added":
			if e.Item == nil {
				continue
			}
			switch e.Item.Type {
			case "message":
				part(e, PartText)
			case "reasoning":
				part(e, PartReasoning)
			case "function_call":
				items[e.OutputIndex] = a.openCall(e.Item.CallID, e.Item.Name, e.Item.Arguments)
			}
		case "response.output_text.delta", "response.refusal.delta":
			a.add(part(e, PartText), e.Delta)
		case "response.reasoning_summary_text.delta", "response.reasoning_text.delta":
			i := part(e, PartReasoning)
			if s, ok := summary[e.OutputIndex]; ok && s != e.SummaryIndex {
				a.add(i, "\n\n")
			}
			summary[e.OutputIndex] = e.SummaryIndex
			a.add(i, e.Delta)
		case "response.function_call_arguments.delta":
			if i, ok := items[e.OutputIndex]; ok && a.parts[i].Type == PartToolCall {
				a.addArgs(i, e.Delta)
			}
		case "response.output_item.done":
			i, ok := items[e.OutputIndex]
			if !ok || e.Item == nil {
				continue
			}
			switch e.Item.Type {
			case "function_call":
				if e.Item.Arguments != "" {
					a.setArgs(i, e.Item.Arguments)
				}
			case "reasoning":
				a.sign(i, tagSignature(sigResponses, e.Item.EncryptedContent))
			}
		case "response.completed", "response.incomplete":
			if r := e.Response; r != nil && r.Usage != nil {
				u := r.Usage
				cached := u.InputTokensDetails.CachedTokens
				resp.Usage = Usage{Input: max(u.InputTokens-cached, 0), Output: u.OutputTokens, CacheRead: cached,
					Reasoning: u.OutputTokensDetails.ReasoningTokens}
			}
			if r := e.Response; r != nil {
				// The finish reason as pi words it: the status, and for an
				// incomplete response its reason after a dot.
				resp.ResponseID, resp.FinishReason = r.ID, r.Status
				if d := r.IncompleteDetails; d != nil && d.Reason != "" {
					resp.FinishReason += "." + d.Reason
				}
			}
			resp.Message = a.message()
			switch {
			case e.Type == "response.incomplete" && e.Response != nil && e.Response.IncompleteDetails != nil &&
				strings.HasPrefix(e.Response.IncompleteDetails.Reason, "max_output_tokens"):
				resp.StopReason = StopMaxToken
			case a.hasCalls():
				resp.StopReason = StopToolUse
			default:
				resp.StopReason = StopEnd
			}
			return resp, nil
		case "response.failed":
			var eo errorObject
			if e.Response != nil && e.Response.Error != nil {
				eo = *e.Response.Error
			}
			return a.streamed(resp), c.eventErr(eo.kind(), eo.Message, ev.Data)
		case "error":
			kind, msg := parseErrorBody(ev.Data)
			return a.streamed(resp), c.eventErr(kind, msg, ev.Data)
		}
	}
}

// responsesDelta reads text and reasoning delta events without reflection
// (see package jsonscan). After any scan, valid says whether the event was
// a JSON object jsonscan read, and typ is then its type.
type responsesDelta struct {
	m               [6]jsonscan.Member // responsesFields
	item            [5]jsonscan.Member // responsesItemFields
	result          [5]jsonscan.Member // responsesResultFields
	shape           jsonscan.Shape     // m's
	items, results  jsonscan.Shape     // m[4]'s and m[5]'s
	kind            string             // PartText or PartReasoning
	output, summary int
	delta           []byte // the JSON string
	valid           bool
	typ             []byte
}

// repeatsText reports whether events of type typ only repeat text that
// their deltas streamed (the answer is built from the deltas). At 50,000
// deltas each holds 400 KB: decoding them with encoding/json cost more
// than all the deltas' scanning.
func repeatsText(typ string) bool {
	switch typ {
	case "response.output_text.done", "response.content_part.done", "response.refusal.done",
		"response.reasoning_summary_text.done", "response.reasoning_summary_part.done", "response.reasoning_text.done":
		return true
	}
	return false
}

// The members of responsesEvent, of its item and of its response.
var (
	responsesFields       = []string{"type", "output_index", "summary_index", "delta", "item", "response"}
	responsesItemFields   = []string{"type", "call_id", "name", "arguments", "encrypted_content"}
	responsesResultFields = []string{"id", "status", "usage", "error", "incomplete_details"}
)

// scan reports whether ev is a delta event it has read; any other is for
// the slow path.
func (d *responsesDelta) scan(ev rawEvent) bool {
	if d.m[0].Key == "" { // once: the scans reset the values
		d.item = [5]jsonscan.Member{{Key: "type"}, {Key: "call_id"}, {Key: "name"}, {Key: "arguments"}, {Key: "encrypted_content"}}
		d.items = jsonscan.Shape{Fields: responsesItemFields, Want: d.item[:]}
		d.result = [5]jsonscan.Member{{Key: "id"}, {Key: "status"}, {Key: "usage"}, {Key: "error"}, {Key: "incomplete_details"}}
		d.results = jsonscan.Shape{Fields: responsesResultFields, Want: d.result[:]}
		d.m = [6]jsonscan.Member{{Key: "type"}, {Key: "output_index"}, {Key: "summary_index"}, {Key: "delta"},
			{Key: "item", In: &d.items}, {Key: "response", In: &d.results}}
		d.shape = jsonscan.Shape{Fields: responsesFields, Want: d.m[:]}
	}
	d.valid, d.typ = false, nil
	if !d.shape.Object(ev.Data) {
		return false
	}
	typ := d.m[0].Val
	if typ == nil {
		typ = ev.Event
	} else if !jsonscan.IsString(typ) {
		return false
	} else {
		typ = typ[1 : len(typ)-1] // escapes, if any, make it match no name below
	}
	d.valid, d.typ = true, typ
	switch string(typ) {
	case "response.output_text.delta", "response.refusal.delta":
		d.kind = PartText
	case "response.reasoning_summary_text.delta", "response.reasoning_text.delta":
		d.kind = PartReasoning
	default:
		return false
	}
	var ok1, ok2 bool
	d.output, ok1 = jsonscan.Int(d.m[1].Val)
	d.summary, ok2 = jsonscan.Int(d.m[2].Val)
	d.delta = d.m[3].Val
	return ok1 && ok2 && jsonscan.IsString(d.delta)
}

// event reads a valid event that is not a delta into e as encoding/json
// would, from the members scan kept: the text a done event repeats (an
// item's content, a response's output; 400 KB each at 50,000 deltas) is
// validated by the scan and never decoded. It reports false where
// encoding/json must decide (and report the error).
func (d *responsesDelta) event(e *responsesEvent) bool {
	var ok [3]bool
	e.OutputIndex, ok[0] = jsonscan.Int(d.m[1].Val)
	e.SummaryIndex, ok[1] = jsonscan.Int(d.m[2].Val)
	if !ok[0] || !ok[1] || !unquote(d.m[0].Val, &e.Type) || !unquote(d.m[3].Val, &e.Delta) {
		return false
	}
	if d.m[4].Val != nil {
		it := &responsesOutputItem{}
		for i, f := range []*string{&it.Type, &it.CallID, &it.Name, &it.Arguments, &it.EncryptedContent} {
			if !unquote(d.item[i].Val, f) {
				return false
			}
		}
		e.Item = it
	}
	if d.m[5].Val != nil {
		r := &responsesResult{}
		if !unquote(d.result[0].Val, &r.ID) || !unquote(d.result[1].Val, &r.Status) {
			return false
		}
		for i, f := range []any{&r.Usage, &r.Error, &r.IncompleteDetails} {
			if v := d.result[i+2].Val; v != nil && json.Unmarshal(v, f) != nil {
				return false
			}
		}
		e.Response = r
	}
	return true
}

// unquote sets *s to the scanned string raw; absent or null leaves it.
func unquote(raw []byte, s *string) bool {
	switch {
	case jsonscan.IsNull(raw):
		return true
	case !jsonscan.IsString(raw):
		return false
	}
	var b strings.Builder
	jsonscan.Unquote(&b, raw)
	*s = b.String()
	return true
}
