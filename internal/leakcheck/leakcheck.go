// Package leakcheck is the goroutine-leak check of e's test binaries: every
// goroutine e starts has an owner that waits for it, so none may outlive
// the tests.
package leakcheck

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Main runs the tests and returns their exit code, 1 when they passed but
// goroutines running e's code outlived them. A TestMain calls
// os.Exit(leakcheck.Main(m)).
func Main(m *testing.M) int {
	code := m.Run()
	if code == 0 {
		if leaked := leaked(); leaked != "" {
			fmt.Fprintf(os.Stderr, "goroutines outlived the tests:\n%s\n", leaked)
			code = 1
		}
	}
	return code
}

// leaked returns the stacks of goroutines running e's code, after giving
// exiting ones up to 5 s to finish.
func leaked() string {
	deadline := time.Now().Add(5 * time.Second)
	for {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		var out []string
		for _, g := range strings.Split(string(buf), "\n\n") {
			if strings.Contains(g, "e-agent/e/") && !strings.Contains(g, "leakcheck.") {
				out = append(out, g)
			}
		}
		if len(out) == 0 || time.Now().After(deadline) {
			return strings.Join(out, "\n\n")
		}
		time.Sleep(20 * time.Millisecond) // polling for exits, not synchronising a test
	}
}
