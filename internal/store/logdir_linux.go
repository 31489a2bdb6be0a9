package store

import (
	"errors"
	"io"
	"syscall"
)

// logDir is a sessions directory open for a listing, which opens
// thousands of logs once each: relative to the directory, each open walks
// no path, fstat of the open log replaces a second walk by lstat, and a
// plain descriptor saves the poller registration os.Open tries (and fails)
// for each.
type logDir int

func openLogDir(dir string) (logDir, error) {
	fd, err := retry(func() (int, error) {
		return syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	})
	return logDir(fd), err
}

// errNotRegular reports a log name that is no longer a regular file.
var errNotRegular = errors.New("not a regular file")

// open opens the log name of d for reading at offsets and returns its
// size and modification time (Unix nanoseconds).
func (d logDir) open(name string) (readerAtCloser, int64, int64, error) {
	fd, err := retry(func() (int, error) {
		return syscall.Openat(int(d), name, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NOFOLLOW, 0)
	})
	if err != nil {
		return nil, 0, 0, err
	}
	var st syscall.Stat_t
	err = syscall.Fstat(fd, &st)
	if err == nil && st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		err = errNotRegular
	}
	if err != nil {
		syscall.Close(fd)
		return nil, 0, 0, err
	}
	return rawFile(fd), st.Size, st.Mtim.Nano(), nil
}

func (d logDir) Close() error { return syscall.Close(int(d)) }

func retry(open func() (int, error)) (int, error) {
	for {
		fd, err := open()
		if err != syscall.EINTR {
			return fd, err
		}
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
