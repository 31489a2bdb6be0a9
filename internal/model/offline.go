package model

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
	"unsafe"

	"github.com/e-agent/e/internal/prefault"
)

// OfflineID is the catalog id of the built-in offline model.
const OfflineID = "e/offline"

// Limits of directive arguments, so that a typo cannot stall a test for hours
// or allocate gigabytes.
const (
	maxDelayMS   = 3_600_000
	maxLongWords = 1_000_000
)

// Offline is the built-in offline model: deterministic, no network. It
// follows the directives in the newest user message; the package
// documentation lists them. The zero value is ready to use.
type Offline struct{}

// segment is what one model call of the turn does.
type segment struct {
	think []string   // reasoning, one entry per /think line
	text  []textLine // text, one entry per /text or /long line
	calls []Part
	delay time.Duration
	fail  *Error // from /error; nil when the call succeeds
	// failFirst limits fail to the first attempt (/error retryable).
	failFirst bool
	usage     *Usage
}

// Stream implements Provider.
func (Offline) Stream(ctx context.Context, req *Request, emit func(Delta)) (*Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	seg, err := offlineSegment(req)
	if err != nil {
		return nil, err
	}
	if seg.fail != nil && seg.failFirst && req.Attempt > 0 {
		seg.fail = nil
	}

	done := ctx.Done()
	// The answer streams as from a provider whose first read brings its
	// first delta and whose later reads bring the rest at once (ReadHook):
	// the first event goes out on its own, those after it in the writes of
	// a burst, before the call ends or waits out a /delay.
	hook := readHook(ctx)
	held := false // hook holds: the first delta went out
	defer func() {
		if held {
			hook.Release()
		}
	}()
	wait := func() error {
		if seg.delay <= 0 {
			select { // a receive that cannot block: cheaper per word than ctx.Err's lock
			case <-done:
				return ctx.Err()
			default:
				return nil
			}
		}
		if held {
			hook.Release()
			defer hook.Hold()
		}
		t := time.NewTimer(seg.delay)
		defer t.Stop()
		select {
		case <-done:
			return ctx.Err()
		case <-t.C:
			return nil
		}
	}
	var words int64
	emitted := 0 // bytes of the part being streamed that went out: its words are consecutive
	word := func(kind string) func(string) error {
		return func(w string) error {
			if err := wait(); err != nil {
				return err
			}
			emit(Delta{Kind: kind, Text: w})
			if !held && hook != nil {
				hook.Hold()
				held = true
			}
			words++
			emitted += len(w)
			return nil
		}
	}

	msg := Message{Role: RoleAssistant, Content: []Part{}}
	// failed returns err with what went out (Provider): msg, and of part
	// typ being streamed, the first emitted bytes of its text.
	failed := func(err error, typ, text string) (*Response, error) {
		if text = text[:emitted]; text != "" {
			msg.Content = append(msg.Content, Part{Type: typ, Text: text})
		}
		if len(msg.Content) == 0 {
			return nil, err
		}
		return &Response{Message: msg}, err
	}
	if reasoning := strings.Join(seg.think, "\n"); reasoning != "" {
		if err := eachWord(reasoning, word(DeltaReasoning)); err != nil {
			return failed(err, PartReasoning, reasoning)
		}
		msg.Content = append(msg.Content, Part{Type: PartReasoning, Text: reasoning})
	}
	if len(seg.text) > 0 {
		emitted = 0
		text, err := streamText(seg.text, word(DeltaText))
		if err != nil {
			return failed(err, PartText, text)
		}
		msg.Content = append(msg.Content, Part{Type: PartText, Text: text})
	}
	emitted = 0
	for i, call := range seg.calls {
		// Two fragments per call, split on a rune boundary, so that
		// consumers must assemble arguments as they do for real providers.
		args := string(call.Arguments)
		half := len(args) / 2
		for half > 0 && !utf8.RuneStart(args[half]) {
			half--
		}
		for j, frag := range []string{args[:half], args[half:]} {
			if err := wait(); err != nil {
				return failed(err, "", "")
			}
			d := Delta{Kind: DeltaToolCall, Text: frag, Index: i}
			if j == 0 {
				d.ID, d.Name = call.ID, call.Name
			}
			emit(d)
		}
		msg.Content = append(msg.Content, call)
	}
	if seg.fail != nil {
		if err := wait(); err != nil {
			return failed(err, "", "")
		}
		return failed(seg.fail, "", "")
	}

	resp := &Response{Message: msg, StopReason: StopEnd}
	if len(seg.calls) > 0 {
		resp.StopReason = StopToolUse
	}
	if seg.usage != nil {
		resp.Usage = *seg.usage
	} else {
		resp.Usage = Usage{Input: max(requestWords(req), 1), Output: words + int64(len(seg.calls))}
	}
	return resp, nil
}

// offlineSegment decides what this call of the turn does.
func offlineSegment(req *Request) (segment, error) {
	if strings.HasPrefix(req.System, "Summarize") {
		return segment{text: []textLine{{text: compactionSummary(req.Messages)}}}, nil
	}
	prompt, call := newestPrompt(req.Messages)
	segs, err := parseDirectives(prompt)
	if err != nil {
		return segment{}, err
	}
	directed := segs != nil
	if segs == nil {
		segs = []segment{{text: []textLine{{text: plainReply(prompt)}}}}
	}
	seg := segment{text: []textLine{{text: "done."}}}
	if call < len(segs) {
		seg = segs[call]
	}
	// Asked for a value of a schema, a call whose directives say nothing
	// of text, tools or failure answers with a minimal value of it.
	if req.OutputSchema != nil && (!directed || call >= len(segs) || len(seg.text) == 0 && len(seg.calls) == 0 && seg.fail == nil) {
		seg.text = []textLine{{text: string(minimalInstance(req.OutputSchema))}}
	}
	return seg, nil
}

// newestPrompt returns the text of the newest user message that has text,
// and the index of this call in the turn: the number of assistant
// messages after that user message.
func newestPrompt(msgs []Message) (text string, call int) {
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		switch {
		case m.Role == RoleAssistant:
			call++
		case m.Role == RoleUser && hasText(m) && !strings.HasPrefix(m.Text(), CorrectionPrefix):
			return m.Text(), call
		}
	}
	return "", call
}

func hasText(m Message) bool {
	for _, p := range m.Content {
		if p.Type == PartText {
			return true
		}
	}
	return false
}

// plainReply answers a prompt without directives.
func plainReply(prompt string) string {
	words := strings.Fields(prompt)
	return fmt.Sprintf("e/offline: received %d words: \"%s\"", len(words), firstRunes(strings.Join(words, " "), 60))
}

// compactionSummary answers the agent's compaction request. Whitespace is
// collapsed so that the summary holds no directive lines when it later
// becomes part of a prompt.
func compactionSummary(msgs []Message) string {
	var words []string
	for _, m := range msgs {
		if m.Role == RoleUser {
			words = append(words, strings.Fields(m.Text())...)
		}
	}
	return fmt.Sprintf("Summary of %d messages: %s", len(msgs), firstRunes(strings.Join(words, " "), 200))
}

func firstRunes(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}

// asciiSpace marks the ASCII bytes unicode.IsSpace counts.
var asciiSpace = [utf8.RuneSelf]bool{'\t': true, '\n': true, '\v': true, '\f': true, '\r': true, ' ': true}

// nextWord returns the length of the first word of s with the whitespace
// before it, so that the words of s concatenate back to s.
func nextWord(s string) int {
	i := 0
	for ; i < len(s) && s[i] < utf8.RuneSelf && asciiSpace[s[i]]; i++ {
	}
	inWord := false
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			if asciiSpace[c] {
				if inWord {
					return i
				}
			} else {
				inWord = true
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if unicode.IsSpace(r) {
			if inWord {
				return i
			}
		} else {
			inWord = true
		}
		i += size
	}
	return len(s)
}

// systemWords is what a system prompt counts, whatever it says: the prompt
// holds the working directory, the date and the environment, so counting
// it would make the same session's usage differ between machines and runs
// (a recorded case must replay in another temp dir, on another day).
const systemWords = 100

// requestWords counts the request's input: systemWords for a system
// prompt, plus one per word (a run of non-space characters) of every
// part's text and tool-call arguments. Counting words, not characters,
// keeps a path quoted in a tool result or an error one token however long
// the temp dir holding it is.
func requestWords(req *Request) int64 {
	var n int64
	if req.System != "" {
		n = systemWords
	}
	for _, m := range req.Messages {
		for _, p := range m.Content {
			n += int64(countFields(p.Text) + countFields(string(p.Arguments)))
		}
	}
	return n
}

// countFields is len(strings.Fields(s)) without the slice, which for a
// long history is megabytes made only to be counted: the pieces nextWord
// cuts, each a word with the whitespace before it, but for whitespace
// after the last word, which is a piece of its own.
func countFields(s string) int {
	n := 0
	for rest := s; rest != ""; rest = rest[nextWord(rest):] {
		n++
	}
	if r, _ := utf8.DecodeLastRuneInString(s); unicode.IsSpace(r) {
		n--
	}
	return n
}

// parseDirectives splits prompt into segments. It returns nil when prompt
// holds no directive line.
func parseDirectives(prompt string) ([]segment, error) {
	var segs []segment
	cur := segment{}
	found := false
	for n, line := range strings.Split(prompt, "\n") {
		line = strings.TrimSpace(line)
		word, rest := cutSpace(line)
		if !isDirective(word) {
			continue
		}
		found = true
		if word == "/then" {
			if rest != "" {
				return nil, malformed(n, line, "/then takes no arguments")
			}
			segs = append(segs, cur)
			cur = segment{}
			continue
		}
		if err := cur.add(word, rest, len(segs)); err != nil {
			return nil, malformed(n, line, err.Error())
		}
	}
	if !found {
		return nil, nil
	}
	return append(segs, cur), nil
}

func isDirective(word string) bool {
	switch word {
	case "/text", "/think", "/tool", "/then", "/delay", "/long", "/error", "/usage":
		return true
	}
	return false
}

// add applies one directive other than /then to s, the segment numbered seg.
func (s *segment) add(word, rest string, seg int) error {
	switch word {
	case "/text", "/think":
		if rest == "" {
			return fmt.Errorf("%s needs words", word)
		}
		if word == "/text" {
			s.text = append(s.text, textLine{text: rest})
		} else {
			s.think = append(s.think, rest)
		}
	case "/tool":
		name, args := cutSpace(rest)
		if name == "" || args == "" {
			return fmt.Errorf("want /tool NAME JSON")
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal([]byte(args), &obj); err != nil || obj == nil {
			return fmt.Errorf("arguments are not a JSON object")
		}
		s.calls = append(s.calls, Part{Type: PartToolCall, ID: fmt.Sprintf("call_%d_%d", seg, len(s.calls)),
			Name: name, Arguments: json.RawMessage(args)})
	case "/delay":
		if s.delay != 0 {
			return fmt.Errorf("a second /delay in one segment")
		}
		ms, err := strconv.Atoi(rest)
		if err != nil || ms < 0 || ms > maxDelayMS {
			return fmt.Errorf("want /delay MS with MS from 0 to %d", maxDelayMS)
		}
		s.delay = time.Duration(ms) * time.Millisecond
	case "/long":
		n, err := strconv.Atoi(rest)
		if err != nil || n < 1 || n > maxLongWords {
			return fmt.Errorf("want /long N with N from 1 to %d", maxLongWords)
		}
		s.text = append(s.text, textLine{long: n})
	case "/error":
		if s.fail != nil {
			return fmt.Errorf("a second /error in one segment")
		}
		kind, msg := cutSpace(rest)
		if msg == "" {
			msg = "simulated " + kind + " error"
		}
		e := &Error{Provider: "e", Model: OfflineID, Stage: "stream", Message: msg,
			Retryable: true, Status: 503, Type: "offline_retryable"}
		switch kind {
		case "retryable":
			s.failFirst = true
		case "persistent":
		case "fatal":
			e.Retryable, e.Status, e.Type = false, 400, "offline_fatal"
		default:
			return fmt.Errorf("want /error retryable|persistent|fatal [MESSAGE]")
		}
		s.fail = e
	case "/usage":
		if s.usage != nil {
			return fmt.Errorf("a second /usage in one segment")
		}
		errUsage := fmt.Errorf("want /usage INPUT OUTPUT CACHE_READ CACHE_WRITE_5M CACHE_WRITE_1H [REASONING], non-negative integers, REASONING at most OUTPUT")
		f := strings.Fields(rest)
		var v [6]int64
		if len(f) != len(v) && len(f) != len(v)-1 {
			return errUsage
		}
		for i := range f {
			n, err := strconv.ParseInt(f[i], 10, 64)
			if err != nil || n < 0 {
				return errUsage
			}
			v[i] = n
		}
		if v[5] > v[1] {
			return errUsage
		}
		s.usage = &Usage{Input: v[0], Output: v[1], CacheRead: v[2], CacheWrite5m: v[3], CacheWrite1h: v[4], Reasoning: v[5]}
	}
	return nil
}

// cutSpace splits s at its first space or tab, trimming both halves.
func cutSpace(s string) (head, tail string) {
	i := strings.IndexAny(s, " \t")
	if i < 0 {
		return s, ""
	}
	return s[:i], strings.TrimSpace(s[i+1:])
}

// textLine is one line of a segment's text: a /text line's words, or the
// long words "w1 w2 … wN" of /long N, which are made as they stream.
type textLine struct {
	text string
	long int // N of /long N; 0 for text
}

// size is the line's length in bytes.
func (l textLine) size() int {
	if l.long == 0 {
		return len(l.text)
	}
	n := 3*l.long - 1 // "w", a digit and a space before each word but the first
	for p := 10; p <= l.long; p *= 10 {
		n += l.long - p + 1 // a further digit for each word from p on
	}
	return n
}

// eachWord calls word with each word of s (nextWord), in order.
func eachWord(s string, word func(string) error) error {
	for len(s) > 0 {
		n := nextWord(s)
		if err := word(s[:n]); err != nil {
			return err
		}
		s = s[n:]
	}
	return nil
}

// streamText calls word with each word of the lines joined by LF, as
// eachWord splits them, and returns the joined text; after an error from
// word, the text made so far. A /long line's words
// are written into the text as they go out, so the first goes out at
// once, whatever N; every word is a piece of the text, not a copy.
func streamText(lines []textLine, word func(string) error) (string, error) {
	size := len(lines) - 1
	for _, l := range lines {
		size += l.size()
	}
	b := textBuffer{buf: make([]byte, 0, size)}
	// A long answer's megabytes are mapped in at once (prefault), before
	// they are written: after the first word of a /long line, which then
	// goes out without waiting for them.
	mapped := false
	mapIn := func() {
		if !mapped {
			prefault.Write(b.buf)
			mapped = true
		}
	}
	for i, l := range lines {
		from := b.Len() // the LF before a line belongs to its first word
		if i > 0 {
			b.AppendByte('\n')
		}
		if l.long == 0 {
			mapIn()
			b.WriteString(l.text)
			if err := eachWord(b.String()[from:], word); err != nil {
				return b.String(), err
			}
			continue
		}
		num := []byte{' ', 'w', '0'} // " w" and the decimal digits of k, counted up in place
		for k := 1; k <= l.long; k++ {
			j := len(num) - 1
			for j >= 2 && num[j] == '9' {
				num[j] = '0'
				j--
			}
			if j < 2 {
				num = append(num[:2], append([]byte{'1'}, num[2:]...)...)
			} else {
				num[j]++
			}
			if k == 1 {
				b.Write(num[1:])
			} else {
				b.Write(num)
			}
			if err := word(b.String()[from:]); err != nil {
				return b.String(), err
			}
			mapIn()
			from = b.Len()
		}
	}
	return b.String(), nil
}

// textBuffer is strings.Builder over a buffer the caller sizes, so that
// it can be prefaulted: bytes are only ever appended, so String's earlier
// results stay valid.
type textBuffer struct{ buf []byte }

func (b *textBuffer) Len() int             { return len(b.buf) }
func (b *textBuffer) AppendByte(c byte)    { b.buf = append(b.buf, c) }
func (b *textBuffer) Write(p []byte)       { b.buf = append(b.buf, p...) }
func (b *textBuffer) WriteString(s string) { b.buf = append(b.buf, s...) }
func (b *textBuffer) String() string       { return unsafe.String(unsafe.SliceData(b.buf), len(b.buf)) }

func malformed(n int, line, why string) *Error {
	return &Error{Provider: "e", Model: OfflineID, Stage: "request", Status: 400, Type: "offline_directive",
		Message: fmt.Sprintf("malformed directive on line %d %q: %s", n+1, line, why)}
}
