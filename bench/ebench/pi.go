package main

import (
	"bytes"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/e-agent/e/internal/providermock"
)

// piSideBySide runs e --mode rpc and real pi 1.6.0 on one loopback mock
// model (pi's models.json, provider "mock", openai-completions) and prints,
// for each: start-up (spawn to the get_state response), first delta
// (prompt sent to the first text_delta read), turn time (prompt to
// agent_settled), stdout bytes per delta, CPU per turn (the process tree)
// and RSS after the turns. Several e binaries (-e old,new) are compared in
// the same run: with -rounds, each agent runs its turns in turn, round
// after round, and the rows give the medians over the rounds.
func piSideBySide(fs *flag.FlagSet, args []string) error {
	e := fs.String("e", "./e", "the e binary, or several, comma-separated (A/B in the same run)")
	node := fs.String("node", "node", "Node 22 for pi")
	cli := fs.String("pi", "", "pi's CLI (…/pi-coding-agent/dist/bundle/cli.js)")
	n := fs.Int("n", 200, "text deltas per answer")
	turns := fs.Int("turns", 10, "turns per process after a warm-up turn")
	starts := fs.Int("starts", 5, "start-ups measured per agent")
	rounds := fs.Int("rounds", 1, "times each agent runs its turns, agents in turn")
	flush := fs.Bool("flush", false, "the mock flushes after every event, each its own HTTP chunk (default: the deltas in one write)")
	pace := fs.Duration("pace", 0, "with -flush, a pause before each delta after the first")
	fs.Parse(args)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	mock := providermock.NewServer("openai-chat", *n)
	mock.Flush, mock.Pace = *flush, *pace
	srv := &http.Server{Handler: mock}
	go srv.Serve(ln)
	defer srv.Close()
	dir, err := os.MkdirTemp("", "pi-side-by-side-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	models := fmt.Sprintf(`{"providers":{"mock":{"baseUrl":"http://%s/v1","api":"openai-completions","apiKey":"test",`+
		`"models":[{"id":"mock-1","contextWindow":128000}]}}}`, ln.Addr())
	os.WriteFile(filepath.Join(dir, "models.json"), []byte(models), 0o600)
	env := []string{"PI_CODING_AGENT_DIR=" + dir, "E_HOME=" + filepath.Join(dir, "e-home"), "PI_OFFLINE=1",
		"PI_SKIP_VERSION_CHECK=1", "PI_TELEMETRY=0"}
	flags := []string{"--mode", "rpc", "--no-session", "--provider", "mock", "--model", "mock-1"}
	var agents []struct {
		name string
		argv []string
	}
	bins := binaries(*e)
	for _, bin := range bins {
		name := "e"
		if len(bins) > 1 {
			name = "e " + bin
		}
		agents = append(agents, struct {
			name string
			argv []string
		}{name, append([]string{bin}, flags...)})
	}
	if *cli != "" {
		agents = append(agents, struct {
			name string
			argv []string
		}{"pi 1.6.0", append([]string{*node, *cli}, flags...)})
	}
	fmt.Printf("%d deltas per answer, %d turns, %d start-ups; medians\n", *n, *turns, *starts)
	fmt.Printf("%-9s %11s %15s %10s %13s %13s %9s\n", "agent", "start ms", "first delta ms", "turn ms", "bytes/delta", "CPU ms/turn", "RSS MiB")
	all := make([][]piFigures, len(agents))
	for range *rounds {
		for i, ag := range agents {
			r, err := piRun(dir, env, ag.argv, *turns, *starts)
			if err != nil {
				return fmt.Errorf("%s: %w", ag.name, err)
			}
			all[i] = append(all[i], r)
		}
	}
	var base []float64
	for i, ag := range agents {
		var col [6][]float64
		for _, r := range all[i] {
			for j, v := range []float64{ms(r.start), ms(r.first), ms(r.turn), r.bytesPerDelta, ms(r.cpu), float64(r.rss) / (1 << 20)} {
				col[j] = append(col[j], v)
			}
		}
		row := make([]float64, len(col))
		for j := range col {
			row[j] = median(col[j])
		}
		fmt.Printf("%-9s %11.1f %15.2f %10.2f %13.0f %13.2f %9.1f\n", ag.name, row[0], row[1], row[2], row[3], row[4], row[5])
		if base == nil {
			base = row
		} else if !strings.HasPrefix(ag.name, "e ") {
			fmt.Printf("%-9s %10.1fx %14.1fx %9.1fx %12.1fx %12.1fx %8.1fx\n", "pi / e", row[0]/base[0], row[1]/base[1],
				row[2]/base[2], row[3]/base[3], row[4]/base[4], row[5]/base[5])
		}
	}
	return nil
}

func ms(d time.Duration) float64 { return d.Seconds() * 1e3 }

type piFigures struct {
	start, first, turn, cpu time.Duration
	bytesPerDelta           float64
	rss                     int64
}

func piRun(dir string, env, argv []string, turns, starts int) (piFigures, error) {
	var f piFigures
	var startT []time.Duration
	for range starts {
		a, err := spawn(dir, env, argv...)
		if err != nil {
			return f, err
		}
		a.send(`{"id":"s","type":"get_state"}`)
		if _, _, err := a.until(`{"id":"s"`); err != nil {
			a.stop()
			return f, err
		}
		startT = append(startT, time.Since(a.start))
		a.stop()
	}
	f.start = median(startT)
	a, err := spawn(dir, env, argv...)
	if err != nil {
		return f, err
	}
	defer a.stop()
	var firsts, totals, cpus []time.Duration
	var bytesPer []float64
	for i := range turns + 1 {
		c0 := treeCPU(a.cmd.Process.Pid)
		t0 := time.Now()
		a.send(fmt.Sprintf(`{"id":"p%d","type":"prompt","message":"go"}`, i))
		var first time.Duration
		var nbytes, deltas int
		for {
			b, err := a.line()
			if err != nil {
				return f, fmt.Errorf("turn %d: %w", i, err)
			}
			nbytes += len(b) + 1
			if bytes.Contains(b, []byte(`"type":"text_delta"`)) {
				if deltas == 0 {
					first = time.Since(t0)
				}
				deltas++
			}
			if bytes.Contains(b, []byte(`"type":"agent_settled"`)) {
				break
			}
			if bytes.Contains(b, []byte(`"success":false`)) {
				return f, fmt.Errorf("turn %d: %s", i, b)
			}
		}
		total := time.Since(t0)
		c1 := treeCPU(a.cmd.Process.Pid)
		if i == 0 {
			continue // warm-up
		}
		firsts, totals, cpus = append(firsts, first), append(totals, total), append(cpus, c1-c0)
		if deltas > 0 {
			bytesPer = append(bytesPer, float64(nbytes)/float64(deltas))
		}
	}
	f.first, f.turn, f.cpu, f.bytesPerDelta = median(firsts), median(totals), median(cpus), median(bytesPer)
	f.rss = treeRSS(a.cmd.Process.Pid)
	if !strings.Contains(argv[0], "node") && f.bytesPerDelta == 0 {
		return f, fmt.Errorf("no text deltas")
	}
	return f, nil
}
