// Command guard is a reference extension for e (spec/extensions.md), using
// only the standard library. It registers a tool, deploy {target}, that asks
// the person to confirm before it acts, and a gate that denies bash commands
// matching the regular expression in $GUARD_DENY (default "rm -rf").
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sync"
)

// message is every line of the protocol: a request or notification has a
// method; a response has result or error.
type message struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result any             `json:"result,omitempty"`
	Error  string          `json:"error,omitempty"`
}

var (
	outMu sync.Mutex
	out   = json.NewEncoder(os.Stdout) // Encode writes one line per call

	askMu   sync.Mutex
	nextAsk int
	asks    = map[string]chan message{} // our requests to e, by id
)

func send(m message) {
	outMu.Lock()
	defer outMu.Unlock()
	out.Encode(m)
}

// request sends a request to e and waits for its response.
func request(method string, params any) message {
	askMu.Lock()
	nextAsk++
	id := fmt.Sprintf(`"guard-%d"`, nextAsk)
	ch := make(chan message, 1)
	asks[id] = ch
	askMu.Unlock()
	p, _ := json.Marshal(params)
	send(message{ID: json.RawMessage(id), Method: method, Params: p})
	return <-ch
}

func main() {
	pattern := os.Getenv("GUARD_DENY")
	if pattern == "" {
		pattern = "rm -rf"
	}
	deny, err := regexp.Compile(pattern)
	if err != nil {
		fmt.Fprintf(os.Stderr, "GUARD_DENY: %v\n", err) // stderr: stdout is for protocol lines
		os.Exit(2)
	}
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	for {
		line, err := in.ReadBytes('\n')
		if err != nil {
			os.Exit(0) // EOF: e closed our stdin
		}
		var m message
		if json.Unmarshal(line, &m) != nil {
			continue
		}
		switch m.Method {
		case "": // a response to one of our requests
			askMu.Lock()
			ch := asks[string(m.ID)]
			delete(asks, string(m.ID))
			askMu.Unlock()
			if ch != nil {
				ch <- m
			}
		case "initialize":
			send(message{ID: m.ID, Result: map[string]any{
				"protocol": 1, "name": "guard", "gate": true, "events": []string{},
				"tools": []map[string]any{{
					"name":        "deploy",
					"description": "Deploy the current build to a target, after the person confirms.",
					"parameters": map[string]any{"type": "object", "required": []string{"target"},
						"properties": map[string]any{"target": map[string]any{"type": "string"}}},
				}},
			}})
		case "tool.call": // may wait for a person: answer on a goroutine, keep reading
			go func() { send(deploy(m)) }()
		case "tool.gate":
			var p struct {
				Name      string `json:"name"`
				Arguments struct {
					Command string `json:"command"`
				} `json:"arguments"`
			}
			json.Unmarshal(m.Params, &p)
			if p.Name == "bash" && deny.MatchString(p.Arguments.Command) {
				send(message{ID: m.ID, Result: map[string]any{"allow": false, "reason": "guard denies commands matching " + pattern}})
			} else {
				send(message{ID: m.ID, Result: map[string]any{"allow": true}})
			}
		case "shutdown":
			os.Exit(0)
		default:
			if len(m.ID) > 0 { // events and cancel need no answer; unknown requests do
				send(message{ID: m.ID, Error: "guard does not handle " + m.Method})
			}
		}
	}
}

func deploy(m message) message {
	var p struct {
		Name      string `json:"name"`
		Arguments struct {
			Target string `json:"target"`
		} `json:"arguments"`
	}
	json.Unmarshal(m.Params, &p)
	if p.Name != "deploy" || p.Arguments.Target == "" {
		return message{ID: m.ID, Error: "guard: tool.call wants deploy {target}"}
	}
	r := request("ui.confirm", map[string]string{"title": "Deploy?", "message": "to " + p.Arguments.Target})
	if r.Error != "" {
		return message{ID: m.ID, Result: map[string]any{"content": "not deployed: " + r.Error, "failed": true}}
	}
	var answer struct {
		Confirmed bool `json:"confirmed"`
	}
	b, _ := json.Marshal(r.Result)
	json.Unmarshal(b, &answer)
	if !answer.Confirmed {
		return message{ID: m.ID, Result: map[string]any{"content": "cancelled"}}
	}
	return message{ID: m.ID, Result: map[string]any{"content": "deployed to " + p.Arguments.Target}}
}
