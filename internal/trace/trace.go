// Package trace is e's OpenTelemetry tracing: a span per turn, per model
// call (token usage and status as attributes) and per tool call, exported
// over OTLP/HTTP by the official Go SDK, configured by the standard OTEL_*
// environment variables. It is off, and costs a nil check, unless
// OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set
// (and OTEL_TRACES_EXPORTER is not "none"); only then is the SDK set up.
//
// A caller's W3C traceparent (session.prompt's traceparent, ACP's
// _meta.traceparent, TRACEPARENT for e -p) parents the turn's span, and
// providers get a traceparent header: the turn's span when tracing is on,
// the caller's own value when it is off.
package trace

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	oteltrace "go.opentelemetry.io/otel/trace"
)

// tracer is set by Setup when tracing is on; nil means off.
var tracer atomic.Pointer[oteltrace.Tracer]

// Enabled reports whether OTEL_* asks for traces: an OTLP endpoint is
// set and OTEL_TRACES_EXPORTER is unset or "otlp".
func Enabled(getenv func(string) string) bool {
	switch exp := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); exp {
	case "", "otlp":
	default:
		return false // "none", or an exporter e does not have
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// Setup starts the exporter when OTEL_* asks for traces, and returns the
// function that flushes and stops it (call it before exit). When tracing
// is off it does nothing and returns a no-op. The exporter reads the
// OTEL_EXPORTER_OTLP_* variables (endpoint, headers, timeout, protocol);
// the resource OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (service
// name "e" when unset), and the SDK OTEL_TRACES_SAMPLER and the batch
// processor's OTEL_BSP_* variables.
func Setup(getenv func(string) string, version string) (shutdown func(context.Context) error, err error) {
	noop := func(context.Context) error { return nil }
	if !Enabled(getenv) {
		return noop, nil
	}
	exp, err := newExporter(getenv)
	if err != nil {
		return noop, err
	}
	res, err := resource.Merge(
		resource.NewSchemaless(semconv.ServiceName("e"), semconv.ServiceVersion(version)),
		resource.Environment(), // OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
	)
	if err != nil && res == nil {
		return noop, fmt.Errorf("trace: resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	t := tp.Tracer("github.com/e-agent/e")
	tracer.Store(&t)
	return func(ctx context.Context) error {
		tracer.Store(nil)
		return tp.Shutdown(ctx)
	}, nil
}

// ErrTraceparent is the error of a traceparent that is not W3C's.
var ErrTraceparent = errors.New("not a W3C traceparent (00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>)")

// CheckTraceparent checks a caller's traceparent: W3C Trace Context's
// version-flags form (version, 32 and 16 lowercase hex digits, flags; a
// later version may add "-…"), version ff and all-zero ids excluded.
func CheckTraceparent(tp string) error {
	ok := len(tp) >= 55 && (len(tp) == 55 || tp[55] == '-') && tp[2] == '-' && tp[35] == '-' && tp[52] == '-' &&
		lowerHex(tp[:2]) && lowerHex(tp[3:35]) && lowerHex(tp[36:52]) && lowerHex(tp[53:55]) &&
		tp[:2] != "ff" && tp[3:35] != strings.Repeat("0", 32) && tp[36:52] != strings.Repeat("0", 16)
	if !ok {
		return fmt.Errorf("trace: traceparent %q: %w", tp, ErrTraceparent)
	}
	return nil
}

func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

type parentKey struct{}

// WithParent returns ctx carrying the caller's traceparent (checked with
// CheckTraceparent; "" leaves ctx as it is). The turn started under it is
// its child, and providers get it when tracing is off.
func WithParent(ctx context.Context, traceparent string) context.Context {
	if traceparent == "" {
		return ctx
	}
	ctx = context.WithValue(ctx, parentKey{}, traceparent)
	return propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{"traceparent": traceparent})
}

// Traceparent is the header a provider request made under ctx carries: the
// current span's when tracing is on, else the caller's traceparent, else "".
func Traceparent(ctx context.Context) string {
	if sc := oteltrace.SpanContextFromContext(ctx); sc.IsValid() && tracer.Load() != nil {
		carrier := propagation.MapCarrier{}
		propagation.TraceContext{}.Inject(ctx, carrier)
		return carrier["traceparent"]
	}
	tp, _ := ctx.Value(parentKey{}).(string)
	return tp
}

// Span is a started span; a nil *Span (tracing off) does nothing.
type Span struct{ s oteltrace.Span }

// StartTurn starts a turn's span under the caller's traceparent (if
// WithParent gave ctx one), and returns ctx carrying it.
func StartTurn(ctx context.Context, session string) (context.Context, *Span) {
	t := tracer.Load()
	if t == nil {
		return ctx, nil
	}
	ctx, s := (*t).Start(ctx, "turn", oteltrace.WithSpanKind(oteltrace.SpanKindInternal),
		oteltrace.WithAttributes(attribute.String("e.session", session)))
	return ctx, &Span{s}
}

// EndTurn ends a turn's span with how the turn ended: its model, whether it
// was interrupted, its error (nil when none) and its token usage.
func (sp *Span) EndTurn(model string, aborted bool, err *string, inputTokens, outputTokens int64) {
	if sp == nil {
		return
	}
	sp.s.SetAttributes(attribute.String("gen_ai.request.model", model), attribute.Bool("e.aborted", aborted),
		attribute.Int64("gen_ai.usage.input_tokens", inputTokens), attribute.Int64("gen_ai.usage.output_tokens", outputTokens))
	if err != nil {
		sp.s.SetStatus(codes.Error, *err)
	}
	sp.s.End()
}

// ModelCall records a model call that started at start and ended now, as a
// child of ctx's span: status is "ok", "error" or "cancelled".
type ModelCall struct {
	Provider, Model, Status, Error, RequestID, StopReason string
	HTTPStatus, Attempts                                  int
	InputTokens, OutputTokens, CacheReadTokens            int64
	Start                                                 time.Time
}

// RecordModelCall adds a model call's span (a no-op when tracing is off).
func RecordModelCall(ctx context.Context, c ModelCall) {
	t := tracer.Load()
	if t == nil {
		return
	}
	_, s := (*t).Start(ctx, "chat "+c.Model, oteltrace.WithSpanKind(oteltrace.SpanKindClient), oteltrace.WithTimestamp(c.Start),
		oteltrace.WithAttributes(
			attribute.String("gen_ai.operation.name", "chat"),
			attribute.String("gen_ai.system", c.Provider),
			attribute.String("gen_ai.request.model", c.Model),
			attribute.Int64("gen_ai.usage.input_tokens", c.InputTokens),
			attribute.Int64("gen_ai.usage.output_tokens", c.OutputTokens),
			attribute.Int64("e.usage.cache_read_tokens", c.CacheReadTokens),
			attribute.String("e.status", c.Status),
			attribute.Int("e.attempts", c.Attempts),
		))
	if c.HTTPStatus != 0 {
		s.SetAttributes(attribute.Int("http.response.status_code", c.HTTPStatus))
	}
	if c.RequestID != "" {
		s.SetAttributes(attribute.String("e.request_id", c.RequestID))
	}
	if c.StopReason != "" {
		s.SetAttributes(attribute.StringSlice("gen_ai.response.finish_reasons", []string{c.StopReason}))
	}
	if c.Status != "ok" {
		s.SetStatus(codes.Error, c.Status+": "+c.Error)
	}
	s.End()
}

// RecordToolCall adds a tool call's span, from start to now (a no-op when
// tracing is off); outcome is completed, failed, denied or interrupted.
func RecordToolCall(ctx context.Context, id int, name, category, outcome, summary string, start time.Time) {
	t := tracer.Load()
	if t == nil {
		return
	}
	_, s := (*t).Start(ctx, "execute_tool "+name, oteltrace.WithTimestamp(start),
		oteltrace.WithAttributes(
			attribute.String("gen_ai.operation.name", "execute_tool"),
			attribute.String("gen_ai.tool.name", name),
			attribute.Int("e.tool.id", id),
			attribute.String("e.tool.category", category),
			attribute.String("e.tool.outcome", outcome),
			attribute.String("e.tool.summary", summary),
		))
	if outcome != "completed" {
		s.SetStatus(codes.Error, outcome+": "+summary)
	}
	s.End()
}
