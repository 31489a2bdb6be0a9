// Package mcptest is a small MCP server for tests, written with the SDK's
// server side: a test binary re-executes itself as the server (Config),
// and its TestMain calls MaybeServe first.
package mcptest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// envVar tells a re-executed test binary to serve.
const envVar = "E_MCP_TEST_SERVER"

// MaybeServe serves the test tools on stdio and exits when the binary was
// started as the server; otherwise it returns at once.
func MaybeServe() {
	if os.Getenv(envVar) == "" {
		return
	}
	if err := serve(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// Command returns how to start the server: this binary, and the variables
// to add to its environment.
func Command() (exe string, env map[string]string, err error) {
	exe, err = os.Executable()
	return exe, map[string]string{envVar: "1"}, err
}

type echoArgs struct {
	Text string `json:"text"`
}

// LastWords is the answer of the tool last, after which the server exits.
const LastWords = "last words before exit"

// exitAfter ends the server once the answer holding LastWords is written:
// a server that answers and exits at once, its answer still in the pipe.
type exitAfter struct{ io.WriteCloser }

func (w exitAfter) Write(p []byte) (int, error) {
	n, err := w.WriteCloser.Write(p)
	if bytes.Contains(p, []byte(LastWords)) {
		os.Exit(0)
	}
	return n, err
}

// serve offers echo (its text back), fail (a tool error), crash (the
// server exits), last (answers, then exits) and spawn (a child that
// outlives the call; its pid).
func serve() error {
	s := sdk.NewServer(&sdk.Implementation{Name: "mcptest", Version: "1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "echo", Description: "Echo the text."},
		func(_ context.Context, _ *sdk.CallToolRequest, a echoArgs) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "echo: " + a.Text}}}, nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "fail", Description: "Fail."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			return nil, nil, errors.New("it failed on purpose")
		})
	sdk.AddTool(s, &sdk.Tool{Name: "crash", Description: "Exit the server."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			os.Exit(3)
			return nil, nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "last", Description: "Answer, then exit the server."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: LastWords}}}, nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "spawn", Description: "Start a child that outlives the call; answer its pid."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			cmd := exec.Command("sleep", "300")
			if err := cmd.Start(); err != nil {
				return nil, nil, err
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: strconv.Itoa(cmd.Process.Pid)}}}, nil, nil
		})
	return s.Run(context.Background(), &sdk.IOTransport{Reader: os.Stdin, Writer: exitAfter{os.Stdout}})
}
