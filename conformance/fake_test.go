package conformance

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
)

// The fake server: the test binary re-run as "conformance-fake <mode>"
// (see TestMain) speaks a small part of the e rpc protocol, correctly in
// mode "good" and with one deliberate defect in each other mode, so the
// tests can show that the suite passes what conforms and fails what does not.
const (
	fakeGood          = "good"
	fakeDropSession   = "drop-session"    // events lack "session"
	fakeAnswerTwice   = "answer-twice"    // hello is answered twice
	fakeLateEvent     = "late-event"      // turn_end after the prompt's response
	fakeToolModeFalse = "tool-mode-false" // session.create accepts tool_mode:false
	fakeNoisy         = "noisy"           // prints a log line on stdout
	fakeBadExit       = "bad-exit"        // exits 3 on EOF
	fakeEarlyNotice   = "early-notice"    // prints a notice before any hello (X7)
)

func fakeServer(mode string) int {
	out := bufio.NewWriter(os.Stdout)
	write := func(v any) {
		b, _ := json.Marshal(v)
		out.Write(append(b, '\n'))
		out.Flush()
	}
	if mode == fakeEarlyNotice {
		write(map[string]any{"type": "notice", "message": "extension ghost: command not found"})
	}
	if mode == fakeNoisy {
		fmt.Fprintln(out, "starting fake server")
		out.Flush()
	}
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	sessions := 0
	for {
		line, err := in.ReadBytes('\n')
		if err != nil {
			if mode == fakeBadExit {
				return 3
			}
			return 0
		}
		line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var req struct {
			ID     json.RawMessage            `json:"id"`
			Method *string                    `json:"method"`
			Params map[string]json.RawMessage `json:"params"`
		}
		if err := json.Unmarshal(line, &req); err != nil {
			write(map[string]any{"id": nil, "error": "malformed request line: " + err.Error()})
			continue
		}
		id := req.ID
		if id == nil {
			id = json.RawMessage("null")
		}
		reply := func(result any) { write(map[string]any{"id": id, "result": result}) }
		fail := func(msg string) { write(map[string]any{"id": id, "error": msg}) }
		if req.Method == nil {
			fail("one-shot lines are not supported by the fake")
			continue
		}
		switch *req.Method {
		case "hello":
			reply(map[string]any{"protocol": 1, "version": "fake", "methods": []string{"hello"}})
			if mode == fakeAnswerTwice {
				reply(map[string]any{"protocol": 1})
			}
		case "session.create":
			if tm, ok := req.Params["tool_mode"]; ok && string(tm) != "null" && mode != fakeToolModeFalse {
				var s string
				if json.Unmarshal(tm, &s) != nil || (s != "all" && s != "none") {
					fail(`session.create: params.tool_mode: want "all" or "none", got ` + string(tm))
					continue
				}
			}
			sessions++
			cwd, _ := os.Getwd()
			reply(map[string]any{"session": fmt.Sprintf("sess-%d", sessions), "model": "tape/model", "effort": "medium", "cwd": cwd, "path": nil})
		case "session.prompt":
			var session, prompt string
			json.Unmarshal(req.Params["session"], &session)
			json.Unmarshal(req.Params["prompt"], &prompt)
			event := func(ev map[string]any) {
				if mode != fakeDropSession {
					ev["session"] = session
				}
				ev["request"] = id
				write(ev)
			}
			event(map[string]any{"type": "turn_start"})
			text, err := fakeModelCall(prompt, func(delta string) {
				event(map[string]any{"type": "text", "delta": delta})
			})
			var errv any
			if err != nil {
				errv = err.Error()
			}
			if mode != fakeLateEvent {
				event(map[string]any{"type": "turn_end", "aborted": false})
			}
			reply(map[string]any{"output": text, "final_output": text, "error": errv, "session": session})
			if mode == fakeLateEvent {
				event(map[string]any{"type": "turn_end", "aborted": false})
			}
		case "shutdown":
			reply(map[string]any{})
			return 0
		default:
			fail("unknown method " + *req.Method)
		}
	}
}

// fakeModelCall streams one Chat Completions call to the tape provider
// named in $E_HOME/settings.json.
func fakeModelCall(prompt string, emit func(string)) (string, error) {
	data, err := os.ReadFile(filepath.Join(os.Getenv("E_HOME"), "settings.json"))
	if err != nil {
		return "", err
	}
	var settings struct {
		Providers map[string]struct {
			BaseURL   string `json:"base_url"`
			APIKeyEnv string `json:"api_key_env"`
		} `json:"providers"`
	}
	if err := json.Unmarshal(data, &settings); err != nil {
		return "", err
	}
	p := settings.Providers["tape"]
	body, _ := json.Marshal(map[string]any{"model": "model", "stream": true,
		"messages": []any{map[string]any{"role": "user", "content": prompt}}})
	req, err := http.NewRequest("POST", p.BaseURL+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+os.Getenv(p.APIKeyEnv))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		return "", fmt.Errorf("model: HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(b)))
	}
	var all strings.Builder
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		payload, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || payload == "[DONE]" {
			continue
		}
		var chunk struct {
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if json.Unmarshal([]byte(payload), &chunk) == nil && len(chunk.Choices) > 0 && chunk.Choices[0].Delta.Content != "" {
			emit(chunk.Choices[0].Delta.Content)
			all.WriteString(chunk.Choices[0].Delta.Content)
		}
	}
	return all.String(), sc.Err()
}

// fakePrint is the fake's e -p: the prompt is the arguments that are not
// flags, then a blank line and piped stdin; --json prints events and a
// result line. Flags starting --fake- plant defects: --fake-no-result
// omits the result line, --fake-after-result prints an event after it.
// It leaves a session log in $E_HOME so files checks have something to see.
func fakePrint(args []string) int {
	flags := map[string]bool{}
	var words []string
	for _, a := range args {
		if strings.HasPrefix(a, "--") {
			flags[a] = true
		} else {
			words = append(words, a)
		}
	}
	for f := range flags {
		if f != "--json" && !strings.HasPrefix(f, "--fake-") {
			fmt.Fprintf(os.Stderr, "fake: unknown flag %s\n", f)
			return 2
		}
	}
	piped, _ := io.ReadAll(os.Stdin)
	prompt := strings.Join(words, " ")
	if len(piped) > 0 {
		prompt += "\n\n" + string(piped)
	}
	if strings.TrimSpace(prompt) == "" {
		fmt.Fprintln(os.Stderr, "fake: empty prompt")
		return 2
	}
	dir := filepath.Join(os.Getenv("E_HOME"), "sessions", "fake")
	os.MkdirAll(dir, 0o700)
	os.WriteFile(filepath.Join(dir, "1.jsonl"), []byte(prompt+"\n"), 0o600)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	write := func(v map[string]any) {
		if flags["--json"] {
			b, _ := json.Marshal(v)
			out.Write(append(b, '\n'))
		}
	}
	write(map[string]any{"type": "turn_start"})
	text, err := fakeModelCall(prompt, func(delta string) {
		write(map[string]any{"type": "text", "delta": delta})
		if !flags["--json"] {
			out.WriteString(delta)
		}
	})
	var errv any
	if err != nil {
		errv = err.Error()
		fmt.Fprintln(os.Stderr, "fake:", err)
	}
	write(map[string]any{"type": "turn_end", "aborted": false})
	usage := map[string]any{"input_tokens": 0, "output_tokens": 0, "cache_read_tokens": 0, "cache_write_5m_tokens": 0, "cache_write_1h_tokens": 0, "prompt_tokens": 0}
	if !flags["--fake-no-result"] {
		write(map[string]any{"type": "result", "output": text, "final_output": text, "model": "tape/model", "effort": "medium",
			"aborted": false, "error": errv, "error_details": nil, "warnings": []any{}, "usage": usage, "cost_usd": nil,
			"tools": map[string]any{"calls": 0, "failures": 0}, "session": nil, "path": nil})
	}
	if flags["--fake-after-result"] {
		write(map[string]any{"type": "turn_end", "aborted": false})
	}
	if !flags["--json"] && text != "" {
		out.WriteString("\n")
	}
	if err != nil {
		return 1
	}
	return 0
}
