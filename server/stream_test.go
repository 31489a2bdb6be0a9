package server

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/e-agent/e/internal/providermock"
)

// TestStreamedLineNotHeld: the text event of a provider's first delta
// reaches stdout while the provider sends nothing more, so while the
// turn's goroutine waits in its next Read: the lines the turn holds while
// it works through a Read (jsonl.Hold) are written before it reads again
// (S2: events stream as they happen; F5: each line whole, in order).
func TestStreamedLineNotHeld(t *testing.T) {
	for _, api := range providermock.APIs {
		t.Run(api, func(t *testing.T) {
			head, deltas, tail := providermock.Body(api, 3)
			shown := make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = w.Write(append(head, deltas[0]...))
				w.(http.Flusher).Flush()
				select { // the rest only once the first text is on stdout
				case <-shown:
				case <-r.Context().Done():
					return
				}
				for _, d := range deltas[1:] {
					_, _ = w.Write(d)
				}
				_, _ = w.Write(tail)
			}))
			t.Cleanup(srv.Close)
			c := startServer(t, serverSetup{osPipe: true, settings: fmt.Sprintf(`{"providers":{"mock":{"api":%q,"base_url":%q,"models":[{"id":"m"}]}},"default_model":"mock/m"}`, api, srv.URL)})
			sid := c.create(nil)
			c.call("p1", "session.prompt", map[string]any{"session": sid, "prompt": "hi"})
			for {
				l := c.next()
				if gjson.Get(l, "type").String() == "text" {
					if got, want := gjson.Get(l, "delta").String(), providermock.Delta(0); got != want {
						t.Fatalf("first text %q, want %q", got, want)
					}
					break
				}
				if strings.HasPrefix(l, `{"id":"p1"`) {
					t.Fatalf("turn ended before its first text: %s", l)
				}
			}
			close(shown)
			var texts []string
			for _, l := range c.until(`"p1"`) {
				if gjson.Get(l, "type").String() == "text" {
					texts = append(texts, gjson.Get(l, "delta").String())
				}
			}
			if want := []string{providermock.Delta(1), providermock.Delta(2)}; strings.Join(texts, "|") != strings.Join(want, "|") {
				t.Errorf("later texts %q, want %q", texts, want)
			}
		})
	}
}
