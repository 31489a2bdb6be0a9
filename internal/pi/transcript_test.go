package pi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/e-agent/e/internal/jsonl"
	"github.com/e-agent/e/schemas"
)

// rig runs Main in-process on pipes, with a temp working directory, E_HOME
// and pi config dir. Every line Main writes is checked against
// schemas/pi: e emits only what its schemas describe.
type rig struct {
	t      *testing.T
	dir    string
	in     *io.PipeWriter
	stderr *bytes.Buffer

	mu    sync.Mutex
	lines [][]byte
	more  chan struct{} // signalled after each line
	code  chan int
	read  chan struct{} // closed when stdout has been read to EOF
}

func newRig(t *testing.T, args []string, files map[string]string) *rig {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{"work", "e-home", "pi-agent"} {
		os.Mkdir(filepath.Join(dir, d), 0o700)
	}
	for name, body := range files {
		path := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(path), 0o700)
		if err := os.WriteFile(path, []byte(body), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	vars := map[string]string{"PI_CODING_AGENT_DIR": filepath.Join(dir, "pi-agent")}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	r := &rig{t: t, dir: dir, in: inW, stderr: &bytes.Buffer{}, more: make(chan struct{}, 1), code: make(chan int, 1)}
	env := Env{Stdin: inR, Stdout: outW, Stderr: &syncWriter{w: r.stderr}, Cwd: filepath.Join(dir, "work"),
		Home: filepath.Join(dir, "e-home"), Getenv: func(k string) string { return vars[k] }, Version: "test"}
	go func() {
		code := Main(args, env)
		// A command sent after e exited fails at once instead of blocking.
		inR.CloseWithError(fmt.Errorf("e exited with status %d; stderr:\n%s", code, r.stderr))
		r.code <- code
		outW.Close()
	}()
	readDone := make(chan struct{})
	r.read = readDone
	go func() {
		defer close(readDone)
		rd := jsonl.NewReader(outR, jsonl.MaxLine)
		for {
			line, err := rd.Next()
			if err != nil {
				return
			}
			if err := schemas.ValidatePiLine(line); err != nil {
				t.Errorf("line not in schemas/pi: %v\n%s", err, line)
			}
			r.mu.Lock()
			r.lines = append(r.lines, bytes.Clone(line))
			r.mu.Unlock()
			select {
			case r.more <- struct{}{}:
			default:
			}
		}
	}()
	t.Cleanup(func() {
		inW.Close()
		<-readDone
	})
	return r
}

type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func (r *rig) send(line string) {
	r.t.Helper()
	if _, err := io.WriteString(r.in, line+"\n"); err != nil {
		r.t.Fatalf("send %s: %v", line, err)
	}
}

// waitFor returns once a line after position from has the given type, and
// the position after it.
func (r *rig) waitFor(from int, typ string) int {
	r.t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		r.mu.Lock()
		for i := from; i < len(r.lines); i++ {
			var v struct{ Type string }
			json.Unmarshal(r.lines[i], &v)
			if v.Type == typ {
				r.mu.Unlock()
				return i + 1
			}
		}
		r.mu.Unlock()
		select {
		case <-r.more:
		case <-deadline:
			r.t.Fatalf("no %s line within 20 s; got:\n%s", typ, r.all())
		}
	}
}

// close ends stdin and returns the exit status and every line.
func (r *rig) close() (int, []string) {
	r.in.Close()
	var code int
	select {
	case code = <-r.code:
	case <-time.After(20 * time.Second):
		r.t.Fatalf("e did not exit 20 s after EOF")
	}
	<-r.read // the last lines may still be in the pipe when Main returns
	all := strings.TrimSpace(r.all())
	if all == "" {
		return code, nil
	}
	return code, strings.Split(all, "\n")
}

func (r *rig) all() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for _, l := range r.lines {
		b.Write(l)
		b.WriteByte('\n')
	}
	return b.String()
}

// subset reports whether got has every field of want, recursively; arrays
// must have want's length.
func subset(want, got any) bool {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return false
		}
		for k, v := range w {
			if !subset(v, g[k]) {
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
			if !subset(w[i], g[i]) {
				return false
			}
		}
		return true
	}
	return fmt.Sprint(want) == fmt.Sprint(got)
}

// match checks the server's lines against a transcript's: each expected
// line matches the next line as a subset; "..." skips lines until the next
// expected one matches.
func match(want, got []string) error {
	gi := 0
	for wi := 0; wi < len(want); wi++ {
		w := strings.TrimSpace(want[wi])
		if w == "" || strings.HasPrefix(w, "#") {
			continue
		}
		skip := w == "..."
		if skip {
			wi++
			if wi == len(want) {
				return nil
			}
			w = strings.TrimSpace(want[wi])
		}
		var wv any
		if err := json.Unmarshal([]byte(w), &wv); err != nil {
			return fmt.Errorf("expected line %d is not JSON: %v", wi+1, err)
		}
		for {
			if gi >= len(got) {
				return fmt.Errorf("expected line %d not found: %s", wi+1, w)
			}
			var gv any
			json.Unmarshal([]byte(got[gi]), &gv)
			gi++
			if subset(wv, gv) {
				break
			}
			if !skip {
				return fmt.Errorf("expected line %d: %s\ngot line %d: %s", wi+1, w, gi, got[gi-1])
			}
		}
	}
	if gi < len(got) {
		return fmt.Errorf("unexpected line %d: %s", gi+1, got[gi])
	}
	return nil
}

// TestTranscripts replays testdata/transcripts/*.txtar: the dialect's
// golden transcripts. A case has "args" (e's command line after "e", one
// argument per line),
// "client" (command lines; "wait TYPE" waits for a line of that type),
// "server" (the expected lines), an optional "exit" status and files
// written into the temp dir before start (for example
// "pi-agent/models.json", "work/a.txt").
func TestTranscripts(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "transcripts", "*.txtar"))
	if len(files) == 0 {
		t.Fatal("no transcripts")
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			sections := map[string]string{}
			extra := map[string]string{}
			for name, body := range sectionsOf(string(data)) {
				switch name {
				case "args", "client", "server", "exit":
					sections[name] = body
				default:
					extra[name] = body
				}
			}
			var args []string
			for _, a := range strings.Split(sections["args"], "\n") {
				if a != "" {
					args = append(args, a)
				}
			}
			r := newRig(t, args, extra)
			pos := 0
			for _, line := range strings.Split(sections["client"], "\n") {
				switch {
				case strings.TrimSpace(line) == "":
				case strings.HasPrefix(line, "wait "):
					pos = r.waitFor(pos, strings.TrimSpace(strings.TrimPrefix(line, "wait ")))
				default:
					r.send(line)
				}
			}
			code, got := r.close()
			wantCode := strings.TrimSpace(sections["exit"])
			if wantCode == "" {
				wantCode = "0"
			}
			if fmt.Sprint(code) != wantCode {
				t.Errorf("exit status %d, want %s; stderr:\n%s", code, wantCode, r.stderr)
			}
			if err := match(strings.Split(sections["server"], "\n"), got); err != nil {
				t.Errorf("%v\nall lines:\n%s", err, strings.Join(got, "\n"))
			}
		})
	}
}

// sectionsOf splits a txtar archive ("-- name --" lines) into its files;
// the comment before the first is dropped.
func sectionsOf(data string) map[string]string {
	out := map[string]string{}
	name := ""
	var body strings.Builder
	flush := func() {
		if name != "" {
			out[name] = body.String()
		}
		body.Reset()
	}
	for _, line := range strings.SplitAfter(data, "\n") {
		t := strings.TrimRight(line, "\n")
		if strings.HasPrefix(t, "-- ") && strings.HasSuffix(t, " --") && len(t) > 6 {
			flush()
			name = strings.TrimSpace(t[3 : len(t)-3])
			continue
		}
		body.WriteString(line)
	}
	flush()
	return out
}
