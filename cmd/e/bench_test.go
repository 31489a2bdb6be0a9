package main

import (
	"bufio"
	"io"
	"slices"
	"testing"
	"time"
)

// BenchmarkHelloStartup measures e rpc from process start to the hello
// response (issue bar: under 10 ms). It reports the median of the runs.
func BenchmarkHelloStartup(b *testing.B) {
	var runs []time.Duration
	for b.Loop() {
		cmd := command(b, "rpc", "--ne")
		in, _ := cmd.StdinPipe()
		out, _ := cmd.StdoutPipe()
		start := time.Now()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		io.WriteString(in, `{"id":1,"method":"hello"}`+"\n")
		line, err := bufio.NewReader(out).ReadString('\n')
		runs = append(runs, time.Since(start))
		if err != nil || len(line) == 0 {
			b.Fatalf("no hello response: %v", err)
		}
		in.Close()
		cmd.Wait()
	}
	slices.Sort(runs)
	b.ReportMetric(float64(runs[len(runs)/2].Microseconds())/1000, "median-ms")
}
