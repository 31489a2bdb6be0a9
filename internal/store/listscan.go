package store

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// A listing's reads of one log are bounded (H1): a stale log of any size
// costs it at most maxTail bytes of tail, or one pass of at most maxScan
// bytes holding a line and a few words per entry, never the whole file.
const (
	maxTail = 16 << 20 // the longest last entry a listing looks for
	maxScan = 64 << 20 // the largest log without a branch summary a listing scans
)

// summarize returns the summary of the log open as f, of size bytes,
// using buf as summarizeTail does: from the branch summary of its last
// entry; else, up to maxScan bytes, from one pass over its lines; else
// (a huge log an older e wrote) from its head alone, with no counts.
func summarize(f io.ReaderAt, size int64, buf *[]byte) cached {
	if c, ok := summarizeTail(f, size, buf); ok {
		return c
	}
	if size <= maxScan {
		return summarizeScan(f, size)
	}
	return summarizeHead(f, size)
}

// node is what summarizeScan keeps of an entry: its links, its kind and
// where its line starts, to read the one or two lines a title and a name
// come from once the branch is known.
type node struct {
	id, parent string
	kind       uint8
	off        int64
}

const (
	kindOther uint8 = iota
	kindMessage
	kindUserText // a user message with a text part: a turn, maybe the title
	kindTitle
	kindName
)

// summarizeScan summarizes the log open as f, of size bytes, as Read and
// Branch would, in one pass that holds one line at a time.
func summarizeScan(f io.ReaderAt, size int64) cached {
	br := bufio.NewReaderSize(io.NewSectionReader(f, 0, size), 64<<10)
	var (
		h     Header
		nodes []node
		long  []byte // a line longer than br's buffer
		day   dayCache
		off   int64
		prev  string
		e     Entry
	)
	header := false
	for {
		at := off
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long[:0], line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		off += int64(len(line))
		if err != nil && err != io.EOF {
			return cached{Invalid: true}
		}
		whole := bytes.HasSuffix(line, []byte{'\n'})
		line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte{'\n'}), []byte{'\r'})
		switch {
		case len(bytes.TrimSpace(line)) == 0:
		case !header:
			// The header must be whole, as parse wants it.
			if !whole || headerOf(bytes.TrimSpace(line), &h) != nil || h.Type != TypeSession || h.Version != Version {
				return cached{Invalid: true}
			}
			header = true
		case entryOf(line, &e, prev, &day) == nil: // a line that does not parse is skipped, a torn last one too
			n := node{id: e.ID, parent: e.Parent, off: at}
			switch e.Type {
			case TypeMessage:
				n.kind = kindMessage
				if userText(e.Message) {
					n.kind = kindUserText
				}
			case TypeTitle:
				n.kind = kindTitle
			case TypeName:
				n.kind = kindName
			}
			nodes = append(nodes, n)
			prev = e.ID
		}
		if err == io.EOF {
			break
		}
	}
	if !header {
		return cached{Invalid: true}
	}
	c := cached{Cwd: h.Cwd, Name: h.Name}
	title, name := -1, -1
	for _, i := range branchRev(len(nodes), func(i int) string { return nodes[i].id }, func(i int) string { return nodes[i].parent }) {
		switch n := nodes[i]; n.kind {
		case kindUserText:
			c.Turns++
			if title < 0 || nodes[title].kind != kindTitle {
				title = i // the walk goes back: the last one seen is the first
			}
			fallthrough
		case kindMessage:
			c.Messages++
		case kindTitle:
			if title < 0 || nodes[title].kind != kindTitle {
				title = i
			}
		case kindName:
			if name < 0 {
				name = i
			}
		}
	}
	if title >= 0 {
		e, ok := entryAt(f, nil, nodes[title].off, size)
		if !ok {
			return cached{Invalid: true}
		}
		c.Title = e.Name
		if e.Type == TypeMessage {
			_, text, _ := peek(e.Message)
			c.Title = titleOf(text)
		}
	}
	if name >= 0 {
		e, ok := entryAt(f, nil, nodes[name].off, size)
		if !ok {
			return cached{Invalid: true}
		}
		c.Name = e.Name
	}
	return c
}

// summarizeHead summarizes a log too big to scan from its first headTail
// bytes: the header's cwd and name, and the title its first user message
// with text gives when that lies there; no counts (spec/persistence.md §7).
func summarizeHead(f io.ReaderAt, size int64) cached {
	head := make([]byte, min(size, headTail))
	if _, err := f.ReadAt(head, 0); err != nil && err != io.EOF {
		return cached{Invalid: true}
	}
	var h Header
	var e Entry
	c, header := cached{}, false
	for off := int64(0); ; {
		line, next, ok := lineAt(head, off)
		if !ok {
			break
		}
		off = next
		switch {
		case len(bytes.TrimSpace(line)) == 0:
		case !header:
			if headerOf(bytes.TrimSpace(line), &h) != nil || h.Type != TypeSession || h.Version != Version {
				return cached{Invalid: true}
			}
			header, c.Cwd, c.Name = true, h.Cwd, h.Name
		case entryOf(line, &e, "", nil) == nil && e.Type == TypeMessage:
			if role, text, ok := peek(e.Message); ok && role == "user" {
				c.Title = titleOf(text)
				return c
			}
		}
	}
	if !header {
		return cached{Invalid: true}
	}
	return c
}
