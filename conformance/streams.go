package conformance

// This file reads what the server prints and matches it, stream by
// stream, against the case's expect section.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

type stream struct {
	key       string
	exp       []*expectation
	pos       int
	floats    []*expectation // the "~" lines, out of exp's order
	floated   []bool         // which of floats are met
	types     map[string]bool
	pending   map[string]any  // a text/reasoning/tool_output run being joined
	pendRun   string          // the run pending is of (dialect.delta)
	pendText  strings.Builder // the run's text so far: joined in place, not re-copied per delta
	pendStale bool            // pending's delta lags pendText
	pendStep  string
	pendIdx   int
	responded bool
	quiet     bool // acp: its session/prompt was answered and no request about it followed (K5)
	open      int  // acp: requests about it sent and not answered yet
}

func (r *run) stream(key string) *stream {
	s := r.streams[key]
	if s == nil {
		s = &stream{key: key, types: map[string]bool{}}
		r.streams[key] = s
	}
	return s
}

// joinExpected joins adjacent expected deltas of one stream, as received
// ones are joined, so that a case may split text however it likes.
func joinExpected(d dialect, exp []*expectation) []*expectation {
	var out []*expectation
	last := map[string]*expectation{}
	for _, e := range exp {
		if p := last[e.stream]; p != nil && !p.optional && !e.optional && !p.float && !e.float && (p.label == "" || e.label == "") {
			run1, pd, ok1 := d.delta(p.value)
			run2, ed, ok2 := d.delta(e.value)
			if ok1 && ok2 && run1 == run2 && !isPattern(pd) && !isPattern(ed) {
				joined := *p
				joined.value = cloneJSON(p.value).(map[string]any)
				d.setDelta(joined.value, pd+ed)
				if e.label != "" {
					joined.label = e.label
				}
				*p = joined
				continue
			}
		}
		c := *e
		out = append(out, &c)
		last[e.stream] = &c
	}
	return out
}

// mergeable reports whether e rpc events of type t are deltas.
func mergeable(t string) bool {
	return t == "text" || t == "reasoning" || t == "tool_output" || t == "shell_output"
}

func (r *run) signal() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

type pump struct {
	r        *run
	deadline <-chan time.Time
	ctx      context.Context
	timeout  time.Duration
	expired  bool
}

// until feeds received lines to the matcher until done holds, the server
// closes stdout, or the case times out.
func (p *pump) until(what string, done func() bool) *Divergence {
	for {
		if div := p.drain(); div != nil {
			return div
		}
		p.r.mu.Lock()
		ok, eof, queued := done(), p.r.eof, len(p.r.lineQueue) > 0
		var doomed *expectation
		if !ok && !eof && !queued {
			doomed = p.r.doomed()
		}
		p.r.mu.Unlock()
		if queued {
			// Lines came after drain, with EOF maybe: feed them before
			// judging done, or finish would call them missing.
			continue
		}
		if ok {
			return nil
		}
		if doomed != nil {
			return &Divergence{Step: doomed.step(), Message: "expected line never arrives: the server under test never prints a line that could match it (waiting for " + what + ")",
				Expected: doomed.raw, Got: "(nothing)"}
		}
		if eof {
			if strings.HasPrefix(what, "@") {
				return &Divergence{Step: "wait " + what, Message: "the server closed stdout before " + what + " was seen"}
			}
			return nil // missing lines are reported by finish
		}
		if p.expired {
			return &Divergence{Step: "wait", Message: fmt.Sprintf("timed out after %v waiting for %s", p.timeout, what)}
		}
		select {
		case <-p.r.wake:
		case <-p.deadline:
			p.expired = true
		case <-p.ctx.Done():
			return &Divergence{Step: "wait", Message: "cancelled: " + p.ctx.Err().Error()}
		}
	}
}

// doomed is a required expectation not met yet that no line the server
// prints can meet (Options.never), or nil; r.mu is held.
func (r *run) doomed() *expectation {
	if r.o.never == nil {
		return nil
	}
	for _, key := range sortedKeys(r.streams) {
		s := r.streams[key]
		left := slices.Clone(s.exp[min(s.pos, len(s.exp)):])
		for i, f := range s.floats {
			if !s.floated[i] {
				left = append(left, f)
			}
		}
		for _, e := range left {
			if e.optional || e.repeat {
				continue
			}
			method := ""
			if lc, err := r.d.classify(e.value, r.c, nil); err == nil && !lc.event {
				method = r.methods[lc.id]
			}
			if r.o.never(e.value, method) {
				return e
			}
		}
	}
	return nil
}

// drain feeds every queued line.
func (p *pump) drain() *Divergence {
	r := p.r
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.tapeDivs) > 0 {
		return r.tapeDivs[0]
	}
	for len(r.lineQueue) > 0 {
		l := r.lineQueue[0]
		r.lineQueue = r.lineQueue[1:]
		if div := r.feed(l); div != nil {
			return div
		}
	}
	if r.readErr != nil {
		return &Divergence{Step: "stdout", Message: r.readErr.Error()}
	}
	return nil
}

// readText keeps the whole of stdout (print mode with text output).
func (r *run) readText(f io.Reader) {
	b, err := io.ReadAll(f)
	r.mu.Lock()
	r.stdoutText = string(b)
	if err != nil {
		r.readErr = err
	}
	r.eof = true
	r.mu.Unlock()
	r.signal()
}

// read queues the server's stdout lines until EOF.
func (r *run) read(f io.Reader) {
	br := bufio.NewReaderSize(f, 1<<16)
	for {
		line, err := br.ReadBytes('\n')
		r.mu.Lock()
		if len(line) > 0 {
			r.transcript = append(r.transcript, Exchange{At: time.Now(), Dir: "received", Line: string(line)})
			if line[len(line)-1] == '\n' {
				r.lineQueue = append(r.lineQueue, line[:len(line)-1])
			} else if err == io.EOF && !r.killed {
				r.readErr = fmt.Errorf("the last stdout line %q has no LF: output lines must be complete (F5)", shorten(string(line)))
			}
		}
		if err != nil {
			r.eof = true
		}
		r.mu.Unlock()
		r.signal()
		if err != nil {
			return
		}
	}
}

// feed matches one received line; r.mu is held.
func (r *run) feed(raw []byte) *Divergence {
	r.received = append(r.received, string(raw))
	step := fmt.Sprintf("server line %d", len(r.received))
	v, err := decode(raw)
	obj, ok := v.(map[string]any)
	if err != nil || !ok {
		return &Divergence{Step: step, Message: "stdout line is not a JSON object: nothing but protocol lines may reach stdout (F5)", Got: shorten(string(raw))}
	}
	if r.c.printMode() {
		return r.feedPrint(raw, obj, step)
	}
	lc, err := r.d.classify(obj, r.c, r.resolveSession)
	if err != nil {
		return &Divergence{Step: step, Message: err.Error(), Got: shorten(string(raw))}
	}
	key := lc.key
	if r.o.Validator != nil {
		method := ""
		if !lc.event {
			method = r.answers(lc.id)
		}
		if div := r.validate(raw, method, step); div != nil {
			return div
		}
	}
	s := r.stream(key)
	if lc.event {
		if div := r.afterResponse(s, lc, raw, step); div != nil {
			return div
		}
		if !s.types[lc.typ] && !r.d.counts(obj, lc) && (!r.c.Strict || !r.d.knownType(lc.typ)) {
			// The case does not constrain this type here; a type no
			// schema knows never counts unless expected (P8).
			return nil
		}
		return r.event(s, lc.typ, obj, step)
	}
	_, hasResult := obj["result"]
	_, hasError := obj["error"]
	if hasResult && hasError && r.c.Dialect != DialectPi {
		// Additive fields are free, but these two are the answer itself:
		// a response is a success or a failure, not both (F2; JSON-RPC 2.0).
		return &Divergence{Step: step, Message: "response has both result and error: it must be one or the other (F2)", Got: shorten(string(raw))}
	}
	if lc.id != "null" && r.answered[lc.id] >= max(r.asked[lc.id], 1) {
		return &Divergence{Step: step, Message: fmt.Sprintf("request %s answered twice: every request gets exactly one response (F2)", lc.id), Got: shorten(string(raw))}
	}
	r.answered[lc.id]++
	s.responded = true
	if r.c.Dialect == DialectACP && s.open > 0 {
		s.open--
	}
	if _, refused := obj["error"]; r.c.Dialect == DialectACP && r.methods[lc.id] == "session/prompt" && !refused && s.open == 0 {
		// A prompt refused (one already runs) ends nothing, and a
		// request about the session sent before this answer (a second
		// prompt) may have updates of its own after it.
		s.quiet = true
	}
	if div := r.flush(s); div != nil {
		return div
	}
	return r.next(s, obj, step, len(r.received)-1)
}

// answers is the method of the request a response with id answers, for
// its result's schema. A client that reused the id for several requests
// gets their responses in an order the server picks, so none of them can
// be told apart: their results are checked against the envelope only
// (""); r.mu is held.
func (r *run) answers(id string) string {
	if r.asked[id] > 1 {
		return ""
	}
	return r.methods[id]
}

// afterResponse checks what may not follow a response: an e rpc request's
// events come before its response (S2); nothing of an ACP session comes
// between the response to its session/prompt and the client's next request
// about it (K5).
func (r *run) afterResponse(s *stream, lc lineClass, raw []byte, step string) *Divergence {
	switch {
	case r.c.Dialect == DialectACP && s.quiet:
		return &Divergence{Step: step, Message: fmt.Sprintf("%s of %s after the response to its session/prompt, before the client's next request about it: no update of the session follows the response (K5)",
			lc.typ, streamName(s.key)), Got: shorten(string(raw))}
	case r.c.Dialect == DialectACP || r.c.Dialect == DialectPi:
		return nil
	case s.key != "process" && s.responded && r.answered[s.key[2:]] >= r.asked[s.key[2:]]: // (a reused id: its later requests may still have events)
		return &Divergence{Step: step, Message: fmt.Sprintf("%s event of request %s after the response to that request: a prompt's events come before its response (S2)", lc.typ, s.key[2:]), Got: shorten(string(raw))}
	}
	return nil
}

// validate checks a line against the schemas, keeping the validator's
// notes; r.mu is held.
func (r *run) validate(raw []byte, method, step string) *Divergence {
	var notes []string
	var err error
	if r.c.Dialect == "" || r.c.Dialect == DialectERPC {
		notes, err = r.o.Validator.ValidateLine(raw, method)
	} else if dv, ok := r.o.Validator.(DialectValidator); ok {
		notes, err = dv.ValidateDialectLine(r.c.Dialect, raw)
	}
	for _, n := range notes {
		r.notes = append(r.notes, step+": "+n)
	}
	if err != nil {
		return &Divergence{Step: step, Message: "line fails the protocol schema: " + err.Error(), Got: shorten(string(raw))}
	}
	return nil
}

// feedPrint matches one line of e -p --json: an event, or the result line
// that must come last (P7); r.mu is held.
func (r *run) feedPrint(raw []byte, obj map[string]any, step string) *Divergence {
	typ, ok := obj["type"].(string)
	if r.c.Dialect == DialectPi {
		return r.feedPiJSON(raw, obj, step)
	}
	if !ok {
		return &Divergence{Step: step, Message: `e -p --json line without a string "type": every line is an event or the result line (P7)`, Got: shorten(string(raw))}
	}
	if r.sawResult {
		return &Divergence{Step: step, Message: "a line after the result line: the result line is the last (P7)", Got: shorten(string(raw))}
	}
	r.sawResult = typ == "result"
	if r.o.Validator != nil {
		if div := r.validate(raw, MethodPrint, step); div != nil {
			return div
		}
	}
	s := r.stream(printStream)
	if !s.types[typ] && (!r.c.Strict || !knownEventType(typ)) {
		return nil
	}
	return r.event(s, typ, obj, step)
}

// feedPiJSON matches one line of e --mode json (pi's JSON event stream):
// every line is typed, checked against schemas/pi, and matched as one
// stream; there is no result line. r.mu is held.
func (r *run) feedPiJSON(raw []byte, obj map[string]any, step string) *Divergence {
	lc, err := r.d.classify(obj, r.c, nil)
	if err != nil {
		return &Divergence{Step: step, Message: err.Error(), Got: shorten(string(raw))}
	}
	if r.o.Validator != nil {
		if div := r.validate(raw, "", step); div != nil {
			return div
		}
	}
	s := r.stream(printStream)
	if !s.types[lc.typ] && !r.d.counts(obj, lc) && (!r.c.Strict || !r.d.knownType(lc.typ)) {
		return nil
	}
	return r.event(s, lc.typ, obj, step)
}

// event matches one event of stream s: text-like deltas of one run are
// joined before matching, so chunking never matters; r.mu is held.
func (r *run) event(s *stream, typ string, obj map[string]any, step string) *Divergence {
	if run, text, ok := r.d.delta(obj); ok {
		if s.pending != nil && s.pendRun == run {
			s.pendText.WriteString(text)
			s.pendStale = true
			return nil
		}
		if div := r.flush(s); div != nil {
			return div
		}
		s.pending, s.pendRun, s.pendStep, s.pendIdx = obj, run, step, len(r.received)-1
		s.pendText.Reset()
		s.pendText.WriteString(text)
		return nil
	}
	if div := r.flush(s); div != nil {
		return div
	}
	return r.next(s, obj, step, len(r.received)-1)
}

func (r *run) flush(s *stream) *Divergence {
	if s.pending == nil {
		return nil
	}
	obj, step := r.joined(s), s.pendStep
	s.pending = nil
	return r.next(s, obj, step+" (joined deltas)", s.pendIdx)
}

// joined is s's pending run with its text joined so far.
func (r *run) joined(s *stream) map[string]any {
	if s.pendStale {
		r.d.setDelta(s.pending, s.pendText.String())
		s.pendStale = false
	}
	return s.pending
}

// next matches obj against the next expectation of its stream.
func (r *run) next(s *stream, obj map[string]any, step string, idx int) *Divergence {
	lc, _ := r.d.classify(obj, r.c, r.resolveSession)
	isEvent := lc.event
	if r.c.printMode() {
		isEvent = true
	}
	// A line the lines in order do not take, or that only a "?*" run
	// would, is a "~" line's when it matches one.
	if s.floating() != nil {
		if i := r.peekAt(s, s.pos, obj); (i < 0 || s.exp[i].repeat || !r.matches(s.exp[i], obj)) && r.float(s, obj, idx) {
			return nil
		}
	}
	if s.pos >= len(s.exp) {
		what := "response"
		if isEvent {
			what = fmt.Sprintf("%v event", lc.typ)
		}
		msg := fmt.Sprintf("unexpected %s: the case expects no more lines of %s", what, streamName(s.key))
		if len(s.exp) == 0 {
			msg = fmt.Sprintf("unexpected %s: the case expects no lines of %s", what, streamName(s.key))
		}
		return &Divergence{Step: step, Message: msg, Got: shorten(canon(obj))}
	}
	e := s.exp[s.pos]
	if e.repeat {
		if s.pos+1 < len(s.exp) && r.m.match("", s.exp[s.pos+1].value, obj, true, map[string]any{}) == nil {
			s.pos++ // the line is the next expectation's: the run of e ends
			return r.next(s, obj, step, idx)
		}
		if nb := map[string]any{}; r.m.match("", e.value, obj, true, nb) == nil {
			r.m.commit(nb)
			return nil // one more line of e's run
		}
	}
	if e.optional {
		if r.m.match("", e.value, obj, true, map[string]any{}) != nil {
			s.pos++ // the optional line is absent
			return r.next(s, obj, step, idx)
		}
	}
	if e.event && !isEvent {
		elc, _ := r.d.classify(e.value, r.c, nil)
		return &Divergence{Step: e.step(), Message: fmt.Sprintf("%s is the response to request %s, but the expected %v event has not arrived: a request's events come before its response (S2)",
			step, lc.id, elc.typ), Expected: e.raw, Got: shorten(canon(obj))}
	}
	nb := map[string]any{}
	if mm := r.m.match("", e.value, obj, true, nb); mm != nil {
		return &Divergence{Step: e.step(), Message: fmt.Sprintf("%s does not match the next expected line of %s: %s", step, streamName(s.key), mm.reason),
			Pointer: mm.pointer, Expected: mm.want, Got: mm.got}
	}
	r.m.commit(nb)
	s.pos++
	if e.label != "" {
		r.matched[e.label] = true
		r.labelAt[idx] = e.label
	}
	return nil
}

// float meets the first "~" line of s not met yet that obj matches, and
// reports whether there was one. Like any line of its stream, one ends
// the run of deltas it comes in; the expected run ends at it too.
func (r *run) float(s *stream, obj map[string]any, idx int) bool {
	for i, e := range s.floats {
		nb := map[string]any{}
		if s.floated[i] || r.m.match("", e.value, obj, true, nb) != nil {
			continue
		}
		r.m.commit(nb)
		s.floated[i] = true
		if e.label != "" {
			r.matched[e.label] = true
			r.labelAt[idx] = e.label
		}
		return true
	}
	return false
}

// end is the index after the stream's last required expectation: the
// optional lines after it may never come.
func (s *stream) end() int {
	n := len(s.exp)
	for n > s.pos && s.exp[n-1].optional {
		n--
	}
	return n
}

// required is the stream's earliest expectation (by line) not met yet
// that is not optional: its next one in order, or a "~" line; nil if none.
func (s *stream) required() *expectation {
	var first *expectation
	for _, e := range s.exp[min(s.pos, len(s.exp)):] {
		if !e.optional {
			first = e
			break
		}
	}
	if f := s.floating(); f != nil && (first == nil || f.line < first.line) {
		first = f
	}
	return first
}

// floating is the stream's first "~" line not met yet, or nil.
func (s *stream) floating() *expectation {
	for i, e := range s.floats {
		if !s.floated[i] {
			return e
		}
	}
	return nil
}

func (e *expectation) step() string {
	s := fmt.Sprintf("expect line %d", e.line)
	if e.label != "" {
		s += " (@" + e.label + ")"
	}
	return s
}

func streamName(key string) string {
	switch key {
	case "process":
		return "the process stream"
	case printStream:
		return "the e -p --json output"
	}
	if name, ok := strings.CutPrefix(key, "s:"); ok {
		return "session {{" + name + "}}"
	}
	if id, ok := strings.CutPrefix(key, "s="); ok {
		return "session " + id
	}
	if typ, ok := strings.CutPrefix(key, "command:"); ok {
		return "the " + typ + " stream"
	}
	return "request " + strings.TrimPrefix(key, "r:")
}

// pendingMatches reports whether a stream's joined-so-far deltas would
// match its next expectation (and that expectation is the last or labelled).
func (r *run) pendingMatches(s *stream) (*expectation, bool) {
	if s.pending == nil {
		return nil, false
	}
	obj := r.joined(s)
	if i := r.peekAt(s, s.pos, obj); i >= 0 {
		return s.exp[i], r.matches(s.exp[i], obj)
	}
	return nil, false
}

// peekAt is the index of the expectation of s, from index from on, that
// next would match obj against, past the optional lines it would skip and
// a "?*" run obj would end; -1 past the last.
func (r *run) peekAt(s *stream, from int, obj map[string]any) int {
	for i := from; i < len(s.exp); i++ {
		e := s.exp[i]
		if e.repeat && i+1 < len(s.exp) && r.matches(s.exp[i+1], obj) {
			continue // obj ends the run: the next expectation takes it
		}
		if e.optional && !r.matches(e, obj) {
			continue
		}
		return i
	}
	return -1
}

func (r *run) matches(e *expectation, obj map[string]any) bool {
	return r.m.match("", e.value, obj, true, map[string]any{}) == nil
}

func (r *run) labelsDone(labels []string) bool {
	for _, l := range labels {
		if r.matched[l] {
			continue
		}
		found := false
		for _, s := range r.streams {
			if e, ok := r.pendingMatches(s); ok && e.label == l {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func (r *run) allMatched() bool {
	for _, s := range r.streams {
		if s.floating() != nil {
			return false
		}
		left := s.end() - s.pos
		if left <= 0 {
			continue
		}
		if _, ok := r.pendingMatches(s); left == 1 && ok {
			continue
		}
		return false
	}
	return true
}

// firstUnmatched is the earliest expectation (by line) not yet met.
func (r *run) firstUnmatched() *expectation {
	var first *expectation
	for _, s := range r.streams {
		if e := s.required(); e != nil && (first == nil || e.line < first.line) {
			first = e
		}
	}
	return first
}

// finish flushes joined deltas and reports the first expectation never met.
func (r *run) finish(tape *tapeServer) *Divergence {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.tapeDivs) > 0 {
		return r.tapeDivs[0]
	}
	var first *expectation
	var firstStream *stream
	for _, s := range r.streams {
		if div := r.flush(s); div != nil {
			return div
		}
		if e := s.required(); e != nil && (first == nil || e.line < first.line) {
			first, firstStream = e, s
		}
	}
	if first != nil {
		return &Divergence{Step: first.step(), Message: fmt.Sprintf("expected line never arrived (%d of %s's %d expected lines matched)",
			firstStream.pos, streamName(firstStream.key), len(firstStream.exp)), Expected: first.raw, Got: "(nothing)"}
	}
	if n := tape.unused(); n > 0 {
		return &Divergence{Step: "tape", Message: fmt.Sprintf("%d of %d tape entries were never requested", n, len(r.c.tape))}
	}
	return nil
}

func tail(s []string, n int) []string {
	if len(s) > n {
		s = s[len(s)-n:]
	}
	out := make([]string, len(s))
	for i, l := range s {
		out[i] = shorten(l)
	}
	return out
}

func shorten(s string) string {
	if len(s) > 400 {
		return s[:400] + "…"
	}
	return s
}
