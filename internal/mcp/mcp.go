package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/e-agent/e/internal/reaper"
)

// Config is one MCP server to start (settings' and session.create's
// mcp_servers, ACP's mcpServers with the stdio transport).
type Config struct {
	Name    string            `json:"name"`
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"` // added to e's environment
}

// Tool is one tool of a server as the model sees it.
type Tool struct {
	Name        string          // e's name for it: mcp__SERVER__TOOL
	Server      string          // the server's name
	Remote      string          // the tool's name on the server
	Description string          //
	Parameters  json.RawMessage // the input JSON Schema
}

// ConnectTimeout bounds the start of a server: its process, initialize and
// tools/list. A server that does not answer in time is not used.
const ConnectTimeout = 10 * time.Second

// Client is one running MCP server.
type Client struct {
	cfg   Config
	stop  func() // kills the process group and waits for the server to be reaped
	cs    *sdk.ClientSession
	tools []Tool

	gone chan struct{} // closed when the server's connection ended
	mu   sync.Mutex
	why  string // why it ended, once gone
}

var unsafe = regexp.MustCompile(`[^A-Za-z0-9_-]`)

// Name returns e's name for tool remote of server: mcp__SERVER__TOOL, with
// characters model APIs refuse replaced by '_', at most 64 characters.
// Built-in tool names never contain "__", so they cannot collide.
func Name(server, remote string) string {
	n := "mcp__" + unsafe.ReplaceAllString(server, "_") + "__" + unsafe.ReplaceAllString(remote, "_")
	if len(n) > 64 {
		n = n[:64]
	}
	return n
}

// Check validates a configuration before anything starts.
func (c Config) Check() error {
	switch {
	case c.Name == "":
		return errors.New("name: required")
	case strings.Contains(c.Name, "__"):
		return fmt.Errorf("name: %q must not contain \"__\"", c.Name)
	case c.Command == "":
		return errors.New("command: required")
	}
	return nil
}

// Connect starts the server in dir and lists its tools. onExit, if set,
// is called once (on its own goroutine) when the server ends before Close,
// with why.
func Connect(ctx context.Context, cfg Config, dir string, onExit func(why string)) (*Client, error) {
	if err := cfg.Check(); err != nil {
		return nil, fmt.Errorf("mcp: server %q: %w", cfg.Name, err)
	}
	ctx, cancel := context.WithTimeout(ctx, ConnectTimeout)
	defer cancel()
	cmd := exec.Command(cfg.Command, cfg.Args...)
	cmd.Dir = dir
	cmd.Env = os.Environ()
	for k, v := range cfg.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // Close ends its children too
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("mcp: server %q: %w", cfg.Name, err)
	}
	// Not StdoutPipe: Wait closes that pipe once the process is reaped,
	// which can drop the last lines a server wrote before it exited and
	// fails a read in progress with "file already closed" instead of EOF.
	// This pipe is the session's, read to its end and closed with it.
	stdout, stdoutW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("mcp: server %q: %w", cfg.Name, err)
	}
	cmd.Stdout = stdoutW
	// e's own child, never taken for an adopted orphan by a shutdown's
	// sweep; exited is closed once it is reaped.
	err = reaper.Start(cmd)
	stdoutW.Close()
	if err != nil {
		stdout.Close()
		return nil, fmt.Errorf("mcp: server %q: %w", cfg.Name, err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		reaper.Forget(cmd.Process.Pid)
		close(exited)
	}()
	stop := func() {
		killGroup(cmd)
		<-exited
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "e", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &sdk.IOTransport{Reader: stdout, Writer: stdin}, nil)
	if err != nil {
		stdout.Close()
		stop()
		return nil, fmt.Errorf("mcp: server %q: %w", cfg.Name, err)
	}
	c := &Client{cfg: cfg, cs: cs, stop: stop, gone: make(chan struct{})}
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		cs.Close()
		stop()
		return nil, fmt.Errorf("mcp: server %q: tools/list: %w", cfg.Name, err)
	}
	for _, t := range res.Tools {
		params, _ := json.Marshal(t.InputSchema)
		if len(params) == 0 || string(params) == "null" {
			params = json.RawMessage(`{"type":"object"}`)
		}
		c.tools = append(c.tools, Tool{Name: Name(cfg.Name, t.Name), Server: cfg.Name, Remote: t.Name,
			Description: t.Description, Parameters: params})
	}
	go func() {
		// The session's own error is the pipes' closing, worded in an
		// order that varies; how the process ended is what an operator
		// needs, once it is reaped (a server that only closed its stdout
		// is gone for its tools all the same).
		cs.Wait()
		cs.Close() // the pipes' ends are e's to close
		state := ""
		select {
		case <-exited:
			state = cmd.ProcessState.String()
		case <-time.After(exitReport):
		}
		c.mu.Lock()
		closing := c.why != ""
		if !closing {
			c.why = fmt.Sprintf("mcp server %s exited", cfg.Name)
			if state != "" {
				c.why += " (" + state + ")"
			}
		}
		why := c.why
		c.mu.Unlock()
		close(c.gone)
		if !closing && onExit != nil {
			onExit(why)
		}
	}()
	return c, nil
}

// exitReport bounds how long a lost server's notice waits for its exit
// status.
const exitReport = time.Second

// Tools returns the server's tools.
func (c *Client) Tools() []Tool { return c.tools }

// Server returns the server's name.
func (c *Client) Server() string { return c.cfg.Name }

// Call runs tool (its remote name) with args. It returns the text of the
// result and whether the call failed; a server that is gone, or goes
// during the call, fails it at once.
func (c *Client) Call(ctx context.Context, tool string, args json.RawMessage) (content string, failed bool) {
	select {
	case <-c.gone:
		return c.reason() + "; the call did not run", true
	default:
	}
	var a any = map[string]any{}
	if len(args) > 0 && string(args) != "null" {
		a = args
	}
	// A server that goes fails the call by itself: the connection
	// retires its calls when it ends, after an answer already read.
	res, err := c.cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: a})
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, sdk.ErrConnectionClosed) || errors.Is(err, os.ErrClosed) || errors.Is(err, syscall.EPIPE) {
			// A connection that ended is a server that is going: wait, a
			// bounded time, for its exit to be told, so that the call says
			// what the notice says.
			select {
			case <-c.gone:
			case <-time.After(2 * exitReport):
			}
		}
		select {
		case <-c.gone:
			return c.reason() + " during the call", true
		default:
		}
		return fmt.Sprintf("mcp server %s: %s: %v", c.cfg.Name, tool, err), true
	}
	var b strings.Builder
	for _, part := range res.Content {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		switch p := part.(type) {
		case *sdk.TextContent:
			b.WriteString(p.Text)
		default:
			j, _ := json.Marshal(part)
			b.Write(j)
		}
	}
	if b.Len() == 0 && res.StructuredContent != nil {
		j, _ := json.Marshal(res.StructuredContent)
		b.Write(j)
	}
	return b.String(), res.IsError
}

func (c *Client) reason() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.why
}

// Close ends the session with the server and kills its process group,
// children included. It waits for the connection to end.
func (c *Client) Close() {
	c.mu.Lock()
	if c.why == "" {
		c.why = fmt.Sprintf("mcp server %s was closed", c.cfg.Name)
	}
	c.mu.Unlock()
	c.cs.Close()
	c.stop()
	<-c.gone
}

// killGroup kills the server's process group: an MCP server's own
// children die with it, as bash's do.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
