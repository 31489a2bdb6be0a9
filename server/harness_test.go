package server

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/e-agent/e/schemas"
)

// client drives an in-process e rpc over pipes. Every line the server
// prints is checked against schemas/ (checkLine) before a test sees it.
type client struct {
	t     testing.TB
	in    *io.PipeWriter
	lines chan string
	exit  chan int
	cwd   string
	home  string
	seen  []string
}

// waitLimit is a failsafe for a hung server, never a synchronisation.
const waitLimit = 20 * time.Second

type serverSetup struct {
	opts     Options
	settings string // settings.json content, "" for none
	osPipe   bool   // stdout is an OS pipe (the writer's vectored writes), not an io.Pipe
}

func startServer(t testing.TB, setup serverSetup) *client {
	t.Helper()
	home, cwd := t.TempDir(), t.TempDir()
	if setup.settings != "" {
		if err := os.WriteFile(filepath.Join(home, "settings.json"), []byte(setup.settings), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	setup.opts.NoExtensions = true
	inR, inW := io.Pipe()
	var outR io.ReadCloser
	var outW io.WriteCloser
	outR, outW = io.Pipe()
	if setup.osPipe {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		outR, outW = r, w
	}
	getenv := func(k string) string { return "" }
	srv, err := New(context.Background(), setup.opts, Env{Stdin: inR, Stdout: outW, Stderr: io.Discard, Cwd: cwd, Home: home, Getenv: getenv})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	c := &client{t: t, in: inW, lines: make(chan string, 4096), exit: make(chan int, 1), cwd: cwd, home: home}
	go func() {
		code := srv.Serve()
		outW.Close()
		c.exit <- code
	}()
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		close(c.lines)
	}()
	t.Cleanup(func() {
		inW.Close()
		for range c.lines {
		}
		<-c.exit
		outR.Close()
	})
	return c
}

// send writes raw input bytes.
func (c *client) send(s string) {
	c.t.Helper()
	if _, err := io.WriteString(c.in, s); err != nil {
		c.t.Fatalf("send: %v", err)
	}
}

// call sends one request line.
func (c *client) call(id any, method string, params any) {
	c.t.Helper()
	req := map[string]any{"id": id, "method": method}
	if params != nil {
		req["params"] = params
	}
	b, err := json.Marshal(req)
	if err != nil {
		c.t.Fatal(err)
	}
	c.send(string(b) + "\n")
}

// next returns the next server line, validated.
func (c *client) next() string {
	c.t.Helper()
	select {
	case line, ok := <-c.lines:
		if !ok {
			c.t.Fatalf("server closed stdout; lines so far:\n%s", strings.Join(c.seen, "\n"))
		}
		checkLine(c.t, line)
		c.seen = append(c.seen, line)
		return line
	case <-time.After(waitLimit):
		c.t.Fatalf("no line from the server; lines so far:\n%s", strings.Join(c.seen, "\n"))
	}
	return ""
}

// until returns every line up to and including the response whose id has
// the raw JSON text id.
func (c *client) until(id string) []string {
	c.t.Helper()
	var got []string
	for {
		line := c.next()
		got = append(got, line)
		if r := gjson.Get(line, "id"); r.Exists() && !gjson.Get(line, "type").Exists() && r.Raw == id {
			return got
		}
	}
}

// response returns the response to id, skipping other lines.
func (c *client) response(id string) string {
	c.t.Helper()
	lines := c.until(id)
	return lines[len(lines)-1]
}

// create makes a session and returns its id.
func (c *client) create(params map[string]any) string {
	c.t.Helper()
	c.call("c", "session.create", params)
	resp := c.response(`"c"`)
	sid := gjson.Get(resp, "result.session").String()
	if sid == "" {
		c.t.Fatalf("session.create failed: %s", resp)
	}
	return sid
}

// closeInput sends EOF and returns the exit status.
func (c *client) closeInput() int {
	c.in.Close()
	for line := range c.lines {
		checkLine(c.t, line)
		c.seen = append(c.seen, line)
	}
	select {
	case code := <-c.exit:
		c.exit <- code
		return code
	case <-time.After(waitLimit):
		c.t.Fatal("server did not exit after EOF")
	}
	return -1
}

// checkLine is the one helper every test uses: each line e rpc prints must
// validate against schemas/.
func checkLine(t testing.TB, line string) {
	t.Helper()
	if err := schemas.ValidateLine([]byte(line)); err != nil {
		t.Errorf("server line does not validate: %v\nline: %s", err, line)
	}
}

func types(lines []string) []string {
	var ts []string
	for _, l := range lines {
		if ty := gjson.Get(l, "type"); ty.Exists() {
			ts = append(ts, ty.String())
		} else {
			ts = append(ts, "response")
		}
	}
	return ts
}
