package model

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// streamPair returns a streamConn dialled to a loopback listener and the
// server's end of it.
func streamPair(t *testing.T) (*streamConn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := ln.Accept()
	if err != nil {
		c.Close()
		t.Fatal(err)
	}
	s, ok := streamDial(c).(*streamConn)
	if !ok {
		t.Fatal("streamDial did not wrap a TCP connection")
	}
	t.Cleanup(func() { s.Close(); srv.Close() })
	// A guard against a read that never returns, not a measure.
	s.SetReadDeadline(time.Now().Add(time.Minute))
	return s, srv
}

// steps is a clock that moves by d at each reading: a stream read with
// it brings its bytes in d.
func steps(d time.Duration) func() int64 {
	var t int64
	return func() int64 { t += int64(d); return t }
}

// lowatOf returns the socket's SO_RCVLOWAT.
func lowatOf(t *testing.T, s *streamConn) int {
	t.Helper()
	var v int
	var err error
	if cerr := s.rc.Control(func(fd uintptr) {
		v, err = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVLOWAT)
	}); cerr != nil {
		t.Fatal(cerr)
	}
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// send writes b on the server's end.
func send(t *testing.T, srv net.Conn, b []byte) {
	t.Helper()
	if _, err := srv.Write(b); err != nil {
		t.Fatal(err)
	}
}

// readN reads exactly n bytes.
func readN(t *testing.T, s *streamConn, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := io.ReadFull(s, b); err != nil {
		t.Fatalf("reading %d bytes: %v", n, err)
	}
	return b
}

// fastPair is streamPair with a clock for which every read takes a
// window.
func fastPair(t *testing.T) (*streamConn, net.Conn) {
	s, srv := streamPair(t)
	s.now = steps(batchWindow)
	return s, srv
}

// batching makes s, of fastPair, batch its reads: a window's worth of 8 KiB.
func batching(t *testing.T, s *streamConn, srv net.Conn) {
	t.Helper()
	chunk := bytes.Repeat([]byte("x"), 8<<10)
	buf := make([]byte, 64<<10) // never filled: a batch read then waits for its batch
	for range 2 {               // the first read starts the measure
		send(t, srv, chunk)
		for got := 0; got < len(chunk); {
			n, err := s.Read(buf)
			if err != nil {
				t.Fatal(err)
			}
			got += n
		}
	}
	if l := lowatOf(t, s); l <= 1 {
		t.Fatalf("SO_RCVLOWAT %d after a fast stream, want a batch", l)
	}
}

// A fast stream is read in batches; a batch that stops filling (the
// stream pauses) is read all the same, and the stream, slower now, is
// read as it comes again.
func TestStreamConnBatchPause(t *testing.T) {
	s, srv := fastPair(t)
	batching(t, s, srv)
	send(t, srv, []byte("tail"))
	b := make([]byte, 1024)
	n, err := s.Read(b)
	if err != nil || string(b[:n]) != "tail" {
		t.Fatalf("Read = %q, %v; want tail", b[:n], err)
	}
	if l := lowatOf(t, s); l != 1 {
		t.Errorf("SO_RCVLOWAT %d after a pause, want 1", l)
	}
}

// A batch whose wait ends before the read looks at the queue (a busy
// machine) is read all the same: the wait's end is not lost.
func TestStreamConnWaitOver(t *testing.T) {
	s, srv := fastPair(t)
	b := make([]byte, 1024)
	for range 100 {
		s.wait = batchWait
		batching(t, s, srv)
		s.wait = time.Nanosecond
		send(t, srv, []byte("tail"))
		n, err := s.Read(b)
		if err != nil || string(b[:n]) != "tail" {
			t.Fatalf("Read = %q, %v; want tail", b[:n], err)
		}
	}
}

// A slow stream, a lone delta every few milliseconds, is never batched.
func TestStreamConnSlow(t *testing.T) {
	s, srv := streamPair(t)
	s.now = steps(5 * time.Millisecond)
	delta := bytes.Repeat([]byte("d"), 300)
	for i := range 20 {
		send(t, srv, delta)
		readN(t, s, len(delta))
		if l := lowatOf(t, s); l != 1 {
			t.Fatalf("SO_RCVLOWAT %d after %d slow deltas, want 1", l, i+1)
		}
	}
}

// A burst of events read one by one within a window is measured over the
// window, not taken for a fast stream.
func TestStreamConnBurst(t *testing.T) {
	s, srv := streamPair(t)
	s.now = steps(batchWindow / 10)
	event := bytes.Repeat([]byte("e"), 200)
	for range 5 {
		send(t, srv, event)
		readN(t, s, len(event))
	}
	if l := lowatOf(t, s); l != 1 {
		t.Errorf("SO_RCVLOWAT %d after a burst of 1 KB, want 1", l)
	}
}

// A Write (the next request) ends the batching at once: its answer's
// first bytes are read as they come.
func TestStreamConnWrite(t *testing.T) {
	s, srv := fastPair(t)
	batching(t, s, srv)
	if _, err := s.Write([]byte("next request")); err != nil {
		t.Fatal(err)
	}
	if l := lowatOf(t, s); l != 1 {
		t.Errorf("SO_RCVLOWAT %d after a Write, want 1", l)
	}
	batching(t, s, srv)
	if _, err := io.Copy(s, io.LimitReader(strings.NewReader("a request's long body"), 100)); err != nil {
		t.Fatal(err)
	}
	if l := lowatOf(t, s); l != 1 {
		t.Errorf("SO_RCVLOWAT %d after a ReadFrom, want 1", l)
	}
	send(t, srv, []byte("head"))
	if got := string(readN(t, s, 4)); got != "head" {
		t.Fatalf("read %q, want head", got)
	}
}

// The end of a stream, short of a batch, is read, then io.EOF.
func TestStreamConnEOF(t *testing.T) {
	s, srv := fastPair(t)
	batching(t, s, srv)
	send(t, srv, []byte("last"))
	srv.Close()
	b, err := io.ReadAll(s)
	if err != nil || string(b) != "last" {
		t.Errorf("ReadAll = %q, %v; want last", b, err)
	}
}

// Closing the connection (a cancelled call) ends a read waiting for a
// batch.
func TestStreamConnClose(t *testing.T) {
	s, srv := fastPair(t)
	batching(t, s, srv)
	done := make(chan error)
	go func() {
		_, err := s.Read(make([]byte, 1024))
		done <- err
	}()
	s.Close()
	if err := <-done; !errors.Is(err, net.ErrClosed) {
		t.Errorf("Read = %v, want net.ErrClosed", err)
	}
}

// Every byte of a fast stream of small writes arrives whole and in order.
func TestStreamConnOrder(t *testing.T) {
	s, srv := fastPair(t)
	const n = 20000
	go func() {
		for i := range n {
			if _, err := fmt.Fprintf(srv, "line %d\n", i); err != nil {
				return
			}
		}
		srv.Close()
	}()
	r := bufio.NewReader(s)
	for i := range n {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("line %d: %v", i, err)
		}
		if want := "line " + strconv.Itoa(i) + "\n"; line != want {
			t.Fatalf("read %q, want %q", line, want)
		}
	}
	if _, err := r.ReadByte(); err != io.EOF {
		t.Errorf("after the last line: %v, want io.EOF", err)
	}
}

// fastStream serves a chat completion of n deltas, "w0 " to "w<n-1> ",
// each flushed alone, then holds the answer open until its request ends
// unless done is set: a fast stream that stalls.
func fastStream(t *testing.T, n int, done bool) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		f := w.(http.Flusher)
		for i := range n {
			fmt.Fprintf(w, "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"w%d \"}}]}\n\n", i)
			f.Flush()
		}
		if !done {
			<-r.Context().Done()
			return
		}
		io.WriteString(w, "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv
}

// batchingClient is a client of streamTransport whose connections batch
// whatever comes in, as for a fast stream.
func batchingClient(t *testing.T) *http.Client {
	tr := streamTransport().(*http.Transport)
	dial := tr.DialContext
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if s, ok := c.(*streamConn); ok {
			s.now = steps(batchWindow)
		} else if err == nil {
			t.Errorf("streamTransport dialled a %T, want a *streamConn", c)
		}
		return c, err
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

func wantWords(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "w%d ", i)
	}
	return b.String()
}

// Through batched reads, an answer's deltas all arrive, in order.
func TestStreamTransportWhole(t *testing.T) {
	const n = 5000
	srv := fastStream(t, n, true)
	p := NewOpenAIChat(ProviderSettings{BaseURL: srv.URL, Client: batchingClient(t)})
	for i := range 2 { // the second on the first's connection
		deltas, _, err := collect(t.Context(), p, &Request{Model: "m"})
		if err != nil {
			t.Fatal(err)
		}
		var text strings.Builder
		for _, d := range deltas {
			text.WriteString(d.Text)
		}
		if got, want := text.String(), wantWords(n); got != want {
			t.Errorf("call %d: text of %d bytes, want %d: %.100q…", i+1, len(got), len(want), got)
		}
	}
}

// A provider that stalls in the middle of a fast stream still fails the
// call with the stall timeout, after every delta it sent.
func TestStreamTransportStall(t *testing.T) {
	const n = 500
	srv := fastStream(t, n, false)
	p := NewOpenAIChat(ProviderSettings{BaseURL: srv.URL, Client: batchingClient(t), StallTimeout: 200 * time.Millisecond})
	deltas, _, err := collect(t.Context(), p, &Request{Model: "m"})
	var e *Error
	if !errors.As(err, &e) || e.Type != "stall" {
		t.Fatalf("Stream error = %v, want a stall", err)
	}
	if len(deltas) != n {
		t.Errorf("%d deltas before the stall, want %d", len(deltas), n)
	}
}

// Cancelling a call waiting for its batch stops it at once.
func TestStreamTransportCancel(t *testing.T) {
	const n = 500
	srv := fastStream(t, n, false)
	p := NewOpenAIChat(ProviderSettings{BaseURL: srv.URL, Client: batchingClient(t)})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	all := make(chan struct{})
	go func() {
		<-all
		cancel() // the stream waits for more now
	}()
	seen := 0
	_, err := p.Stream(ctx, &Request{Model: "m"}, func(Delta) {
		if seen++; seen == n {
			close(all)
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Stream error = %v, want context.Canceled", err)
	}
}
