package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// events compares e rpc streaming an offline /long N turn into a fast
// reader with the floor: a program writing N pre-encoded event lines of
// the same shape through a buffered writer, read the same way. The reader
// looks at each line's start only: the response of a long answer (its
// text twice, 3 MB at 200,000 words) is read through, not copied, as no
// line of the floor's needs.
//
// With several binaries (-e old,new) each run times every binary in turn,
// each beside its own floor run, so that an A/B comparison shares the
// machine's load; a row per binary is printed.
func events(fs *flag.FlagSet, args []string) error {
	e := fs.String("e", "./e", "the e binary, or several, comma-separated (A/B in the same runs)")
	sizes := fs.String("n", "2000,20000,200000", "words of the /long turn, comma-separated")
	runs := fs.Int("runs", 5, "runs per size; medians are printed")
	floorPipe := fs.Int("floor-pipe", 0, "KiB of capacity the floor gives its stdout pipe, as e rpc does (256); 0: the kernel's default (64)")
	fs.Parse(args)
	self, err := os.Executable()
	if err != nil {
		return err
	}
	bins := binaries(*e)
	fmt.Printf("%-8s %14s %14s %8s %12s %12s %14s %12s %12s", "words", "e events/s", "floor lines/s", "ratio", "e ns/event", "floor ns/line", "e CPU ns/event", "first ms", "after ms")
	if len(bins) > 1 {
		fmt.Print("  binary")
	}
	fmt.Println()
	type figures struct{ es, fl, cs, firsts, afters []float64 }
	for _, f := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return fmt.Errorf("-n: %w", err)
		}
		all := make([]figures, len(bins))
		for range *runs {
			for i, bin := range bins {
				r, err := eRun(bin, n)
				if err != nil {
					return err
				}
				frate, err := floorRun(self, r.sample, n, *floorPipe)
				if err != nil {
					return err
				}
				g := &all[i]
				g.es, g.fl, g.cs = append(g.es, r.rate), append(g.fl, frate), append(g.cs, r.cpu)
				g.firsts, g.afters = append(g.firsts, r.first.Seconds()*1e3), append(g.afters, r.after.Seconds()*1e3)
			}
		}
		for i, g := range all {
			me, mf := median(g.es), median(g.fl)
			fmt.Printf("%-8d %14.0f %14.0f %7.1f%% %12.0f %12.0f %14.0f %12.2f %12.2f", n, me, mf, 100*me/mf, 1e9/me, 1e9/mf,
				median(g.cs), median(g.firsts), median(g.afters))
			if len(bins) > 1 {
				fmt.Print("  " + bins[i])
			}
			fmt.Println()
		}
	}
	return nil
}

// eFigures are one /long turn's: events per second from the prompt's line
// to its response, e's CPU time per event, the first text event's delay
// after the prompt, the response's after the event that follows the last
// text event, and one text event line.
type eFigures struct {
	rate, cpu    float64
	first, after time.Duration
	sample       string
}

// eRun times one /long n turn.
func eRun(e string, n int) (eFigures, error) {
	var r eFigures
	home, err := os.MkdirTemp("", "ebench-home-")
	if err != nil {
		return r, err
	}
	defer os.RemoveAll(home)
	a, err := spawn(home, []string{"E_HOME=" + home}, e, "rpc", "--ne")
	if err != nil {
		return r, err
	}
	defer a.stop()
	a.send(`{"id":"c","method":"session.create"}`)
	resp, _, err := a.until(`{"id":"c"`)
	if err != nil {
		return r, err
	}
	sid := between(resp, `"session":"`, `"`)
	cpu0 := cpu(a.cmd.Process.Pid)
	start := time.Now()
	a.send(fmt.Sprintf(`{"id":"p","method":"session.prompt","params":{"session":%q,"prompt":"/long %d"}}`, sid, n))
	var first, last time.Time
	lines, texting := 0, false
	for {
		b, err := a.head()
		if err != nil {
			return r, fmt.Errorf("e rpc: %w after %d lines", err, lines)
		}
		if len(b) > 8 && string(b[:8]) == `{"id":"p` {
			break
		}
		lines++
		// One clock reading at the first text event and one at the event
		// after the last (usage), so the reader stays as lean as the
		// floor's.
		if len(b) > 14 && string(b[:14]) == `{"type":"text"` {
			if r.sample == "" {
				first, r.sample = time.Now(), string(b)
			}
			texting = true
		} else if texting {
			last, texting = time.Now(), false
		}
	}
	end := time.Now()
	used := cpu(a.cmd.Process.Pid) - cpu0
	if lines < n {
		return r, fmt.Errorf("e rpc: %d events for /long %d", lines, n)
	}
	d := end.Sub(start)
	r.rate, r.cpu = float64(lines)/d.Seconds(), float64(used.Nanoseconds())/float64(lines)
	r.first, r.after = first.Sub(start), end.Sub(last)
	return r, nil
}

// floorRun times a child writing n copies of line, from the go byte to EOF,
// into a pipe of pipe KiB (0: the default).
func floorRun(self, line string, n, pipe int) (float64, error) {
	a, err := spawn("", nil, self, "floor", "-n", strconv.Itoa(n), "-line", line, "-pipe", strconv.Itoa(pipe))
	if err != nil {
		return 0, err
	}
	defer a.stop()
	if _, _, err := a.until("ready"); err != nil {
		return 0, err
	}
	start := time.Now()
	a.send("go")
	lines := 0
	for {
		if _, err := a.line(); err != nil {
			break
		}
		lines++
	}
	d := time.Since(start)
	if lines != n {
		return 0, fmt.Errorf("floor: %d lines, want %d", lines, n)
	}
	return float64(lines) / d.Seconds(), nil
}

// floor is the child of floorRun.
func floor(fs *flag.FlagSet, args []string) error {
	n := fs.Int("n", 0, "lines")
	line := fs.String("line", "", "the line")
	pipe := fs.Int("pipe", 0, "KiB of pipe capacity to ask for")
	fs.Parse(args)
	if *pipe > 0 {
		if err := setPipe(os.Stdout, *pipe); err != nil {
			return fmt.Errorf("floor: pipe of %d KiB: %w", *pipe, err)
		}
	}
	os.Stdout.WriteString("ready\n")
	bufio.NewReader(os.Stdin).ReadString('\n')
	w := bufio.NewWriterSize(os.Stdout, 64<<10)
	rec := []byte(*line + "\n")
	for range *n {
		w.Write(rec)
	}
	return w.Flush()
}

func between(s, from, to string) string {
	_, rest, _ := strings.Cut(s, from)
	v, _, _ := strings.Cut(rest, to)
	return v
}
