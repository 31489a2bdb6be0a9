package store_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/e-agent/e/internal/store"
)

// writeLog writes a session log of n entries in dir, as e writes it,
// alternating user and assistant messages, and returns its path.
func writeLog(b *testing.B, dir, cwd string, n int) string {
	b.Helper()
	l, err := store.CreateIn(dir, store.Header{Cwd: cwd, Model: "m", Effort: "e"})
	if err != nil {
		b.Fatal(err)
	}
	for i := range n {
		m := userMsg(fmt.Sprintf("please look at file %d and tell me what it does, in detail", i))
		if i%2 == 1 {
			m = assistantMsg(fmt.Sprintf("file %d reads its input, counts the words and prints a table of the most frequent ones", i))
		}
		if err := l.Append(store.Entry{Type: store.TypeMessage, Message: m}); err != nil {
			b.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
	return l.Path()
}

// copyLog writes n copies of the log at path into dir, each with an id of
// its own (Create's fsyncs would dominate the set-up).
func copyLog(b *testing.B, path, dir string, n int) {
	b.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	old := []byte(strings.TrimSuffix(filepath.Base(path), ".jsonl"))
	for range n {
		id := store.NewID()
		if err := os.WriteFile(filepath.Join(dir, id+".jsonl"), bytes.Replace(data, old, []byte(id), 1), 0o600); err != nil {
			b.Fatal(err)
		}
	}
}

// M4: listing 100, 1,000 and 10,000 sessions of one directory, each with
// 10 messages, cold (no summary cache) and cached, beside the floor: reading
// every log's bytes, the least a cold listing must do. ns/session stays
// flat with the count when nothing is quadratic.
func BenchmarkList(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			home := b.TempDir()
			cwd := "/work/bench"
			dir := filepath.Join(home, "sessions", store.Slug(cwd))
			os.MkdirAll(dir, 0o700)
			copyLog(b, writeLog(b, b.TempDir(), cwd, 10), dir, n)
			runtime.GC() // the set-up's garbage is not the first sub-benchmark's CPU
			list := func(b *testing.B) {
				s, err := store.List(home, cwd, false)
				if err != nil || len(s) != n || s[0].Messages != 10 || s[0].Turns != 5 {
					b.Fatalf("List: %d sessions, %v", len(s), err)
				}
			}
			var cpu0 time.Duration
			perSession := func(b *testing.B) {
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/session")
				b.ReportMetric(float64((cpuTime()-cpu0).Milliseconds())/float64(b.N), "cpu-ms/op")
			}
			b.Run("cold", func(b *testing.B) {
				cpu0 = cpuTime()
				for b.Loop() {
					os.Remove(filepath.Join(dir, ".list-cache.json"))
					list(b)
				}
				perSession(b)
			})
			b.Run("cached", func(b *testing.B) {
				list(b)
				cpu0 = cpuTime()
				for b.Loop() {
					list(b)
				}
				perSession(b)
			})
			b.Run("floor", func(b *testing.B) {
				cpu0 = cpuTime()
				for b.Loop() {
					des, _ := os.ReadDir(dir)
					for _, de := range des {
						if _, err := os.ReadFile(filepath.Join(dir, de.Name())); err != nil {
							b.Fatal(err)
						}
					}
				}
				perSession(b)
			})
		})
	}
}

// C6, C7: resuming a log of 1,000, 10,000 and 100,000 entries, writable
// and read-only, beside the floor (reading the file and finding its lines),
// and the heap the read-only entries hold.
func BenchmarkResume(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			path := writeLog(b, b.TempDir(), "/work/bench", n)
			// Neither the set-up's garbage nor the heap's first growth is the
			// first sub-benchmark's CPU: both kinds measure the same state.
			store.ReadOnly(path)
			runtime.GC()
			var cpu0 time.Duration
			perEntry := func(b *testing.B) {
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/entry")
				b.ReportMetric(float64((cpuTime()-cpu0).Milliseconds())/float64(b.N), "cpu-ms/op")
			}
			b.Run("OpenWritable", func(b *testing.B) {
				cpu0 = cpuTime()
				for b.Loop() {
					l, _, es, err := store.OpenWritable(path)
					if err != nil || len(es) != n {
						b.Fatalf("%d entries, %v", len(es), err)
					}
					l.Close()
				}
				perEntry(b)
			})
			b.Run("ReadOnly", func(b *testing.B) {
				cpu0 = cpuTime()
				for b.Loop() {
					_, es, err := store.ReadOnly(path)
					if err != nil || len(es) != n {
						b.Fatalf("%d entries, %v", len(es), err)
					}
				}
				perEntry(b)
				// The heap a resumed session's entries hold, beside the file.
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				_, es, _ := store.ReadOnly(path)
				runtime.GC()
				runtime.ReadMemStats(&after)
				runtime.KeepAlive(es)
				if fi, err := os.Stat(path); err == nil {
					b.ReportMetric(float64(fi.Size())/(1<<20), "MiB-file")
				}
				b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "MiB-heap")
			})
			b.Run("floor", func(b *testing.B) {
				cpu0 = cpuTime()
				for b.Loop() {
					data, err := os.ReadFile(path)
					if err != nil || bytes.Count(data, []byte{'\n'}) != n+1 {
						b.Fatal("short log", err)
					}
				}
				perEntry(b)
			})
			b.Run("Branch", func(b *testing.B) {
				_, es, _ := store.ReadOnly(path)
				for b.Loop() {
					if got := len(store.Branch(es)); got != n {
						b.Fatalf("branch of %d", got)
					}
				}
				perEntry(b)
			})
		})
	}
}

// Appending one assistant message of 2,000, 20,000 and 200,000 words (a
// /long answer's history entry, 13 KB to 1.4 MB) to a saved session:
// redaction, validation and the write. ns/byte stays flat when nothing
// grows faster than the message.
func BenchmarkAppendLong(b *testing.B) {
	for _, words := range []int{2000, 20000, 200000} {
		var sb strings.Builder
		for i := range words {
			if i > 0 {
				sb.WriteByte(' ')
			}
			sb.WriteString("w" + strconv.Itoa(i+1))
		}
		text, _ := json.Marshal(sb.String())
		msg := []byte(`{"role":"assistant","content":[{"type":"text","text":` + string(text) + `}]}`)
		b.Run(strconv.Itoa(words), func(b *testing.B) {
			l, err := store.CreateIn(b.TempDir(), store.Header{Cwd: "/work/bench", Model: "m", Effort: "e"})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			b.SetBytes(int64(len(msg)))
			for b.Loop() {
				if err := l.Append(store.Entry{Type: store.TypeMessage, Message: msg}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(msg)), "ns/byte")
		})
	}
}

// bigLog writes a log of rounds rounds, each a prompt, a tool call, its
// result of about 4 KB and an answer (about 5.4 KB a round: 9,400 rounds
// make 48 MiB, beyond the 41 MB log of issue 29), and returns its header and branch as a
// resumed session holds them, and its size.
func bigLog(b *testing.B, rounds int) (store.Header, []store.Entry, int64) {
	b.Helper()
	l, err := store.CreateIn(b.TempDir(), store.Header{Cwd: "/work/bench", Model: "m", Effort: "e"})
	if err != nil {
		b.Fatal(err)
	}
	out := strings.Repeat("main.go:12: func main() { fmt.Println(\"hello\") }\n", 80)
	for i := range rounds {
		id := fmt.Sprintf("call_%d", i)
		call, _ := json.Marshal(map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_call", "id": id, "name": "bash",
			"arguments": map[string]string{"command": fmt.Sprintf("grep -n main file%d.go", i)}}}})
		result, _ := json.Marshal(map[string]any{"role": "tool", "content": []any{map[string]any{"type": "tool_result", "call_id": id, "text": out}}})
		err := l.Append(store.Entry{Type: store.TypeMessage, Message: userMsg(fmt.Sprintf("look at file %d", i))},
			store.Entry{Type: store.TypeMessage, Message: call}, store.Entry{Type: store.TypeMessage, Message: result},
			store.Entry{Type: store.TypeMessage, Message: assistantMsg(fmt.Sprintf("file %d prints **hello**, see `main`", i))})
		if err != nil {
			b.Fatal(err)
		}
	}
	l.Close()
	h, es, err := store.ReadOnly(l.Path())
	if err != nil {
		b.Fatal(err)
	}
	fi, err := os.Stat(l.Path())
	if err != nil {
		b.Fatal(err)
	}
	return *h, store.Branch(es), fi.Size()
}

// H1: session.export and session.fork of a 48 MiB log: the bytes they
// allocate and the most heap they hold beyond the session's own entries
// (peak-MiB, sampled by the GC's figures after the op), which stays far
// below the log's size when they stream.
func BenchmarkHeavyReads(b *testing.B) {
	h, branch, size := bigLog(b, 9400)
	dir := b.TempDir()
	ops := []struct {
		name string
		op   func(b *testing.B)
	}{
		{"export", func(b *testing.B) {
			if err := store.ExportHTML(io.Discard, "t", h, branch); err != nil {
				b.Fatal(err)
			}
		}},
		{"fork", func(b *testing.B) {
			hf := h
			hf.ID = store.NewID()
			l, err := store.ForkIn(dir, hf, branch)
			if err != nil {
				b.Fatal(err)
			}
			l.Close()
			os.Remove(l.Path())
		}},
	}
	for _, o := range ops {
		b.Run(o.name, func(b *testing.B) {
			b.ReportAllocs()
			peak := peakHeap(func() { o.op(b) })
			for b.Loop() {
				o.op(b)
			}
			b.ReportMetric(float64(peak)/(1<<20), "peak-MiB")
			b.ReportMetric(float64(size)/(1<<20), "MiB-file")
		})
	}
}

// peakHeap runs f once with the GC made eager and returns the most live
// heap it saw above what was live before: a bound on what f holds at once.
func peakHeap(f func()) uint64 {
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	old := debug.SetGCPercent(1)
	defer debug.SetGCPercent(old)
	var peak atomic.Uint64
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		var m runtime.MemStats
		for {
			select {
			case <-done:
				return
			default:
			}
			runtime.ReadMemStats(&m)
			if m.HeapAlloc > before.HeapAlloc && m.HeapAlloc-before.HeapAlloc > peak.Load() {
				peak.Store(m.HeapAlloc - before.HeapAlloc)
			}
			time.Sleep(time.Millisecond)
		}
	}()
	f()
	close(done)
	<-stopped
	return peak.Load()
}
