package trace

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestEnabled(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want bool
	}{
		{name: "unset", env: nil, want: false},
		{name: "endpoint", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, want: true},
		{name: "traces endpoint", env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, want: true},
		{name: "exporter none", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_TRACES_EXPORTER": "none"}, want: false},
		{name: "exporter otlp", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_TRACES_EXPORTER": "otlp"}, want: true},
		{name: "exporter otlp, no endpoint", env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Enabled(env(tt.env)); got != tt.want {
				t.Errorf("Enabled = %v, want %v", got, tt.want)
			}
		})
	}
}

// Off: Setup initialises nothing, and spans cost nothing.
func TestSetupOff(t *testing.T) {
	shutdown, err := Setup(env(nil), "test")
	if err != nil {
		t.Fatal(err)
	}
	if tracer.Load() != nil {
		t.Error("a tracer was set up with OTEL_* unset")
	}
	ctx, sp := StartTurn(context.Background(), "s")
	if sp != nil {
		t.Error("StartTurn made a span with traces off")
	}
	sp.EndTurn("m", false, nil, 0, 0)
	RecordModelCall(ctx, ModelCall{Start: time.Now()})
	RecordToolCall(ctx, 1, "ls", "read", "completed", "", time.Now())
	if err := shutdown(ctx); err != nil {
		t.Error(err)
	}
}

func TestExporterConfig(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		url     string
		header  map[string]string
		timeout time.Duration
		err     string
	}{
		{name: "base endpoint", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318/"},
			url: "http://127.0.0.1:4318/v1/traces", header: map[string]string{}, timeout: 10 * time.Second},
		{name: "traces endpoint as it is", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://b/custom"},
			url: "https://b/custom", header: map[string]string{}, timeout: 10 * time.Second},
		{name: "headers and timeout", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a", "OTEL_EXPORTER_OTLP_HEADERS": "api-key=a%20b, x-team=e", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "2500"},
			url: "http://a/v1/traces", header: map[string]string{"Api-Key": "a b", "X-Team": "e"}, timeout: 2500 * time.Millisecond},
		{name: "grpc refused", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
			err: `trace: OTEL_EXPORTER_OTLP_PROTOCOL "grpc": e exports http/protobuf only`},
		{name: "not a URL", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "localhost:4318"},
			err: `trace: OTLP endpoint "localhost:4318/v1/traces": want an http:// or https:// URL`},
		{name: "bad timeout", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a", "OTEL_EXPORTER_OTLP_TIMEOUT": "5s"},
			err: `trace: OTEL_EXPORTER_OTLP_TIMEOUT "5s": want milliseconds`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := newExporter(env(tt.env))
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("newExporter error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			header := map[string]string{}
			for k := range e.header {
				header[k] = e.header.Get(k)
			}
			if diff := cmp.Diff(tt.header, header); diff != "" || e.url != tt.url || e.timeout != tt.timeout {
				t.Errorf("url %q timeout %v, want %q %v; headers (-want +got):\n%s", e.url, e.timeout, tt.url, tt.timeout, diff)
			}
		})
	}
}

func TestTraceparent(t *testing.T) {
	tests := []struct {
		name, tp string
		valid    bool
	}{
		{name: "w3c example", tp: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", valid: true},
		{name: "later version with more", tp: "01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-xyz", valid: true},
		{name: "version ff", tp: "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
		{name: "zero trace id", tp: "00-00000000000000000000000000000000-b7ad6b7169203331-01"},
		{name: "zero parent id", tp: "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01"},
		{name: "uppercase", tp: "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01"},
		{name: "short", tp: "00-0af7-b7ad-01"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := CheckTraceparent(tt.tp); (err == nil) != tt.valid {
				t.Errorf("CheckTraceparent(%q) = %v, want valid %v", tt.tp, err, tt.valid)
			}
		})
	}
	// Off: the caller's traceparent is what providers get, unchanged.
	ctx := WithParent(context.Background(), "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	if got := Traceparent(ctx); got != "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" {
		t.Errorf("Traceparent = %q, want the caller's", got)
	}
	if got := Traceparent(context.Background()); got != "" {
		t.Errorf("Traceparent without a caller's = %q, want none", got)
	}
}
