package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"math"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/e-agent/e/internal/providermock"
)

// first measures, per provider API, how long after the mock writes an
// answer's first delta the first text event line is read from the
// client's stdout. The clients are e rpc (each binary of -e) and the
// floor: a minimal Go program (ebench sse-floor) that reads the same
// stream with net/http and writes one line at the first delta. The mock
// runs in this process, so both instants are read from one monotonic
// clock, and it holds the rest of each answer until the line has been
// read (providermock.HoldNext), so the first delta travels alone, as a
// real provider's does. The clients take turns, so they share the load.
func first(fs *flag.FlagSet, args []string) error {
	e := fs.String("e", "./e", "the e binary, or several, comma-separated (A/B in the same runs)")
	apis := fs.String("api", strings.Join(providermock.APIs, ","), "provider APIs, comma-separated")
	runs := fs.Int("runs", 30, "measured turns per client and API, after two warm-up turns")
	sizes := fs.String("n", "50,5000", "deltas per answer, comma-separated")
	stream := fs.Bool("stream", false, "send each answer whole, as fast as the client reads (no hold after the first delta)")
	fs.Parse(args)
	self, err := os.Executable()
	if err != nil {
		return err
	}
	fmt.Printf("%-17s %7s %-24s %10s %10s %10s %9s %10s\n", "api", "deltas", "client", "median µs", "p90 µs", "min µs", "vs floor", "excess µs")
	for _, api := range strings.Split(*apis, ",") {
		for _, f := range strings.Split(*sizes, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				return fmt.Errorf("-n: %w", err)
			}
			if err := firstAPI(self, binaries(*e), api, n, *runs, *stream); err != nil {
				return fmt.Errorf("%s, %d deltas: %w", api, n, err)
			}
		}
	}
	return nil
}

// firstClient is one client process and how to run one turn of it: turn
// returns when the first text line was read, after calling release.
type firstClient struct {
	name string
	a    *agent
	turn func(release func()) (time.Time, error)
}

func firstAPI(self string, bins []string, api string, n, runs int, stream bool) error {
	home, base, mock, stop, err := mockHome(api, n)
	if err != nil {
		return err
	}
	defer stop()
	fl, err := spawn(home, nil, self, "sse-floor", "-url", base+providermock.Path(api))
	if err != nil {
		return err
	}
	defer fl.stop()
	clients := []firstClient{{name: "floor", a: fl, turn: func(release func()) (time.Time, error) {
		fl.send("go")
		if _, _, err := fl.until(`{"type":"text"`); err != nil {
			return time.Time{}, err
		}
		t := time.Now()
		release()
		_, _, err := fl.until("done")
		return t, err
	}}}
	for _, bin := range bins {
		a, err := spawn(home, []string{"E_HOME=" + home}, bin, "rpc", "--ne")
		if err != nil {
			return err
		}
		defer a.stop()
		i := 0
		clients = append(clients, firstClient{name: "e " + bin, a: a, turn: func(release func()) (time.Time, error) {
			// A new session each turn, so every request is the same size.
			i++
			a.send(fmt.Sprintf(`{"id":"c%d","method":"session.create"}`, i))
			resp, _, err := a.until(fmt.Sprintf(`{"id":"c%d"`, i))
			if err != nil {
				release()
				return time.Time{}, err
			}
			a.send(fmt.Sprintf(`{"id":"p%d","method":"session.prompt","params":{"session":%q,"prompt":"hi"}}`, i, between(resp, `"session":"`, `"`)))
			if _, _, err := a.until(`{"type":"text"`); err != nil {
				release()
				return time.Time{}, err
			}
			t := time.Now()
			release()
			resp, _, err = a.until(fmt.Sprintf(`{"id":"p%d"`, i))
			if err == nil && (strings.Contains(resp, `"error":{`) || strings.Contains(resp, `"error":"`)) {
				err = fmt.Errorf("turn failed: %.300s", resp)
			}
			return t, err
		}})
	}
	lat := make([][]float64, len(clients))
	for r := range runs + 2 {
		for i, c := range clients {
			release := func() {}
			if !stream {
				release = mock.HoldNext()
			}
			t, err := c.turn(release)
			if err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
			// The mock records the instant before its write, and has
			// recorded it by the time the answer ends.
			fs := mock.Firsts()
			if r >= 2 {
				lat[i] = append(lat[i], t.Sub(fs[len(fs)-1]).Seconds()*1e6)
			}
		}
	}
	floor := median(lat[0])
	for i, c := range clients {
		m := median(lat[i])
		fmt.Printf("%-17s %7d %-24s %10.0f %10.0f %10.0f", api, n, c.name, m, percentile(lat[i], 0.9), percentile(lat[i], 0))
		if i > 0 {
			fmt.Printf(" %8.2fx %10.0f", m/floor, m-floor)
		}
		fmt.Println()
	}
	return nil
}

// percentile returns the value at fraction p of xs sorted (nearest rank).
func percentile(xs []float64, p float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(s)))) - 1
	return s[max(i, 0)]
}

// sseFloor is the floor of first: for each line on stdin it posts to the
// mock, reads the event stream line by line, writes a text event line as
// soon as a data line holds the first delta, and "done" at the stream's
// end.
func sseFloor(fs *flag.FlagSet, args []string) error {
	url := fs.String("url", "", "the mock's URL")
	fs.Parse(args)
	delta := []byte(strconv.Quote(providermock.Delta(0)))
	text := []byte(`{"type":"text","delta":` + string(delta) + "}\n")
	in := bufio.NewReader(os.Stdin)
	for {
		if _, err := in.ReadString('\n'); err != nil {
			return nil
		}
		resp, err := http.Post(*url, "application/json", strings.NewReader(`{"stream":true}`))
		if err != nil {
			return err
		}
		br := bufio.NewReaderSize(resp.Body, 32<<10)
		sent := false
		for {
			line, err := br.ReadSlice('\n')
			if !sent && bytes.HasPrefix(line, []byte("data:")) && bytes.Contains(line, delta) {
				os.Stdout.Write(text)
				sent = true
			}
			if err != nil && err != bufio.ErrBufferFull {
				break
			}
		}
		resp.Body.Close()
		os.Stdout.WriteString("done\n")
	}
}
