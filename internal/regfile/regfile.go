// Package regfile opens the files e reads because a request, a tool call or
// a config file named them, so that none can hang or flood the process
// (Y1). The open never blocks (O_NONBLOCK: a FIFO without a writer would
// otherwise hold it forever), what was opened is checked on the open file
// (fstat, so nothing can be swapped in after the check) to be a regular file,
// and a read stops at a stated limit, whatever stat says: /proc files report
// a size of 0, so a size is never taken to mean "read to EOF".
package regfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

var (
	// ErrNotRegular is wrapped by the error for a FIFO, device, socket or
	// directory where a regular file was expected.
	ErrNotRegular = errors.New("not a regular file")
	// ErrTooLarge is wrapped by the error for a file over a read's limit.
	ErrTooLarge = errors.New("too large")
)

// Open opens path for reading; see [OpenFile].
func Open(path string) (*os.File, fs.FileInfo, error) {
	return OpenFile(path, os.O_RDONLY, 0)
}

// OpenFile opens path with flag without blocking and returns it with its
// FileInfo when it is a regular file. Anything else is closed and refused
// with an *fs.PathError naming path and what it is, wrapping ErrNotRegular.
func OpenFile(path string, flag int, perm fs.FileMode) (*os.File, fs.FileInfo, error) {
	f, err := os.OpenFile(path, flag|syscall.O_NONBLOCK, perm)
	if err != nil {
		return nil, nil, why(err, path, os.Stat)
	}
	return check(f, path)
}

// OpenIn is OpenFile for name beneath root.
func OpenIn(root *os.Root, name string, flag int, perm fs.FileMode) (*os.File, fs.FileInfo, error) {
	f, err := root.OpenFile(name, flag|syscall.O_NONBLOCK, perm)
	if err != nil {
		return nil, nil, why(err, name, root.Stat)
	}
	return check(f, name)
}

// OpenAny opens name beneath root for reading without blocking, whatever it
// is, for a caller that takes a directory or a file (ls, grep, find) and
// looks at the FileInfo before reading. A socket, which cannot be opened,
// comes back as its FileInfo and a nil file.
func OpenAny(root *os.Root, name string) (*os.File, fs.FileInfo, error) {
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ENXIO) {
		if fi, serr := root.Stat(name); serr == nil && fi.Mode()&fs.ModeSocket != 0 {
			return nil, fi, nil
		}
	}
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// why turns ENXIO, which open gives for a socket (and for a FIFO opened to
// write with no reader), into the error saying what the file is.
func why(err error, path string, stat func(string) (fs.FileInfo, error)) error {
	if !errors.Is(err, syscall.ENXIO) {
		return err
	}
	if fi, serr := stat(path); serr == nil && !fi.Mode().IsRegular() {
		return Check(path, fi)
	}
	return err
}

func check(f *os.File, name string) (*os.File, fs.FileInfo, error) {
	fi, err := f.Stat()
	if err == nil {
		err = Check(name, fi)
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// Check returns nil when fi is a regular file's, else the error naming path
// and what it is.
func Check(path string, fi fs.FileInfo) error {
	if fi.Mode().IsRegular() {
		return nil
	}
	return &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("%s, %w", Kind(fi.Mode()), ErrNotRegular)}
}

// Kind names the type of a file mode as an error shows it.
func Kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m.IsRegular():
		return "a regular file"
	}
	return "an irregular file"
}

// ReadFile reads the regular file at path, at most limit bytes: a larger
// file is refused with an error wrapping ErrTooLarge.
func ReadFile(path string, limit int64) ([]byte, error) {
	f, fi, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadAll(f, path, fi.Size(), limit)
}

// ReadAll reads f (named path) to its end, at most limit bytes; size, its
// stat size, only sizes the buffer, as it may be 0 for a file with content.
func ReadAll(f io.Reader, path string, size, limit int64) ([]byte, error) {
	if size > limit {
		return nil, TooLarge(path, limit)
	}
	buf := make([]byte, 0, max(size, 512)+1) // +1: EOF is seen without growing
	for {
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > limit {
			return nil, TooLarge(path, limit)
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
	}
}

// TooLarge is the error for path over limit bytes.
func TooLarge(path string, limit int64) error {
	return &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w: over the limit of %s", ErrTooLarge, Bytes(limit))}
}

// Bytes writes n as a limit is stated: in MiB or KiB when exact.
func Bytes(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
