package acp

import (
	"os"
	"testing"

	"github.com/e-agent/e/internal/leakcheck"
	"github.com/e-agent/e/internal/mcp/mcptest"
)

// TestMain fails the package when goroutines outlive the tests.
func TestMain(m *testing.M) {
	mcptest.MaybeServe() // the binary is the transcripts' MCP server too
	os.Exit(leakcheck.Main(m))
}
