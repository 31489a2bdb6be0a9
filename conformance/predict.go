package conformance

import (
	"bytes"
	"path/filepath"
)

// predictsFailure reports whether mutant m, planted in case c's run
// without it (transcript tr, bindings those of that run), looks caught by
// c: the run's lines go through the mutant's edits as the proxy would
// make them, without a server or a clock, and c's matcher judges what
// comes out. It only orders the cases a mutant is tried on, a likely
// catch first; a real run decides. The exit status and stderr are those
// of the run, as the mutant changes them; what the lines do not show (a
// request the server never got, a timing) predicts nothing.
func predictsFailure(m *Mutant, c *Case, base *Result) bool {
	tr, bindings := base.Transcript, base.Bindings
	if c.printMode() && !c.jsonOutput() {
		return false // text stdout: the matcher reads it whole, not by line
	}
	var out bytes.Buffer
	p := &proxy{m: m, out: &out, sessions: map[string]bool{}, methods: map[string]string{}, sim: true}
	r := newRun(c, Options{Validator: SchemaValidator{}})
	for _, k := range []string{"cwd", "home"} {
		if v, ok := bindings[k]; ok {
			r.m.bindings[k] = v
		}
	}
	if cwd, ok := bindings["cwd"].(string); ok {
		r.m.roots = []string{filepath.Dir(cwd)}
	}
	p.write(m.start...)
	for _, e := range tr {
		line := []byte(e.Line)
		switch e.Dir {
		case "sent":
			_, reply := p.fromClient(line)
			p.write(reply...)
			r.noteRequest(bytes.TrimSuffix(line, []byte("\n")))
		case "received":
			p.write(p.fromServer(line)...)
		}
	}
	p.write(p.leftOver()...)
	if r.judge(out.Bytes()) != nil {
		return true
	}
	// The exit status and stderr the proxy would pass on.
	status, stderr := base.status, string(m.stderr)
	if !m.muteStderr {
		stderr += base.stderr
	}
	if m.exit != nil && status >= 0 {
		status = m.exit(status)
	}
	code := status
	if m.exit == nil && base.signaled {
		code = -1 // killed by a signal, as the server was
	}
	return status >= 0 && r.checkStatus(code, nil, stderr) != nil
}

// judge matches what a server printed, all of it, as the run would: each
// line, then what never came.
func (r *run) judge(stdout []byte) *Divergence {
	r.mu.Lock()
	for _, l := range bytes.SplitAfter(stdout, []byte("\n")) {
		var div *Divergence
		switch {
		case len(l) == 0:
		case l[len(l)-1] != '\n':
			div = &Divergence{Step: "stdout", Message: "the last stdout line has no LF (F5)"}
		default:
			div = r.feed(l[:len(l)-1])
		}
		if div != nil {
			r.mu.Unlock()
			return div
		}
	}
	r.mu.Unlock()
	return r.finish(&tapeServer{})
}
