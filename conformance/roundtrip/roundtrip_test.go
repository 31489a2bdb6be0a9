package roundtrip

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/e-agent/e/conformance"
	"github.com/e-agent/e/internal/leakcheck"
	"github.com/e-agent/e/internal/testbuild"
)

func TestMain(m *testing.M) { os.Exit(leakcheck.Main(m)) }

// Every golden case with a client side (e rpc, pi-rpc and acp alike) is
// run by the runner with "e-conformance record --here --like CASE -- e
// rpc" as its server (for a dialect case the runner derives "… -- e acp"
// or "… -- e --mode rpc" from it, as for any server): the case must pass
// through the recorder (it changes nothing), and the case it writes (the
// client lines it saw, the server's lines, the model calls as a tape,
// with the original's header and fixtures) must pass against e on its
// own, in other temp dirs.
func TestRecordReplayEveryCase(t *testing.T) {
	if testing.Short() {
		t.Skip("builds e and e-conformance and runs every case twice")
	}
	// Plain builds: the round trip tests the recorder, not e's races
	// (the conformance package runs every case against a -race e).
	e := testbuild.Command(t, "github.com/e-agent/e/cmd/e", false)
	ec := testbuild.Command(t, "github.com/e-agent/e/cmd/e-conformance", false)
	dir, err := filepath.Abs("../../golden") // the recorder runs in each case's cwd
	if err != nil {
		t.Fatal(err)
	}
	cases, err := conformance.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	validator := conformance.SchemaValidator{Strict: true}
	for _, c := range cases {
		t.Run(c.ID, func(t *testing.T) {
			t.Parallel()
			switch {
			case c.Skip != "":
				t.Skip(c.Skip)
			case c.Mode == "print":
				t.Skip("a print case has no client side to record")
			}
			out := filepath.Join(t.TempDir(), c.ID+".txtar")
			rec := []string{ec, "record", "--here", "--like", c.File, "--out", out}
			if c.Untrusted {
				rec = append(rec, "--no-trust")
			}
			rec = append(rec, "--", e, "rpc")
			first := conformance.Run(context.Background(), c, conformance.Options{Server: rec, Validator: validator, NoTrust: true})
			if first.Verdict == conformance.Skip {
				t.Skip(first.Divergence.Message)
			}
			if first.Verdict != conformance.Pass {
				t.Fatalf("the case fails with the recorder in front of the server:\n%s", report(first))
			}
			replay, err := conformance.LoadCase(out)
			if err != nil {
				data, _ := os.ReadFile(out)
				t.Fatalf("%v\n%s", err, data)
			}
			if r := conformance.Run(context.Background(), replay, conformance.Options{Server: []string{e, "rpc"}, Validator: validator}); r.Verdict != conformance.Pass {
				data, _ := os.ReadFile(out)
				t.Fatalf("the recording does not replay:\n%s\n%s", report(r), data)
			}
		})
	}
}

func report(r *conformance.Result) string {
	var b strings.Builder
	r.Report(&b)
	return b.String()
}
