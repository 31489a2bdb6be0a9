package pi

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/e-agent/e/internal/model"
	"github.com/e-agent/e/internal/session"
)

// TestEntries checks pi's shapes of e entries that have no message: a
// user's shell command is a bashExecution message (kept when excluded),
// and timestamps have JavaScript's millisecond ISO form.
func TestEntries(t *testing.T) {
	at := time.Date(2026, 12, 1, 12, 0, 0, 123456789, time.UTC)
	exit := 0
	conv := newConverter(func(string) (model.Info, bool) { return model.Info{}, false }, session.Header{})
	got := conv.entries([]session.Entry{{Type: session.EntryShell, ID: "s1", Time: at,
		Shell: &session.ShellRun{Command: "echo x", Output: "x\n", ExitCode: &exit, Exclude: true}}})
	want := []Entry{{Type: "message", ID: "s1", Timestamp: "2026-12-01T12:00:00.123Z",
		Message: BashExecutionMessage{Role: "bashExecution", Command: "echo x", Output: "x\n", ExitCode: &exit,
			ExcludeFromContext: true, Timestamp: at.UnixMilli()}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("entries (-want +got):\n%s", diff)
	}
}
