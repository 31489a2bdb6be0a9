package extension

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestConfigs(t *testing.T) {
	home := t.TempDir()
	dir := filepath.Join(home, "extensions")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, mode := range map[string]os.FileMode{"lint.py": 0o755, "README.md": 0o644, ".hidden": 0o755} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	lint := Config{Name: "lint", Command: filepath.Join(dir, "lint.py")}
	tests := []struct {
		name    string
		raw     string
		want    []Config
		wantErr string
	}{
		{name: "absent", raw: "", want: []Config{lint}},
		{name: "null", raw: "null", want: []Config{lint}},
		{name: "settings first", raw: `[{"name":"guard","command":"guard","args":["-v"],"env":{"A":"1"},"future":true}]`,
			want: []Config{{Name: "guard", Command: "guard", Args: []string{"-v"}, Env: map[string]string{"A": "1"}}, lint}},
		{name: "not an array", raw: `{}`, wantErr: "extension: settings.json extensions: expected an array"},
		{name: "not an object", raw: `[1]`, wantErr: "extensions[0]: expected an object"},
		{name: "name missing", raw: `[{"command":"x"}]`, wantErr: "extensions[0].name: missing"},
		{name: "command type", raw: `[{"name":"a","command":"x"},{"name":"b","command":5}]`, wantErr: "extensions[1].command: expected a non-empty string"},
		{name: "args type", raw: `[{"name":"a","command":"x","args":"-v"}]`, wantErr: "extensions[0].args: expected an array of strings"},
		{name: "env type", raw: `[{"name":"a","command":"x","env":{"A":1}}]`, wantErr: "extensions[0].env: expected an object of strings"},
		{name: "slash in name", raw: `[{"name":"a/b","command":"x"}]`, wantErr: "extensions[0].name: expected a non-empty string without slashes"},
		{name: "duplicate in settings", raw: `[{"name":"a","command":"x"},{"name":"a","command":"y"}]`, wantErr: `duplicate name "a"`},
		{name: "duplicate with dir", raw: `[{"name":"lint","command":"x"}]`, wantErr: `duplicate name "lint": settings.json extensions[0] and ` + lint.Command},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Configs(home, json.RawMessage(tt.raw))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Configs (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("no extensions dir", func(t *testing.T) {
		got, err := Configs(t.TempDir(), nil)
		if err != nil || len(got) != 0 {
			t.Fatalf("Configs = %v, %v; want none", got, err)
		}
	})
}

// X2–X4, M15
func TestRelay(t *testing.T) {
	asks := make(chan Ask, 100)
	r := NewRelay(func(a Ask) { asks <- a })

	t.Run("numbers are unique in the process", func(t *testing.T) {
		var wg sync.WaitGroup
		for range 20 {
			wg.Go(func() { r.Ask(context.Background(), "x", "ui.confirm", nil) })
		}
		seen := map[int64]bool{}
		for range 20 {
			a := <-asks
			if seen[a.Ask] || a.Ask < 1 {
				t.Errorf("ask number %d repeated or below 1", a.Ask)
			}
			seen[a.Ask] = true
			if err := r.Reply(a.Ask, json.RawMessage(`{"confirmed":true}`)); err != nil {
				t.Error(err)
			}
		}
		wg.Wait()
	})

	t.Run("reply delivers, then unknown and twice are errors", func(t *testing.T) {
		got := make(chan json.RawMessage, 1)
		go func() {
			res, _ := r.Ask(context.Background(), "deploy", "ui.confirm", json.RawMessage(`{"title":"Deploy?"}`))
			got <- res
		}()
		a := <-asks
		want := Ask{Ask: a.Ask, Extension: "deploy", Method: "ui.confirm", Params: json.RawMessage(`{"title":"Deploy?"}`)}
		if diff := cmp.Diff(want, a); diff != "" {
			t.Errorf("ask line (-want +got):\n%s", diff)
		}
		if err := r.Reply(a.Ask, json.RawMessage(`{"value":"a","label":"a"}`)); err != nil {
			t.Fatal(err)
		}
		if res := <-got; string(res) != `{"value":"a","label":"a"}` {
			t.Errorf("result = %s", res)
		}
		for _, tc := range []struct {
			n    int64
			want string
		}{
			{a.Ask, "ask " + strconv.FormatInt(a.Ask, 10) + " was already answered"},
			{999, "unknown ask 999"},
		} {
			if err := r.Reply(tc.n, nil); err == nil || err.Error() != tc.want {
				t.Errorf("Reply(%d) = %v, want %q", tc.n, err, tc.want)
			}
		}
	})

	t.Run("no result cancels", func(t *testing.T) {
		for _, result := range []json.RawMessage{nil, json.RawMessage("null")} {
			got := make(chan json.RawMessage, 1)
			go func() { res, _ := r.Ask(context.Background(), "x", "ui.input", nil); got <- res }()
			a := <-asks
			if err := r.Reply(a.Ask, result); err != nil {
				t.Fatal(err)
			}
			if res := <-got; string(res) != `{"cancelled":true}` {
				t.Errorf("result for %q = %s", result, res)
			}
		}
	})

	t.Run("ctx end and CancelAll cancel", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		got := make(chan json.RawMessage, 2)
		go func() { res, _ := r.Ask(ctx, "x", "ui.editor", nil); got <- res }()
		first := <-asks
		cancel()
		if res := <-got; string(res) != `{"cancelled":true}` {
			t.Errorf("result after ctx end = %s", res)
		}
		want := "ask " + strconv.FormatInt(first.Ask, 10) + " was cancelled"
		if err := r.Reply(first.Ask, json.RawMessage(`{"text":"late"}`)); err == nil || err.Error() != want {
			t.Errorf("late Reply = %v, want %q", err, want)
		}
		go func() { res, _ := r.Ask(context.Background(), "x", "ui.editor", nil); got <- res }()
		<-asks
		r.CancelAll()
		if res := <-got; string(res) != `{"cancelled":true}` {
			t.Errorf("result after CancelAll = %s", res)
		}
	})
}

// guards returns the reference extensions under test: the Go one always,
// the Python one where python3 is installed.
func guards(t *testing.T, env map[string]string) []Config {
	cfgs := []Config{{Name: "guard", Command: guardBin, Env: env}}
	if py, err := exec.LookPath("python3"); err == nil {
		cfgs = append(cfgs, Config{Name: "guard", Command: py, Args: []string{"../../examples/extensions/guard.py"}, Env: env})
	} else {
		t.Log("python3 not found: only the Go guard is tested")
	}
	return cfgs
}

// X1, X2, X3, X5: handshake, registration, a tool that asks first; the
// ask names the session whose call asked it (SessionOf), for the session
// layer to route it to that session's client.
func TestGuardDeploy(t *testing.T) {
	for _, cfg := range guards(t, nil) {
		t.Run(filepath.Base(cfg.Command), func(t *testing.T) {
			type asked struct {
				Ext, Method, Session string
				Params               map[string]any
			}
			var (
				mu     sync.Mutex // the UI runs on the host's goroutines
				answer json.RawMessage
				askErr error
				asks   []asked
			)
			ui := newFakeUI(func(ctx context.Context, ext, method string, params json.RawMessage) (json.RawMessage, error) {
				mu.Lock()
				defer mu.Unlock()
				a := asked{Ext: ext, Method: method, Session: SessionOf(ctx)}
				json.Unmarshal(params, &a.Params)
				asks = append(asks, a)
				return answer, askErr
			})
			h := start(t, ui, Options{}, cfg)
			want := []Tool{{Extension: "guard", Name: "deploy", Description: "Deploy the current build to a target, after the person confirms.",
				Parameters: json.RawMessage(`{"properties":{"target":{"type":"string"}},"required":["target"],"type":"object"}`)}}
			got := h.Tools()
			for i := range got { // compare parameters as values, not text
				var v any
				json.Unmarshal(got[i].Parameters, &v)
				got[i].Parameters = mustJSON(v)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("Tools (-want +got):\n%s", diff)
			}
			tests := []struct {
				name        string
				answer      string
				err         error
				wantContent string
				wantFailed  bool
			}{
				{name: "confirmed", answer: `{"confirmed":true}`, wantContent: "deployed to prod"},
				{name: "declined", answer: `{"confirmed":false}`, wantContent: "cancelled"},
				{name: "cancelled", answer: `{"cancelled":true}`, wantContent: "cancelled"},
				{name: "no UI is refused at once", err: ErrNoUI, wantFailed: true,
					wantContent: "not deployed: ui.confirm was refused: there is no client to ask (e -p, or e rpc without hello ask:true)"},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					mu.Lock()
					answer, askErr, asks = json.RawMessage(tt.answer), tt.err, nil
					mu.Unlock()
					content, failed := h.CallTool(context.Background(), "s1", "deploy", json.RawMessage(`{"target":"prod"}`))
					if content != tt.wantContent || failed != tt.wantFailed {
						t.Errorf("CallTool = %q, %v; want %q, %v", content, failed, tt.wantContent, tt.wantFailed)
					}
					mu.Lock()
					defer mu.Unlock()
					want := []asked{{Ext: "guard", Method: "ui.confirm", Session: "s1", Params: map[string]any{"title": "Deploy?", "message": "to prod"}}}
					if diff := cmp.Diff(want, asks); diff != "" {
						t.Errorf("asks (-want +got):\n%s", diff)
					}
				})
			}
			if content, failed := h.CallTool(context.Background(), "s1", "nope", nil); !failed || content != `no extension tool named "nope"` {
				t.Errorf("unknown tool: %q, %v", content, failed)
			}
		})
	}
}

func TestGuardGate(t *testing.T) {
	for _, pattern := range []string{"", "^git push"} {
		env := map[string]string{"GUARD_DENY": pattern}
		if pattern == "" {
			pattern = "rm -rf" // the default
		}
		for _, cfg := range guards(t, env) {
			t.Run(filepath.Base(cfg.Command)+" "+pattern, func(t *testing.T) {
				h := start(t, newFakeUI(noUI), Options{}, cfg)
				deny := "guard: guard denies commands matching " + pattern
				tests := []struct {
					tool, command string
					wantReason    string // "" allows
				}{
					{"bash", "rm -rf /tmp/x", map[bool]string{true: deny}[pattern == "rm -rf"]},
					{"bash", "git push origin", map[bool]string{true: deny}[pattern == "^git push"]},
					{"bash", "ls", ""},
					{"read", "rm -rf", ""},
				}
				for _, tt := range tests {
					allow, reason := h.Gate(context.Background(), "s1", tt.tool, mustJSON(map[string]string{"command": tt.command}))
					if allow != (tt.wantReason == "") || reason != tt.wantReason {
						t.Errorf("Gate(%s %q) = %v, %q; want reason %q", tt.tool, tt.command, allow, reason, tt.wantReason)
					}
				}
			})
		}
	}
}

// A gate that dies fails closed.
func TestGateDead(t *testing.T) {
	ui := newFakeUI(noUI)
	h := start(t, ui, Options{}, helperConfig(t, "g", "gate"))
	for i := range 2 {
		allow, reason := h.Gate(context.Background(), "s1", "bash", nil)
		if allow || !strings.Contains(reason, "extension g is not running: it exited with status 4") {
			t.Errorf("Gate #%d = %v, %q; want a denial naming the exit", i, allow, reason)
		}
	}
	ui.waitNotice(t, "extension g exited with status 4")
}

// A silent gate denies after GateTimeout; an interrupted turn denies too.
func TestGateSilent(t *testing.T) {
	h := start(t, newFakeUI(noUI), Options{GateTimeout: 20 * time.Millisecond}, helperConfig(t, "g", "gate-silent"))
	allow, reason := h.Gate(context.Background(), "s1", "bash", nil)
	if want := "gate g did not answer within 20ms; the call is denied"; allow || reason != want {
		t.Errorf("Gate = %v, %q; want false, %q", allow, reason, want)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	allow, reason = h.Gate(ctx, "s1", "bash", nil)
	if want := "gate g: context canceled"; allow || reason != want {
		t.Errorf("interrupted Gate = %v, %q; want false, %q", allow, reason, want)
	}
}

// What e makes of the results an extension answers a tool call and a gate
// with: one without content or a boolean allow (the fields the schemas
// require, left out, null or of another type) fails, a zero one does not.
func TestResults(t *testing.T) {
	h := start(t, newFakeUI(noUI), Options{}, helperConfig(t, "g", "gate-echo"))
	type answer struct {
		Text string
		Bad  bool
	}
	tests := []struct {
		name   string
		result string
		call   answer // CallTool's content and failed
		gate   answer // Gate's reason and !allow
	}{
		{name: "zeros", result: `{"content":"","allow":false}`, call: answer{"", false}, gate: answer{"g: denied", true}},
		{name: "set", result: `{"content":"out","failed":true,"allow":true,"reason":"ignored"}`, call: answer{"out", true}, gate: answer{"", false}},
		{name: "reason", result: `{"allow":false,"reason":"not today"}`, gate: answer{"g: not today", true},
			call: answer{"echo: extension g answered tool.call without a content string", true}},
		{name: "left out", result: `{}`,
			call: answer{"echo: extension g answered tool.call without a content string", true},
			gate: answer{"gate g answered without a boolean allow; the call is denied", true}},
		{name: "null", result: `{"content":null,"allow":null}`,
			call: answer{"echo: extension g answered tool.call without a content string", true},
			gate: answer{"gate g answered without a boolean allow; the call is denied", true}},
		{name: "other types", result: `{"content":1,"allow":"yes"}`,
			call: answer{"echo: extension g answered tool.call without a content string", true},
			gate: answer{"gate g answered without a boolean allow; the call is denied", true}},
		{name: "not an object", result: `[]`,
			call: answer{"echo: extension g answered tool.call without a content string", true},
			gate: answer{"gate g answered without a boolean allow; the call is denied", true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := json.RawMessage(`{"result":` + tt.result + `}`)
			var got answer
			got.Text, got.Bad = h.CallTool(context.Background(), "s1", "echo", args)
			if diff := cmp.Diff(tt.call, got); diff != "" {
				t.Errorf("CallTool (-want +got):\n%s", diff)
			}
			allow, reason := h.Gate(context.Background(), "s1", "bash", args)
			if diff := cmp.Diff(tt.gate, answer{reason, !allow}); diff != "" {
				t.Errorf("Gate (-want +got):\n%s", diff)
			}
		})
	}
}

// An initialize result without a protocol fails the handshake.
func TestHandshakeWithoutProtocol(t *testing.T) {
	ui := newFakeUI(noUI)
	h := start(t, ui, Options{}, helperConfig(t, "n", "noproto"))
	ui.waitNotice(t, "extension n was cut off: failed its handshake: it speaks protocol null; e speaks 1")
	if tools := h.Tools(); len(tools) != 0 {
		t.Errorf("tools of an extension cut off: %v", tools)
	}
}

// probe asks the helper to send method with params and returns e's response line.
func probe(t *testing.T, h *Host, method, params string) string {
	t.Helper()
	content, failed := h.CallTool(context.Background(), "s1", "probe", json.RawMessage(`{"method":"`+method+`","params":`+params+`}`))
	if failed {
		t.Fatalf("probe %s failed: %s", method, content)
	}
	var v struct {
		ID     string          `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  string          `json:"error"`
	}
	if err := json.Unmarshal([]byte(content), &v); err != nil {
		t.Fatalf("probe %s: response %q: %v", method, content, err)
	}
	if v.Error != "" {
		return "error: " + v.Error
	}
	return string(v.Result)
}

// X5, X6: what e answers to each request an extension can make; a notice
// sent during a session's call is about that session (Notice.Session).
func TestRequests(t *testing.T) {
	var mu sync.Mutex
	var asked []string
	ui := newFakeUI(func(ctx context.Context, ext, method string, params json.RawMessage) (json.RawMessage, error) {
		mu.Lock()
		asked = append(asked, method)
		mu.Unlock()
		switch method {
		case "ui.input": // nobody answers: the timeout must
			<-ctx.Done()
			return cancelled, nil
		case "ui.editor":
			return nil, ErrNoUI
		case "ui.select":
			return nil, errors.New("client went away")
		}
		return json.RawMessage(`{"confirmed":true}`), nil
	})
	h := start(t, ui, Options{}, helperConfig(t, "p", "probe"))
	tests := []struct {
		name, method, params string
		want                 string
		notice               string
	}{
		{name: "confirm relayed", method: "ui.confirm", params: `{"title":"ok?"}`, want: `{"confirmed":true}`},
		{name: "timeout_ms cancels", method: "ui.input", params: `{"title":"name?","timeout_ms":20}`, want: `{"cancelled":true}`,
			notice: "extension p asked ui.input and got no answer within 20 ms; the question was cancelled"},
		{name: "no UI refused", method: "ui.editor", params: `{"title":"t"}`,
			want: "error: ui.editor was refused: there is no client to ask (e -p, or e rpc without hello ask:true)"},
		{name: "UI error", method: "ui.select", params: `{"title":"t","options":["a"]}`, want: "error: ui.select failed: client went away"},
		{name: "params not an object", method: "ui.confirm", params: `[1]`, want: "error: ui.confirm: params must be an object"},
		{name: "ui.custom refused", method: "ui.custom", params: `{}`, want: "error: ui.custom is not available: e has no terminal"},
		{name: "session.* refused", method: "session.new", params: `{}`, want: "error: session.new is not available: e has no terminal"},
		{name: "unknown", method: "fly", params: `{}`, want: "error: unknown method fly"},
		{name: "notify", method: "ui.notify", params: `{"message":"hi","level":"warning"}`, want: `{}`, notice: "hi"},
		{name: "show", method: "ui.show", params: `{"title":"T","message":"body"}`, want: `{}`, notice: "body"},
		{name: "show title alone", method: "ui.show", params: `{"title":"title alone"}`, want: `{}`, notice: "title alone"},
		{name: "notify title", method: "ui.notify", params: `{"title":"notify title","message":""}`, want: `{}`, notice: "notify title"},
		{name: "notify mistyped level", method: "ui.notify", params: `{"level":5,"message":"still shown"}`, want: `{}`, notice: "still shown"},
		{name: "question of other fields", method: "ui.confirm", params: `{"title":5,"timeout_ms":null}`, want: `{"confirmed":true}`},
		{name: "timeout_ms not a number", method: "ui.confirm", params: `{"title":"t","timeout_ms":"5"}`, want: "error: ui.confirm: params must be an object"},
		{name: "register nameless", method: "tools.register", params: `{"tools":[{"description":"d"}]}`,
			want: `error: tools.register: tool name "" must match ^[A-Za-z0-9_-]{1,64}$`},
		{name: "register", method: "tools.register", params: `{"tools":[{"name":"late","description":"d"}]}`, want: `{}`},
		{name: "register bad name", method: "tools.register", params: `{"tools":[{"name":"ok2"},{"name":"bad name"}]}`,
			want: `error: tools.register: tool name "bad name" must match ^[A-Za-z0-9_-]{1,64}$`},
		{name: "register bad params", method: "tools.register", params: `{"tools":"x"}`,
			want: `error: tools.register: params must be {tools:[{name, description, parameters}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := probe(t, h, tt.method, tt.params); got != tt.want {
				t.Errorf("response = %s, want %s", got, tt.want)
			}
			if tt.notice != "" {
				n := ui.waitNotice(t, tt.notice)
				if n.Extension != "p" {
					t.Errorf("notice extension = %q", n.Extension)
				}
				if n.Session != "s1" { // sent, or timed out, during s1's call
					t.Errorf("notice session = %q, want s1", n.Session)
				}
				if strings.HasPrefix(tt.method, "ui.") && n.Method != "" && n.Method != tt.method {
					t.Errorf("notice method = %q, want %q", n.Method, tt.method)
				}
			}
		})
	}
	var names []string
	for _, tool := range h.Tools() {
		names = append(names, tool.Name)
	}
	if diff := cmp.Diff([]string{"probe", "crash", "spawn", "spawnsid", "late"}, names); diff != "" {
		t.Errorf("tools after register (-want +got):\n%s", diff)
	}
}

// X4: a crash while a question is pending cancels the ask, the tool fails
// cleanly, the client gets a notice, the tools are gone.
func TestCrashMidAsk(t *testing.T) {
	asks := make(chan Ask, 1)
	relay := NewRelay(func(a Ask) { asks <- a })
	ui := &relayUI{fakeUI: newFakeUI(nil), relay: relay}
	h := start(t, ui, Options{}, helperConfig(t, "c", "probe"))
	type result struct {
		content string
		failed  bool
	}
	done := make(chan result, 1)
	go func() {
		c, f := h.CallTool(context.Background(), "s1", "crash", nil)
		done <- result{c, f}
	}()
	a := <-asks
	h.Notify("turn.start", map[string]string{"session": "s1"}) // the helper exits 3 on it
	r := <-done
	if want := "crash: extension c is not running: it exited with status 3"; !r.failed || r.content != want {
		t.Errorf("CallTool = %q, %v; want %q, true", r.content, r.failed, want)
	}
	ui.waitNotice(t, "extension c exited with status 3")
	h.Shutdown(time.Second) // waits for the ask goroutine
	want := "ask " + strconv.FormatInt(a.Ask, 10) + " was cancelled"
	if err := relay.Reply(a.Ask, json.RawMessage(`{"confirmed":true}`)); err == nil || err.Error() != want {
		t.Errorf("Reply after crash = %v, want %q", err, want)
	}
	if tools := h.Tools(); len(tools) != 0 {
		t.Errorf("Tools after crash = %v, want none", tools)
	}
	if c, f := h.CallTool(context.Background(), "s1", "probe", nil); !f || !strings.Contains(c, "exited with status 3") {
		t.Errorf("CallTool after crash = %q, %v", c, f)
	}
}

type relayUI struct {
	*fakeUI
	relay *Relay
}

func (u *relayUI) Ask(ctx context.Context, ext, method string, params json.RawMessage) (json.RawMessage, error) {
	return u.relay.Ask(ctx, ext, method, params)
}

// An extension that breaks the protocol is cut off; one that cannot start
// or never greets is left out. Each yields a notice.
func TestCutOff(t *testing.T) {
	tests := []struct {
		name      string
		cfg       Config
		handshake time.Duration
		notice    string
	}{
		{name: "garbage", cfg: helperConfig(t, "x", "garbage"), notice: `extension x was cut off: it wrote a line that is not a protocol message: "hello, world"`},
		{name: "huge line", cfg: helperConfig(t, "x", "huge"), notice: "extension x was cut off: it wrote a line longer than 1048576 bytes"},
		{name: "flood", cfg: helperConfig(t, "x", "flood"), notice: "extension x was cut off: it wrote more than 1000 lines in one second"},
		{name: "silent", cfg: helperConfig(t, "x", "silent"), handshake: 50 * time.Millisecond, notice: "extension x was cut off: failed its handshake: did not answer initialize within 50ms"},
		{name: "missing command", cfg: Config{Name: "x", Command: filepath.Join(t.TempDir(), "nope")}, notice: "extension x did not start: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ui := newFakeUI(noUI)
			h := start(t, ui, Options{HandshakeTimeout: tt.handshake}, tt.cfg)
			n := ui.waitNotice(t, tt.notice)
			if n.Level != "error" || n.Extension != "x" || n.Method != "" {
				t.Errorf("notice = %+v", n)
			}
			if c, f := h.CallTool(context.Background(), "s1", "probe", nil); !f {
				t.Errorf("CallTool = %q, %v; want a failure", c, f)
			}
			if tools := h.Tools(); len(tools) != 0 {
				t.Errorf("Tools = %v, want none", tools)
			}
		})
	}
}

// X2, X3: an ask its extension stops waiting for is reported through
// Cancelled, once, so the client can close the question; a replied ask is not.
func TestRelayCancelled(t *testing.T) {
	asks := make(chan Ask, 4)
	r := NewRelay(func(a Ask) { asks <- a })
	var gone []int64
	r.Cancelled = func(a Ask, _ string) { gone = append(gone, a.Ask) }

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan json.RawMessage)
	go func() {
		res, _ := r.Ask(ctx, "ext", "ui.confirm", nil)
		done <- res
	}()
	first := <-asks
	cancel()
	if res := <-done; string(res) != `{"cancelled":true}` {
		t.Errorf("cancelled ask returned %s", res)
	}

	go func() {
		res, _ := r.Ask(context.Background(), "ext", "ui.input", nil)
		done <- res
	}()
	second := <-asks
	if err := r.Reply(second.Ask, json.RawMessage(`{"text":"x"}`)); err != nil {
		t.Fatal(err)
	}
	<-done
	if diff := cmp.Diff([]int64{first.Ask}, gone); diff != "" {
		t.Errorf("Cancelled calls (-want +got):\n%s", diff)
	}
}
