package acp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/e-agent/e/internal/session"
)

// waitLimit bounds every wait for a message, so a broken agent fails the
// test instead of hanging it. It is never used to let time pass.
const waitLimit = 30 * time.Second

var (
	schemaOnce sync.Once
	acpSchema  *jsonschema.Schema
	schemaErr  error
)

// validate checks one message e acp wrote against ACP's published schema.
func validate(t testing.TB, line []byte) {
	t.Helper()
	schemaOnce.Do(func() {
		var doc any
		b, err := os.ReadFile(filepath.Join("testdata", "acp-schema", "schema.json"))
		if err == nil {
			doc, err = jsonschema.UnmarshalJSON(bytes.NewReader(b))
		}
		if err != nil {
			schemaErr = err
			return
		}
		c := jsonschema.NewCompiler()
		if err := c.AddResource("acp.json", doc); err != nil {
			schemaErr = err
			return
		}
		acpSchema, schemaErr = c.Compile("acp.json")
	})
	if schemaErr != nil {
		t.Fatalf("ACP schema: %v", schemaErr)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(line))
	if err != nil {
		t.Fatalf("e acp wrote a line that is not JSON: %s", line)
	}
	if err := acpSchema.Validate(v); err != nil {
		t.Errorf("e acp wrote a message ACP's schema rejects: %s\n%v", line, err)
	}
}

// peer is a client of an Agent over pipes.
type peer struct {
	t     testing.TB
	in    io.WriteCloser
	lines chan []byte
	code  chan int
	cwd   string
	home  string
	mu    sync.Mutex
	seen  [][]byte // every line received, in order
}

// start runs e acp with the offline model in temp dirs.
func start(t testing.TB, opts Options) *peer {
	t.Helper()
	home, cwd := t.TempDir(), t.TempDir()
	if real, err := filepath.EvalSymlinks(cwd); err == nil {
		cwd = real
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	opts.NoExtensions = true
	opts.Version = "0.0.0-test"
	a, err := New(context.Background(), opts, Env{Stdin: inR, Stdout: outW, Stderr: io.Discard,
		Env: session.Env{Cwd: cwd, Home: home, Getenv: func(string) string { return "" }}})
	if err != nil {
		t.Fatal(err)
	}
	p := &peer{t: t, in: inW, lines: make(chan []byte, 1024), code: make(chan int, 1), cwd: cwd, home: home}
	go func() {
		p.code <- a.Serve()
		outW.Close()
	}()
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			p.lines <- bytes.Clone(sc.Bytes())
		}
		close(p.lines)
	}()
	t.Cleanup(func() { p.close() })
	return p
}

func (p *peer) send(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.in, line+"\n"); err != nil {
		p.t.Fatalf("send: %v", err)
	}
}

// next returns the next line e acp writes, validated against ACP's schema.
func (p *peer) next() map[string]any {
	p.t.Helper()
	select {
	case line, ok := <-p.lines:
		if !ok {
			p.t.Fatal("e acp closed stdout")
		}
		p.mu.Lock()
		p.seen = append(p.seen, line)
		p.mu.Unlock()
		validate(p.t, line)
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			p.t.Fatalf("not a JSON object: %s", line)
		}
		return m
	case <-time.After(waitLimit):
		p.mu.Lock()
		var got []string
		for _, l := range p.seen {
			got = append(got, string(l))
		}
		p.mu.Unlock()
		p.t.Fatalf("no line from e acp within %v; received:\n%s", waitLimit, strings.Join(got, "\n"))
		return nil
	}
}

// until reads lines until one matches want (see match), returning it and
// the lines before it.
func (p *peer) until(want string) (got map[string]any, before []map[string]any) {
	p.t.Helper()
	var w any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		p.t.Fatalf("bad expectation %s: %v", want, err)
	}
	for {
		m := p.next()
		if match(w, m, nil) {
			return m, before
		}
		before = append(before, m)
	}
}

// close ends stdin and waits for e acp to exit 0; what it still writes is
// validated.
func (p *peer) close() {
	p.in.Close()
	for line := range p.lines {
		validate(p.t, line)
	}
	select {
	case code := <-p.code:
		if code != 0 {
			p.t.Errorf("e acp exited %d, want 0", code)
		}
	case <-time.After(waitLimit):
		p.t.Errorf("e acp did not exit within %v of EOF", waitLimit)
	}
}

// match reports whether got has every member want has, recursively;
// arrays match element by element and in length. The string "$any"
// matches anything; a string "{{name}}" binds name on its first use and
// must equal the bound value after.
func match(want, got any, bound map[string]any) bool {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return false
		}
		for k, wv := range w {
			gv, ok := g[k]
			if wv == "$absent" {
				if ok {
					return false
				}
				continue
			}
			if !ok || !match(wv, gv, bound) {
				return false
			}
		}
		return true
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for i := range w {
			if !match(w[i], g[i], bound) {
				return false
			}
		}
		return true
	case string:
		if w == "$any" {
			return true
		}
		if len(w) > 4 && w[:2] == "{{" && w[len(w)-2:] == "}}" && bound != nil {
			name := w[2 : len(w)-2]
			if v, ok := bound[name]; ok {
				return equal(v, got)
			}
			bound[name] = got
			return true
		}
	}
	return equal(want, got)
}

func equal(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}
