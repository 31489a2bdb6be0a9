package store

import (
	"bytes"
	"io"
	"strconv"

	"github.com/e-agent/e/internal/jsonscan"
)

// branchSum is what a listing needs of a branch, kept by the writer and
// written into every entry it appends (the "branch" member), so that a
// listing reads a log's header and its last entry, not the whole file.
// Title and Name are byte offsets of lines of the file: the entry the
// title comes from (the last title entry, else the first user message
// with text) and the last name entry; 0 for none (line 0 is the header).
type branchSum struct {
	Messages int   `json:"messages"`
	Turns    int   `json:"turns"`
	Title    int64 `json:"title,omitempty"`
	Name     int64 `json:"name,omitempty"`
}

// add counts e, written at offset at, as the branch's new last entry.
func (s *branchSum) add(e Entry, at int64) {
	switch e.Type {
	case TypeMessage:
		s.Messages++
		if userText(e.Message) {
			s.Turns++
			if s.Title == 0 {
				s.Title = at
			}
		}
	case TypeTitle:
		s.Title = at
	case TypeName:
		s.Name = at
	}
}

// appendJSON appends s as the member that ends an entry's object.
func (s *branchSum) appendJSON(dst []byte) []byte {
	dst = strconv.AppendInt(append(dst, `,"branch":{"messages":`...), int64(s.Messages), 10)
	dst = strconv.AppendInt(append(dst, `,"turns":`...), int64(s.Turns), 10)
	if s.Title > 0 {
		dst = strconv.AppendInt(append(dst, `,"title":`...), s.Title, 10)
	}
	if s.Name > 0 {
		dst = strconv.AppendInt(append(dst, `,"name":`...), s.Name, 10)
	}
	return append(dst, "}}"...)
}

var (
	branchField  = []string{"branch"}
	branchFields = []string{"messages", "turns", "title", "name"}
)

// tailSum reads the "branch" member of a last entry; false when it has none
// or one that is not exactly the shape e writes.
func tailSum(line []byte) (branchSum, bool) {
	m := [...]jsonscan.Member{{Key: "branch"}}
	if !jsonscan.Object(line, branchField, m[:]) || m[0].Val == nil {
		return branchSum{}, false
	}
	f := [...]jsonscan.Member{{Key: "messages"}, {Key: "turns"}, {Key: "title"}, {Key: "name"}}
	if !jsonscan.Object(m[0].Val, branchFields, f[:]) {
		return branchSum{}, false
	}
	var v [4]int
	for i, x := range f {
		n, ok := jsonscan.Int(x.Val)
		if x.Val != nil && !ok || n < 0 || i < 2 && x.Val == nil {
			return branchSum{}, false
		}
		v[i] = n
	}
	return branchSum{Messages: v[0], Turns: v[1], Title: int64(v[2]), Name: int64(v[3])}, true
}

type readerAtCloser interface {
	io.ReaderAt
	io.Closer
}

// headTail is how much of a log a listing reads at either end at first:
// all of a log this small, which most are.
const headTail = 64 << 10

// summarizeTail summarizes the log open as f, of size bytes when it was
// listed (what is appended since is for the next listing), from its
// header and its last entry's branch member, and the one or two lines that member points at;
// false when the log has no such member (written before e kept it, or by
// a writer that branched) or a last line longer than maxTail, which the
// caller then scans (summarize). buf is
// reused from one log to the next; nothing returned points into it.
func summarizeTail(f io.ReaderAt, size int64, buf *[]byte) (cached, bool) {
	n := int(min(size, 2*headTail))
	if cap(*buf) < n {
		*buf = make([]byte, 2*headTail)
	}
	head := (*buf)[:n]
	if _, err := f.ReadAt(head, 0); err != nil {
		return cached{}, false
	}
	// The header: the first non-blank line, whole.
	var h Header
	line, next, ok := lineAt(head, 0)
	for ok && len(bytes.TrimSpace(line)) == 0 {
		line, next, ok = lineAt(head, next)
	}
	if !ok || headerOf(line, &h) != nil || h.Type != TypeSession || h.Version != Version {
		return cached{}, false
	}
	// The last entry: read from the end until its line lies whole in tail.
	var last []byte
	tail, from := head, int64(0)
	for n := int64(headTail); ; n *= 2 {
		if size > int64(len(head)) {
			from = max(0, size-n)
			tail = make([]byte, size-from)
			if _, err := f.ReadAt(tail, from); err != nil {
				return cached{}, false
			}
		}
		var at int
		last, at, ok = lastEntry(tail, from == 0)
		if ok && from+int64(at) < next {
			// No entry after the header.
			return cached{Cwd: h.Cwd, Name: h.Name}, true
		}
		if ok || at >= 0 || from == 0 || n >= maxTail {
			break
		}
	}
	if !ok {
		return cached{}, false
	}
	s, ok := tailSum(last)
	if !ok {
		return cached{}, false
	}
	c := cached{Messages: s.Messages, Turns: s.Turns, Cwd: h.Cwd, Name: h.Name}
	if s.Title > 0 {
		e, ok := entryAt(f, head, s.Title, size)
		switch {
		case ok && e.Type == TypeTitle:
			c.Title = e.Name
		case ok && e.Type == TypeMessage:
			role, text, isText := peek(e.Message)
			if !isText || role != "user" {
				return cached{}, false
			}
			c.Title = titleOf(text)
		default:
			return cached{}, false
		}
	}
	if s.Name > 0 {
		e, ok := entryAt(f, head, s.Name, size)
		if !ok || e.Type != TypeName {
			return cached{}, false
		}
		c.Name = e.Name
	}
	return c, true
}

// lineAt returns the line of buf at off, without its LF (and a CR before
// it), and whether it is whole.
func lineAt(buf []byte, off int64) ([]byte, int64, bool) {
	if off < 0 || off >= int64(len(buf)) {
		return nil, 0, false
	}
	end := bytes.IndexByte(buf[off:], '\n')
	if end < 0 {
		return nil, 0, false
	}
	return bytes.TrimSuffix(buf[off:off+int64(end)], []byte{'\r'}), off + int64(end) + 1, true
}

// lastEntry returns the last entry line of tail, the end of a log, and
// its offset in tail, as parse sees it: a last line without LF counts when
// it is a whole entry (else it is torn, and ignored), blank lines are
// skipped. whole says tail starts the file. It is false when the last
// non-blank line does not parse (at >= 0) or may begin before tail (at < 0).
func lastEntry(tail []byte, whole bool) (line []byte, at int, ok bool) {
	var e Entry
	end := len(tail)
	if i := bytes.LastIndexByte(tail, '\n'); i+1 < end {
		if last := bytes.TrimSuffix(tail[i+1:], []byte{'\r'}); (i >= 0 || whole) && entryOf(last, &e, "", nil) == nil {
			return last, i + 1, true
		}
		end = i + 1 // torn
	}
	for end > 0 {
		start := bytes.LastIndexByte(tail[:end-1], '\n') + 1
		if start == 0 && !whole {
			return nil, -1, false
		}
		line := bytes.TrimSuffix(tail[start:end-1], []byte{'\r'})
		if len(bytes.TrimSpace(line)) > 0 {
			return line, start, entryOf(line, &e, "", nil) == nil
		}
		end = start
	}
	return nil, 0, false
}

// entryAt decodes the entry on the line that starts at off: from head
// when it lies there whole, else read from f.
func entryAt(f io.ReaderAt, head []byte, off, size int64) (Entry, bool) {
	var e Entry
	line, _, ok := lineAt(head, off)
	if ok && head[off-1] != '\n' {
		return e, false
	}
	if !ok {
		// Read on from the byte before off, which must end a line.
		var b []byte
		for n := int64(4 << 10); ; n *= 2 {
			b = make([]byte, min(n, size-off+1))
			if _, err := f.ReadAt(b, off-1); err != nil || b[0] != '\n' {
				return e, false
			}
			if line, _, ok = lineAt(b, 1); ok {
				break
			}
			if int64(len(b)) == size-off+1 { // the last line, without LF
				line = bytes.TrimSuffix(b[1:], []byte{'\r'})
				break
			}
		}
	}
	ok = entryOf(line, &e, "", nil) == nil
	return e, ok
}
