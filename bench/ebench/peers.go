package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/e-agent/e/internal/providermock"
)

// The peers and the npm packages they come in.
var peerPackages = []string{"@mariozechner/pi-coding-agent@0.73.1", "@openai/codex@0.171.0"}

// peerDriver speaks one agent's stdio protocol.
type peerDriver struct {
	name  string
	argv  func(cache string) []string // nil argv: not installed
	setup func(cache, url string) (env []string, err error)
	// ready is the request answered at start-up, and the prefix or
	// substring of its answer.
	ready, readyAns string
	// open is what runs once after start-up (a session), returning the
	// state a turn needs.
	open func(a *agent) (string, error)
	// prompt is the request of turn i; delta and end recognise its lines.
	prompt     func(state string, i int) string
	delta, end func(line []byte, i int) bool
}

// peers runs e, pi and Codex against one loopback OpenAI Responses mock,
// each a long-lived process over stdio, and prints their figures side by
// side.
func peers(fs *flag.FlagSet, args []string) error {
	e := fs.String("e", "./e", "the e binary")
	home, _ := os.UserCacheDir()
	cache := fs.String("cache", filepath.Join(home, "e-bench", "peers"), "where the peers are installed")
	install := fs.Bool("install", false, "install the peers from npm into the cache first")
	n := fs.Int("n", 500, "deltas per answer")
	turns := fs.Int("turns", 6, "turns after a warm-up; medians are printed")
	fs.Parse(args)
	if *install {
		os.MkdirAll(*cache, 0o755)
		cmd := exec.Command("npm", append([]string{"install", "--no-audit", "--no-fund", "--prefix", *cache}, peerPackages...)...)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("npm install: %w", err)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	mock := providermock.NewServer("openai-responses", *n)
	go http.Serve(ln, mock)
	url := "http://" + ln.Addr().String()
	fmt.Printf("# one loopback OpenAI Responses mock, %d text deltas per answer; median of %d turns after a warm-up\n", *n, *turns)
	fmt.Printf("%-22s %10s %10s %12s %10s %12s %10s %10s\n", "agent", "start ms", "idle MiB", "first µs", "turn ms", "CPU ms/turn", "B/delta", "RSS MiB")
	for _, d := range drivers(*e) {
		r, err := runPeer(d, *cache, url, mock, *n, *turns)
		if err != nil {
			fmt.Printf("%-22s not measured: %v\n", d.name, err)
			continue
		}
		fmt.Printf("%-22s %10.1f %10.1f %12.0f %10.2f %12.2f %10.0f %10.1f\n", d.name, ms(r.start), float64(r.idle)/(1<<20),
			float64(r.first.Microseconds()), ms(r.turn), ms(r.cpu), r.bytes/float64(*n), float64(r.rss)/(1<<20))
	}
	return nil
}

type peerFigures struct {
	start, first, turn, cpu time.Duration
	idle, rss               int64
	bytes                   float64
}

func runPeer(d peerDriver, cache, url string, mock *providermock.Server, n, turns int) (peerFigures, error) {
	argv := d.argv(cache)
	if argv == nil {
		return peerFigures{}, fmt.Errorf("not installed in %s (run with -install)", cache)
	}
	env, err := d.setup(cache, url)
	if err != nil {
		return peerFigures{}, err
	}
	dir, err := os.MkdirTemp("", "ebench-peer-")
	if err != nil {
		return peerFigures{}, err
	}
	defer os.RemoveAll(dir)
	a, err := spawn(dir, env, argv...)
	if err != nil {
		return peerFigures{}, err
	}
	defer a.stop()
	var f peerFigures
	a.send(d.ready)
	if err := waitLine(a, 120*time.Second, func(b []byte) bool { return bytes.Contains(b, []byte(d.readyAns)) }); err != nil {
		return f, fmt.Errorf("start-up: %w", err)
	}
	f.start = time.Since(a.start)
	f.idle = treeRSS(a.cmd.Process.Pid)
	state, err := d.open(a)
	if err != nil {
		return f, err
	}
	var firsts, times, cpus []time.Duration
	var sizes []float64
	for i := range turns + 1 {
		cpu0, t0 := treeCPU(a.cmd.Process.Pid), time.Now()
		a.send(d.prompt(state, i))
		var first time.Time
		deltas, size := 0, 0
		err := waitLine(a, 120*time.Second, func(b []byte) bool {
			size += len(b) + 1
			if d.delta(b, i) {
				if deltas == 0 {
					first = time.Now()
				}
				deltas++
			}
			return d.end(b, i)
		})
		if err != nil {
			return f, fmt.Errorf("turn %d: %w", i, err)
		}
		turn, cpu := time.Since(t0), treeCPU(a.cmd.Process.Pid)-cpu0
		if deltas == 0 {
			return f, fmt.Errorf("turn %d: no text delta reached stdout", i)
		}
		fl := mock.Firsts()
		if i == 0 {
			continue
		}
		firsts, times, cpus = append(firsts, first.Sub(fl[len(fl)-1])), append(times, turn), append(cpus, cpu)
		sizes = append(sizes, float64(size)*float64(n)/float64(deltas))
	}
	f.first, f.turn, f.cpu, f.bytes = median(firsts), median(times), median(cpus), median(sizes)
	f.rss = treeRSS(a.cmd.Process.Pid)
	return f, nil
}

// waitLine reads lines until done says so, or the limit passes.
func waitLine(a *agent, limit time.Duration, done func([]byte) bool) error {
	result := make(chan error, 1)
	go func() {
		for {
			b, err := a.line()
			if err != nil {
				result <- err
				return
			}
			if done(b) {
				result <- nil
				return
			}
		}
	}()
	select {
	case err := <-result:
		return err
	case <-time.After(limit):
		a.cmd.Process.Kill()
		<-result
		return fmt.Errorf("no answer within %v", limit)
	}
}

func bin(cache, name string) []string {
	p := filepath.Join(cache, "node_modules", ".bin", name)
	if _, err := os.Stat(p); err != nil {
		return nil
	}
	return []string{p}
}

func drivers(e string) []peerDriver {
	var eHome string
	return []peerDriver{
		{
			name: "e rpc",
			argv: func(string) []string { return []string{e, "rpc", "--ne"} },
			setup: func(_, url string) ([]string, error) {
				var err error
				eHome, err = os.MkdirTemp("", "ebench-home-")
				if err != nil {
					return nil, err
				}
				settings, _ := json.Marshal(map[string]any{
					"providers": map[string]any{"mock": map[string]any{"api": "openai-responses", "base_url": url + "/v1",
						"models": []any{map[string]any{"id": "m"}}}},
					"default_model": "mock/m",
				})
				return []string{"E_HOME=" + eHome}, os.WriteFile(filepath.Join(eHome, "settings.json"), settings, 0o600)
			},
			ready: `{"id":"h","method":"hello"}`, readyAns: `{"id":"h"`,
			open: func(a *agent) (string, error) {
				a.send(`{"id":"c","method":"session.create"}`)
				resp, _, err := a.until(`{"id":"c"`)
				return between(resp, `"session":"`, `"`), err
			},
			prompt: func(sid string, i int) string {
				return fmt.Sprintf(`{"id":"p%d","method":"session.prompt","params":{"session":%q,"prompt":"hi"}}`, i, sid)
			},
			delta: func(b []byte, _ int) bool { return bytes.HasPrefix(b, []byte(`{"type":"text"`)) },
			end:   func(b []byte, i int) bool { return bytes.HasPrefix(b, fmt.Appendf(nil, `{"id":"p%d"`, i)) },
		},
		{
			name: "pi 0.73.1 --mode rpc",
			argv: func(cache string) []string {
				if p := bin(cache, "pi"); p != nil {
					return append(p, "--mode", "rpc", "--provider", "mock", "--model", "m", "--no-session")
				}
				return nil
			},
			setup: func(cache, url string) ([]string, error) {
				dir := filepath.Join(cache, "pi-agent")
				os.MkdirAll(dir, 0o755)
				models, _ := json.Marshal(map[string]any{"providers": map[string]any{"mock": map[string]any{
					"baseUrl": url + "/v1", "api": "openai-responses", "apiKey": "none",
					"models": []any{map[string]any{"id": "m", "contextWindow": 128000, "maxTokens": 4096}}}}})
				return []string{"PI_CODING_AGENT_DIR=" + dir}, os.WriteFile(filepath.Join(dir, "models.json"), models, 0o600)
			},
			ready: `{"id":"s","type":"get_state"}`, readyAns: `"id":"s"`,
			open: func(*agent) (string, error) { return "", nil },
			prompt: func(_ string, i int) string {
				return fmt.Sprintf(`{"id":"p%d","type":"prompt","message":"hi"}`, i)
			},
			delta: func(b []byte, _ int) bool {
				return bytes.HasPrefix(b, []byte(`{"type":"message_update","assistantMessageEvent":{"type":"text_delta"`))
			},
			end: func(b []byte, _ int) bool { return bytes.HasPrefix(b, []byte(`{"type":"agent_end"`)) },
		},
		{
			name: "codex 0.171.0 app-server",
			argv: func(cache string) []string {
				if p := bin(cache, "codex"); p != nil {
					return append(p, "app-server")
				}
				return nil
			},
			setup: func(cache, url string) ([]string, error) {
				dir := filepath.Join(cache, "codex-home")
				os.MkdirAll(dir, 0o755)
				cfg := fmt.Sprintf("model = \"m\"\nmodel_provider = \"mock\"\n[model_providers.mock]\nname = \"mock\"\nbase_url = %q\nwire_api = \"responses\"\n", url+"/v1")
				return []string{"CODEX_HOME=" + dir}, os.WriteFile(filepath.Join(dir, "config.toml"), []byte(cfg), 0o600)
			},
			ready:    `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientInfo":{"name":"ebench","version":"1"}}}`,
			readyAns: `{"id":1,`,
			open: func(a *agent) (string, error) {
				a.send(`{"jsonrpc":"2.0","method":"initialized"}`)
				a.send(`{"jsonrpc":"2.0","id":2,"method":"thread/start","params":{"ephemeral":true,"approvalPolicy":"never","sandbox":"read-only"}}`)
				resp, _, err := a.until(`{"id":2,`)
				if err != nil {
					return "", err
				}
				if !strings.Contains(resp, `"thread":{"id":"`) {
					return "", fmt.Errorf("thread/start: %.200s", resp)
				}
				return between(resp, `"thread":{"id":"`, `"`), nil
			},
			prompt: func(tid string, i int) string {
				return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"turn/start","params":{"threadId":%q,"input":[{"type":"text","text":"hi"}]}}`, 10+i, tid)
			},
			delta: func(b []byte, _ int) bool { return bytes.Contains(b, []byte(`"method":"item/agentMessage/delta"`)) },
			end:   func(b []byte, _ int) bool { return bytes.Contains(b, []byte(`"method":"turn/completed"`)) },
		},
	}
}
