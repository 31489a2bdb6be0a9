package acp

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/e-agent/e/internal/trace"
)

// Z1: a prompt's _meta.traceparent, when it is a valid W3C traceparent
// string, is the turn's parent; any other _meta (free-form) is ignored.
func TestWithTraceparent(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	tests := []struct {
		name string
		meta string
		want string
	}{
		{name: "none"},
		{name: "traceparent", meta: `{"traceparent":"` + tp + `","other":1}`, want: tp},
		{name: "not valid", meta: `{"traceparent":"00-x"}`},
		{name: "not a string", meta: `{"traceparent":7}`},
		{name: "null", meta: `null`},
		{name: "an array", meta: `["` + tp + `"]`},
		{name: "not JSON", meta: `{"traceparent":"` + tp + `"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var meta json.RawMessage
			if tt.meta != "" {
				meta = json.RawMessage(tt.meta)
			}
			if got := trace.Traceparent(withTraceparent(context.Background(), meta)); got != tt.want {
				t.Errorf("traceparent %q, want %q", got, tt.want)
			}
		})
	}
}
