package pi

import (
	"bytes"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/e-agent/e/internal/providermock"
)

// lineCounter is a stdout that counts lines (a search for the deltas'
// lines would cost more than their encoding).
type lineCounter struct{ lines atomic.Int64 }

func (c *lineCounter) Write(p []byte) (int, error) {
	c.lines.Add(int64(bytes.Count(p, []byte{'\n'})))
	return len(p), nil
}

// BenchmarkPiTurn is one e --mode rpc run in-process, a prompt answered by
// a loopback openai-completions mock streaming n text deltas, through the
// translator and pi's encoding onto stdout: the cost per delta (ns/delta,
// flat with the size when nothing on the path grows faster than the
// answer) and the allocations per turn, beside e rpc's BenchmarkProviderTurn
// (internal/agent), which is the same path without pi's dialect.
func BenchmarkPiTurn(b *testing.B) {
	for _, n := range []int{500, 5000, 50000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			srv := httptest.NewServer(providermock.NewServer("openai-chat", n))
			defer srv.Close()
			dir := b.TempDir()
			for _, d := range []string{"work", "e-home", "pi-agent"} {
				os.Mkdir(filepath.Join(dir, d), 0o700)
			}
			models := fmt.Sprintf(`{"providers":{"mock":{"baseUrl":%q,"api":"openai-completions","apiKey":"test",`+
				`"models":[{"id":"mock-1","contextWindow":1000000}]}}}`, srv.URL+"/v1")
			if err := os.WriteFile(filepath.Join(dir, "pi-agent", "models.json"), []byte(models), 0o600); err != nil {
				b.Fatal(err)
			}
			f, err := ParseFlags([]string{"--mode", "rpc", "--no-session", "--provider", "mock", "--model", "mock-1"})
			if err != nil {
				b.Fatal(err)
			}
			out := &lineCounter{}
			vars := map[string]string{"PI_CODING_AGENT_DIR": filepath.Join(dir, "pi-agent")}
			fr, err := start(f, Env{Stdin: strings.NewReader(""), Stdout: out, Stderr: os.Stderr,
				Cwd: filepath.Join(dir, "work"), Home: filepath.Join(dir, "e-home"),
				Getenv: func(k string) string { return vars[k] }, Version: "test"})
			if err != nil {
				b.Fatal(err)
			}
			defer fr.shutdown()
			turn := func() {
				if err := fr.startRun("go", nil, nil, func() {}); err != nil {
					b.Fatal(err)
				}
				fr.mu.Lock()
				done := fr.runDone
				fr.mu.Unlock()
				<-done
				// A new session each turn, so every request is the same size.
				if _, err := fr.newSession(CommandNewSession{Type: "new_session"}); err != nil {
					b.Fatal(err)
				}
			}
			turn() // warm-up: the connection, first allocations
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				turn()
			}
			b.StopTimer()
			fr.out.Close() // flushed: every line is counted
			if got, want := out.lines.Load(), int64((b.N+1)*n); got < want {
				b.Fatalf("%d lines written, want more than the %d text deltas", got, want)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/delta")
		})
	}
}
