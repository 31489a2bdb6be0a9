package conformance

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// RecordOptions configure Record.
type RecordOptions struct {
	Server   []string  // the server command
	Out      string    // the case file to write; its base name is the id
	Model    string    // default_model when there is no upstream; default e/offline
	Upstream string    // OpenAI-compatible base URL to forward model calls to, e.g. https://host/v1
	APIKey   string    // sent upstream as a bearer token
	Stdin    io.Reader // the client's lines
	Stdout   io.Writer // the server's lines, passed through
	Stderr   io.Writer // the server's stderr, passed through
}

// Record proxies one client session to a fresh server (as a case would
// start it), then writes what happened as a draft case: the client lines
// with waits, the server's lines as expectations, and the model calls as
// a tape, volatile values replaced by placeholders (spec/conformance.md,
// section 5).
func Record(ctx context.Context, o RecordOptions) error {
	if len(o.Server) == 0 || o.Out == "" {
		return fmt.Errorf("conformance: record needs a server command and an output file")
	}
	tmp, err := os.MkdirTemp("", "e-conformance-record-")
	if err != nil {
		return fmt.Errorf("conformance: %w", err)
	}
	defer os.RemoveAll(tmp)
	if tmp, err = filepath.EvalSymlinks(tmp); err != nil {
		return fmt.Errorf("conformance: %w", err)
	}
	cwd, home := filepath.Join(tmp, "cwd"), filepath.Join(tmp, "home")

	rec := &recorder{upstream: strings.TrimSuffix(o.Upstream, "/"), key: o.APIKey}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("conformance: %w", err)
	}
	srv := &http.Server{Handler: rec, ReadHeaderTimeout: 10 * time.Second}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		srv.Serve(ln)
	}()
	defer func() {
		srv.Close()
		wg.Wait()
	}()
	model := o.Model
	if model == "" && o.Upstream == "" {
		model = "e/offline"
	}
	c := &Case{ID: strings.TrimSuffix(filepath.Base(o.Out), ".txtar"), Level: "MUST", Requirements: []string{"F2"}, Model: model}
	if err := writeFixtures(c, cwd, home, "http://"+ln.Addr().String()+"/v1"); err != nil {
		return err
	}

	trustDir(o.Server, cwd, home, nil)
	cmd := exec.CommandContext(ctx, o.Server[0], o.Server[1:]...)
	cmd.Dir, cmd.Env = cwd, serverEnv(home, nil)
	ownGroup(cmd)
	cmd.Stderr = o.Stderr
	cmd.WaitDelay = time.Second
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return fmt.Errorf("conformance: %w", err)
	}
	stdout, pw, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("conformance: %w", err)
	}
	defer stdout.Close()
	cmd.Stdout = pw
	err = cmd.Start()
	pw.Close()
	if err != nil {
		return fmt.Errorf("conformance: starting %q: %w", strings.Join(o.Server, " "), err)
	}
	defer killGroup(cmd)

	var mu sync.Mutex
	var log []recorded
	var copier sync.WaitGroup
	copier.Add(1)
	go func() {
		defer copier.Done()
		br := bufio.NewReaderSize(stdout, 1<<16)
		for {
			line, err := br.ReadBytes('\n')
			if len(line) > 0 {
				mu.Lock()
				log = append(log, recorded{line: strings.TrimSuffix(string(line), "\n")})
				o.Stdout.Write(line)
				mu.Unlock()
			}
			if err != nil {
				return
			}
		}
	}()
	// The client's lines go to the server until the client closes stdin
	// or the server exits (shutdown): the recorder exits with the server.
	clientDone := make(chan struct{})
	go func() {
		defer close(clientDone)
		br := bufio.NewReaderSize(o.Stdin, 1<<16)
		for {
			line, err := br.ReadBytes('\n')
			if len(line) > 0 {
				mu.Lock()
				log = append(log, recorded{client: true, line: strings.TrimSuffix(string(line), "\n")})
				mu.Unlock()
				if _, werr := stdin.Write(line); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	serverDone := make(chan struct{})
	go func() { copier.Wait(); close(serverDone) }()
	exitedAlone := false
	select {
	case <-clientDone:
	case <-serverDone:
		exitedAlone = true
	}
	stdin.Close()
	<-serverDone // until the server closes stdout
	werr := cmd.Wait()
	mu.Lock()
	defer mu.Unlock()
	c.Exit = "0"
	if werr != nil {
		c.Exit = "nonzero"
	}
	out, err := draftCase(c, log, rec.tape(), cwd, home, exitedAlone)
	if err != nil {
		return err
	}
	if err := os.WriteFile(o.Out, out, 0o644); err != nil {
		return fmt.Errorf("conformance: %w", err)
	}
	return nil
}

type recorded struct {
	client bool
	line   string
}

// draftCase writes the recorded session as a case file.
func draftCase(c *Case, log []recorded, tape []map[string]any, cwd, home string, exitedAlone bool) ([]byte, error) {
	n := newNormalizer(map[string]any{"cwd": cwd, "home": home})
	var b expectBuilder
	var client strings.Builder
	pending := false // server lines arrived since the last wait
	labels := 0
	for _, l := range log {
		if l.client {
			if pending {
				if b.labels[b.latest] == "" {
					labels++
					b.labels[b.latest] = fmt.Sprintf("l%d", labels)
				}
				client.WriteString("#wait " + b.labels[b.latest] + "\n")
				pending = false
			}
			if strings.TrimSpace(l.line) == "" || strings.HasPrefix(l.line, "#") || strings.HasSuffix(l.line, "\r") {
				q, _ := json.Marshal(l.line + "\n")
				client.WriteString("#raw " + string(q) + "\n")
				continue
			}
			client.WriteString(n.rawLine(l.line) + "\n")
			continue
		}
		v, err := decode([]byte(l.line))
		obj, ok := v.(map[string]any)
		if err != nil || !ok {
			return nil, fmt.Errorf("conformance: record: the server printed a line that is not a JSON object: %q", shorten(l.line))
		}
		b.add(n.value("", obj).(map[string]any))
		pending = true
	}
	if exitedAlone {
		client.WriteString("#exit\n") // it ended with stdin open (shutdown)
	}
	h := map[string]any{"id": c.ID, "level": c.Level, "requirements": c.Requirements, "timeout_ms": 10000, "exit": c.Exit}
	if c.Model != "" {
		h["model"] = c.Model
	}
	head, _ := json.Marshal(h)
	a := &archive{comment: []byte("Recorded by e-conformance record. Describe what this case shows, cite its\nrequirements in case.json, and loosen what the requirements do not fix.\n")}
	a.files = append(a.files, archiveFile{name: "case.json", data: append(head, '\n')},
		archiveFile{name: "client", data: []byte(client.String())},
		archiveFile{name: "expect", data: []byte(b.String())})
	if len(tape) > 0 {
		var t bytes.Buffer
		t.WriteString("[\n")
		for i, e := range tape {
			if i > 0 {
				t.WriteString(",\n")
			}
			t.WriteString(canonNoEscape(n.value("", e)))
		}
		t.WriteString("\n]\n")
		a.files = append(a.files, archiveFile{name: "tape.json", data: t.Bytes()})
	}
	return formatArchive(a), nil
}

// recorder serves the model endpoint while recording: it forwards each
// call upstream and keeps what came back as a tape entry.
type recorder struct {
	upstream, key string
	mu            sync.Mutex
	entries       []map[string]any
}

func (rc *recorder) tape() []map[string]any {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.entries
}

func (rc *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if rc.upstream == "" {
		http.Error(w, "e-conformance record: no --upstream model endpoint", http.StatusServiceUnavailable)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req, err := http.NewRequestWithContext(r.Context(), r.Method, rc.upstream+strings.TrimPrefix(r.URL.Path, "/v1"), bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+rc.key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	var copy bytes.Buffer
	io.Copy(io.MultiWriter(flushWriter{w}, &copy), resp.Body)
	entry := map[string]any{}
	if resp.StatusCode >= 400 {
		hs := map[string]any{}
		for _, h := range []string{"Retry-After", "Retry-After-Ms", "X-Request-Id"} {
			if v := resp.Header.Get(h); v != "" {
				hs[strings.ToLower(h)] = v
			}
		}
		entry["error"] = map[string]any{"status": resp.StatusCode, "headers": hs, "body": copy.String()}
	} else {
		parseStream(copy.Bytes(), entry)
	}
	rc.mu.Lock()
	rc.entries = append(rc.entries, entry)
	rc.mu.Unlock()
}

type flushWriter struct{ w http.ResponseWriter }

func (f flushWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if fl, ok := f.w.(http.Flusher); ok {
		fl.Flush()
	}
	return n, err
}

// parseStream turns a Chat Completions event stream into a tape entry.
func parseStream(data []byte, entry map[string]any) {
	var text, reasoning strings.Builder
	type call struct{ id, name, args string }
	var calls []*call
	for _, line := range strings.Split(string(data), "\n") {
		payload, ok := strings.CutPrefix(strings.TrimSpace(line), "data:")
		payload = strings.TrimSpace(payload)
		if !ok || payload == "[DONE]" {
			continue
		}
		var chunk struct {
			Choices []struct {
				Delta struct {
					Content          string `json:"content"`
					ReasoningContent string `json:"reasoning_content"`
					ToolCalls        []struct {
						Index    int    `json:"index"`
						ID       string `json:"id"`
						Function struct {
							Name      string `json:"name"`
							Arguments string `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
				FinishReason string `json:"finish_reason"`
			} `json:"choices"`
			Usage *struct {
				PromptTokens        int64 `json:"prompt_tokens"`
				CompletionTokens    int64 `json:"completion_tokens"`
				PromptTokensDetails struct {
					CachedTokens int64 `json:"cached_tokens"`
				} `json:"prompt_tokens_details"`
			} `json:"usage"`
		}
		if json.Unmarshal([]byte(payload), &chunk) != nil {
			continue
		}
		if u := chunk.Usage; u != nil {
			entry["usage"] = map[string]any{"prompt_tokens": u.PromptTokens, "completion_tokens": u.CompletionTokens, "cached_tokens": u.PromptTokensDetails.CachedTokens}
		}
		for _, ch := range chunk.Choices {
			text.WriteString(ch.Delta.Content)
			reasoning.WriteString(ch.Delta.ReasoningContent)
			for _, tc := range ch.Delta.ToolCalls {
				for len(calls) <= tc.Index {
					calls = append(calls, &call{})
				}
				c := calls[tc.Index]
				if tc.ID != "" {
					c.id = tc.ID
				}
				if tc.Function.Name != "" {
					c.name = tc.Function.Name
				}
				c.args += tc.Function.Arguments
			}
			if ch.FinishReason == "length" {
				entry["finish_reason"] = "length"
			}
		}
	}
	if reasoning.Len() > 0 {
		entry["reasoning"] = reasoning.String()
	}
	if text.Len() > 0 {
		entry["text"] = text.String()
	}
	var tcs []any
	for _, c := range calls {
		var args any = c.args
		if v, err := decode([]byte(c.args)); err == nil {
			if _, isObj := v.(map[string]any); isObj {
				args = v
			}
		}
		tcs = append(tcs, map[string]any{"id": c.id, "name": c.name, "arguments": args})
	}
	if tcs != nil {
		entry["tool_calls"] = tcs
	}
}
