package trace

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	oteltrace "go.opentelemetry.io/otel/trace"
)

// exporter sends spans over OTLP/HTTP, protobuf-encoded (the protocol's
// default, http/protobuf), to the endpoint the OTEL_EXPORTER_OTLP_*
// variables name. It is e's own rather than the SDK's otlptracehttp:
// that one links gRPC and its generated services (69 packages, 7 MB of
// executable, milliseconds of package init in every e process, traced or
// not); this one writes the few messages it needs by hand.
type exporter struct {
	url     string
	header  http.Header
	timeout time.Duration
	client  *http.Client
}

// newExporter reads the exporter's configuration from the environment
// (the OTLP exporter specification's variables, traces' own first).
func newExporter(getenv func(string) string) (*exporter, error) {
	pick := func(name string) string {
		if v := getenv("OTEL_EXPORTER_OTLP_TRACES_" + name); v != "" {
			return v
		}
		return getenv("OTEL_EXPORTER_OTLP_" + name)
	}
	if p := pick("PROTOCOL"); p != "" && p != "http/protobuf" {
		return nil, fmt.Errorf("trace: OTEL_EXPORTER_OTLP_PROTOCOL %q: e exports http/protobuf only", p)
	}
	e := &exporter{header: http.Header{}, timeout: 10 * time.Second, client: &http.Client{}}
	if u := getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"); u != "" {
		e.url = u // a signal's own endpoint is used as it is
	} else {
		e.url = strings.TrimSuffix(getenv("OTEL_EXPORTER_OTLP_ENDPOINT"), "/") + "/v1/traces"
	}
	if u, err := url.Parse(e.url); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("trace: OTLP endpoint %q: want an http:// or https:// URL", e.url)
	}
	if h := pick("HEADERS"); h != "" {
		for _, kv := range strings.Split(h, ",") {
			k, v, ok := strings.Cut(kv, "=")
			k = strings.TrimSpace(k)
			if !ok || k == "" {
				return nil, fmt.Errorf("trace: OTEL_EXPORTER_OTLP_HEADERS: %q is not key=value", kv)
			}
			if dv, err := url.PathUnescape(strings.TrimSpace(v)); err == nil {
				v = dv
			}
			e.header.Set(k, v)
		}
	}
	if t := pick("TIMEOUT"); t != "" {
		ms, err := strconv.Atoi(t)
		if err != nil || ms <= 0 {
			return nil, fmt.Errorf("trace: OTEL_EXPORTER_OTLP_TIMEOUT %q: want milliseconds", t)
		}
		e.timeout = time.Duration(ms) * time.Millisecond
	}
	return e, nil
}

// ExportSpans posts one ExportTraceServiceRequest.
func (e *exporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if len(spans) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(encodeRequest(spans)))
	if err != nil {
		return fmt.Errorf("trace: export: %w", err)
	}
	req.Header = e.header.Clone()
	req.Header.Set("Content-Type", "application/x-protobuf")
	resp, err := e.client.Do(req)
	if err != nil {
		return fmt.Errorf("trace: export to %s: %w", e.url, err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("trace: export to %s: HTTP %s", e.url, resp.Status)
	}
	return nil
}

func (e *exporter) Shutdown(context.Context) error {
	e.client.CloseIdleConnections()
	return nil
}

// encodeRequest encodes opentelemetry.proto.collector.trace.v1's
// ExportTraceServiceRequest: one ResourceSpans per resource, one
// ScopeSpans per instrumentation scope (field numbers from
// opentelemetry/proto/trace/v1/trace.proto).
func encodeRequest(spans []sdktrace.ReadOnlySpan) []byte {
	var out []byte
	for i := 0; i < len(spans); {
		res := spans[i].Resource()
		j := i
		for j < len(spans) && spans[j].Resource() == res {
			j++
		}
		var rs []byte
		var r []byte
		if res != nil {
			for _, kv := range res.Attributes() {
				r = appendTag(r, 1, wireBytes)
				r = appendLen(r, keyValue(kv))
			}
		}
		rs = appendTag(rs, 1, wireBytes)
		rs = appendLen(rs, r)
		for k := i; k < j; {
			scope := spans[k].InstrumentationScope()
			l := k
			var ss []byte
			var sc []byte
			sc = appendString(sc, 1, scope.Name)
			sc = appendString(sc, 2, scope.Version)
			ss = appendTag(ss, 1, wireBytes)
			ss = appendLen(ss, sc)
			for l < j && spans[l].InstrumentationScope() == scope {
				ss = appendTag(ss, 2, wireBytes)
				ss = appendLen(ss, span(spans[l]))
				l++
			}
			rs = appendTag(rs, 2, wireBytes)
			rs = appendLen(rs, ss)
			k = l
		}
		out = appendTag(out, 1, wireBytes)
		out = appendLen(out, rs)
		i = j
	}
	return out
}

// span encodes a Span.
func span(s sdktrace.ReadOnlySpan) []byte {
	var b []byte
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	b = appendBytes(b, 1, tid[:])
	b = appendBytes(b, 2, sid[:])
	b = appendString(b, 3, sc.TraceState().String())
	if p := s.Parent(); p.IsValid() {
		psid := p.SpanID()
		b = appendBytes(b, 4, psid[:])
	}
	b = appendString(b, 5, s.Name())
	// SpanKind: the SDK's values are OTLP's.
	if k := s.SpanKind(); k > oteltrace.SpanKindUnspecified {
		b = appendTag(b, 6, wireVarint)
		b = appendVarint(b, uint64(k))
	}
	b = appendTag(b, 7, wireFixed64)
	b = binary.LittleEndian.AppendUint64(b, uint64(s.StartTime().UnixNano()))
	b = appendTag(b, 8, wireFixed64)
	b = binary.LittleEndian.AppendUint64(b, uint64(s.EndTime().UnixNano()))
	for _, kv := range s.Attributes() {
		b = appendTag(b, 9, wireBytes)
		b = appendLen(b, keyValue(kv))
	}
	if n := s.DroppedAttributes(); n > 0 {
		b = appendTag(b, 10, wireVarint)
		b = appendVarint(b, uint64(n))
	}
	var st []byte
	switch s.Status().Code {
	case codes.Error:
		st = appendString(st, 2, s.Status().Description)
		st = appendTag(st, 3, wireVarint)
		st = appendVarint(st, 2) // STATUS_CODE_ERROR
	case codes.Ok:
		st = appendTag(st, 3, wireVarint)
		st = appendVarint(st, 1) // STATUS_CODE_OK
	}
	b = appendTag(b, 15, wireBytes)
	b = appendLen(b, st)
	// flags: the W3C trace flags, and that the parent's remoteness is known.
	flags := uint32(sc.TraceFlags()) | 0x100
	if s.Parent().IsRemote() {
		flags |= 0x200
	}
	b = appendTag(b, 16, wireFixed32)
	b = binary.LittleEndian.AppendUint32(b, flags)
	return b
}

// keyValue encodes a KeyValue.
func keyValue(kv attribute.KeyValue) []byte {
	var b []byte
	b = appendString(b, 1, string(kv.Key))
	b = appendTag(b, 2, wireBytes)
	return appendLen(b, anyValue(kv.Value))
}

// anyValue encodes an AnyValue.
func anyValue(v attribute.Value) []byte {
	var b []byte
	switch v.Type() {
	case attribute.STRING:
		b = appendTag(b, 1, wireBytes)
		b = appendLenString(b, v.AsString())
	case attribute.BOOL:
		b = appendTag(b, 2, wireVarint)
		b = appendVarint(b, encodeBool(v.AsBool()))
	case attribute.INT64:
		b = appendTag(b, 3, wireVarint)
		b = appendVarint(b, uint64(v.AsInt64()))
	case attribute.FLOAT64:
		b = appendTag(b, 4, wireFixed64)
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v.AsFloat64()))
	case attribute.STRINGSLICE:
		var arr []byte
		for _, s := range v.AsStringSlice() {
			arr = appendTag(arr, 1, wireBytes)
			arr = appendLen(arr, anyValue(attribute.StringValue(s)))
		}
		b = appendTag(b, 5, wireBytes)
		b = appendLen(b, arr)
	default:
		b = appendTag(b, 1, wireBytes)
		b = appendLenString(b, v.String())
	}
	return b
}

func appendString(b []byte, num uint64, s string) []byte {
	if s == "" {
		return b
	}
	b = appendTag(b, num, wireBytes)
	return appendLenString(b, s)
}

func appendBytes(b []byte, num uint64, v []byte) []byte {
	b = appendTag(b, num, wireBytes)
	return appendLen(b, v)
}

// The protobuf wire format, as much of it as encodeRequest needs.
const (
	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
	wireFixed32 = 5
)

func appendVarint(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

func appendTag(b []byte, field uint64, wire uint64) []byte {
	return appendVarint(b, field<<3|wire)
}

func appendLen(b, v []byte) []byte {
	return append(appendVarint(b, uint64(len(v))), v...)
}

func appendLenString(b []byte, v string) []byte {
	return append(appendVarint(b, uint64(len(v))), v...)
}

func encodeBool(v bool) uint64 {
	if v {
		return 1
	}
	return 0
}
