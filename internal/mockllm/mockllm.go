// Package mockllm is a loopback OpenAI-compatible chat model
// (POST /v1/chat/completions, streamed) for tests and benchmarks that must
// drive e and other agents, such as pi, through the same model: it answers
// every request with the same words, one streamed chunk per word.
package mockllm

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
)

// Handler answers chat completion requests with Reply, one SSE chunk per
// word, then the usage and [DONE].
type Handler struct {
	Reply    string
	Requests atomic.Int64
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		http.Error(w, `{"error":{"message":"mockllm serves POST /v1/chat/completions only"}}`, http.StatusNotFound)
		return
	}
	var req struct {
		Model    string            `json:"model"`
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, fmt.Sprintf(`{"error":{"message":%q}}`, err.Error()), http.StatusBadRequest)
		return
	}
	h.Requests.Add(1)
	w.Header().Set("Content-Type", "text/event-stream")
	fl, _ := w.(http.Flusher)
	send := func(v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\n\n", b)
		if fl != nil {
			fl.Flush()
		}
	}
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": "chatcmpl-mock", "object": "chat.completion.chunk", "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
	}
	words := strings.Fields(h.Reply)
	send(chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	for i, word := range words {
		if i > 0 {
			word = " " + word
		}
		send(chunk(map[string]any{"content": word}, nil))
	}
	send(chunk(map[string]any{}, "stop"))
	send(map[string]any{"id": "chatcmpl-mock", "object": "chat.completion.chunk", "model": req.Model, "choices": []any{},
		"usage": map[string]any{"prompt_tokens": 10 * len(req.Messages), "completion_tokens": len(words),
			"total_tokens": 10*len(req.Messages) + len(words)}})
	fmt.Fprint(w, "data: [DONE]\n\n")
	if fl != nil {
		fl.Flush()
	}
}
