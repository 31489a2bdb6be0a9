//go:build unix

package conformance

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// Proxy runs argv as a child with this process's stderr, and stands
// between it and the client on stdin and stdout, planting the defect the
// mutant names (see Mutants); "identity" plants none. Lines a mutant leaves
// alone pass byte for byte; SIGTERM, SIGHUP and SIGINT are forwarded; the
// child's exit status (or its killing signal) becomes the proxy's, so that
// the proxy only ever adds the one defect. It returns the exit status.
func Proxy(ctx context.Context, mutant string, argv []string, stdin io.Reader, stdout io.Writer) (int, error) {
	mu, ok := MutantNamed(mutant)
	if !ok {
		return 2, fmt.Errorf("conformance: proxy: no mutant %q", mutant)
	}
	if len(argv) == 0 {
		return 2, errors.New("conformance: proxy: no command")
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = os.Stderr
	if mu.muteStderr {
		cmd.Stderr = io.Discard
	}
	dieWithParent(cmd)
	childIn, err := cmd.StdinPipe()
	if err != nil {
		return 2, err
	}
	childOut, err := cmd.StdoutPipe()
	if err != nil {
		return 2, err
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		return 2, fmt.Errorf("conformance: proxy: %w", err)
	}
	p := &proxy{m: mu, out: stdout, child: childIn, sessions: map[string]bool{}, methods: map[string]string{}}
	mu.writeStderr()
	done := make(chan struct{})
	drained := make(chan struct{})
	// The client side ends with the process: it may block reading a
	// stdin the client never closes.
	go p.clientSide(stdin)
	go func() {
		defer close(drained)
		p.serverSide(childOut)
	}()
	go func() {
		for {
			select {
			case s := <-sigs:
				if !mu.noSignals {
					cmd.Process.Signal(s)
				}
			case <-done:
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	<-drained // Wait closes the stdout pipe: read it to EOF first
	werr := cmd.Wait()
	close(done)
	p.finish()
	mu.writeStderr()
	code, sig := exitStatus(werr)
	if code < 0 {
		return 2, werr
	}
	if sig != 0 && mu.exit == nil {
		dieBy(sig)
	}
	if mu.exit != nil {
		code = mu.exit(code)
	}
	return code, nil
}

// proxy is the state one mutant may keep across lines.
type proxy struct {
	m     *Mutant
	mu    sync.Mutex // serialises writes to out and the state below
	out   io.Writer
	child io.WriteCloser

	sessions map[string]bool   // ids seen in results: the live sessions
	methods  map[string]string // request id (canonical JSON) → method
	held     map[string][]byte
	timer    *time.Timer
	// a batch of lines written at once (control/coalesced-writes)
	batch      []byte
	batched    int
	batchTimer *time.Timer
	lastSess   string
	// sim: the proxy replays a transcript (predictsFailure), with no
	// server and no clock: held lines wait for the next line or the end.
	sim bool
}

// write sends whole lines to the client; p.mu is held.
func (p *proxy) write(lines ...[]byte) {
	for _, l := range lines {
		p.out.Write(l)
	}
	if f, ok := p.out.(interface{ Flush() error }); ok {
		f.Flush()
	}
}

func (p *proxy) clientSide(stdin io.Reader) {
	defer func() {
		if p.m.keepStdin {
			return // the defect: EOF never reaches the server
		}
		p.child.Close()
	}()
	// Lines, not bytes: the proxy learns each request's method (for the
	// mutants of results); what it forwards unchanged is the exact bytes.
	br := bufio.NewReaderSize(stdin, 1<<16)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			p.mu.Lock()
			fwd, reply := p.fromClient(line)
			p.write(reply...)
			p.mu.Unlock()
			if fwd != nil {
				if _, werr := p.child.Write(fwd); werr != nil {
					return
				}
			}
		}
		if err != nil {
			return
		}
	}
}

// fromClient is what the proxy does with a client line: what it forwards
// to the server (nil: nothing) and what it answers itself. It learns each
// request's method (for the mutants of results); p.mu is held.
func (p *proxy) fromClient(line []byte) (fwd []byte, reply [][]byte) {
	obj := jsonObject(line)
	if obj == nil {
		return line, nil
	}
	if id, ok := obj["id"]; ok {
		m, isStr := obj["method"].(string)
		if _, has := obj["method"]; !has {
			m, isStr = "oneshot", true
		}
		if isStr {
			p.methods[canon(id)] = m
		}
	}
	if p.m.client != nil {
		return p.m.client(p, line, obj)
	}
	return line, nil
}

// fromServer is what the proxy writes for a server line; p.mu is held.
func (p *proxy) fromServer(line []byte) [][]byte {
	obj := jsonObject(line)
	p.track(obj)
	if p.m.server == nil || obj == nil || line[len(line)-1] != '\n' {
		return [][]byte{line}
	}
	return p.m.server(p, line, obj)
}

func (p *proxy) serverSide(out io.Reader) {
	br := bufio.NewReaderSize(out, 1<<16)
	p.mu.Lock()
	if p.m.start != nil {
		p.write(p.m.start...)
	}
	p.mu.Unlock()
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			p.mu.Lock()
			p.write(p.fromServer(line)...)
			p.mu.Unlock()
		}
		if err != nil {
			return
		}
	}
}

// finish writes what a mutant still holds when the server is done.
func (p *proxy) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.write(p.leftOver()...)
}

// leftOver is what a mutant still holds when the server is done, to be
// written then; p.mu is held.
func (p *proxy) leftOver() [][]byte {
	if p.timer != nil {
		p.timer.Stop()
	}
	var out [][]byte
	if !p.m.dropHeld {
		for _, k := range sortedKeys(p.held) {
			out = append(out, p.held[k])
		}
	}
	p.held = nil
	return append(out, p.flushBatch()...)
}

// track remembers the sessions the server has created or named.
func (p *proxy) track(obj map[string]any) {
	if obj == nil {
		return
	}
	if res, ok := obj["result"].(map[string]any); ok {
		if s, ok := res["session"].(string); ok {
			p.sessions[s] = true
		}
	}
	if s, ok := obj["session"].(string); ok {
		if !p.sessions[s] && len(p.sessions) > 0 {
			p.lastSess = s
		}
		p.sessions[s] = true
	}
}

// jsonObject decodes a line holding one JSON object (numbers kept as
// written), or returns nil.
func jsonObject(line []byte) map[string]any {
	t := bytes.TrimRight(line, "\r\n")
	if len(t) == 0 || t[0] != '{' {
		return nil
	}
	v, err := decode(t)
	if err != nil {
		return nil
	}
	m, _ := v.(map[string]any)
	return m
}

// exitStatus is the status a process ended with: its exit code, or
// 128+N and the signal when signal N killed it; -1 when it could not be
// waited for.
func exitStatus(werr error) (int, syscall.Signal) {
	var ee *exec.ExitError
	switch {
	case werr == nil:
		return 0, 0
	case !errors.As(werr, &ee):
		return -1, 0
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), ws.Signal()
	}
	return ee.ExitCode(), 0
}

// dieBy ends this process by sig, the way its child died, so that whoever
// waits for it sees what it would have seen without it in between.
func dieBy(sig syscall.Signal) {
	signal.Reset(sig)
	syscall.Kill(os.Getpid(), sig)
	time.Sleep(time.Second)
}

// ExitLike returns the exit status of a child that ended as ps says
// (Record's server), or ends this process by the same signal when one
// killed it, so that whoever waits sees what it would see without it.
func ExitLike(ps *os.ProcessState) int {
	if ps == nil {
		return 1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		dieBy(ws.Signal())
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}
