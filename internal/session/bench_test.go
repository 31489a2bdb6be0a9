package session

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"testing"

	"github.com/e-agent/e/internal/jsonenc"
	"github.com/e-agent/e/internal/store"
)

// C6, C7: resuming a saved session of 1,000, 10,000 and 100,000 entries as
// session.create {resume} does (the log read and parsed, its branch, the
// agent's session), read-only and writable, with the heap a read-only one
// holds: ns/entry stays flat with the size when nothing is quadratic.
// internal/store's BenchmarkResume times the log alone.
func BenchmarkResume(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			h := startHost(b, Options{})
			cwd := b.TempDir()
			l, err := store.CreateIn(b.TempDir(), store.Header{Cwd: cwd, Model: "e/offline", Effort: "medium"})
			if err != nil {
				b.Fatal(err)
			}
			for i := range n {
				role, text := "user", fmt.Sprintf("please look at file %d and tell me what it does, in detail", i)
				if i%2 == 1 {
					role, text = "assistant", fmt.Sprintf("file %d reads its input, counts the words and prints a table of the most frequent ones", i)
				}
				m := append(jsonenc.AppendString([]byte(`{"role":"`+role+`","content":[{"type":"text","text":`), text), "}]}"...)
				if err := l.Append(store.Entry{Type: store.TypeMessage, Message: m}); err != nil {
					b.Fatal(err)
				}
			}
			if err := l.Close(); err != nil {
				b.Fatal(err)
			}
			for _, save := range []bool{false, true} {
				name := "ReadOnly"
				if save {
					name = "Writable"
				}
				b.Run(name, func(b *testing.B) {
					runtime.GC()
					for b.Loop() {
						s, err := h.Create(context.Background(), Spec{Resume: l.Path(), Save: save})
						if err != nil {
							b.Fatal(err)
						}
						if err := s.Close(context.Background()); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/entry")
					if save {
						return
					}
					var before, after runtime.MemStats
					runtime.GC()
					runtime.ReadMemStats(&before)
					s, err := h.Create(context.Background(), Spec{Resume: l.Path()})
					if err != nil {
						b.Fatal(err)
					}
					runtime.GC()
					runtime.ReadMemStats(&after)
					b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "MiB-heap")
					s.Close(context.Background())
				})
			}
		})
	}
}
