package acp

import (
	"os"
	"testing"

	"github.com/e-agent/e/internal/leakcheck"
)

// TestMain fails the package when goroutines outlive the tests. The
// wire-level transcripts of e acp are golden cases (golden/acp-*.txtar),
// run by the conformance suite against the built binary.
func TestMain(m *testing.M) {
	os.Exit(leakcheck.Main(m))
}
