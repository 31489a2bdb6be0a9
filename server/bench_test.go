package server

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/e-agent/e/internal/session"
	"github.com/tidwall/gjson"
)

// BenchmarkEventsThroughWriter streams offline answers of 200, 2,000 and
// 20,000 words through the real writer and a pipe to the test client (which
// checks every line against the schemas), a new session each time, and
// reports the cost per event as the client sees it. bench/events measures
// the same through the e binary against a floor.
func BenchmarkEventsThroughWriter(b *testing.B) {
	for _, words := range []int{200, 2000, 20000} {
		b.Run(strconv.Itoa(words), func(b *testing.B) {
			c := startServer(b, serverSetup{})
			events := 0
			for i := 0; b.Loop(); i++ {
				sid := c.create(nil)
				id := fmt.Sprintf(`"p%d"`, i)
				c.send(fmt.Sprintf(`{"id":%s,"method":"session.prompt","params":{"session":%q,"prompt":"/long %d"}}`+"\n", id, sid, words))
				for {
					line := <-c.lines
					events++
					if gjson.Get(line, "id").Raw == id && !gjson.Get(line, "type").Exists() {
						break
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(events), "ns/event")
		})
	}
}

// BenchmarkInterruptBash measures session.interrupt → turn_end with a
// running bash sleep (the whole process group is killed).
func BenchmarkInterruptBash(b *testing.B) {
	c := startServer(b, serverSetup{})
	sid := c.create(nil)
	var total time.Duration
	for i := 0; b.Loop(); i++ {
		id := fmt.Sprintf(`"p%d"`, i)
		c.send(fmt.Sprintf(`{"id":%s,"method":"session.prompt","params":{"session":%q,"prompt":"/tool bash {\"command\":\"echo go; sleep 100\"}"}}`+"\n", id, sid))
		for gjson.Get(<-c.lines, "type").String() != "tool_output" {
		}
		start := time.Now()
		c.send(fmt.Sprintf(`{"id":"i%d","method":"session.interrupt","params":{"session":%q}}`+"\n", i, sid))
		for {
			line := <-c.lines
			if gjson.Get(line, "type").String() == "turn_end" {
				total += time.Since(start)
			}
			if gjson.Get(line, "id").Raw == fmt.Sprintf(`"i%d"`, i) {
				break
			}
		}
	}
	b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms/interrupt")
}

// BenchmarkIdleSessionMemory reports the heap an idle memory-only session
// costs (PITFALLS: aim for kilobytes per idle session).
func BenchmarkIdleSessionMemory(b *testing.B) {
	c := startServer(b, serverSetup{})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	n := 0
	for b.Loop() {
		c.send(fmt.Sprintf(`{"id":"c%d","method":"session.create"}`+"\n", n))
		for gjson.Get(<-c.lines, "id").String() != fmt.Sprintf("c%d", n) {
		}
		n++
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(n)/1024, "KiB/session")
}

// H1: the session.entries answer of a 41 MB log (37,600 entries of 1.1 KB):
// encoded whole by json.Marshal and copied into the line (as before), or
// in pieces (SessionEntriesResult.parts), which the writer copies once.
func BenchmarkEntriesAnswer(b *testing.B) {
	msg := json.RawMessage(`{"role":"tool","content":[{"type":"tool_result","call_id":"c1","text":"` + strings.Repeat("main.go:12: hello ", 60) + `"}]}`)
	r := SessionEntriesResult{Entries: make([]session.Entry, 37600)}
	for i := range r.Entries {
		r.Entries[i] = session.Entry{Type: "message", ID: fmt.Sprintf("%08x", i), Parent: fmt.Sprintf("%08x", i-1), Time: time.Unix(1e9, 0).UTC(), Message: msg}
	}
	id := []byte(`"1"`)
	b.Run("marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			res, _ := json.Marshal(r)
			_ = concat(`{"id":`, id, `,"result":`, res, `}`)
		}
	})
	b.Run("parts", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = r.parts(id)
		}
	})
}
