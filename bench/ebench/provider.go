package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/e-agent/e/internal/providermock"
)

// provider runs e rpc against a loopback mock of each provider API and
// reports, per answer size, e's CPU time per streamed delta, how long
// after the mock flushed the first delta the first text event was read,
// and the turn's events per second against the floor of events (a
// program writing as many pre-encoded text event lines, read the same
// way), in the same run.
//
// With several binaries (-e old,new) each binary runs one turn in turn
// (after its warm-up turn), -runs times, so that an A/B comparison shares
// the machine's load; a row per binary is printed.
func provider(fs *flag.FlagSet, args []string) error {
	e := fs.String("e", "./e", "the e binary, or several, comma-separated (A/B in the same runs)")
	sizes := fs.String("n", "500,5000,50000", "deltas per answer, comma-separated")
	apis := fs.String("api", strings.Join(providermock.APIs, ","), "provider APIs, comma-separated")
	runs := fs.Int("runs", 5, "turns per size after a warm-up turn; medians are printed")
	flush := fs.Bool("flush", false, "the mock flushes after every event, each its own HTTP chunk written alone, as a provider streaming tokens does (default: the deltas in one write)")
	pace := fs.Duration("pace", 0, "with -flush, a pause before each delta after the first, so each reaches e alone (e's whole wake-up per delta, whatever the load does to the mock's pace)")
	fs.Parse(args)
	self, err := os.Executable()
	if err != nil {
		return err
	}
	bins := binaries(*e)
	fmt.Printf("%-17s %7s %12s %10s %14s %16s %10s %8s", "api", "deltas", "CPU µs/delta", "CPU ms", "turn ms", "first delta µs", "floor ms", "ratio")
	if len(bins) > 1 {
		fmt.Print("  binary")
	}
	fmt.Println()
	rounds, turns := 1, *runs // one binary: all its turns in one process
	if len(bins) > 1 {
		rounds, turns = *runs, 1
	}
	for _, api := range strings.Split(*apis, ",") {
		for _, f := range strings.Split(*sizes, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				return fmt.Errorf("-n: %w", err)
			}
			all := make([][]turnFigures, len(bins))
			for range rounds {
				for i, bin := range bins {
					r, err := providerRun(bin, api, n, turns, *flush, *pace)
					if err != nil {
						return fmt.Errorf("%s, %s, %d deltas: %w", bin, api, n, err)
					}
					all[i] = append(all[i], r)
				}
			}
			var floors []float64
			for range *runs {
				rate, err := floorRun(self, all[0][0].sample, n, 0)
				if err != nil {
					return err
				}
				floors = append(floors, float64(n)/rate)
			}
			fl := median(floors) // seconds for n lines
			for i, rs := range all {
				var cpus, walls, firsts []float64
				for _, r := range rs {
					cpus, walls, firsts = append(cpus, r.cpu.Seconds()), append(walls, r.turn.Seconds()), append(firsts, r.first.Seconds())
				}
				c, t := median(cpus), median(walls)
				fmt.Printf("%-17s %7d %12.2f %10.2f %14.2f %16.0f %10.2f %7.1f%%", api, n, c*1e6/float64(n),
					c*1e3, t*1e3, median(firsts)*1e6, fl*1e3, 100*fl/t)
				if len(bins) > 1 {
					fmt.Print("  " + bins[i])
				}
				fmt.Println()
			}
		}
	}
	return nil
}

// turnFigures are the medians of a size's turns, and one text event line.
type turnFigures struct {
	cpu, turn, first time.Duration
	sample           string
}

// mockHome starts a mock of api on loopback and returns an E_HOME whose
// settings make mock/m, served by it, the default model, and the mock's
// base URL.
func mockHome(api string, n int) (home, base string, mock *providermock.Server, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", "", nil, nil, err
	}
	base = "http://" + ln.Addr().String()
	mock = providermock.NewServer(api, n)
	srv := &http.Server{Handler: mock}
	go srv.Serve(ln)
	home, err = os.MkdirTemp("", "ebench-home-")
	if err != nil {
		srv.Close()
		return "", "", nil, nil, err
	}
	settings, _ := json.Marshal(map[string]any{
		"providers": map[string]any{"mock": map[string]any{"api": api, "base_url": base,
			"models": []any{map[string]any{"id": "m"}}}},
		"default_model": "mock/m",
	})
	if err := os.WriteFile(filepath.Join(home, "settings.json"), settings, 0o600); err != nil {
		srv.Close()
		return "", "", nil, nil, err
	}
	return home, base, mock, func() { srv.Close(); os.RemoveAll(home) }, nil
}

func providerRun(e, api string, n, runs int, flush bool, pace time.Duration) (turnFigures, error) {
	home, _, mock, stop, err := mockHome(api, n)
	if err != nil {
		return turnFigures{}, err
	}
	mock.Flush, mock.Pace = flush, pace
	defer stop()
	a, err := spawn(home, []string{"E_HOME=" + home}, e, "rpc", "--ne")
	if err != nil {
		return turnFigures{}, err
	}
	defer a.stop()
	var cpus, turns, firsts []time.Duration
	var sample string
	for i := range runs + 1 {
		// A new session each turn, so every request is the same size.
		a.send(fmt.Sprintf(`{"id":"c%d","method":"session.create"}`, i))
		resp, _, err := a.until(fmt.Sprintf(`{"id":"c%d"`, i))
		if err != nil {
			return turnFigures{}, err
		}
		sid := between(resp, `"session":"`, `"`)
		cpu0, start := cpu(a.cmd.Process.Pid), time.Now()
		a.send(fmt.Sprintf(`{"id":"p%d","method":"session.prompt","params":{"session":%q,"prompt":"hi"}}`, i, sid))
		var first time.Time
		texts := 0
		done := []byte(fmt.Sprintf(`{"id":"p%d"`, i))
		for {
			b, err := a.line()
			if err != nil {
				return turnFigures{}, err
			}
			if bytes.HasPrefix(b, []byte(`{"type":"text"`)) {
				if texts == 0 {
					first = time.Now()
					if sample == "" {
						sample = string(b)
					}
				}
				texts++
			}
			if bytes.HasPrefix(b, done) {
				if bytes.Contains(b, []byte(`"error":{`)) || bytes.Contains(b, []byte(`"error":"`)) {
					return turnFigures{}, fmt.Errorf("turn failed: %.300s", b)
				}
				break
			}
		}
		turn, used := time.Since(start), cpu(a.cmd.Process.Pid)-cpu0
		if texts != n {
			return turnFigures{}, fmt.Errorf("%d text events, want %d", texts, n)
		}
		fl := mock.Firsts()
		if i == 0 {
			continue // warm-up: connection, first allocations
		}
		cpus, turns, firsts = append(cpus, used), append(turns, turn), append(firsts, first.Sub(fl[len(fl)-1]))
	}
	return turnFigures{cpu: median(cpus), turn: median(turns), first: median(firsts), sample: sample}, nil
}
