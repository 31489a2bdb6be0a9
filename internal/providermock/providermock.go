// Package providermock serves canned streamed answers of the provider APIs
// e speaks (OpenAI Responses, Chat Completions, Anthropic Messages) over
// loopback HTTP, as fast as the client reads them, for benchmarks of the
// provider path. Each answer is n text deltas "w1 ", "w2 ", ….
package providermock

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// APIs are the API names of e's provider settings, in a fixed order.
var APIs = []string{"openai-responses", "openai-chat", "anthropic"}

// Path returns the request path of api, below its base URL.
func Path(api string) string {
	switch api {
	case "openai-chat":
		return "/chat/completions"
	case "anthropic":
		return "/v1/messages"
	}
	return "/responses"
}

// Delta returns the text of delta i (from 0).
func Delta(i int) string { return "w" + strconv.Itoa(i+1) + " " }

// Body returns the whole event stream of an answer of n deltas: its head
// (up to the first delta), the deltas, and its tail.
func Body(api string, n int) (head []byte, deltas [][]byte, tail []byte) {
	var h, t bytes.Buffer
	deltas = make([][]byte, n)
	switch api {
	case "openai-chat":
		for i := range n {
			deltas[i] = fmt.Appendf(nil, "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":%q},\"finish_reason\":null}]}\n\n", Delta(i))
		}
		h.WriteString("data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n")
		t.WriteString("data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n")
		fmt.Fprintf(&t, "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":%d,\"total_tokens\":%d}}\n\n", n, n+10)
		t.WriteString("data: [DONE]\n\n")
	case "anthropic":
		h.WriteString("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"m\",\"stop_reason\":null,\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}\n\n")
		h.WriteString("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
		for i := range n {
			deltas[i] = fmt.Appendf(nil, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":%q}}\n\n", Delta(i))
		}
		t.WriteString("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n")
		fmt.Fprintf(&t, "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":%d}}\n\n", n)
		t.WriteString("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	default:
		// The whole event sequence of the API, as clients that rebuild the
		// answer from the done events (pi) need it.
		var full strings.Builder
		for i := range n {
			full.WriteString(Delta(i))
		}
		text, _ := json.Marshal(full.String())
		h.WriteString("event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"in_progress\",\"output\":[]}}\n\n")
		h.WriteString("event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\",\"sequence_number\":1,\"output_index\":0,\"item\":{\"id\":\"msg_1\",\"type\":\"message\",\"status\":\"in_progress\",\"role\":\"assistant\",\"content\":[]}}\n\n")
		h.WriteString("event: response.content_part.added\ndata: {\"type\":\"response.content_part.added\",\"sequence_number\":2,\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,\"part\":{\"type\":\"output_text\",\"annotations\":[],\"text\":\"\"}}\n\n")
		for i := range n {
			deltas[i] = fmt.Appendf(nil, "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":%d,\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,\"delta\":%q,\"logprobs\":[]}\n\n", i+3, Delta(i))
		}
		item := fmt.Sprintf(`{"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","annotations":[],"text":%s}]}`, text)
		fmt.Fprintf(&t, "event: response.output_text.done\ndata: {\"type\":\"response.output_text.done\",\"sequence_number\":%d,\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,\"text\":%s}\n\n", n+3, text)
		fmt.Fprintf(&t, "event: response.content_part.done\ndata: {\"type\":\"response.content_part.done\",\"sequence_number\":%d,\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,\"part\":{\"type\":\"output_text\",\"annotations\":[],\"text\":%s}}\n\n", n+4, text)
		fmt.Fprintf(&t, "event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\",\"sequence_number\":%d,\"output_index\":0,\"item\":%s}\n\n", n+5, item)
		fmt.Fprintf(&t, "event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":%d,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"completed\",\"output\":[%s],\"usage\":{\"input_tokens\":10,\"input_tokens_details\":{\"cached_tokens\":0},\"output_tokens\":%d,\"output_tokens_details\":{\"reasoning_tokens\":0},\"total_tokens\":%d}}}\n\n", n+6, item, n, n+10)
	}
	return h.Bytes(), deltas, t.Bytes()
}

// Server answers every POST to one API's path with an answer of n deltas.
// Its handler records when it flushed the first delta of each answer.
type Server struct {
	// Flush makes the answer flush after every event, as a provider
	// streaming tokens does: each event its own HTTP chunk, written
	// alone, where by default the deltas go out in one write.
	Flush bool
	// Pace, with Flush, is a pause before each delta after the first, so
	// that each reaches the client alone, as a provider's tokens do: the
	// client then pays its whole wake-up for every delta, whatever the
	// machine's load does to the pace of an unpaced mock.
	Pace time.Duration

	api    string
	head   []byte
	deltas []byte
	ends   []int // where each delta ends in deltas
	first  int   // length of the first delta
	tail   []byte

	mu     sync.Mutex
	firsts []time.Time
	gate   chan struct{} // set by HoldNext: the next answer waits for it after its first delta
	held   func()        // if set, called when an answer starts waiting for its release (tests)
}

// NewServer returns the handler of answers of n deltas in api.
func NewServer(api string, n int) *Server {
	head, deltas, tail := Body(api, n)
	s := &Server{api: api, head: head, tail: tail, deltas: bytes.Join(deltas, nil)}
	if len(deltas) > 0 {
		s.first = len(deltas[0])
	}
	end := 0
	for _, d := range deltas {
		end += len(d)
		s.ends = append(s.ends, end)
	}
	return s
}

// ServeHTTP writes the head and the first delta, flushes, then the rest.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, Path(s.api)) {
		http.Error(w, `{"error":{"type":"not_found","message":"no such route"}}`, http.StatusNotFound)
		return
	}
	// Drain the request so the client's write never races the answer.
	var sink [32 << 10]byte
	for {
		if _, err := r.Body.Read(sink[:]); err != nil {
			break
		}
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("x-request-id", "req_mock")
	f, _ := w.(http.Flusher)
	w.Write(s.head)
	w.Write(s.deltas[:s.first])
	t := time.Now() // the first delta leaves with this flush
	if f != nil {
		f.Flush()
	}
	s.mu.Lock()
	s.firsts = append(s.firsts, t)
	gate := s.gate
	s.gate = nil
	s.mu.Unlock()
	if gate != nil {
		if s.held != nil {
			s.held()
		}
		hold := time.NewTimer(holdLimit)
		select {
		case <-gate:
		case <-r.Context().Done():
		case <-hold.C:
		}
		hold.Stop()
	}
	if !s.Flush || f == nil {
		w.Write(s.deltas[s.first:])
		w.Write(s.tail)
		return
	}
	for i := 1; i < len(s.ends); i++ {
		if s.Pace > 0 {
			time.Sleep(s.Pace)
		}
		w.Write(s.deltas[s.ends[i-1]:s.ends[i]])
		f.Flush()
	}
	w.Write(s.tail)
}

// holdLimit bounds how long a held answer waits for its release, so a
// client that never shows the first delta cannot stall the mock.
const holdLimit = 10 * time.Second

// HoldNext makes the next answer stop after its first delta until release
// is called: the first delta then travels alone, as a real provider's does
// (the next one comes milliseconds later), and a benchmark of the time to
// the client's first output does not share the machine with the rest of
// the stream. Release may be called once, before or after the answer
// starts.
func (s *Server) HoldNext() (release func()) {
	gate := make(chan struct{})
	s.mu.Lock()
	s.gate = gate
	s.mu.Unlock()
	var once sync.Once
	return func() { once.Do(func() { close(gate) }) }
}

// Firsts returns when the first delta of each answer so far was sent: just
// before the flush that writes it.
func (s *Server) Firsts() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.firsts...)
}
