package model

import (
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A fast provider stream (a mock, a fast model, a busy reader) arrives as
// many small TCP segments, and each wake-up of its reader costs far more
// than the few events it brings: the runtime's park and wake, a read, an
// ACK. An idle e wakes within microseconds, so it took about five events
// per wake-up. While a stream is fast, streamConn has the kernel wake the
// reader only once about batchWindow's worth of it, at its measured rate,
// is queued (SO_RCVLOWAT); a stream too slow to bring batchMin bytes in
// that window (a model's tokens, milliseconds apart; the first delta of
// any answer) is read as it arrives. A batch that stops filling (the
// stream pauses or ends) is read after batchWait anyway, and measured
// again.
const (
	batchWindow = 250 * time.Microsecond
	batchMin    = 1 << 10
	batchMax    = 32 << 10
	batchWait   = 500 * time.Microsecond
)

// streamConn is a TCP connection to a provider whose reads batch a fast
// stream (above). One goroutine reads at a time (net/http's). Its reads,
// and the socket options and queue size they ask for, are raw system
// calls, without the runtime's bookkeeping of one that may block (the
// socket is non-blocking): that bookkeeping wakes the runtime's sysmon
// thread whenever e was idle, as between two batches, and sysmon then
// polls every 20 µs for a while.
type streamConn struct {
	*net.TCPConn
	rc   syscall.RawConn
	now  func() int64  // nanotime; tests replace it
	wait time.Duration // batchWait; tests shorten it

	// The reader's own: the span over which the stream's rate is measured
	// began at since (0 after a Write: at the next read) and has brought
	// got bytes; full says the last read filled its buffer (more may be
	// queued, with no wake-up to come).
	since, got int64
	full       bool

	mu      sync.Mutex
	lowat   int  // the socket's SO_RCVLOWAT
	written bool // a Write since the last Read: a new request, whose answer is read as it comes
	timer   *time.Timer
}

// streamDial wraps the TCP connections of provider streams.
func streamDial(c net.Conn) net.Conn {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return c
	}
	s := &streamConn{TCPConn: tc, rc: rc, now: nanotime, wait: batchWait, lowat: 1}
	s.timer = time.AfterFunc(time.Hour, s.unbatch)
	s.timer.Stop()
	return s
}

// setLowat sets SO_RCVLOWAT, which wakes the reader if as many bytes are
// queued; mu is held.
func (s *streamConn) setLowat(n int) {
	if n == s.lowat {
		return
	}
	v := int32(n)
	var errno syscall.Errno
	if s.rc.Control(func(fd uintptr) {
		_, _, errno = syscall.RawSyscall6(unix.SYS_SETSOCKOPT, // not in package syscall on 386
			fd, syscall.SOL_SOCKET, syscall.SO_RCVLOWAT, uintptr(unsafe.Pointer(&v)), 4, 0)
	}) == nil && errno == 0 {
		s.lowat = n
	}
}

// unbatch ends a batch that did not fill within batchWait: what is
// queued is read now.
func (s *streamConn) unbatch() {
	s.mu.Lock()
	s.setLowat(1)
	s.mu.Unlock()
}

func (s *streamConn) Write(b []byte) (int, error) {
	s.wrote()
	return s.TCPConn.Write(b)
}

// ReadFrom is TCPConn's (net/http sends a long request body with it),
// as a Write.
func (s *streamConn) ReadFrom(r io.Reader) (int64, error) {
	s.wrote()
	return s.TCPConn.ReadFrom(r)
}

// wrote ends a batch before a request is written.
func (s *streamConn) wrote() {
	s.mu.Lock()
	s.written = true
	s.setLowat(1)
	s.mu.Unlock()
}

func (s *streamConn) Close() error {
	s.timer.Stop()
	return s.TCPConn.Close()
}

func (s *streamConn) Read(b []byte) (int, error) {
	s.mu.Lock()
	if s.written {
		s.written, s.since = false, 0
	}
	lowat := s.lowat
	s.mu.Unlock()
	n, err := s.read(b, lowat)
	now := s.now()
	s.full = n == len(b)
	next, decided := lowat, true
	switch {
	case err != nil:
		next, s.since = 1, 0
	case s.since == 0:
		// The first read of an answer: its rate is measured from here.
		s.since, s.got, decided = now, 0, false
	default:
		// The rate over a window at least, so that a burst of a few
		// events read one by one is not taken for a fast stream.
		s.got += int64(n)
		span := now - s.since
		if decided = span >= int64(batchWindow); decided {
			next = batchSize(lowat, s.got*int64(batchWindow)/span)
			s.since, s.got = now, 0
		}
	}
	if decided {
		// Against the socket's value, which unbatch may have lowered.
		s.mu.Lock()
		if !s.written {
			s.setLowat(next)
		}
		s.mu.Unlock()
	}
	return n, err
}

// batchSize is SO_RCVLOWAT for a stream that brings perWindow bytes per
// batchWindow, read now in batches of lowat: a power of two within
// [batchMin, batchMax], or 1 for a slow stream. It stays at lowat while
// perWindow is within a factor of two of it, so that a steady stream's
// jitter does not set it again and again.
func batchSize(lowat int, perWindow int64) int {
	if lowat > 1 && perWindow >= int64(lowat/2) && perWindow < int64(lowat*2) {
		return lowat
	}
	if perWindow < batchMin {
		return 1
	}
	size := batchMin
	for size < batchMax && int64(size*2) <= perWindow {
		size *= 2
	}
	return size
}

// read reads what is queued once there is a byte at least, or with lowat
// above 1 once there are lowat bytes or batchWait has passed.
func (s *streamConn) read(b []byte, lowat int) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	if lowat > 1 {
		s.timer.Reset(s.wait)
		defer s.timer.Stop()
	}
	var n int
	var errno syscall.Errno
	check := lowat > 1 && !s.full
	err := s.rc.Read(func(fd uintptr) bool {
		if check {
			// Wait unless the batch is queued already: a wake-up that
			// came before this read is gone (the runtime forgets it).
			// The batch is the socket's now: the wait may be over
			// (unbatch), its wake-up gone too.
			check = false
			s.mu.Lock()
			lowat := s.lowat
			s.mu.Unlock()
			var queued int32 // SIOCINQ, spelled TIOCINQ in package syscall
			_, _, e := syscall.RawSyscall(syscall.SYS_IOCTL, fd, syscall.TIOCINQ, uintptr(unsafe.Pointer(&queued)))
			if e == 0 && int(queued) < lowat {
				return false
			}
		}
		for {
			r, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
			n, errno = int(r), e
			if e != syscall.EINTR {
				return e != syscall.EAGAIN
			}
		}
	})
	switch {
	case err != nil:
		return 0, err
	case errno != 0:
		return 0, &net.OpError{Op: "read", Net: "tcp", Source: s.LocalAddr(), Addr: s.RemoteAddr(), Err: os.NewSyscallError("read", errno)}
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}
