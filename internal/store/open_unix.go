//go:build unix

package store

import (
	"io"
	"syscall"
)

// openRead opens path for reading at offsets. A listing opens thousands of
// logs once each: a plain descriptor saves the poller registration os.Open
// tries (and fails) for each, two of its five system calls.
func openRead(path string) (readerAtCloser, error) {
	for {
		fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		return rawFile(fd), nil
	}
}

type rawFile int

func (f rawFile) ReadAt(b []byte, off int64) (int, error) {
	n := 0
	for n < len(b) {
		m, err := syscall.Pread(int(f), b[n:], off+int64(n))
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			return n, err
		case m == 0:
			return n, io.EOF
		}
		n += m
	}
	return n, nil
}

func (f rawFile) Close() error { return syscall.Close(int(f)) }
