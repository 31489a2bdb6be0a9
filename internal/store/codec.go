package store

import (
	"bytes"
	"fmt"
	"os"
)

// Codec is a session log's line format other than e's own: pi 1.6.0's
// session files (spec/pi.md), chosen by the session's options. A log with a
// codec holds only the codec's lines: the codec encodes each entry as it is
// appended (the one writer of that format, not a translation after the
// fact) and decodes the whole file when it is opened again. A codec keeps
// state between entries (what a later entry's parent means in its format),
// so each log has its own.
type Codec interface {
	// Owns reports whether a file whose first line is header is in the
	// codec's format (else it is e's, read and continued as e's).
	Owns(header []byte) bool
	// Header appends the lines that open a new file for h, each ending in
	// '\n'.
	Header(dst []byte, h Header) ([]byte, error)
	// Entry appends the lines e stands for, each ending in '\n': none for
	// an entry the format has no counterpart of. e has its ID, Parent and
	// Time set.
	Entry(dst []byte, e Entry) ([]byte, error)
	// Flush appends the lines of entries Entry held back (one whose lines
	// depend on the entry after it), so that the file is whole.
	Flush(dst []byte) []byte
	// Decode reads the whole file data: its header and its entries, in
	// file order, in e's terms.
	Decode(path string, data []byte) (Header, []Entry, error)
}

// CreateWith is CreateIn (path "") or CreateAt in codec c's format; a nil c
// is e's.
func CreateWith(dir, path string, h Header, c Codec) (*Log, error) {
	return createAs(dir, path, h, c)
}

// ForkWith is ForkIn in codec c's format; a nil c is e's.
func ForkWith(dir string, h Header, branch []Entry, c Codec) (*Log, error) {
	return forkIn(dir, h, branch, c)
}

// OpenWritableWith is OpenWritable of a file in codec c's format, when c
// owns it; any other file is e's.
func OpenWritableWith(path string, c Codec) (*Log, *Header, []Entry, error) {
	return openWritable(path, c)
}

// ReadWith is Read of a file in codec c's format, when c owns it.
func ReadWith(path string, c Codec) (*ReadResult, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, fmt.Errorf("store: read: %w", err)
	}
	if c != nil && c.Owns(firstLine(data)) {
		h, entries, err := c.Decode(path, data)
		if err != nil {
			return nil, err
		}
		return &ReadResult{Header: h, Entries: entries}, nil
	}
	return Read(path)
}

// firstLine is data's first line, without its newline.
func firstLine(data []byte) []byte {
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		return data[:i]
	}
	return data
}

// openCodec makes l, locked file f of codec c's format, the log of data:
// a torn last line (no newline) is cut off as e's are.
func openCodec(f *os.File, path string, data []byte, c Codec) (*Log, []Entry, error) {
	whole := data
	if i := bytes.LastIndexByte(data, '\n'); i+1 < len(data) {
		whole = data[:i+1]
		if err := saveTorn(path+".torn", data[i+1:]); err != nil {
			return nil, nil, fmt.Errorf("store: open %s: save torn tail: %w", path, err)
		}
		if err := f.Truncate(int64(len(whole))); err != nil {
			return nil, nil, fmt.Errorf("store: open %s: repair torn tail: %w", path, err)
		}
	}
	h, entries, err := c.Decode(path, whole)
	if err != nil {
		return nil, nil, err
	}
	l := &Log{f: f, path: path, header: h, size: int64(len(whole)), codec: c}
	l.unset = make([]string, len(entries))
	for i, e := range entries {
		l.unset[i] = e.ID
	}
	if n := len(entries); n > 0 {
		l.last = entries[n-1].ID
	}
	if err := l.writePid(); err != nil {
		return nil, nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	return l, entries, nil
}

// flushLocked writes the lines the codec held back; l.mu is held.
func (l *Log) flushLocked() error {
	if l.codec == nil {
		return nil
	}
	b := l.codec.Flush(nil)
	if len(b) == 0 {
		return nil
	}
	n, err := l.f.Write(b)
	if err != nil {
		if n > 0 {
			l.f.Truncate(l.size)
		}
		return fmt.Errorf("store: append %s: %w", l.path, err)
	}
	l.size += int64(n)
	return nil
}
