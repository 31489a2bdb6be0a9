package conformance

import (
	"bytes"
	"strings"
)

// archive is a txtar archive: a free-form comment, then files, each
// introduced by a marker line "-- name --". The format is the one of
// golang.org/x/tools/txtar; it is small enough not to warrant the module.
type archive struct {
	comment []byte
	files   []archiveFile
}

type archiveFile struct {
	name string
	data []byte
	line int // 1-based line of the file's first data line in the archive
}

// parseArchive splits data into comment and files. It never fails: text
// before the first marker is the comment.
func parseArchive(data []byte) *archive {
	a := new(archive)
	var name string
	var start, startLine int
	inFile := false
	line := 1
	flush := func(end int) {
		if inFile {
			a.files = append(a.files, archiveFile{name: name, data: data[start:end], line: startLine})
		} else {
			a.comment = data[:end]
		}
	}
	for off := 0; off < len(data); {
		end := bytes.IndexByte(data[off:], '\n')
		next := len(data)
		if end >= 0 {
			next = off + end + 1
		}
		if n, ok := markerName(data[off:next]); ok {
			flush(off)
			name, inFile = n, true
			start, startLine = next, line+1
		}
		off = next
		line++
	}
	flush(len(data))
	return a
}

// markerName reports whether line is "-- name --" and returns the name.
func markerName(line []byte) (string, bool) {
	s := strings.TrimRight(string(line), "\r\n")
	if !strings.HasPrefix(s, "-- ") || !strings.HasSuffix(s, " --") || len(s) < 7 {
		return "", false
	}
	name := strings.TrimSpace(s[3 : len(s)-3])
	return name, name != ""
}

// formatArchive is the inverse of parseArchive.
func formatArchive(a *archive) []byte {
	var b bytes.Buffer
	b.Write(a.comment)
	if len(a.comment) > 0 && a.comment[len(a.comment)-1] != '\n' {
		b.WriteByte('\n')
	}
	for _, f := range a.files {
		b.WriteString("-- " + f.name + " --\n")
		b.Write(f.data)
		if len(f.data) > 0 && f.data[len(f.data)-1] != '\n' {
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}
