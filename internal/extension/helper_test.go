package extension

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// guardBin is the Go reference extension, built once by TestMain.
var guardBin string

func TestMain(m *testing.M) {
	if mode, ok := os.LookupEnv("E_EXT_HELPER"); ok {
		helper(mode)
		return
	}
	dir, err := os.MkdirTemp("", "e-ext-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	guardBin = filepath.Join(dir, "guard")
	build := exec.Command("go", "build", "-o", guardBin, "../../examples/extensions/guard")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build guard:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// helperConfig runs this test binary as an extension in the given mode.
func helperConfig(t *testing.T, name, mode string) Config {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// GORACE: a race-enabled binary otherwise sleeps 1 s before exiting.
	return Config{Name: name, Command: self, Env: map[string]string{"E_EXT_HELPER": mode, "GORACE": "atexit_sleep_ms=0"}}
}

// helper is a misbehaving-on-demand extension. Modes:
//
//	probe     tools probe {method, params} (sends the request to e and returns the raw
//	          response line), crash (asks ui.confirm, exits 3 on the next event),
//	          spawn (starts a child in its group and returns its pid), spawnsid (the
//	          same in a session of its own, out of the group: setsid)
//	gate      declares a gate and exits 4 when asked
//	gate-silent declares a gate and never answers it
//	gate-echo declares a gate and a tool echo; both answer with their arguments' result
//	noproto   answers initialize without a protocol
//	garbage   writes a line that is not JSON after the handshake
//	huge      writes a 2 MiB line after the handshake
//	flood     writes 20000 lines at once after the handshake
//	silent    never answers initialize
//	stubborn  like probe, but ignores shutdown and EOF
//	sleep     blocks forever (a child of spawn)
//
// With E_EXT_RECORD set it appends every line it reads to that file.
func helper(mode string) {
	if mode == "sleep" || mode == "silent" {
		time.Sleep(time.Hour) // killed long before
	}
	var record *os.File
	if path := os.Getenv("E_EXT_RECORD"); path != "" {
		record, _ = os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	}
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	send := func(v any) {
		mu.Lock()
		defer mu.Unlock()
		b, _ := json.Marshal(v)
		out.Write(append(b, '\n'))
		out.Flush()
	}
	waiting := map[string]chan string{}
	crashOnEvent := make(chan struct{})
	var crashOnce sync.Once
	request := func(id, method string, params json.RawMessage) string {
		ch := make(chan string, 1)
		mu.Lock()
		waiting[`"`+id+`"`] = ch
		mu.Unlock()
		send(map[string]any{"id": id, "method": method, "params": params})
		return <-ch
	}
	in := bufio.NewReaderSize(os.Stdin, 4<<20)
	for n := 0; ; n++ {
		line, err := in.ReadBytes('\n')
		if err != nil {
			if mode == "stubborn" {
				time.Sleep(time.Hour)
			}
			os.Exit(0)
		}
		if record != nil {
			record.Write(line)
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			} `json:"params"`
		}
		json.Unmarshal(line, &m)
		switch m.Method {
		case "":
			mu.Lock()
			ch := waiting[string(m.ID)]
			mu.Unlock()
			if ch != nil {
				ch <- strings.TrimSpace(string(line))
			}
		case "initialize":
			tools := []map[string]any{{"name": "probe"}, {"name": "crash"}, {"name": "spawn"}, {"name": "spawnsid"}}
			if mode == "gate-echo" {
				tools = append(tools, map[string]any{"name": "echo"})
			}
			result := map[string]any{"protocol": 1, "name": mode, "tools": tools,
				"gate": strings.HasPrefix(mode, "gate"), "events": []string{"turn.start", "no.such.event"}}
			if mode == "noproto" {
				delete(result, "protocol")
			}
			send(map[string]any{"id": m.ID, "result": result})
			switch mode {
			case "garbage":
				fmt.Println("hello, world")
			case "flood":
				for range 20000 {
					out.WriteString("{}\n")
				}
				out.Flush()
			case "huge":
				fmt.Println(`{"method":"ui.notify","params":{"message":"` + strings.Repeat("x", 2<<20) + `"}}`)
			}
		case "tool.gate":
			switch mode {
			case "gate":
				os.Exit(4)
			case "gate-echo":
				send(map[string]any{"id": m.ID, "result": echoed(m.Params.Arguments)})
			} // gate-silent never answers
		case "tool.call":
			id := m.ID
			switch m.Params.Name {
			case "echo":
				send(map[string]any{"id": id, "result": echoed(m.Params.Arguments)})
			case "probe":
				go func() {
					var a struct {
						Method string          `json:"method"`
						Params json.RawMessage `json:"params"`
					}
					json.Unmarshal(m.Params.Arguments, &a)
					resp := request("probe-"+strconv.Itoa(n), a.Method, a.Params)
					send(map[string]any{"id": id, "result": map[string]any{"content": resp}})
				}()
			case "crash":
				crashOnce.Do(func() { close(crashOnEvent) })
				send(map[string]any{"id": "c", "method": "ui.confirm", "params": map[string]any{"title": "Crash?"}})
			case "spawn", "spawnsid":
				self, _ := os.Executable()
				child := exec.Command(self)
				child.Env = append(os.Environ(), "E_EXT_HELPER=sleep")
				child.SysProcAttr = &syscall.SysProcAttr{Setsid: m.Params.Name == "spawnsid"}
				child.Start()
				send(map[string]any{"id": id, "result": map[string]any{"content": strconv.Itoa(child.Process.Pid)}})
			}
		case "event":
			select {
			case <-crashOnEvent:
				os.Exit(3)
			default:
			}
		case "shutdown":
			if mode != "stubborn" {
				os.Exit(0)
			}
		}
	}
}

// echoed is the result gate-echo answers with: its arguments' result.
func echoed(args json.RawMessage) json.RawMessage {
	var a struct {
		Result json.RawMessage `json:"result"`
	}
	json.Unmarshal(args, &a)
	return a.Result
}

// fakeUI records notices and answers asks with ask.
type fakeUI struct {
	notices chan Notice
	ask     func(ctx context.Context, ext, method string, params json.RawMessage) (json.RawMessage, error)
}

func newFakeUI(ask func(ctx context.Context, ext, method string, params json.RawMessage) (json.RawMessage, error)) *fakeUI {
	return &fakeUI{notices: make(chan Notice, 100), ask: ask}
}

func (u *fakeUI) Ask(ctx context.Context, ext, method string, params json.RawMessage) (json.RawMessage, error) {
	return u.ask(ctx, ext, method, params)
}

func (u *fakeUI) Notice(n Notice) { u.notices <- n }

// waitNotice returns the next notice whose message contains substr.
func (u *fakeUI) waitNotice(t *testing.T, substr string) Notice {
	t.Helper()
	timeout := time.After(10 * time.Second) // a failure bound, not synchronisation
	for {
		select {
		case n := <-u.notices:
			if strings.Contains(n.Message, substr) {
				return n
			}
			t.Logf("notice: %+v", n)
		case <-timeout:
			t.Fatalf("no notice containing %q", substr)
		}
	}
}

func noUI(context.Context, string, string, json.RawMessage) (json.RawMessage, error) {
	return nil, ErrNoUI
}

// start starts a host and shuts it down when the test ends.
func start(t *testing.T, ui UI, opts Options, cfgs ...Config) *Host {
	t.Helper()
	if opts.Stderr == nil {
		opts.Stderr = testWriter{t}
	}
	h := StartWith(context.Background(), cfgs, ui, opts)
	t.Cleanup(func() { h.Shutdown(0) })
	return h
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Logf("stderr: %s", strings.TrimSpace(string(b)))
	return len(b), nil
}
