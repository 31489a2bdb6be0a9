package conformance

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// The tape is the model side of a case: each POST /v1/chat/completions the
// server under test makes consumes the first unused entry whose key it
// matches (the next one when no entry has a key), streamed back the way an
// OpenAI-compatible Chat Completions endpoint streams (spec/conformance.md,
// "Model tape").
type tapeEntry struct {
	Request      any             `json:"-"`
	Key          any             `json:"-"`
	Headers      any             `json:"-"`
	Reasoning    chunks          `json:"reasoning"`
	Text         chunks          `json:"text"`
	ToolCalls    []tapeCall      `json:"tool_calls"`
	Usage        *tapeUsage      `json:"usage"`
	FinishReason string          `json:"finish_reason"`
	Hold         bool            `json:"hold"`
	Optional     bool            `json:"optional"`
	ID           string          `json:"id"`    // the completion's id; default chatcmpl-tape-<n>
	Model        string          `json:"model"` // the model every chunk names; default "model", the one asked for
	DelayMS      int             `json:"delay_ms"`
	Error        *tapeError      `json:"error"`
	RawRequest   json.RawMessage `json:"request"`
	RawKey       json.RawMessage `json:"key"`
	RawHeaders   json.RawMessage `json:"headers"`
}

type tapeCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

type tapeUsage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	CachedTokens     int64 `json:"cached_tokens"`
	ReasoningTokens  int64 `json:"reasoning_tokens"`
}

type tapeError struct {
	Status  int               `json:"status"`
	Headers map[string]string `json:"headers"`
	Body    string            `json:"body"`
}

// chunks is a string or a list of strings. A single string is cut into
// short pieces so that clients and matchers cannot depend on chunking.
type chunks []string

func (c *chunks) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*c = split(s, 16)
		return nil
	}
	var list []string
	if err := json.Unmarshal(b, &list); err != nil {
		return err
	}
	*c = list
	return nil
}

// split cuts s into pieces of at most n bytes on rune boundaries.
func split(s string, n int) []string {
	var out []string
	for len(s) > n {
		i := n
		for i > 0 && !utf8.RuneStart(s[i]) {
			i--
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	if s != "" || len(out) == 0 {
		out = append(out, s)
	}
	return out
}

func parseTape(data []byte, out *[]tapeEntry) error {
	if err := json.Unmarshal(data, out); err != nil {
		return err
	}
	for i := range *out {
		e := &(*out)[i]
		// An expectation on the call (request, key): matchers and
		// placeholders, linted like an expected line.
		for _, f := range []struct {
			name string
			raw  json.RawMessage
			into *any
		}{{"request", e.RawRequest, &e.Request}, {"key", e.RawKey, &e.Key}, {"headers", e.RawHeaders, &e.Headers}} {
			if len(f.raw) == 0 {
				continue
			}
			v, err := decode(f.raw)
			if err != nil {
				return fmt.Errorf("entry %d: %s: %w", i, f.name, err)
			}
			if err := lintValue(fmt.Sprintf("/%d/%s", i, f.name), v); err != nil {
				return err
			}
			*f.into = v
		}
		if e.Error != nil && (e.Text != nil || e.Reasoning != nil || e.ToolCalls != nil || e.Usage != nil) {
			return fmt.Errorf("entry %d: an error entry streams nothing else", i)
		}
	}
	return nil
}

// tapeServer serves one case's tape on a loopback port.
type tapeServer struct {
	entries []tapeEntry
	// check matches a request body against an entry's expectation; it
	// returns a description of the first difference.
	check func(want, got any) *mismatch
	// keyed reports whether an entry's key matches a call's key value
	// (callKey); nil accepts every key.
	keyed  func(key, got any) bool
	report func(*Divergence)
	stop   chan struct{} // closed when the case ends: held streams return

	mu    sync.Mutex
	used  []bool // by entry
	calls int
	srv   *http.Server
	wg    sync.WaitGroup
}

func (t *tapeServer) start() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("tape: %w", err)
	}
	t.srv = &http.Server{Handler: t, ReadHeaderTimeout: 10 * time.Second}
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		t.srv.Serve(ln)
	}()
	return "http://" + ln.Addr().String() + "/v1", nil
}

// close stops the server and releases held streams.
func (t *tapeServer) close() {
	close(t.stop)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := t.srv.Shutdown(ctx); err != nil {
		t.srv.Close()
	}
	t.wg.Wait()
}

// unused is the number of entries never requested, less the optional
// ones: calls an interrupt may stop before they are sent.
func (t *tapeServer) unused() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for i, e := range t.entries {
		if !e.Optional && (i >= len(t.used) || !t.used[i]) {
			n++
		}
	}
	return n
}

// pick marks and returns the entry a call takes: the first unused one
// that fits it (by entry: its key matches the call's, or it has none); -1
// when there is none, with the number of entries left unused.
func (t *tapeServer) pick(fits []bool) (n, left int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.used == nil {
		t.used = make([]bool, len(t.entries))
	}
	for i := range t.entries {
		if t.used[i] {
			continue
		}
		if fits[i] {
			t.used[i] = true
			return i, 0
		}
		left++
	}
	return -1, left
}

// callKey is what a tape entry's key is matched against: the number of
// messages of the request and the text of its last user message (text
// parts joined), which tell apart the calls of sessions that run at once
// (spec/conformance.md, section 4).
func callKey(req any) map[string]any {
	body, _ := req.(map[string]any)
	msgs, _ := body["messages"].([]any)
	key := map[string]any{"messages": json.Number(fmt.Sprint(len(msgs)))}
	for i := len(msgs) - 1; i >= 0; i-- {
		m, _ := msgs[i].(map[string]any)
		if m["role"] != "user" {
			continue
		}
		switch c := m["content"].(type) {
		case string:
			key["user"] = c
		case []any:
			var text strings.Builder
			for _, p := range c {
				if part, _ := p.(map[string]any); part["type"] == "text" {
					s, _ := part["text"].(string)
					text.WriteString(s)
				}
			}
			key["user"] = text.String()
		}
		break
	}
	return key
}

func (t *tapeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		http.Error(w, "tape: reading the request: "+err.Error(), http.StatusBadRequest)
		return
	}
	t.mu.Lock()
	t.calls++
	call := t.calls
	t.mu.Unlock()
	step := fmt.Sprintf("model call %d", call)
	diverge := func(msg string, mm *mismatch) {
		d := &Divergence{Step: step, Message: msg}
		if mm != nil {
			d.Pointer, d.Expected, d.Got, d.Message = mm.pointer, mm.want, mm.got, msg+": "+mm.reason
		}
		t.report(d)
		http.Error(w, "tape: "+d.Message, http.StatusInternalServerError)
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		diverge(fmt.Sprintf("unexpected %s %s to the model endpoint (only POST /v1/chat/completions exists)", r.Method, r.URL.Path), nil)
		return
	}
	if got := r.Header.Get("Authorization"); got != "Bearer "+tapeKey {
		diverge(fmt.Sprintf("model call without the key of api_key_env E_TAPE_API_KEY (Authorization %q)", got), nil)
		return
	}
	req, err := decode(body)
	if err != nil {
		diverge("request body is not JSON: "+err.Error(), nil)
		return
	}
	req = textContent(req)
	key := callKey(req)
	fits := make([]bool, len(t.entries)) // keyed is called outside t.mu: it takes the run's lock
	for i, e := range t.entries {
		fits[i] = e.Key == nil || t.keyed == nil || t.keyed(e.Key, key)
	}
	n, left := t.pick(fits)
	if n < 0 {
		msg := fmt.Sprintf("unexpected model call: the tape has %d entries", len(t.entries))
		if left > 0 {
			msg = fmt.Sprintf("unexpected model call: the key of no unused tape entry matches its key %s", canon(key))
		}
		diverge(msg, nil)
		return
	}
	if n+1 != call {
		step += fmt.Sprintf(" (tape entry %d)", n+1)
	}
	e := t.entries[n]
	// check sees every call (for the transcript); a nil expectation
	// accepts any body.
	if mm := t.check(e.Request, req); mm != nil {
		diverge("the request does not match the tape entry's expectation", mm)
		return
	}
	if want, ok := e.Headers.(map[string]any); ok {
		// The headers the entry names, lowercase, as the request carries
		// them (absent: null).
		got := map[string]any{}
		for name := range want {
			got[name] = nil
			if v := r.Header.Values(name); len(v) > 0 {
				got[name] = strings.Join(v, ", ")
			}
		}
		if mm := t.check(want, got); mm != nil {
			diverge("the request's headers do not match the tape entry's expectation", mm)
			return
		}
	}
	if !t.wait(r.Context(), time.Duration(e.DelayMS)*time.Millisecond) {
		return
	}
	if e.Error != nil {
		w.Header().Set("X-Request-Id", fmt.Sprintf("req_tape_%d", n+1)) // the entry's headers may replace it
		for k, v := range e.Error.Headers {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(e.Error.Status)
		io.WriteString(w, e.Error.Body)
		return
	}
	t.stream(r.Context(), w, n, e)
}

func (t *tapeServer) wait(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-ctx.Done():
	case <-t.stop:
	}
	return false
}

func (t *tapeServer) stream(ctx context.Context, w http.ResponseWriter, n int, e tapeEntry) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Request-Id", fmt.Sprintf("req_tape_%d", n+1))
	fl, _ := w.(http.Flusher)
	id := cmp.Or(e.ID, fmt.Sprintf("chatcmpl-tape-%d", n+1))
	send := func(delta map[string]any, finish any, usage any) {
		chunk := map[string]any{"id": id, "object": "chat.completion.chunk", "created": 0, "model": cmp.Or(e.Model, "model")}
		if delta != nil || finish != nil {
			if delta == nil {
				delta = map[string]any{}
			}
			chunk["choices"] = []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}
		} else {
			chunk["choices"] = []any{}
		}
		if usage != nil {
			chunk["usage"] = usage
		}
		b, _ := json.Marshal(chunk)
		fmt.Fprintf(w, "data: %s\n\n", b)
		if fl != nil {
			fl.Flush()
		}
	}
	send(map[string]any{"role": "assistant", "content": ""}, nil, nil)
	for _, s := range e.Reasoning {
		send(map[string]any{"reasoning_content": s}, nil, nil)
	}
	for _, s := range e.Text {
		send(map[string]any{"content": s}, nil, nil)
	}
	for i, c := range e.ToolCalls {
		args := string(c.Arguments)
		var s string
		if json.Unmarshal(c.Arguments, &s) == nil {
			args = s // arguments given as a string are sent verbatim
		}
		callID := c.ID
		if callID == "" {
			callID = fmt.Sprintf("call_%d_%d", n+1, i+1)
		}
		send(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": callID, "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": ""}}}}, nil, nil)
		for _, frag := range split(args, max(1, len(args)/3+1)) {
			send(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": frag}}}}, nil, nil)
		}
	}
	if e.Hold {
		// An interrupt test: the answer never ends on its own.
		select {
		case <-ctx.Done():
		case <-t.stop:
		}
		return
	}
	finish := e.FinishReason
	if finish == "" {
		finish = "stop"
		if len(e.ToolCalls) > 0 {
			finish = "tool_calls"
		}
	}
	send(nil, finish, nil)
	if u := e.Usage; u != nil {
		usage := map[string]any{"prompt_tokens": u.PromptTokens, "completion_tokens": u.CompletionTokens,
			"total_tokens":          u.PromptTokens + u.CompletionTokens,
			"prompt_tokens_details": map[string]any{"cached_tokens": u.CachedTokens}}
		if u.ReasoningTokens > 0 {
			usage["completion_tokens_details"] = map[string]any{"reasoning_tokens": u.ReasoningTokens}
		}
		send(nil, nil, usage)
	}
	io.WriteString(w, "data: [DONE]\n\n")
	if fl != nil {
		fl.Flush()
	}
}

const tapeKey = "tape-key"

// tapeSettings is the settings.json the runner writes before merging the
// case's own home/settings.json over it.
func tapeSettings(baseURL, model string) map[string]any {
	if model == "" {
		model = "tape/model"
	}
	return map[string]any{
		"providers": map[string]any{
			"tape": map[string]any{
				"api":         "openai-chat",
				"base_url":    baseURL,
				"api_key_env": "E_TAPE_API_KEY",
				"models": []any{map[string]any{
					"id": "model", "context_window": 200000, "image_input": true,
					"effort": []any{"low", "medium", "high"},
				}},
			},
		},
		"default_model": model,
	}
}

// mergeJSON merges over into base: objects merge key by key, anything
// else replaces.
func mergeJSON(base, over any) any {
	b, ok1 := base.(map[string]any)
	o, ok2 := over.(map[string]any)
	if !ok1 || !ok2 {
		return over
	}
	out := cloneMap(b)
	for k, v := range o {
		out[k] = mergeJSON(b[k], v)
	}
	return out
}

// textContent rewrites each message whose content is an array of text
// parts only into the string of those texts joined, the other form Chat
// Completions allows, so expectations written with strings match either.
func textContent(req any) any {
	body, ok := req.(map[string]any)
	if !ok {
		return req
	}
	msgs, ok := body["messages"].([]any)
	if !ok {
		return req
	}
	for _, m := range msgs {
		msg, ok := m.(map[string]any)
		if !ok {
			continue
		}
		parts, ok := msg["content"].([]any)
		if !ok || len(parts) == 0 {
			continue
		}
		var text strings.Builder
		for _, p := range parts {
			part, ok := p.(map[string]any)
			s, isText := part["text"].(string)
			if !ok || part["type"] != "text" || !isText {
				text.Reset()
				parts = nil
				break
			}
			text.WriteString(s)
		}
		if parts != nil {
			msg["content"] = text.String()
		}
	}
	return req
}
