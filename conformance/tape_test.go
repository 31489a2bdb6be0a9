package conformance

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Optional entries may go unrequested.
func TestTapeUnused(t *testing.T) {
	opt, req := tapeEntry{Optional: true}, tapeEntry{}
	tests := []struct {
		name    string
		entries []tapeEntry
		used    []bool
		want    int
	}{
		{name: "all used", entries: []tapeEntry{req, req}, used: []bool{true, true}, want: 0},
		{name: "none used", entries: []tapeEntry{req, opt}, want: 1},
		{name: "required left", entries: []tapeEntry{req, req}, used: []bool{true, false}, want: 1},
		{name: "optional tail left", entries: []tapeEntry{req, opt, opt}, used: []bool{true, false, false}, want: 0},
		{name: "optional before required", entries: []tapeEntry{req, opt, req}, used: []bool{true, false, false}, want: 1},
		{name: "optional before a used required", entries: []tapeEntry{opt, req}, used: []bool{false, true}, want: 0},
		{name: "out of order", entries: []tapeEntry{req, req, opt}, used: []bool{false, true, false}, want: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := &tapeServer{entries: tt.entries, used: tt.used}
			if got := ts.unused(); got != tt.want {
				t.Errorf("unused() = %d, want %d", got, tt.want)
			}
		})
	}
}

// A call takes the first unused entry whose key matches it, whatever the
// order the calls come in; a tape without keys is handed out in order.
func TestTapeKeys(t *testing.T) {
	keyed := []tapeEntry{
		{Key: map[string]any{"user": "one"}, Text: chunks{"1"}},
		{Key: map[string]any{"messages": json.Number("2"), "user": "$prefix:tw"}, Text: chunks{"2"}},
		{Key: map[string]any{"user": "one"}, Text: chunks{"1 again"}},
	}
	tests := []struct {
		name    string
		entries []tapeEntry
		calls   []string // the last user message of each call, in order
		want    []string // each call's answer, or its divergence
	}{
		{name: "by key", entries: keyed, calls: []string{"two", "one", "one"}, want: []string{"2", "1", "1 again"}},
		{name: "no key fits", entries: keyed, calls: []string{"three"},
			want: []string{`model call 1: unexpected model call: the key of no unused tape entry matches its key {"messages":2,"user":"three"}`}},
		{name: "used up", entries: keyed[:1], calls: []string{"one", "one"},
			want: []string{"1", "model call 2: unexpected model call: the tape has 1 entries"}},
		{name: "in order without keys", entries: []tapeEntry{{Text: chunks{"a"}}, {Text: chunks{"b"}}}, calls: []string{"two", "one"}, want: []string{"a", "b"}},
		{name: "keyless fits any", entries: []tapeEntry{keyed[0], {Text: chunks{"any"}}}, calls: []string{"two", "one"}, want: []string{"any", "1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &matcher{bindings: map[string]any{}}
			var mu sync.Mutex
			var divs []string
			ts := &tapeServer{entries: tt.entries, stop: make(chan struct{}),
				check:  func(any, any) *mismatch { return nil },
				keyed:  func(key, got any) bool { return m.match("", key, got, true, map[string]any{}) == nil },
				report: func(d *Divergence) { mu.Lock(); divs = append(divs, d.Step+": "+d.Message); mu.Unlock() }}
			url, err := ts.start()
			if err != nil {
				t.Fatal(err)
			}
			defer ts.close()
			var got []string
			for _, user := range tt.calls {
				body := `{"stream":true,"messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"` + user + `"}]}]}`
				req, _ := http.NewRequest(http.MethodPost, url+"/chat/completions", strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+tapeKey)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				data, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					mu.Lock()
					got = append(got, divs[len(divs)-1])
					mu.Unlock()
					continue
				}
				entry := map[string]any{}
				parseStream(data, "model", entry)
				got = append(got, fmt.Sprint(entry["text"]))
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("answers (-want +got):\n%s", diff)
			}
		})
	}
}
