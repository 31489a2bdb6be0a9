package tool

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestShell(t *testing.T) {
	s := newSession(t)
	exit := func(n int) *int { return &n }
	tests := []struct {
		name, command string
		timeout       time.Duration
		want          ShellResult
	}{
		{name: "exit 0", command: "echo hi", want: ShellResult{Output: "hi\n", ExitCode: exit(0)}},
		{name: "exit 3", command: "printf bad; exit 3", want: ShellResult{Output: "bad", ExitCode: exit(3)}},
		{name: "killed by a signal", command: "kill -KILL $$", want: ShellResult{}},
		{name: "timed out", command: "echo a; sleep 5", timeout: 50 * time.Millisecond, want: ShellResult{Output: "a\n", TimedOut: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			timeout := cmpOr(tt.timeout, 10*time.Second)
			got, err := Shell(context.Background(), s.env, tt.command, timeout)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func cmpOr(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

func TestShellTruncatedAndStopped(t *testing.T) {
	s := newSession(t)
	got, err := Shell(context.Background(), s.env, "head -c 70000 /dev/zero | tr '\\0' x; echo; echo end", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Truncated || len(got.Output) != maxBashOutput || !strings.HasSuffix(got.Output, "\nend\n") {
		t.Errorf("truncated %v, %d bytes ending %q; want the last %d bytes", got.Truncated, len(got.Output), got.Output[len(got.Output)-8:], maxBashOutput)
	}
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{}, 1)
	env := *s.env
	env.Output = func(string) {
		select {
		case started <- struct{}{}:
		default:
		}
	}
	go func() { <-started; cancel() }()
	got, err = Shell(ctx, &env, "echo go; sleep 30", 60*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(ShellResult{Output: "go\n", Stopped: true}, got); diff != "" {
		t.Errorf("stopped (-want +got):\n%s", diff)
	}
}
