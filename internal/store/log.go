package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/e-agent/e/internal/prefault"
	"github.com/e-agent/e/internal/regfile"
)

// ErrLocked reports that another open writer holds a session log (C6).
var ErrLocked = errors.New("session log is locked by another writer")

// Log is an open, writable, locked session log. Its methods are safe for
// concurrent use.
type Log struct {
	mu       sync.Mutex
	f        *os.File // nil once closed
	path     string
	header   Header
	last     string   // id of the last entry written; the default parent
	ids      idSet    // entry ids in the file, to keep ids unique
	unset    []string // ids of the file not yet in ids: the set is built when an append first names an id
	size     int64    // bytes of whole lines in the file
	sum      branchSum
	sumOK    bool // sum describes the branch ending at last
	warnings []string
	buf      bytes.Buffer
	tmp      []byte // the branch member being encoded
	codec    Codec  // the file's format when not e's (CreateWith)
}

// ReadResult is a parsed session log.
type ReadResult struct {
	Header   Header
	Entries  []Entry
	Warnings []string // skipped corrupt lines, an ignored or repaired torn tail
}

// Create starts a new session log at $home/sessions/<slug of h.Cwd>/<h.ID>.jsonl
// (file 0600, directories 0700), writes and syncs the header, and takes the
// writer lock. Empty Type, Version, ID and Created are filled in.
func Create(home string, h Header) (*Log, error) {
	return CreateIn(SessionsDir(home, h.Cwd), h)
}

// SessionsDir is the folder of cwd's session logs under home.
func SessionsDir(home, cwd string) string {
	return filepath.Join(home, "sessions", Slug(filepath.Clean(cwd)))
}

// CreateIn is Create with the log's folder given: dir/<h.ID>.jsonl. Front
// ends that keep their sessions elsewhere (pi's sessions folder) use it.
func CreateIn(dir string, h Header) (*Log, error) { return create(dir, "", h) }

// CreateAt is Create with the log's file given, for a session file its
// user names (pi's --session of a file that does not exist yet). It
// refuses a file that exists.
func CreateAt(path string, h Header) (*Log, error) { return create(filepath.Dir(path), path, h) }

// create starts a log in dir, at path, or at dir/<h.ID>.jsonl when path is "".
func create(dir, path string, h Header) (*Log, error) { return createAs(dir, path, h, nil) }

// createAs is create in codec c's format (nil: e's).
func createAs(dir, path string, h Header, c Codec) (*Log, error) {
	h.Type = TypeSession
	h.Version = Version
	if h.ID == "" {
		h.ID = NewID()
	}
	if h.Created.IsZero() {
		h.Created = time.Now().UTC()
	}
	if !validID(h.ID) {
		return nil, fmt.Errorf("store: create: invalid session id %q", h.ID)
	}
	if !filepath.IsAbs(h.Cwd) {
		return nil, fmt.Errorf("store: create: cwd %q is not absolute", h.Cwd)
	}
	h.Cwd = filepath.Clean(h.Cwd)
	_, statErr := os.Stat(dir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("store: create: %w", err)
	}
	if statErr != nil {
		// A new directory must be durable in its parent as well.
		if err := syncDir(filepath.Dir(dir)); err != nil {
			return nil, fmt.Errorf("store: create: %w", err)
		}
	}
	if path == "" {
		path = filepath.Join(dir, h.ID+".jsonl")
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("store: create: %w", err)
	}
	l := &Log{f: f, path: path, header: h, sumOK: c == nil, codec: c}
	fail := func(err error) (*Log, error) {
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("store: create %s: %w", path, err)
	}
	if busy, err := lockFile(f, false); err != nil {
		return fail(fmt.Errorf("lock: %w", err))
	} else if busy { // someone opened the new file before us
		return fail(ErrLocked)
	}
	var line []byte
	if c != nil {
		line, err = c.Header(nil, h)
	} else if line, err = json.Marshal(h); err == nil {
		line = append(line, '\n')
	}
	if err != nil {
		return fail(err)
	}
	n, err := f.Write(line)
	if err != nil {
		return fail(err)
	}
	l.size = int64(n)
	// The path is handed out as a resume handle: it must survive a crash.
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := syncDir(dir); err != nil {
		return fail(err)
	}
	if err := l.writePid(); err != nil {
		return fail(err)
	}
	return l, nil
}

// OpenWritable opens an existing log to continue it (C6). It takes the
// writer lock without waiting: if another writer holds it the error wraps
// ErrLocked and names the holder's pid. A torn last line (a crash during a
// write) is cut off and its bytes appended to <path>.torn; Warnings says so.
func OpenWritable(path string) (*Log, *Header, []Entry, error) { return openWritable(path, nil) }

// openWritable is OpenWritable of a file in codec c's format when c owns
// it (nil: e's).
func openWritable(path string, c Codec) (*Log, *Header, []Entry, error) {
	f, _, err := regfile.OpenFile(path, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("store: open: %w", err)
	}
	busy, err := lockFile(f, false)
	if err != nil || busy {
		f.Close()
		if err != nil {
			return nil, nil, nil, fmt.Errorf("store: open %s: lock: %w", path, err)
		}
		return nil, nil, nil, fmt.Errorf("store: open %s: %w (%s)", path, ErrLocked, holder(path))
	}
	l, entries, err := openLocked(f, path, c)
	if err != nil {
		f.Close()
		return nil, nil, nil, err
	}
	h := l.header
	return l, &h, entries, nil
}

// openLocked reads and repairs the locked file f.
func openLocked(f *os.File, path string, c Codec) (*Log, []Entry, error) {
	data, err := readWhole(f)
	if err != nil {
		return nil, nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	if c != nil && c.Owns(firstLine(data)) {
		return openCodec(f, path, data, c)
	}
	p, err := parse(path, data)
	if err != nil {
		return nil, nil, err
	}
	l := &Log{f: f, path: path, header: p.Header, size: int64(len(data))}
	l.warnings = p.Warnings
	switch {
	case p.torn >= 0:
		cut := data[p.torn:]
		if err := saveTorn(path+".torn", cut); err != nil {
			return nil, nil, fmt.Errorf("store: open %s: save torn tail: %w", path, err)
		}
		if err := f.Truncate(int64(p.torn)); err != nil {
			return nil, nil, fmt.Errorf("store: open %s: repair torn tail: %w", path, err)
		}
		if err := f.Sync(); err != nil {
			return nil, nil, fmt.Errorf("store: open %s: %w", path, err)
		}
		l.size = int64(p.torn)
		l.warnings = append(l.warnings, fmt.Sprintf("store: %s: repaired a torn last line: %d bytes moved to %s.torn", path, len(cut), path))
	case p.noLF:
		// A whole entry lacking only its newline: complete it, lose nothing.
		if _, err := f.Write([]byte{'\n'}); err != nil {
			return nil, nil, fmt.Errorf("store: open %s: complete last line: %w", path, err)
		}
		l.size++
		l.warnings = append(l.warnings, fmt.Sprintf("store: %s: completed a last line that lacked its newline", path))
	}
	l.unset = make([]string, len(p.Entries))
	for i, e := range p.Entries {
		l.unset[i] = e.ID
	}
	if n := len(p.Entries); n > 0 {
		l.last = p.Entries[n-1].ID
		// The branch summary goes on where the last entry left it; a log
		// without one (older, or branched) is listed by reading it whole.
		if last, _, ok := lastEntry(data[:min(l.size, int64(len(data)))], true); ok {
			l.sum, l.sumOK = tailSum(last)
		}
	} else {
		l.sumOK = true
	}
	if err := l.writePid(); err != nil {
		return nil, nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	return l, p.Entries, nil
}

// ReadOnly loads a log without a lock, a writer or any repair (C7): the file
// stays byte-identical. A torn last line is ignored.
func ReadOnly(path string) (*Header, []Entry, error) {
	r, err := Read(path)
	if err != nil {
		return nil, nil, err
	}
	return &r.Header, r.Entries, nil
}

// MaxLogBytes is the largest session log e reads (Y1): a resume of a
// bigger file is refused rather than read into memory.
const MaxLogBytes = 1 << 30

// readFile is os.ReadFile by way of readWhole, for a regular file only
// (regfile: a FIFO or /dev/zero named as a log cannot hang or flood e, Y1).
func readFile(path string) ([]byte, error) {
	f, _, err := regfile.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readWhole(f)
}

// readWhole reads f, just opened, into a buffer of its size mapped in
// before the read (prefault): a 100,000-entry log is 32 MB of fresh memory.
// It reads at most MaxLogBytes, whatever the size (a /proc file says 0).
func readWhole(f *os.File) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > MaxLogBytes {
		return nil, regfile.TooLarge(f.Name(), MaxLogBytes)
	}
	data := make([]byte, fi.Size())
	prefault.Write(data)
	n, err := io.ReadFull(f, data)
	switch err {
	case io.ErrUnexpectedEOF: // the log shrank since Stat: what was read is the log
		return data[:n], nil
	case nil: // and what a writer appended since, as os.ReadFile would read it
		rest, err := regfile.ReadAll(f, f.Name(), 0, MaxLogBytes-int64(n))
		if errors.Is(err, regfile.ErrTooLarge) {
			err = regfile.TooLarge(f.Name(), MaxLogBytes)
		}
		return append(data, rest...), err
	}
	return nil, err
}

// Read is ReadOnly with the warnings about skipped lines.
func Read(path string) (*ReadResult, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, fmt.Errorf("store: read: %w", err)
	}
	p, err := parse(path, data)
	if err != nil {
		return nil, err
	}
	if p.torn >= 0 {
		p.Warnings = append(p.Warnings, fmt.Sprintf("store: %s: ignored a torn last line (%d bytes)", path, len(data)-p.torn))
	}
	return &p.ReadResult, nil
}

type parsed struct {
	ReadResult
	torn int  // offset of a torn last line, -1 when none
	noLF bool // the last line is a whole entry without its newline
}

// parse splits data on LF only. A line that does not parse is skipped with
// a warning, except a last line without LF, which is a torn write.
func parse(path string, data []byte) (*parsed, error) {
	p := &parsed{torn: -1}
	// The header is the first non-blank line, and must be whole.
	off, lineNo := 0, 0
	for {
		if off >= len(data) {
			return nil, fmt.Errorf("store: %s: empty log, no header", path)
		}
		lineNo++
		end := bytes.IndexByte(data[off:], '\n')
		if end < 0 {
			// Create died before its sync: nothing was ever resumable.
			return nil, fmt.Errorf("store: %s: no complete header line", path)
		}
		line := bytes.TrimSpace(data[off : off+end])
		off += end + 1
		if len(line) == 0 {
			continue
		}
		if err := headerOf(line, &p.Header); err != nil {
			return nil, fmt.Errorf("store: %s:%d: bad header: %w", path, lineNo, err)
		}
		if p.Header.Type != TypeSession {
			return nil, fmt.Errorf("store: %s:%d: not a session log (type %q)", path, lineNo, p.Header.Type)
		}
		if p.Header.Version != Version {
			return nil, fmt.Errorf("store: %s:%d: unsupported format version %d (want %d)", path, lineNo, p.Header.Version, Version)
		}
		break
	}
	whole := off + bytes.LastIndexByte(data[off:], '\n') + 1
	p.Entries, p.Warnings = parseLines(path, data[off:whole], lineNo+1)
	if tail := data[whole:]; len(tail) > 0 {
		var e Entry
		if entryOf(bytes.TrimSuffix(tail, []byte{'\r'}), &e, "", nil) == nil {
			p.noLF = true
			p.Entries = append(p.Entries, e)
		} else {
			p.torn = whole
		}
	}
	return p, nil
}

// parallelFrom is the size of whole lines above which parseLines splits
// the work over the CPUs: resuming a 100,000-entry log is JSON-bound.
const parallelFrom = 1 << 20

// parseLines parses whole lines, the first being line number first. The
// entries are decoded in place into one slice of the exact size.
func parseLines(path string, data []byte, first int) ([]Entry, []string) {
	type chunk struct {
		data        []byte
		line, at, n int // first line number, index of its first entry, entries decoded
		warnings    []string
	}
	chunks := make([]chunk, min(runtime.GOMAXPROCS(0), len(data)/parallelFrom+1))
	start, line := 0, first
	for i := range chunks {
		end := len(data)
		if i < len(chunks)-1 {
			end = max(start, len(data)*(i+1)/len(chunks))
			end += bytes.IndexByte(data[end:], '\n') + 1
		}
		chunks[i] = chunk{data: data[start:end], line: line, at: line - first}
		line += bytes.Count(chunks[i].data, []byte{'\n'})
		start = end
	}
	entries := make([]Entry, line-first) // one per line: data ends with LF
	prefault.Slice(entries)
	parse := func(c *chunk) {
		c.n, c.warnings = parseChunk(path, c.data, c.line, entries[c.at:])
	}
	if len(chunks) == 1 {
		parse(&chunks[0])
	} else {
		var wg sync.WaitGroup
		for i := range chunks {
			wg.Go(func() { parse(&chunks[i]) })
		}
		wg.Wait()
	}
	n, size := 0, 0
	var warnings []string
	for _, c := range chunks {
		n += copy(entries[n:], entries[c.at:c.at+c.n])
		warnings = append(warnings, c.warnings...)
	}
	entries = entries[:n]
	// The scanned messages are views of data; copied into one block they
	// keep only their own bytes alive, not the whole file.
	for _, e := range entries {
		size += len(e.Message)
	}
	block := make([]byte, 0, size)
	prefault.Write(block)
	for i := range entries {
		if m := entries[i].Message; m != nil {
			block = append(block, m...)
			entries[i].Message = block[len(block)-len(m) : len(block) : len(block)]
		}
	}
	return entries, warnings
}

// parseChunk decodes the lines of data into dst, which has room for one
// entry per line, and returns how many it decoded.
func parseChunk(path string, data []byte, lineNo int, dst []Entry) (int, []string) {
	var warnings []string
	var day dayCache
	n, prev := 0, ""
	for off := 0; off < len(data); lineNo++ {
		end := off + bytes.IndexByte(data[off:], '\n')
		line := bytes.TrimSuffix(data[off:end], []byte{'\r'})
		off = end + 1
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if err := entryOf(line, &dst[n], prev, &day); err != nil {
			dst[n] = Entry{}
			warnings = append(warnings, fmt.Sprintf("store: %s:%d: skipped a corrupt line: %v", path, lineNo, err))
			continue
		}
		prev = dst[n].ID
		n++
	}
	return n, warnings
}

// entryOf decodes line into e; prev is the previous entry's id and day
// the day of its time, if known (scanEntry).
func entryOf(line []byte, e *Entry, prev string, day *dayCache) error {
	if !scanEntry(line, e, prev, day) {
		*e = Entry{}
		if err := json.Unmarshal(line, e); err != nil {
			return err
		}
	}
	if e.Type == "" || e.ID == "" {
		return errors.New("missing type or id")
	}
	return nil
}

// Append writes each entry as one line with one write(2), filling in
// empty ID, Parent and Time.
func (l *Log) Append(entries ...Entry) error {
	for _, e := range entries {
		if _, err := l.AppendEntry(e); err != nil {
			return err
		}
	}
	return nil
}

// AppendEntry is Append for one entry; it returns the entry as written.
func (l *Log) AppendEntry(e Entry) (Entry, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return e, fmt.Errorf("store: append %s: %w", l.path, os.ErrClosed)
	}
	switch e.Type {
	case TypeMessage, TypeSettings, TypeCompaction, TypeName, TypeTitle, TypeInterrupted, TypeError, TypeShell, TypeAttempt:
	default:
		return e, fmt.Errorf("store: append %s: unknown entry type %q", l.path, e.Type)
	}
	if e.Type == TypeMessage && !json.Valid(e.Message) {
		return e, fmt.Errorf("store: append %s: message entry without a valid JSON message", l.path)
	}
	if e.Type == TypeAttempt && (e.Call == nil || e.Error == "" || e.Message != nil && !json.Valid(e.Message)) {
		return e, fmt.Errorf("store: append %s: attempt entry without its call and error, or with a message that is not JSON", l.path)
	}
	if e.ID == "" {
		e.ID = NewEntryID()
	} else if l.has(e.ID) {
		return e, fmt.Errorf("store: append %s: duplicate entry id %q", l.path, e.ID)
	}
	if e.Parent == "" {
		e.Parent = l.last
	}
	if e.Time.IsZero() {
		e.Time = time.Now().UTC()
	}
	// Secrets never reach a file: a key pasted into a prompt or echoed by a
	// tool is redacted here, where every entry passes. Redaction keeps JSON
	// valid: it replaces key characters only.
	if redactedMsg := Redact(string(e.Message)); redactedMsg != string(e.Message) {
		e.Message = json.RawMessage(redactedMsg)
	}
	e.Summary, e.Name, e.Error = Redact(e.Summary), Redact(e.Name), Redact(e.Error)
	l.buf.Reset()
	l.buf.Grow(len(e.Message) + 1024) // a long message's line is not copied as it grows
	if l.codec != nil {
		return l.appendCodec(e)
	}
	enc := json.NewEncoder(&l.buf)
	// Keep message bytes as the caller compacted them (no \u003c rewriting).
	enc.SetEscapeHTML(false)
	if err := enc.Encode(e); err != nil { // Encode ends the line with '\n'
		return e, fmt.Errorf("store: append %s: %w", l.path, err)
	}
	sum, sumOK := l.sum, l.sumOK && e.Parent == l.last
	if sumOK {
		// The branch member ends the object: `…}\n` becomes `…,"branch":{…}}\n`.
		sum.add(e, l.size)
		line := l.buf.Bytes()
		l.buf.Truncate(len(line) - 2)
		l.tmp = sum.appendJSON(l.tmp[:0])
		l.buf.Write(l.tmp)
		l.buf.WriteByte('\n')
	}
	if err := l.write(l.buf.Bytes(), e.ID); err != nil {
		return e, err
	}
	l.sum, l.sumOK = sum, sumOK
	return e, nil
}

// appendCodec writes e in the codec's format; l.mu is held.
func (l *Log) appendCodec(e Entry) (Entry, error) {
	b, err := l.codec.Entry(l.buf.Bytes(), e)
	if err != nil {
		return e, fmt.Errorf("store: append %s: %w", l.path, err)
	}
	return e, l.write(b, e.ID)
}

// write appends the encoded entry id, b, to the file; l.mu is held.
func (l *Log) write(b []byte, id string) error {
	n, err := l.f.Write(b)
	if err != nil {
		// Leave no partial line behind for the next append to glue onto.
		if n > 0 {
			l.f.Truncate(l.size)
		}
		return fmt.Errorf("store: append %s: %w", l.path, err)
	}
	l.size += int64(n)
	l.ids.add(id)
	l.last = id
	return nil
}

func (l *Log) has(id string) bool {
	if l.unset != nil {
		// Most logs never see an id given by the caller: a resume of a
		// long one skips building the set of its ids.
		ids := newIDSet(len(l.unset))
		for _, id := range l.unset {
			ids.add(id)
		}
		for id := range l.ids.hex {
			ids.hex[id] = struct{}{}
		}
		for id := range l.ids.other {
			ids.add(id)
		}
		l.ids, l.unset = ids, nil
	}
	return l.ids.has(id)
}

// idSet holds entry ids. The ids e makes are 8 lowercase hex digits, kept
// as numbers: a set of 100,000 of them builds several times faster.
type idSet struct {
	hex   map[uint32]struct{}
	other map[string]struct{}
}

func newIDSet(n int) idSet { return idSet{hex: make(map[uint32]struct{}, n)} }

func (s *idSet) add(id string) {
	if n, ok := hexID(id); ok {
		if s.hex == nil {
			s.hex = map[uint32]struct{}{}
		}
		s.hex[n] = struct{}{}
		return
	}
	if s.other == nil {
		s.other = map[string]struct{}{}
	}
	s.other[id] = struct{}{}
}

func (s *idSet) has(id string) bool {
	if n, ok := hexID(id); ok {
		_, found := s.hex[n]
		return found
	}
	_, found := s.other[id]
	return found
}

// hexID reads an id of exactly 8 lowercase hex digits.
func hexID(id string) (uint32, bool) {
	if len(id) != 8 {
		return 0, false
	}
	var n uint32
	for i := range 8 {
		c := id[i]
		switch {
		case '0' <= c && c <= '9':
			n = n<<4 | uint32(c-'0')
		case 'a' <= c && c <= 'f':
			n = n<<4 | uint32(c-'a'+10)
		default:
			return 0, false
		}
	}
	return n, true
}

// Sync flushes the log to stable storage. The agent calls it at the end of
// every turn.
func (l *Log) Sync() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return fmt.Errorf("store: sync %s: %w", l.path, os.ErrClosed)
	}
	if err := l.flushLocked(); err != nil {
		return err
	}
	if err := l.f.Sync(); err != nil {
		return fmt.Errorf("store: sync: %w", err)
	}
	return nil
}

// Path returns the log's file name.
func (l *Log) Path() string { return l.path }

// Header returns the log's header as written.
func (l *Log) Header() Header { return l.header }

// Warnings returns what opening the log skipped or repaired.
func (l *Log) Warnings() []string { return l.warnings }

// Close syncs the log and releases the lock.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return fmt.Errorf("store: close %s: %w", l.path, os.ErrClosed)
	}
	serr := errors.Join(l.flushLocked(), l.f.Sync())
	// Remove the pid before unlocking: once unlocked, a new holder may write its own.
	os.Remove(l.path + ".lock")
	cerr := l.f.Close()
	l.f = nil
	if err := errors.Join(serr, cerr); err != nil {
		return fmt.Errorf("store: close %s: %w", l.path, err)
	}
	return nil
}

// writePid records the lock holder's pid in <path>.lock, for the error a
// second opener gets.
// writePid writes the pid sidecar; a FIFO or device in its place is an
// error, not an open that blocks (Y1).
func (l *Log) writePid() error {
	f, _, err := regfile.OpenFile(l.path+".lock", os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = f.WriteString(strconv.Itoa(os.Getpid()) + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// holder describes the process named in path's pid sidecar.
func holder(path string) string {
	b, err := regfile.ReadFile(path+".lock", 64)
	if err != nil {
		return "held by an unknown process"
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return "held by an unknown process"
	}
	return "held by pid " + strconv.Itoa(pid)
}

func saveTorn(path string, cut []byte) error {
	f, _, err := regfile.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600) // a FIFO there must not block (Y1)
	if err != nil {
		return err
	}
	_, err = f.Write(append(cut[:len(cut):len(cut)], '\n'))
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	return errors.Join(err, d.Close())
}

// validID accepts ids that are safe as file names.
func validID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for _, c := range id {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// ContinueFrom makes the entry id, which the log holds, the parent of the
// next entry appended, instead of the last one: a session that goes on
// from an earlier point of its log, whose later entries stay on a branch
// of their own.
func (l *Log) ContinueFrom(id string) error {
	if !l.has(id) {
		return fmt.Errorf("store: continue %s: no entry %q", l.path, id)
	}
	l.last, l.sumOK = id, false
	return nil
}

// Branch returns the entries on the branch that ends at the last entry,
// oldest first, following Parent links. Where a parent is missing (its line
// was corrupt and skipped) the branch continues with the entry just before
// in the file, so one bad line never drops the history before it. Where an
// id occurs twice (logs written before ids had 128 bits), a parent link
// means the nearest earlier entry with that id. When each entry's parent
// is the one before it (a log that never branched), the branch is every
// entry and Branch returns entries itself, clipped: indexing and copying a
// 100,000-entry log cost its resume a tenth of a second.
func Branch(entries []Entry) []Entry {
	if len(entries) == 0 {
		return nil
	}
	if linear(entries) {
		return slices.Clip(entries)
	}
	rev := branchRev(len(entries), func(i int) string { return entries[i].ID }, func(i int) string { return entries[i].Parent })
	out := make([]Entry, len(rev))
	for k, i := range rev {
		out[len(rev)-1-k] = entries[i]
	}
	return out
}

// branchRev returns the indices of the branch of n entries, given by
// their ids and parents, that ends at the last, newest first: Branch's
// walk, shared with a listing's scan, which keeps no Entry.
func branchRev(n int, id, parent func(int) string) []int {
	if n == 0 {
		return nil
	}
	// last[id] is the latest index of id; prev[i] the index of the
	// occurrence of id(i) before i, or -1.
	last := make(map[string]int, n)
	prev := make([]int, n)
	for i := range n {
		prev[i] = -1
		if j, dup := last[id(i)]; dup {
			prev[i] = j
		}
		last[id(i)] = i
	}
	var rev []int
	for i := n - 1; ; {
		rev = append(rev, i)
		p := parent(i)
		if p == "" {
			break
		}
		j, ok := last[p]
		for ok && j >= i { // a later duplicate, or a forward link that could loop
			j = prev[j]
			ok = j >= 0
		}
		if !ok {
			j = i - 1
		}
		if j < 0 {
			break
		}
		i = j
	}
	return rev
}

// linear reports whether each entry after the first has the one before it
// as its parent: then the branch is every entry, in order, and Branch needs
// no index of the ids.
func linear(entries []Entry) bool {
	for i := 1; i < len(entries); i++ {
		if entries[i].Parent != entries[i-1].ID {
			return false
		}
	}
	return true
}

// Fork creates a new log for h (the caller sets h.Parent to the parent's
// path, and the current model and effort, T2) holding copies of branch. The
// copies keep their ids, so compaction entries still name the entry they
// kept, and are relinked into one chain.
func Fork(home string, h Header, branch []Entry) (*Log, error) {
	return ForkIn(SessionsDir(home, h.Cwd), h, branch)
}

// ForkIn is Fork with the new log's folder given, as CreateIn.
func ForkIn(dir string, h Header, branch []Entry) (*Log, error) { return forkIn(dir, h, branch, nil) }

// forkIn is ForkIn in codec c's format (nil: e's).
func forkIn(dir string, h Header, branch []Entry, c Codec) (*Log, error) {
	l, err := createAs(dir, "", h, c)
	if err != nil {
		return nil, err
	}
	prev := ""
	for _, e := range branch {
		e.Parent = prev // "" for the first: a root
		w, err := l.AppendEntry(e)
		if err != nil {
			l.Close()
			os.Remove(l.path)
			return nil, err
		}
		prev = w.ID
	}
	if err := l.Sync(); err != nil {
		l.Close()
		os.Remove(l.path)
		return nil, err
	}
	return l, nil
}
