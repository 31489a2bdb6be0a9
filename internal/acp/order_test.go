package acp

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/e-agent/e/internal/session"
)

// servePiped serves an Agent over pipes, in a fresh home and cwd, with
// hook as testHookBeforeLateReply; served yields Serve's exit status.
func servePiped(t *testing.T, hook func(method string)) (cwd string, in io.WriteCloser, out io.Reader, served <-chan int) {
	t.Helper()
	home, cwd := t.TempDir(), t.TempDir()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	a, err := New(context.Background(), Options{}, Env{Env: session.Env{Cwd: cwd, Home: home, Getenv: func(string) string { return "" }},
		Stdin: inR, Stdout: outW, Stderr: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	testHookBeforeLateReply = hook
	t.Cleanup(func() { testHookBeforeLateReply = nil })
	done := make(chan int)
	go func() { done <- a.Serve(); outW.Close() }()
	return cwd, inW, outR, done
}

// TestPromptAnswerBeforeNextPromptsUpdates: a prompt cancelled while a
// second one is already on its way (race-client.py acp seeds 4 and 9,
// replayed) is answered before the second prompt's first update, however
// late the answer's writer runs: a client takes the updates between a
// session/prompt and its answer for that prompt's (ACP's prompt turn).
func TestPromptAnswerBeforeNextPromptsUpdates(t *testing.T) {
	// The first prompt's answer waits, once its turn has ended, until the
	// second prompt has been read and started: without the ordering, the
	// second prompt's updates are written first.
	// With the ordering, the second prompt's updates wait for this
	// answer, so the wait ends by its bound (it only widens the window).
	started := make(chan struct{})
	wait := sync.OnceFunc(func() {
		select {
		case <-started:
		case <-time.After(2 * time.Second):
		}
	})
	cwd, inW, outR, served := servePiped(t, func(string) { wait() })
	lines := make(chan map[string]any, 1000)
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Errorf("stdout line %q: %v", sc.Text(), err)
			}
			lines <- m
		}
		close(lines)
	}()
	send := func(s string) {
		if _, err := io.WriteString(inW, s+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	next := func() map[string]any {
		select {
		case m, ok := <-lines:
			if !ok {
				t.Fatal("stdout closed")
			}
			return m
		case <-time.After(10 * time.Second):
			t.Fatal("no line in 10 s")
		}
		return nil
	}
	until := func(id string) {
		for m := next(); m["id"] != id; m = next() {
		}
	}
	send(`{"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocolVersion":1}}`)
	until("i")
	send(`{"jsonrpc":"2.0","id":"n","method":"session/new","params":{"cwd":"` + cwd + `","mcpServers":[]}}`)
	var sid string
	for m := next(); ; m = next() {
		if m["id"] == "n" {
			sid = m["result"].(map[string]any)["sessionId"].(string)
			break
		}
	}
	send(`{"jsonrpc":"2.0","id":"p1","method":"session/prompt","params":{"sessionId":"` + sid + `","prompt":[{"type":"text","text":"/delay 5000\n/text slow"}]}}`)
	send(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"` + sid + `"}}`)
	// The second prompt is refused while the first runs; sent until one
	// starts (its answer is then the second's), the first having ended.
	var answers []string
	var sawSecond bool
	for i := 0; !sawSecond; i++ {
		id := "p2-" + strings.Repeat("x", i)
		send(`{"jsonrpc":"2.0","id":"` + id + `","method":"session/prompt","params":{"sessionId":"` + sid + `","prompt":[{"type":"text","text":"/text second"}]}}`)
		for {
			m := next()
			if m["id"] == "p1" {
				answers = append(answers, "p1")
				continue
			}
			if m["method"] == "session/update" {
				u := m["params"].(map[string]any)["update"].(map[string]any)
				if c, ok := u["content"].(map[string]any); ok && c["text"] == "second" {
					if !strings.Contains(strings.Join(answers, ","), "p1") {
						t.Fatalf("the second prompt's text came before the first prompt's answer")
					}
					sawSecond = true
					select {
					case <-started:
					default:
						close(started)
					}
				}
				continue
			}
			if m["id"] == id {
				if _, refused := m["error"]; refused && !sawSecond {
					break // busy: try again
				}
				if !sawSecond {
					// It started: let the first prompt's answer go.
					select {
					case <-started:
					default:
						close(started)
					}
					continue
				}
				goto done
			}
		}
	}
done:
	inW.Close()
	if code := <-served; code != 0 {
		t.Errorf("exit %d", code)
	}
}

// TestCloseAnswersAfterItsPrompt: session/close while a prompt runs is
// answered after that prompt's answer (cancelled), however late the
// prompt's answer is written (race-roundtrip's replace-acp cases: the
// close's answer came first on one run in two).
func TestCloseAnswersAfterItsPrompt(t *testing.T) {
	// The prompt's answer waits until the close's is out, or 2 s: with the
	// ordering it waits the 2 s, which only widen the window.
	closed := make(chan struct{})
	cwd, inW, outR, served := servePiped(t, func(method string) {
		if method == "session/prompt" {
			select {
			case <-closed:
			case <-time.After(2 * time.Second):
			}
		}
	})
	sc := bufio.NewScanner(outR)
	sc.Buffer(nil, 1<<20)
	next := func() map[string]any {
		if !sc.Scan() {
			t.Fatal("stdout closed")
		}
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("stdout line %q: %v", sc.Text(), err)
		}
		return m
	}
	send := func(s string) {
		if _, err := io.WriteString(inW, s+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	send(`{"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocolVersion":1}}`)
	send(`{"jsonrpc":"2.0","id":"n","method":"session/new","params":{"cwd":"` + cwd + `","mcpServers":[]}}`)
	var sid string
	for sid == "" {
		if m := next(); m["id"] == "n" {
			sid = m["result"].(map[string]any)["sessionId"].(string)
		}
	}
	send(`{"jsonrpc":"2.0","id":"p","method":"session/prompt","params":{"sessionId":"` + sid + `","prompt":[{"type":"text","text":"/delay 3600000\n/text never"}]}}`)
	send(`{"jsonrpc":"2.0","id":"c","method":"session/close","params":{"sessionId":"` + sid + `"}}`)
	var answers []string
	for len(answers) < 2 {
		m := next()
		switch m["id"] {
		case "p":
			if r, _ := m["result"].(map[string]any); r["stopReason"] != "cancelled" {
				t.Errorf("the prompt's answer %v, want stopReason cancelled", m)
			}
			answers = append(answers, "p")
		case "c":
			answers = append(answers, "c")
			close(closed)
		}
	}
	if answers[0] != "p" {
		t.Errorf("answers in the order %v, want the prompt's before the close's", answers)
	}
	inW.Close()
	if code := <-served; code != 0 {
		t.Errorf("exit %d", code)
	}
}
