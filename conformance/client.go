package conformance

// This file plays the client section: the lines, waits, signals and
// placeholders a case sends.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"
)

// play sends the client section.
func (r *run) play(p *pump, stdin io.Writer, closeStdin func()) *Divergence {
	for _, s := range r.c.client {
		step := fmt.Sprintf("client line %d", s.line)
		var data []byte
		switch s.kind {
		case "wait":
			what := "@" + strings.Join(s.labels, " @")
			if div := p.until(what, func() bool { return r.labelsDone(s.labels) }); div != nil {
				return div
			}
			continue
		case "close":
			closeStdin()
			continue
		case "exit":
			// The server must end on its own (shutdown), stdin still open.
			if div := p.until("the server to exit with stdin still open (M16)", func() bool { return r.eof }); div != nil {
				return div
			}
			r.mu.Lock()
			eof := r.eof
			r.mu.Unlock()
			if !eof {
				return &Divergence{Step: step, Message: "the server did not exit with stdin still open (M16)"}
			}
			r.exited = true
			continue
		case "signal":
			if err := r.cmd.Process.Signal(signals[string(s.text)]); err != nil {
				return &Divergence{Step: step, Message: "signalling the server: " + err.Error()}
			}
			r.signalled = true
			r.mu.Lock()
			r.transcript = append(r.transcript, Exchange{At: time.Now(), Dir: "signal", Line: string(s.text)})
			r.mu.Unlock()
			continue
		case "raw":
			r.mu.Lock()
			raw, err := substitute(s.text, r.m.bindings)
			r.mu.Unlock()
			if err != nil {
				return &Divergence{Step: step, Message: err.Error()}
			}
			for _, l := range bytes.Split(raw, []byte("\n")) {
				r.noteRequest(l)
			}
			data = raw
		case "pad":
			data = append(bytes.Replace(s.text, []byte("$pad"), bytes.Repeat([]byte("x"), s.size-len(s.text)+4), 1), '\n')
		case "send":
			r.mu.Lock()
			line, err := substitute(s.text, r.m.bindings)
			r.mu.Unlock()
			if err != nil {
				return &Divergence{Step: step, Message: err.Error()}
			}
			r.noteRequest(line)
			data = append(line, '\n')
		}
		r.mu.Lock()
		r.transcript = append(r.transcript, Exchange{At: time.Now(), Dir: "sent", Line: string(data)})
		r.mu.Unlock()
		if _, err := stdin.Write(data); err != nil {
			// The server went away; what it printed decides the verdict.
			return nil
		}
		// Look at what arrived meanwhile so failures are reported early.
		if div := p.drain(); div != nil {
			return div
		}
	}
	return nil
}

// noteRequest remembers the method of a request, for schema validation
// (pi: its command type); an ACP request about a session lets updates of
// that session come again (K5).
func (r *run) noteRequest(line []byte) {
	v, err := decode(line)
	obj, ok := v.(map[string]any)
	if err != nil || !ok {
		return
	}
	id, ok := obj["id"]
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch r.c.Dialect {
	case DialectPi:
		if t, _ := obj["type"].(string); t != "extension_ui_response" {
			r.asked[canon(id)]++
			r.methods[canon(id)] = t
		}
	case DialectACP:
		method, isRequest := obj["method"].(string)
		if !isRequest {
			return // the client's answer to a request of the agent
		}
		r.asked[canon(id)]++
		r.methods[canon(id)] = method
		st := r.stream(acpSessionKey(obj, r.resolveSession))
		st.quiet, st.open = false, st.open+1
	default:
		method, _ := obj["method"].(string)
		if _, has := obj["method"]; !has {
			method = "oneshot"
		}
		r.asked[canon(id)]++
		r.methods[canon(id)] = method
	}
}

// substitute replaces "{{name}}" (a whole JSON string) by the bound JSON
// value, and {{name}} inside a longer string by the bound string.
func substitute(line []byte, b map[string]any) ([]byte, error) {
	var missing string
	value := func(p string) (any, bool) {
		v, ok := b[p[2:len(p)-2]]
		if !ok && missing == "" {
			missing = p
		}
		return v, ok
	}
	s := quotedPlaceholderRE.ReplaceAllStringFunc(string(line), func(q string) string {
		if v, ok := value(q[1 : len(q)-1]); ok {
			return canon(v)
		}
		return q
	})
	s = placeholderRE.ReplaceAllStringFunc(s, func(p string) string {
		v, ok := value(p)
		if !ok {
			return p
		}
		q, _ := json.Marshal(inString(v))
		return string(q[1 : len(q)-1])
	})
	if missing != "" {
		return nil, fmt.Errorf("placeholder %s is not bound yet: add a #wait for the line that binds it", missing)
	}
	return []byte(s), nil
}

var quotedPlaceholderRE = regexp.MustCompile(`"\{\{[A-Za-z_][A-Za-z0-9_.-]*\}\}"`)
