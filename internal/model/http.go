package model

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/e-agent/e/internal/jsonscan"
	"github.com/e-agent/e/internal/trace"
)

// Limits of the HTTP adapters.
const (
	defaultStallTimeout = 60 * time.Second
	maxErrorBody        = 64 << 10 // read at most this much of an error response
	maxDiagnostic       = 4 << 10  // Error.Body bound (U2)
	maxMessage          = 512      // Error.Message bound
	maxField            = 256      // Error.RequestID and Error.Type bound
)

// errStall is the cancellation cause set when a provider sends nothing for
// the stall timeout.
var errStall = errors.New("no bytes from the provider within the stall timeout")

// errDrain is the cancellation cause set when a finished response's body
// does not end within drainWait.
var errDrain = errors.New("the response body did not end after its last event")

// now is the clock for HTTP-date retry-after values; tests fix it.
var now = time.Now

// httpProvider holds what the HTTP adapters share: where to send, how to
// authenticate, and how long silence may last.
type httpProvider struct {
	name    string
	baseURL string
	key     string
	keyEnv  string // where key came from, named when the provider refuses it
	client  *http.Client
	stall   time.Duration
}

func newHTTPProvider(s ProviderSettings, name, baseURL string) httpProvider {
	p := httpProvider{name: s.Name, baseURL: strings.TrimRight(s.BaseURL, "/"), key: s.APIKey, keyEnv: s.KeyEnv,
		client: s.Client, stall: s.StallTimeout}
	if p.name == "" {
		p.name = name
	}
	if p.baseURL == "" {
		p.baseURL = baseURL
	}
	if p.client == nil {
		// No overall timeout: answers stream for minutes; the stall timer
		// bounds silence instead.
		p.client = &http.Client{}
	}
	if p.stall <= 0 {
		p.stall = defaultStallTimeout
	}
	return p
}

// call is one streaming request in flight. It is used by one goroutine.
type call struct {
	p      *httpProvider
	model  string
	parent context.Context
	ctx    context.Context // parent, cancelled with errStall on silence
	cancel context.CancelCauseFunc
	// The stall watch, from the request until the call closes: reading is
	// when the wait in progress (for the response head, or a body Read)
	// began (nanotime), 0 when none; watchdog is the timer that checks it,
	// replaced at each check; closed stops it.
	reading  atomic.Int64
	watchdog atomic.Pointer[time.Timer]
	closed   atomic.Bool
	body     io.ReadCloser
	hook     ReadHook // from the context, nil when none
	events   *sseReader
	reqID    string
	terminal string // the event that ends a complete stream, for error messages
}

// start posts body as JSON to path and returns the call once a successful
// response head has arrived. Failures are *Error values, or ctx.Err() when
// ctx ended.
func (p *httpProvider) start(ctx context.Context, model, path string, header http.Header, body any, terminal string) (*call, error) {
	c := &call{p: p, model: model, parent: ctx, terminal: terminal, hook: readHook(ctx)}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(body); err != nil {
		return nil, c.fail("request", false, "", "encode request: "+err.Error(), err)
	}
	c.ctx, c.cancel = context.WithCancelCause(ctx)
	c.reading.Store(nanotime()) // waiting for the response head
	c.arm(p.stall)
	req, err := http.NewRequestWithContext(c.ctx, http.MethodPost, p.baseURL+path, &buf)
	if err != nil {
		c.close()
		return nil, c.fail("connect", false, "", "build request: "+err.Error(), err)
	}
	req.Header = header
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	if tp := trace.Traceparent(ctx); tp != "" {
		req.Header.Set("traceparent", tp) // W3C Trace Context
	}
	resp, err := p.client.Do(req)
	c.reading.Store(0)
	if err != nil {
		defer c.close()
		return nil, c.transportErr("connect", err)
	}
	// The id is the provider's (or a proxy's) text: it may echo the key.
	c.reqID = c.field(cmp.Or(resp.Header.Get("x-request-id"), resp.Header.Get("request-id")))
	c.body = resp.Body
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer c.close()
		return nil, c.statusErr(resp)
	}
	if ct := resp.Header.Get("Content-Type"); strings.HasPrefix(ct, "application/json") {
		// A server that ignored stream:true; retrying would not help.
		defer c.close()
		raw, _ := io.ReadAll(io.LimitReader(c.stallReader(), maxErrorBody))
		e := c.fail("decode", false, "", "expected an event stream, got "+ct, nil)
		e.Status = resp.StatusCode
		e.Body = c.diagnostic(raw)
		return nil, e
	}
	c.events = newSSEReader(c.stallReader(), maxEventSize)
	return c, nil
}

// stallReader returns the response body; a Read that waits for the stall
// timeout cancels the call, while time spent by the consumer between
// Reads does not count as silence. Each Read only stamps when it began
// and ends (a stream read an event at a time makes a Read per event): the
// timer, armed by start, checks the stamp when it fires and re-arms itself.
func (c *call) stallReader() io.Reader {
	return readerFunc(func(b []byte) (int, error) {
		if c.hook != nil {
			c.hook.Release()
		}
		c.reading.Store(nanotime())
		n, err := c.body.Read(b)
		c.reading.Store(0)
		if c.hook != nil {
			c.hook.Hold()
		}
		return n, err
	})
}

// arm starts the stall watch's next check, after d.
func (c *call) arm(d time.Duration) { c.watchdog.Store(time.AfterFunc(d, c.watch)) }

// watch is the stall watch's check: it cancels the call if the Read in
// progress has waited for the stall timeout, or checks again when it would.
func (c *call) watch() {
	if c.closed.Load() {
		return
	}
	wait := c.p.stall
	if since := c.reading.Load(); since != 0 {
		waited := time.Duration(nanotime() - since)
		if waited >= c.p.stall {
			c.cancel(errStall)
			return
		}
		wait -= waited
	}
	c.arm(wait)
}

// clock is the origin of nanotime.
var clock = time.Now()

// nanotime returns monotonic nanoseconds since clock, never 0.
func nanotime() int64 { return int64(time.Since(clock)) | 1 }

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(b []byte) (int, error) { return f(b) }

// close releases the call; it is safe after a failed start.
func (c *call) close() {
	if c.hook != nil {
		c.hook.Release() // before the drain's wait
	}
	c.closed.Store(true)
	if t := c.watchdog.Load(); t != nil {
		t.Stop()
	}
	c.drain()
	if c.cancel != nil {
		c.cancel(nil)
	}
	if c.body != nil {
		c.body.Close()
	}
}

// Bounds of the read that ends a finished response's body; tests lengthen
// drainWait so a loaded machine cannot change their verdict.
var drainWait = 10 * time.Millisecond

const drainBytes = 4 << 10

// drain reads the end of a response the call is done with (an HTTP/1.1
// chunked body's last chunk, normally sent with or just after the final
// event), so the connection goes back to the client's pool: a body closed
// before its end closes the connection, and every model call would pay a
// new TCP (and TLS) handshake. A server that keeps the body open, or has
// more to say, loses the connection after drainWait or drainBytes.
func (c *call) drain() {
	if c.body == nil || c.ctx.Err() != nil {
		return // cancelled or failed: the connection goes
	}
	t := time.AfterFunc(drainWait, func() { c.cancel(errDrain) })
	_, _ = io.CopyN(io.Discard, c.body, drainBytes)
	t.Stop()
}

// next returns the next event, or the classified reason there is none.
func (c *call) next() (rawEvent, error) {
	ev, err := c.events.NextRaw()
	if err != nil {
		return ev, c.transportErr("stream", err)
	}
	return ev, nil
}

// decode unmarshals an event's data; a malformed event is fatal.
func (c *call) decode(ev rawEvent, v any) error {
	if err := json.Unmarshal(ev.Data, v); err != nil {
		what := "a stream event" // an SSE event without an event: line
		if len(ev.Event) > 0 {
			what = fmt.Sprintf("the stream's %q event", ev.Event)
		}
		e := c.fail("decode", false, "", fmt.Sprintf("malformed JSON in %s: %v", what, err), err)
		e.Body = c.diagnostic(ev.Data)
		return e
	}
	return nil
}

// transportErr classifies a failure to get or read a response.
func (c *call) transportErr(stage string, err error) error {
	if c.parent.Err() != nil {
		return c.parent.Err()
	}
	if errors.Is(context.Cause(c.ctx), errStall) {
		return c.fail(stage, true, "stall", fmt.Sprintf("no data from the provider for %v", c.p.stall), errStall)
	}
	switch {
	case errors.Is(err, io.EOF):
		return c.fail(stage, true, "", "stream ended before "+c.terminal, io.ErrUnexpectedEOF)
	case errors.Is(err, errEventTooLarge):
		return c.fail("decode", false, "", err.Error(), err)
	case stage == "stream":
		// Any read failure mid-stream (reset, broken chunking) cut the answer.
		return c.fail(stage, true, "", err.Error(), err)
	}
	return c.fail(stage, retryableNetErr(err), "", err.Error(), err)
}

// retryableNetErr reports whether a failure to reach the server may pass.
func retryableNetErr(err error) bool {
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return !dns.IsNotFound
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	var op *net.OpError
	return errors.As(err, &op) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED)
}

// statusErr classifies an HTTP error response.
func (c *call) statusErr(resp *http.Response) *Error {
	raw, _ := io.ReadAll(io.LimitReader(c.stallReader(), maxErrorBody))
	kind, msg := parseErrorBody(raw)
	if msg == "" {
		msg = http.StatusText(resp.StatusCode)
	}
	e := c.fail("request", retryableStatus(resp.StatusCode, kind), kind, msg, nil)
	e.Status = resp.StatusCode
	if resp.StatusCode == http.StatusUnauthorized {
		// The key is refused: say where it came from, the one thing an
		// operator can fix (never the key itself).
		e.KeyEnv = c.p.keyEnv
	}
	e.RetryAfter, e.RetryAfterGiven = retryAfter(resp.Header)
	e.Body = c.diagnostic(raw)
	return e
}

// retryableStatus classifies an HTTP status; kind refines it where a
// provider uses one status for both (OpenAI's 429 for an exhausted quota).
func retryableStatus(status int, kind string) bool {
	switch status {
	case 408, 409, 500, 502, 503, 504, 529:
		return true
	case 429:
		return kind != "insufficient_quota"
	}
	return false
}

// retryableKind classifies a provider error type or code sent mid-stream.
func retryableKind(kind string) bool {
	for _, k := range []string{"overloaded", "rate_limit", "server_error", "api_error", "timeout", "unavailable", "internal"} {
		if strings.Contains(kind, k) {
			return true
		}
	}
	return false
}

// fail builds an *Error for this call.
func (c *call) fail(stage string, retryable bool, kind, msg string, err error) *Error {
	return &Error{
		Retryable: retryable,
		Provider:  c.p.name,
		Model:     c.p.name + "/" + c.model,
		Stage:     stage,
		RequestID: c.reqID,
		Type:      c.field(kind),
		Message:   c.oneLine(msg),
		Err:       err,
	}
}

// eventErr builds the *Error for an error the provider sent mid-stream.
func (c *call) eventErr(kind, msg string, raw []byte) *Error {
	if msg == "" {
		msg = "provider error"
	}
	e := c.fail("stream", retryableKind(kind), kind, msg, nil)
	e.Body = c.diagnostic(raw)
	return e
}

// parseErrorBody extracts the error type (or code) and message from the
// error shapes of OpenAI, Anthropic and compatible servers:
// {"error":{"type","code","message"}}, {"type":"error","error":{…}},
// {"error":"text"}, {"code","message"}.
func parseErrorBody(raw []byte) (kind, msg string) {
	var v struct {
		Error json.RawMessage `json:"error"`
		errorObject
	}
	if json.Unmarshal(raw, &v) != nil {
		return "", ""
	}
	var s string
	if json.Unmarshal(v.Error, &s) == nil {
		return "", s
	}
	var inner errorObject
	if json.Unmarshal(v.Error, &inner) == nil && (inner.Message != "" || inner.kind() != "") {
		return inner.kind(), inner.Message
	}
	return v.kind(), v.Message
}

// errorObject is the common shape of a provider error.
type errorObject struct {
	Type    string          `json:"type"`
	Code    json.RawMessage `json:"code"`
	Message string          `json:"message"`
}

// kind is the error's type, or its code where the type is missing or only
// says "error" (OpenAI's streamed error events).
func (o errorObject) kind() string {
	if o.Type != "" && o.Type != "error" {
		return o.Type
	}
	var s string
	if json.Unmarshal(o.Code, &s) == nil {
		return s
	}
	if len(o.Code) > 0 && string(o.Code) != "null" {
		return string(o.Code)
	}
	return ""
}

// retryAfter reads retry-after-ms, then retry-after (seconds or HTTP
// date), and says whether either gave a wait: 0 and a date in the past
// mean at once; a negative or unreadable value is no wait given.
func retryAfter(h http.Header) (time.Duration, bool) {
	if v := h.Get("retry-after-ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	v := h.Get("retry-after")
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s >= 0 {
			return time.Duration(s * float64(time.Second)), true
		}
		return 0, false
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now()), 0), true
	}
	return 0, false
}

var (
	secretKeyRE = regexp.MustCompile(`sk-[A-Za-z0-9_\-]{6,}`)
	bearerRE    = regexp.MustCompile(`(?i)(bearer\s+)[^\s"',;&]+`)
	apiKeyRE    = regexp.MustCompile(`(?i)((?:x-)?api[-_]?key["']?\s*[:=]\s*["']?)[^\s"',;&]+`)
)

// redactSecrets removes API keys from text meant for logs and errors: the
// configured key itself, sk-… keys, bearer tokens and api-key assignments.
func redactSecrets(s, key string) string {
	if len(key) >= 4 {
		s = strings.ReplaceAll(s, key, "[redacted]")
	}
	s = secretKeyRE.ReplaceAllString(s, "sk-[redacted]")
	s = bearerRE.ReplaceAllString(s, "${1}[redacted]")
	return apiKeyRE.ReplaceAllString(s, "${1}[redacted]")
}

// oneLine makes msg a short single redacted line.
func (c *call) oneLine(msg string) string {
	return truncate(strings.Join(strings.Fields(redactSecrets(msg, c.p.key)), " "), maxMessage)
}

// field makes a short provider-given value (a request id, an error type)
// one redacted line of at most maxField bytes.
func (c *call) field(s string) string {
	return truncate(strings.Join(strings.Fields(redactSecrets(strings.ToValidUTF8(s, "\uFFFD"), c.p.key)), " "), maxField)
}

// diagnostic makes raw a bounded redacted text for Error.Body.
func (c *call) diagnostic(raw []byte) string {
	return truncate(redactSecrets(strings.ToValidUTF8(string(raw), "\uFFFD"), c.p.key), maxDiagnostic)
}

// truncate cuts s to at most n bytes on a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// answer assembles a streamed answer in provider order and forwards each
// piece to emit as it arrives.
type answer struct {
	emit  func(Delta)
	parts []Part
	text  map[int]*strings.Builder // text or reasoning part → its text so far, without quadratic copying
	args  map[int]*strings.Builder // tool_call part → arguments so far
	calls map[int]int              // tool_call part → the call's position
}

func newAnswer(emit func(Delta)) *answer {
	if emit == nil {
		emit = func(Delta) {}
	}
	return &answer{emit: emit, text: map[int]*strings.Builder{}, args: map[int]*strings.Builder{}, calls: map[int]int{}}
}

// open starts a text or reasoning part and returns its index.
func (a *answer) open(typ string) int {
	a.parts = append(a.parts, Part{Type: typ})
	a.text[len(a.parts)-1] = &strings.Builder{}
	return len(a.parts) - 1
}

// tail returns the last part when it has type typ, else opens one: for
// APIs that stream text and reasoning without block boundaries.
func (a *answer) tail(typ string) int {
	if n := len(a.parts); n > 0 && a.parts[n-1].Type == typ {
		return n - 1
	}
	return a.open(typ)
}

// add appends s to the text or reasoning part i.
func (a *answer) add(i int, s string) {
	if s == "" {
		return
	}
	a.text[i].WriteString(s)
	kind := DeltaText
	if a.parts[i].Type == PartReasoning {
		kind = DeltaReasoning
	}
	a.emit(Delta{Kind: kind, Text: s})
}

// addQuoted appends the scanned JSON string raw to the text or reasoning
// part i: it is decoded straight into the part's text, and the delta
// emitted is a view of that text, so a delta costs no allocation.
func (a *answer) addQuoted(i int, raw []byte) {
	b := a.text[i]
	from := b.Len()
	jsonscan.Unquote(b, raw)
	if b.Len() == from {
		return
	}
	kind := DeltaText
	if a.parts[i].Type == PartReasoning {
		kind = DeltaReasoning
	}
	a.emit(Delta{Kind: kind, Text: b.String()[from:]})
}

// openCall starts a tool call and emits its first fragment.
func (a *answer) openCall(id, name, args string) int {
	i := len(a.parts)
	a.parts = append(a.parts, Part{Type: PartToolCall, ID: id, Name: name})
	a.calls[i] = len(a.calls)
	a.args[i] = &strings.Builder{}
	a.args[i].WriteString(args)
	a.emit(Delta{Kind: DeltaToolCall, Index: a.calls[i], ID: id, Name: name, Text: args})
	return i
}

// addArgs appends a fragment of tool call i's arguments.
func (a *answer) addArgs(i int, s string) {
	if s == "" {
		return
	}
	a.args[i].WriteString(s)
	a.emit(Delta{Kind: DeltaToolCall, Index: a.calls[i], Text: s})
}

// setArgs replaces tool call i's arguments with the provider's final text.
func (a *answer) setArgs(i int, s string) {
	a.args[i].Reset()
	a.args[i].WriteString(s)
}

// sign sets the provider signature of reasoning part i.
func (a *answer) sign(i int, sig string) { a.parts[i].Signature = sig }

// streamed is the Response a call that fails returns: the message of what
// was emitted and the answer's id and model when the stream gave them
// (resp's), or nil when it had none of them.
func (a *answer) streamed(resp *Response) *Response {
	if len(a.parts) == 0 && resp.ResponseID == "" && resp.ResponseModel == "" {
		return nil
	}
	return &Response{Message: a.message(), ResponseID: resp.ResponseID, ResponseModel: resp.ResponseModel}
}

// hasCalls reports whether the answer holds a tool call.
func (a *answer) hasCalls() bool { return len(a.calls) > 0 }

// message returns the assembled assistant message. Empty text parts are
// dropped. Arguments that are not valid JSON (a model can emit broken JSON)
// are kept as a JSON string, so the message stays encodable and the tool
// layer can report them.
func (a *answer) message() Message {
	content := make([]Part, 0, len(a.parts))
	for i, p := range a.parts {
		if b := a.text[i]; b != nil {
			p.Text = b.String()
		}
		switch p.Type {
		case PartToolCall:
			args := a.args[i].String()
			switch {
			case strings.TrimSpace(args) == "":
				p.Arguments = json.RawMessage("{}")
			case json.Valid([]byte(args)):
				p.Arguments = json.RawMessage(args)
			default:
				p.Arguments, _ = json.Marshal(args)
			}
		case PartText:
			if p.Text == "" {
				continue
			}
		case PartReasoning:
			if p.Text == "" && p.Signature == "" {
				continue
			}
		}
		content = append(content, p)
	}
	return Message{Role: RoleAssistant, Content: content}
}

// Reasoning signatures are stored tagged with the API that made them
// ("anthropic:…", "anthropic-redacted:…", "openai-responses:…"), so a
// conversation moved to another provider never sends it foreign opaque data.
func tagSignature(tag, sig string) string {
	if sig == "" {
		return ""
	}
	return tag + ":" + sig
}

// PlainSignature returns sig as the API that made it sent it, without the
// tag e keeps beside it (for front ends that show provider data as is).
func PlainSignature(sig string) string {
	if _, s, ok := strings.Cut(sig, ":"); ok {
		return s
	}
	return sig
}

// untagSignature returns the signature made by the API named tag, if sig is one.
func untagSignature(tag, sig string) (string, bool) {
	return strings.CutPrefix(sig, tag+":")
}
