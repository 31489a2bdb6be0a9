package pi

import (
	"os"
	"testing"

	"github.com/e-agent/e/internal/leakcheck"
)

// TestMain fails the package when goroutines outlive the tests.
func TestMain(m *testing.M) { os.Exit(leakcheck.Main(m)) }
