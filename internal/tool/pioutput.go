package tool

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode/utf8"
)

// pi's bash (its tool and its user commands) keeps the last 2000 lines or
// 50 KB of a command's output, whichever limit is hit first (its tools'
// truncate.ts), and writes the whole of a longer output to a temp file that
// the result names. Env.SpillOutput asks for that (e --mode rpc) in place of
// e's last 64 KiB.
const (
	piMaxLines = 2000
	piMaxBytes = 50 * 1024
)

// truncation is pi's truncateTail of an output.
type truncation struct {
	Content   string
	Truncated bool
	// TruncatedBy is "lines" or "bytes", when Truncated.
	TruncatedBy             string
	TotalLines, OutputLines int
	// LastLinePartial: the last line alone passed the byte limit, so
	// Content is its end.
	LastLinePartial bool
}

// truncateTail keeps the last piMaxLines lines of s within piMaxBytes
// bytes, whole lines only but for a last line longer than the limit, whose
// end is kept. A cut output has no final newline, as pi's (it joins the
// lines it keeps).
func truncateTail(s string) truncation {
	lines := strings.Split(s, "\n")
	if strings.HasSuffix(s, "\n") || s == "" {
		lines = lines[:len(lines)-1]
	}
	t := truncation{Content: s, TotalLines: len(lines), OutputLines: len(lines)}
	if len(lines) <= piMaxLines && len(s) <= piMaxBytes {
		return t
	}
	t.Truncated, t.TruncatedBy = true, "lines"
	n, size := 0, 0 // lines kept, their bytes with the newlines between them
	for i := len(lines) - 1; i >= 0 && n < piMaxLines; i-- {
		add := len(lines[i])
		if n > 0 {
			add++
		}
		if size+add > piMaxBytes {
			t.TruncatedBy = "bytes"
			if n == 0 {
				t.Content, t.OutputLines, t.LastLinePartial = tailBytes(lines[i], piMaxBytes), 1, true
				return t
			}
			break
		}
		n, size = n+1, size+add
	}
	if n >= piMaxLines && size <= piMaxBytes {
		t.TruncatedBy = "lines"
	}
	t.Content, t.OutputLines = strings.Join(lines[len(lines)-n:], "\n"), n
	return t
}

// tailBytes returns the last max bytes of s, from a character boundary.
func tailBytes(s string, max int) string {
	if len(s) <= max {
		return s
	}
	i := len(s) - max
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return s[i:]
}

// outputLog collects a command's streamed output as pi's bash executor
// does: in memory while it is within pi's limits, then, once it passes
// one, the whole of it in a new temp file (TMPDIR/PREFIX-HEX.log, readable
// by the user only) while a tail of it stays in memory for the result.
type outputLog struct {
	prefix string
	buf    []byte // all of the output, or, once the file is open, its tail
	size   int64
	lines  int   // newlines seen
	open   bool  // the last line has no newline yet
	last   int64 // bytes after the last newline
	f      *os.File
	path   string
	err    error
}

// keepBytes is how much of an output the tail keeps at least: pi's
// truncation keeps at most piMaxBytes of it, so a line cut at the tail's
// start is never part of what it keeps (unless it is the last line, whose
// end is what it keeps): the tail's truncation is the whole output's.
const keepBytes = 2 * piMaxBytes

func (o *outputLog) write(s string) {
	o.size += int64(len(s))
	o.lines += strings.Count(s, "\n")
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		o.last = int64(len(s) - i - 1)
	} else {
		o.last += int64(len(s))
	}
	if s != "" {
		o.open = !strings.HasSuffix(s, "\n")
	}
	o.buf = append(o.buf, s...)
	switch {
	case o.f == nil && o.err == nil && (o.size > piMaxBytes || o.totalLines() > piMaxLines):
		o.create() // writes buf, s included
	case o.f != nil:
		if _, err := o.f.WriteString(s); err != nil && o.err == nil {
			o.err = err
		}
	}
	if over := len(o.buf) - keepBytes; o.f != nil && over > keepBytes { // trim in batches
		o.buf = append(o.buf[:0], o.buf[over:]...)
	}
}

func (o *outputLog) totalLines() int {
	if o.open {
		return o.lines + 1
	}
	return o.lines
}

// create opens the temp file and writes the output so far to it.
func (o *outputLog) create() {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on Linux
	path := filepath.Join(os.TempDir(), o.prefix+"-"+hex.EncodeToString(b[:])+".log")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		o.err = err
		return
	}
	o.f, o.path = f, path
	if _, err := f.Write(o.buf); err != nil {
		o.err = err
	}
}

// OutputSnapshot is a bash output so far as pi's bash tool reports it in an
// update: the kept part and, once the output is cut, the details.
type OutputSnapshot struct {
	Content string
	Details json.RawMessage // nil while the output is within pi's limits
}

// piTruncation is pi's TruncationResult (its truncate.ts), the
// truncation of pi's bash details.
type piTruncation struct {
	Content               string `json:"content"`
	Truncated             bool   `json:"truncated"`
	TruncatedBy           string `json:"truncatedBy"`
	TotalLines            int    `json:"totalLines"`
	TotalBytes            int64  `json:"totalBytes"`
	OutputLines           int    `json:"outputLines"`
	OutputBytes           int    `json:"outputBytes"`
	LastLinePartial       bool   `json:"lastLinePartial"`
	FirstLineExceedsLimit bool   `json:"firstLineExceedsLimit"`
	MaxLines              int    `json:"maxLines"`
	MaxBytes              int    `json:"maxBytes"`
}

// details are pi's bash details of truncation t of the output, the file
// at path holding all of it: nil when t is not cut.
func (o *outputLog) details(t truncation, path string) json.RawMessage {
	if !t.Truncated {
		return nil
	}
	b, _ := json.Marshal(struct {
		Truncation     piTruncation `json:"truncation"`
		FullOutputPath string       `json:"fullOutputPath"`
	}{piTruncation{Content: t.Content, Truncated: true, TruncatedBy: t.TruncatedBy, TotalLines: t.TotalLines,
		TotalBytes: o.size, OutputLines: t.OutputLines, OutputBytes: len(t.Content), LastLinePartial: t.LastLinePartial,
		MaxLines: piMaxLines, MaxBytes: piMaxBytes}, path})
	return b
}

// snapshot is the output so far as pi's update reports it. Within pi's
// limits that is all of it, as is.
func (o *outputLog) snapshot() OutputSnapshot {
	if o.f == nil {
		return OutputSnapshot{Content: string(o.buf)}
	}
	t := truncateTail(string(o.buf))
	t.TotalLines = o.totalLines()
	return OutputSnapshot{Content: t.Content, Details: o.details(t, o.path)}
}

// piStructuredMax is how much of an output pi's bash tool gives as its
// structuredContent (STRUCTURED_OUTPUT_MAX_BYTES): more keeps its first
// and last halves around a note of what was left out.
const piStructuredMax = 1 << 20

// full returns the whole output for pi's structuredContent, after finish:
// up to piStructuredMax bytes as they are, else their first and last
// halves (cut at character boundaries) around pi's omission note; cut
// reports the latter.
func (o *outputLog) full() (out string, cut bool, err error) {
	if o.path == "" {
		return string(o.buf), false, nil
	}
	f, err := os.Open(o.path)
	if err != nil {
		return "", false, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", false, err
	}
	if st.Size() <= piStructuredMax {
		b, err := io.ReadAll(f)
		return string(b), false, err
	}
	head, tail := make([]byte, piStructuredMax/2), make([]byte, piStructuredMax-piStructuredMax/2)
	if _, err := f.ReadAt(head, 0); err != nil {
		return "", false, err
	}
	if _, err := f.ReadAt(tail, st.Size()-int64(len(tail))); err != nil {
		return "", false, err
	}
	// As pi's: the head drops an unfinished last character, the tail its
	// leading continuation bytes.
	h := len(head)
	for i := max(0, h-utf8.UTFMax); i < h; i++ {
		if utf8.RuneStart(head[i]) && !utf8.FullRune(head[i:]) {
			h = i
			break
		}
	}
	t := 0
	for t < len(tail) && !utf8.RuneStart(tail[t]) {
		t++
	}
	omitted := st.Size() - int64(len(head)) - int64(len(tail))
	return fmt.Sprintf("%s\n\n[... %d bytes omitted ...]\n\n%s", head[:h], omitted, tail[t:]), true, nil
}

// finish closes the temp file and returns pi's truncation of the output
// and the file's path ("" when the output was within the limits).
func (o *outputLog) finish() (truncation, string, error) {
	t := truncateTail(string(o.buf))
	t.TotalLines = o.totalLines()
	if o.f != nil {
		if err := o.f.Close(); err != nil && o.err == nil {
			o.err = err
		}
	}
	if o.err != nil {
		return t, "", fmt.Errorf("bash: full output file: %w", o.err)
	}
	return t, o.path, nil
}

// note is pi's line after a cut output, naming the file with all of it:
// which lines it shows of how many (and the byte limit when that cut it),
// or the part of one long last line it shows.
func (o *outputLog) note(t truncation, path string) string {
	start := t.TotalLines - t.OutputLines + 1
	switch {
	case t.LastLinePartial:
		return fmt.Sprintf("[Showing last %s of line %d (line is %s). Full output: %s]", formatSize(int64(len(t.Content))),
			t.TotalLines, formatSize(o.last), path)
	case t.TruncatedBy == "lines":
		return fmt.Sprintf("[Showing lines %d-%d of %d. Full output: %s]", start, t.TotalLines, t.TotalLines, path)
	}
	return fmt.Sprintf("[Showing lines %d-%d of %d (%s limit). Full output: %s]", start, t.TotalLines, t.TotalLines,
		formatSize(piMaxBytes), path)
}

// formatSize writes a size as pi does: 512B, 50.0KB, 1.5MB.
func formatSize(n int64) string {
	switch {
	case n < 1024:
		return fmt.Sprintf("%dB", n)
	case n < 1024*1024:
		return fmt.Sprintf("%.1fKB", float64(n)/1024)
	}
	return fmt.Sprintf("%.1fMB", float64(n)/(1024*1024))
}

// pi's bash executor sanitises a user's command output as it streams: ANSI
// escape sequences (its ansi.ts, from ansi-regex) are stripped, then
// control characters but tab and newline, and carriage returns. An
// unfinished sequence at a chunk's end waits for the next chunk.
var (
	piANSI     = regexp.MustCompile(`(?:\x1b\](?s:.*?)(?:\x07|\x1b\\|\x{9c}))|` + piCSIStart + `[\dA-PR-TZcf-nq-uy=><~]`)
	piCSIOnly  = regexp.MustCompile(`^` + piCSIStart + `$`)
	piControls = regexp.MustCompile(`[\x00-\x08\x0B-\x0D\x0E-\x1F\x{FFF9}-\x{FFFB}]`)
)

const piCSIStart = `(?:(?:\x1b\[|\x{9b})[<=>]|[\x1b\x{9b}][\[\]()#;?]*)(?:\d{1,4}(?:[;:]\d{0,4})*)?`

// sanitizer is that streaming sanitiser in front of out.
type sanitizer struct {
	pending string
	out     func(string)
}

func (s *sanitizer) write(chunk string) {
	text := s.pending + chunk
	s.pending = ""
	if i := unfinishedANSI(text); i >= 0 {
		text, s.pending = text[:i], text[i:]
	}
	s.emit(text)
}

func (s *sanitizer) flush() {
	rest := s.pending
	s.pending = ""
	s.emit(rest)
}

func (s *sanitizer) emit(text string) {
	if strings.ContainsAny(text, "\x1b\u009b") {
		text = piANSI.ReplaceAllString(text, "")
	}
	if text = piControls.ReplaceAllString(text, ""); text != "" {
		s.out(text)
	}
}

// unfinishedANSI returns where an escape sequence starts that text ends
// before it is complete (within its last 256 bytes, as pi holds back), or -1.
func unfinishedANSI(text string) int {
	for i := max(0, len(text)-256); i < len(text); i++ {
		rest := text[i:]
		if !strings.HasPrefix(rest, "\x1b") && !strings.HasPrefix(rest, "\u009b") {
			continue
		}
		if strings.HasPrefix(rest, "\x1b]") && !strings.ContainsAny(rest, "\x07\u009c") && !strings.Contains(rest, "\x1b\\") {
			return i
		}
		if piCSIOnly.MatchString(rest) {
			return i
		}
	}
	return -1
}
