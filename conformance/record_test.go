package conformance

import (
	"bufio"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A recorded session replays as a passing case: the session id becomes a
// placeholder bound by a wait, the model call becomes a tape entry.
func TestRecordRoundTrip(t *testing.T) {
	upstream := &tapeServer{entries: []tapeEntry{{Text: chunks{"Hi ", "there"}, Usage: &tapeUsage{PromptTokens: 5, CompletionTokens: 2}}},
		stop: make(chan struct{}), check: func(any, any) *mismatch { return nil },
		report: func(d *Divergence) { t.Errorf("upstream: %v", d) }}
	url, err := upstream.start()
	if err != nil {
		t.Fatal(err)
	}
	defer upstream.close()

	out := filepath.Join(t.TempDir(), "recorded.txtar")
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- Record(context.Background(), RecordOptions{
			Server: fakeOptions(fakeGood).Server, Out: out, Upstream: url, APIKey: tapeKey,
			Stdin: inR, Stdout: outW, Stderr: io.Discard,
		})
		outW.Close()
	}()
	lines := bufio.NewScanner(outR)
	io.WriteString(inW, `{"id":"c","method":"session.create","params":{}}`+"\n")
	if !lines.Scan() || !strings.Contains(lines.Text(), `"sess-1"`) {
		t.Fatalf("create answered %q", lines.Text())
	}
	io.WriteString(inW, `{"id":"p","method":"session.prompt","params":{"session":"sess-1","prompt":"hi"}}`+"\n")
	for lines.Scan() && !strings.HasPrefix(lines.Text(), `{"id":"p"`) {
	}
	inW.Close()
	go io.Copy(io.Discard, outR)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(out)
	for _, want := range []string{`"session":"{{s1}}"`, "#wait l1", `"text":"Hi there"`, `"delta":"Hi there"`, `"cwd":"{{cwd}}"`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("recorded case lacks %s:\n%s", want, data)
		}
	}
	c := loadTestCase(t, out)
	if r := Run(context.Background(), c, fakeOptions(fakeGood)); r.Verdict != Pass {
		var b strings.Builder
		r.Report(&b)
		t.Fatalf("the recorded case does not pass against the server it was recorded from:\n%s\n%s", b.String(), data)
	}
}

// Update rewrites expectations exactly, keeps labels and placeholder names,
// and the result passes.
func TestUpdate(t *testing.T) {
	src, err := os.ReadFile("testdata/fake-prompt.txtar")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "fake-prompt.txtar")
	os.WriteFile(p, src, 0o644)
	c := loadTestCase(t, p)
	r := Run(context.Background(), c, fakeOptions(fakeGood))
	if err := Update(c, r); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(p)
	for _, want := range []string{`@created {"id":"c","result":{"cwd":"{{cwd}}"`, `"session":"{{s}}"`, `"delta":"Hello, world! This is a longer reply."`, "-- tape.json --"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("updated case lacks %s:\n%s", want, data)
		}
	}
	c = loadTestCase(t, p)
	if r := Run(context.Background(), c, fakeOptions(fakeGood)); r.Verdict != Pass {
		var b strings.Builder
		r.Report(&b)
		t.Fatalf("updated case fails:\n%s", b.String())
	}
}
