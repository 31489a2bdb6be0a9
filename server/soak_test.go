package server

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

var (
	soakSessions = flag.Int("soak.sessions", 24, "sessions the soak test drives (hundreds for a long run)")
	soakOps      = flag.Int("soak.ops", 12, "operations per session in the soak test")
	soakSeed     = flag.Uint64("soak.seed", 1, "seed of the soak test's random choices")
)

// soakMark is in every bash command the soak runs, to find its processes.
const soakMark = "e-soak-mark"

// TestSoak drives many sessions at once with random prompts, steers,
// interrupts, closes, resumes and forks, and checks invariants on every
// line the server prints (F2, S2, M8): exactly one response per request id,
// no event of a request after its response, at most one turn_start and one
// turn_end per prompt, and turn_end before the prompt's response when the
// turn started. After EOF no goroutine (TestMain) and no process of a bash
// call is left. Short by default; go test ./server -run TestSoak
// -soak.sessions=500 -soak.ops=40 for a long run.
func TestSoak(t *testing.T) {
	c := startServer(t, serverSetup{})
	inv := &invariants{waiting: map[string]chan string{}, answered: map[string]int{}, turns: map[string]*turnCount{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for line := range c.lines {
			checkLine(t, line)
			inv.line(t, line)
		}
	}()
	var ids sync.Mutex
	next := 0
	call := func(method string, params map[string]any) string {
		ids.Lock()
		next++
		id := fmt.Sprintf("r%d", next)
		ids.Unlock()
		ch := inv.expect(id, method == "session.prompt")
		b, _ := json.Marshal(map[string]any{"id": id, "method": method, "params": params})
		c.send(string(b) + "\n")
		select {
		case resp := <-ch:
			return resp
		case <-time.After(waitLimit):
			t.Errorf("no response to %s (%s)", id, method)
			return ""
		}
	}
	prompts := []string{
		"/text soak words here",
		"/delay 2\n/long 30",
		"/tool sleep {\"ms\":20}\n/then\n/text slept",
		"/tool bash {\"command\":\"sleep 0.05; echo " + soakMark + "\"}\n/then\n/text ran",
		"/tool bash {\"command\":\"(exec -a " + soakMark + " sleep 30) & echo started\"}\n/then\n/text left one",
		"/error retryable once",
	}
	call("hello", map[string]any{})
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for s := range *soakSessions {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			r := rand.New(rand.NewPCG(*soakSeed, uint64(s)))
			sid, path := open(call, map[string]any{})
			var turns sync.WaitGroup
			for range *soakOps {
				if sid == "" {
					break
				}
				switch op := r.IntN(10); {
				case op < 4: // a prompt, answered in the background while other ops race it
					p := prompts[r.IntN(len(prompts))]
					turns.Add(1)
					go func() { defer turns.Done(); call("session.prompt", map[string]any{"session": sid, "prompt": p}) }()
				case op < 6:
					call("session.steer", map[string]any{"session": sid, "text": "/text steered"})
				case op < 7:
					call("session.interrupt", map[string]any{"session": sid})
				case op < 8:
					if fid, _ := open(call, nil, "session.fork", sid); fid != "" {
						call("session.close", map[string]any{"session": fid})
					}
				default: // close, then resume the saved log
					turns.Wait()
					path = gjson.Get(call("session.info", map[string]any{"session": sid}), "result.path").String()
					call("session.close", map[string]any{"session": sid})
					if path == "" { // no turn yet, so no log: a fresh session instead
						sid, _ = open(call, map[string]any{})
					} else {
						sid, path = open(call, map[string]any{"resume": path})
					}
				}
			}
			turns.Wait()
			if sid != "" {
				call("session.close", map[string]any{"session": sid})
			}
		}()
	}
	wg.Wait()
	c.in.Close()
	<-done
	inv.final(t)
	t.Logf("%d sessions, %d requests, %d prompts answered", *soakSessions, next, inv.prompts)
	for _, p := range procs() {
		if strings.Contains(p, soakMark) {
			t.Errorf("a soak process outlived e: %s", p)
		}
	}
}

// open creates a session (or forks one: method session.fork, from sid) and
// returns its id and log path.
func open(call func(string, map[string]any) string, params map[string]any, fork ...string) (string, string) {
	method := "session.create"
	if len(fork) == 2 {
		method, params = fork[0], map[string]any{"session": fork[1]}
	}
	resp := call(method, params)
	return gjson.Get(resp, "result.session").String(), gjson.Get(resp, "result.path").String()
}

type turnCount struct{ start, end int }

// invariants checks every line as it arrives.
type invariants struct {
	mu       sync.Mutex
	waiting  map[string]chan string // request id → where its response goes
	answered map[string]int         // request id → responses seen
	turns    map[string]*turnCount  // prompt id → its turn events
	prompts  int
}

func (v *invariants) expect(id string, prompt bool) chan string {
	v.mu.Lock()
	defer v.mu.Unlock()
	ch := make(chan string, 1)
	v.waiting[id] = ch
	if prompt {
		v.turns[id] = &turnCount{}
	}
	return ch
}

func (v *invariants) line(t *testing.T, line string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	typ := gjson.Get(line, "type").String()
	if typ != "" {
		req := gjson.Get(line, "request").String()
		if req == "" {
			return // an ask or a notice
		}
		if v.answered[req] > 0 {
			t.Errorf("event after the response of %s: %s", req, line)
		}
		tc := v.turns[req]
		switch {
		case tc == nil:
		case typ == "turn_start":
			tc.start++
		case typ == "turn_end":
			tc.end++
		}
		return
	}
	id := gjson.Get(line, "id").String()
	v.answered[id]++
	if n := v.answered[id]; n > 1 {
		t.Errorf("%d responses to %s: %s", n, id, line)
		return
	}
	if tc := v.turns[id]; tc != nil {
		v.prompts++
		if tc.start > 1 || tc.end > 1 || tc.start != tc.end {
			t.Errorf("prompt %s: %d turn_start and %d turn_end before its response %s", id, tc.start, tc.end, line)
		}
	}
	if ch, ok := v.waiting[id]; ok {
		ch <- line
	}
}

func (v *invariants) final(t *testing.T) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for id := range v.waiting {
		if v.answered[id] != 1 {
			t.Errorf("request %s got %d responses", id, v.answered[id])
		}
	}
}

// procs returns the command lines of the machine's live processes.
func procs() []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil || strings.Contains(string(stat), ") Z ") {
			continue
		}
		if cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil {
			out = append(out, strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
	}
	return out
}
