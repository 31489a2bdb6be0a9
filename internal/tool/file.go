package tool

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/e-agent/e/internal/regfile"
	"github.com/e-agent/e/internal/sandbox"
)

const (
	maxReadBytes     = 256 << 10 // content returned by one read
	defaultReadLines = 2000
	maxEditBytes     = 16 << 20 // files edit loads whole
	sniffBytes       = 8000     // a NUL byte in this prefix marks a file binary, as git does
)

var readTool = &builtin{
	spec: Spec{
		Name:     "read",
		Category: "read",
		Description: "Read a text file. Returns its lines exactly as stored, without line numbers " +
			"(so text can be copied into edit's old). Reads at most 2000 lines and 256 KiB per call; " +
			"a note at the end gives the offset to continue from. Binary files are refused.",
	},
	params: []param{
		{name: "path", kind: kString, required: true, nonEmpty: true, desc: "File to read, relative to the working directory or absolute."},
		{name: "offset", kind: kInteger, min: 1, max: 1 << 53, desc: "First line to return, counting from 1 (default 1)."},
		{name: "limit", kind: kInteger, min: 1, max: 1 << 53, desc: "Most lines to return (default 2000)."},
	},
	target: "path",
	run:    runRead,
}

var writeTool = &builtin{
	spec: Spec{
		Name:        "write",
		Category:    "write",
		Description: "Write content to a file, replacing it if it exists. Missing parent directories are created.",
	},
	params: []param{
		{name: "path", kind: kString, required: true, nonEmpty: true, desc: "File to write, relative to the working directory or absolute."},
		{name: "content", kind: kString, required: true, desc: "The complete new content of the file."},
	},
	target: "path",
	run:    runWrite,
}

var editTool = &builtin{
	spec: Spec{
		Name:     "edit",
		Category: "write",
		Description: "Replace exact text in a file. old must match the file byte for byte (whitespace and " +
			"line endings included) and exactly once, unless all is true, which replaces every occurrence.",
	},
	params: []param{
		{name: "path", kind: kString, required: true, nonEmpty: true, desc: "File to edit, relative to the working directory or absolute."},
		{name: "old", kind: kString, required: true, nonEmpty: true, desc: "The exact text to replace."},
		{name: "new", kind: kString, required: true, desc: "The replacement text."},
		{name: "all", kind: kBoolean, desc: "Replace every occurrence instead of requiring exactly one (default false)."},
	},
	target: "path",
	run:    runEdit,
}

// openRegular opens path beneath the session directory and checks that it
// names a regular file: not a directory, and not a special file (regfile:
// the open of a FIFO does not block, and the check is on the open file, so
// nothing can be swapped in after it; Y1).
func openRegular(env *Env, tool, path string, flag int) (*os.File, os.FileInfo, *Result) {
	root, name, err := env.openRoot(path)
	if err != nil {
		r := pathFailure(tool, path, err)
		return nil, nil, &r
	}
	defer root.Close()
	f, fi, err := regfile.OpenIn(root, name, flag, 0)
	if err != nil {
		r := pathFailure(tool, path, env.outside(err))
		if errors.Is(err, syscall.EISDIR) || fi == nil && isDir(root, name) {
			r = failure("is a directory", "%s: %s: is a directory (use ls)", tool, path)
		}
		return nil, nil, &r
	}
	return f, fi, nil
}

// isDir reports whether name beneath root is a directory, for the message
// that points to ls.
func isDir(root *os.Root, name string) bool {
	fi, err := root.Stat(name)
	return err == nil && fi.IsDir()
}

func runRead(ctx context.Context, env *Env, a args) Result {
	path := a.str("path")
	offset, limit := a.integer("offset", 1), a.integer("limit", defaultReadLines)
	f, fi, fail := openRegular(env, "read", path, os.O_RDONLY)
	if fail != nil {
		return *fail
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	if head, _ := br.Peek(sniffBytes); bytes.IndexByte(head, 0) >= 0 {
		return failure("binary file", "read: %s: binary file (%d bytes); use bash to inspect it", path, fi.Size())
	}

	var out bytes.Buffer
	var lineNo, first, returned int64
	var note string
	for {
		if ctx.Err() != nil {
			return stopped("read: " + path + ": stopped")
		}
		inWindow := lineNo+1 >= offset
		keep := 0
		if inWindow {
			keep = maxReadBytes - out.Len()
		}
		line, size, err := readLine(br, keep)
		if err != nil && err != io.EOF {
			return pathFailure("read", path, err)
		}
		if size == 0 {
			break
		}
		lineNo++
		if inWindow {
			if returned == limit {
				note = fmt.Sprintf("[lines %d-%d shown; more follow: use offset=%d to continue]", first, lineNo-1, lineNo)
				break
			}
			if len(line) < size {
				if returned > 0 {
					note = fmt.Sprintf("[lines %d-%d shown (256 KiB limit); more follow: use offset=%d to continue]", first, lineNo-1, lineNo)
					break
				}
				// A single line longer than the limit: show its start.
				line = line[:validPrefix(line)]
				out.Write(line)
				first, returned = lineNo, 1
				note = fmt.Sprintf("[line %d truncated: %d of %d bytes shown; use bash to read more of it; next line is offset=%d]", lineNo, len(line), size, lineNo+1)
				break
			}
			if returned == 0 {
				first = lineNo
			}
			out.Write(line)
			returned++
		}
		if err == io.EOF {
			break
		}
	}
	switch {
	case returned == 0 && lineNo == 0:
		return Result{Content: "(empty file)", Summary: "0 lines"}
	case returned == 0:
		return failure("offset past the end", "read: %s: offset %d is past the end of the file (%d lines)", path, offset, lineNo)
	}
	if note != "" {
		if b := out.Bytes(); b[len(b)-1] != '\n' {
			out.WriteByte('\n')
		}
		out.WriteString(note)
	}
	return Result{Content: out.String(), Summary: plural(returned, "line", "lines")}
}

// readLine reads one line, newline included, keeping at most keep bytes of it;
// size is its full length. size 0 means end of input.
func readLine(br *bufio.Reader, keep int) (line []byte, size int, err error) {
	for {
		frag, err := br.ReadSlice('\n')
		size += len(frag)
		if room := keep - len(line); room > 0 {
			line = append(line, frag[:min(room, len(frag))]...)
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, size, err
		}
	}
}

// validPrefix returns the length of b without a UTF-8 sequence cut at its end.
func validPrefix(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if utf8.FullRune(b[i:]) {
				return len(b)
			}
			return i
		}
	}
	return len(b)
}

func runWrite(ctx context.Context, env *Env, a args) Result {
	path, content := a.str("path"), a.str("content")
	if r := env.readOnly("write", path); r != nil {
		return *r
	}
	root, name, err := env.openRoot(path)
	if err != nil {
		return pathFailure("write", path, err)
	}
	defer root.Close()
	if err := root.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return pathFailure("write", path, env.outside(err))
	}
	// Truncating in place keeps the mode of an existing file; 0644 applies to
	// new ones. A FIFO, device or socket is refused (regfile, Y1).
	f, _, err := regfile.OpenIn(root, name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if errors.Is(err, syscall.EISDIR) {
		return failure("is a directory", "write: %s: is a directory", path)
	}
	if err != nil {
		return pathFailure("write", path, env.outside(err))
	}
	_, err = f.WriteString(content)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return pathFailure("write", path, err)
	}
	n := plural(int64(len(content)), "byte", "bytes")
	return Result{Content: fmt.Sprintf("wrote %s to %s", n, path), Summary: "wrote " + n}
}

func runEdit(ctx context.Context, env *Env, a args) Result {
	path, old, repl := a.str("path"), a.str("old"), a.str("new")
	if old == repl {
		return failure("nothing to change", "edit: %s: old and new are the same", path)
	}
	if r := env.readOnly("edit", path); r != nil {
		return *r
	}
	f, fi, fail := openRegular(env, "edit", path, os.O_RDWR)
	if fail != nil {
		return *fail
	}
	defer f.Close()
	if fi.Size() > maxEditBytes {
		return failure("file too large", "edit: %s: file is %d bytes, more than edit handles (%d); use bash", path, fi.Size(), maxEditBytes)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxEditBytes+1))
	if err != nil {
		return pathFailure("edit", path, err)
	}
	text := string(data)
	n := strings.Count(text, old)
	switch {
	case n == 0:
		return failure("old text not found", "edit: %s: old text not found (it must match exactly, whitespace included)", path)
	case n > 1 && !a.boolean("all"):
		return failure("old text is ambiguous", "edit: %s: old text matches %d times; include more surrounding text to make it unique, or set all to true", path, n)
	}
	text = strings.ReplaceAll(text, old, repl)
	// The file open since the check is the one rewritten, in place.
	if err := f.Truncate(0); err != nil {
		return pathFailure("edit", path, err)
	}
	if _, err := f.WriteAt([]byte(text), 0); err != nil {
		return pathFailure("edit", path, err)
	}
	s := plural(int64(n), "replacement", "replacements")
	return Result{Content: fmt.Sprintf("edited %s: %s", path, s), Summary: s}
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// readOnly refuses a file tool's write under the read-only sandbox (W3),
// as the kernel refuses bash's; nil when writing is allowed.
func (env *Env) readOnly(tool, path string) *Result {
	if env.Sandbox.Mode != sandbox.ReadOnly {
		return nil
	}
	r := failure("sandbox denied the write", "%s: %s: the sandbox is read-only: this session may not write files", tool, path)
	return &r
}
