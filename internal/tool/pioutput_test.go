package tool

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// numbered returns lines "1\n" … "n\n".
func numbered(from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		b.WriteString(strconv.Itoa(i) + "\n")
	}
	return b.String()
}

// TestTruncateTail checks pi's tail truncation (Q4: the bash command's
// output as pi's): 2000 lines or 50 KB, whole lines, the end of a last line
// longer than the limit, no final newline once cut.
func TestTruncateTail(t *testing.T) {
	long := strings.Repeat("x", piMaxBytes+10)
	wide := strings.Repeat("y", 100) + "\n"
	for _, c := range []struct {
		name string
		in   string
		want truncation
	}{
		{"empty", "", truncation{}},
		{"small", "a\nb\n", truncation{Content: "a\nb\n", TotalLines: 2, OutputLines: 2}},
		{"2000 lines", numbered(1, 2000), truncation{Content: numbered(1, 2000), TotalLines: 2000, OutputLines: 2000}},
		{"2001 lines", numbered(1, 2001), truncation{Content: strings.TrimSuffix(numbered(2, 2001), "\n"), Truncated: true,
			TruncatedBy: "lines", TotalLines: 2001, OutputLines: 2000}},
		{"bytes", strings.Repeat(wide, 600), truncation{Content: strings.TrimSuffix(strings.Repeat(wide, 506), "\n"),
			Truncated: true, TruncatedBy: "bytes", TotalLines: 600, OutputLines: 506}},
		{"one long line", "head\n" + long, truncation{Content: long[10:], Truncated: true, TruncatedBy: "bytes",
			TotalLines: 2, OutputLines: 1, LastLinePartial: true}},
		{"a cut character", "é" + strings.Repeat("a", piMaxBytes-1), truncation{Content: strings.Repeat("a", piMaxBytes-1),
			Truncated: true, TruncatedBy: "bytes", TotalLines: 1, OutputLines: 1, LastLinePartial: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if diff := cmp.Diff(c.want, truncateTail(c.in)); diff != "" {
				t.Errorf("truncateTail (-want +got):\n%s", diff)
			}
		})
	}
}

// TestOutputLog checks that a command's output past pi's limits goes whole
// to a new temp file, readable by the user only, that the result names,
// while the result keeps pi's part of it; and that one within them makes
// no file.
func TestOutputLog(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir)
	for _, c := range []struct {
		name   string
		chunks []string
		want   string // the kept content
		file   bool
	}{
		{"within the limits", []string{"a\n", "b"}, "a\nb", false},
		{"2001 lines", []string{numbered(1, 1000), numbered(1001, 2001)}, strings.TrimSuffix(numbered(2, 2001), "\n"), true},
		{"a long line before", []string{strings.Repeat("z", 300<<10), "\nlast\n"}, "last", true},
		{"a long last line", []string{"a\n", strings.Repeat("z", 150<<10), strings.Repeat("w", 150<<10)}, strings.Repeat("w", piMaxBytes), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			log := outputLog{prefix: "pi-bash"}
			for _, s := range c.chunks {
				log.write(s)
			}
			got, path, err := log.finish()
			if err != nil {
				t.Fatal(err)
			}
			if got.Content != c.want {
				t.Errorf("content: %d bytes %.40q…, want %d bytes %.40q…", len(got.Content), got.Content, len(c.want), c.want)
			}
			if !c.file {
				if path != "" || got.Truncated {
					t.Errorf("path %q, truncated %v: want no file", path, got.Truncated)
				}
				return
			}
			if !regexp.MustCompile(`^pi-bash-[0-9a-f]{16}\.log$`).MatchString(filepath.Base(path)) || filepath.Dir(path) != dir {
				t.Errorf("path %q: want %s/pi-bash-HEX.log", path, dir)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != strings.Join(c.chunks, "") {
				t.Errorf("the file holds %d bytes, want the whole output's %d", len(b), len(strings.Join(c.chunks, "")))
			}
			if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
				t.Errorf("file mode %v, want 0600", fi.Mode().Perm())
			}
			if whole := truncateTail(strings.Join(c.chunks, "")); !got.Truncated || got != whole {
				t.Errorf("the tail's truncation %+v, want the whole output's %+v", got, whole)
			}
		})
	}
}

// TestBashSpillOutput checks bash with Env.SpillOutput (e --mode rpc, Q2, Q4):
// the model's tool and a user's command keep pi's part of a long output,
// the tool's content ends with pi's note naming the file with all of it
// (before e's status line), a user's command's result names the file;
// output within the limits is as without it.
func TestBashSpillOutput(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir)
	s := newSession(t)
	s.env.SpillOutput = true
	kept := strings.TrimSuffix(numbered(2, 2001), "\n")
	fileRE := `/pi-bash-[0-9a-f]{16}\.log`
	t.Run("tool", func(t *testing.T) {
		r := Run(t.Context(), s.env, "bash", json.RawMessage(`{"command":"seq 1 2001; exit 3"}`))
		m := regexp.MustCompile(`^` + regexp.QuoteMeta(kept+"\n\n[Showing lines 2-2001 of 2001. Full output: "+dir) + `(` + fileRE + `)\]\n\[exit 3\]$`).
			FindStringSubmatch(r.Content)
		if m == nil {
			t.Fatalf("content ends %q", r.Content[len(r.Content)-120:])
		}
		if b, _ := os.ReadFile(dir + m[1]); string(b) != numbered(1, 2001) {
			t.Errorf("the file holds %d bytes, want all %d", len(b), len(numbered(1, 2001)))
		}
		if r := Run(t.Context(), s.env, "bash", json.RawMessage(`{"command":"echo hi"}`)); r.Content != "hi\n[exit 0]" {
			t.Errorf("a short output: %q", r.Content)
		}
	})
	t.Run("shell", func(t *testing.T) {
		r, err := Shell(t.Context(), s.env, "seq 1 2001", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if r.Output != kept || !r.Truncated || !regexp.MustCompile(`^`+regexp.QuoteMeta(dir)+fileRE+`$`).MatchString(r.FullOutputPath) {
			t.Errorf("output %d bytes, truncated %v, full output %q", len(r.Output), r.Truncated, r.FullOutputPath)
		}
		if r, _ := Shell(t.Context(), s.env, "echo hi", time.Minute); r.Output != "hi\n" || r.Truncated || r.FullOutputPath != "" {
			t.Errorf("a short output: %+v", r)
		}
	})
}

// TestPiNote checks the wording of pi's note after a cut output, by what
// cut it.
func TestPiNote(t *testing.T) {
	for _, c := range []struct {
		t    truncation
		last int64
		want string
	}{
		{truncation{Truncated: true, TruncatedBy: "lines", TotalLines: 2001, OutputLines: 2000}, 0,
			"[Showing lines 2-2001 of 2001. Full output: /f]"},
		{truncation{Truncated: true, TruncatedBy: "bytes", TotalLines: 600, OutputLines: 506}, 0,
			"[Showing lines 95-600 of 600 (50.0KB limit). Full output: /f]"},
		{truncation{Content: strings.Repeat("x", piMaxBytes), Truncated: true, TruncatedBy: "bytes", TotalLines: 2, OutputLines: 1,
			LastLinePartial: true}, 3 << 20, "[Showing last 50.0KB of line 2 (line is 3.0MB). Full output: /f]"},
	} {
		o := outputLog{last: c.last}
		if got := o.note(c.t, "/f"); got != c.want {
			t.Errorf("note(%+v) = %q, want %q", c.t, got, c.want)
		}
	}
	for n, want := range map[int64]string{512: "512B", 1536: "1.5KB", 50 << 10: "50.0KB", 5 << 20: "5.0MB"} {
		if got := formatSize(n); got != want {
			t.Errorf("formatSize(%d) = %q, want %q", n, got, want)
		}
	}
}

// A user's command output under SpillOutput is sanitised as pi's bash
// executor does, also across chunk boundaries.
func TestSanitizer(t *testing.T) {
	tests := []struct {
		name   string
		chunks []string
		want   string
	}{
		{name: "colours and CR", chunks: []string{"\x1b[31mred\x1b[0m\r\n"}, want: "red\n"},
		{name: "split sequence", chunks: []string{"a\x1b[3", "1mb\x1b", "[0m"}, want: "ab"},
		{name: "OSC title", chunks: []string{"\x1b]0;title\x07x"}, want: "x"},
		{name: "controls", chunks: []string{"t\tab\x00\x08\n"}, want: "t\tab\n"},
		{name: "unfinished at the end", chunks: []string{"z\x1b["}, want: "z["}, // as pi: the ESC goes, the rest stays
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got strings.Builder
			s := &sanitizer{out: func(c string) { got.WriteString(c) }}
			for _, c := range tt.chunks {
				s.write(c)
			}
			s.flush()
			if diff := cmp.Diff(tt.want, got.String()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestBashPiDetails checks what the bash tool gives the pi dialect beside
// its content, as pi 1.6.0's bash tool (Q3): updates of the output so far
// (its tail once cut, with the details from then on), the details
// {truncation, fullOutputPath} of a cut output, and the whole output as
// data, its first and last 512 KiB around pi's note past 1 MiB.
func TestBashPiDetails(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir)
	s := newSession(t)
	s.env.SpillOutput = true
	var last OutputSnapshot
	updates, detailed := 0, 0
	s.env.SpillUpdate = func(u OutputSnapshot) {
		last = u
		updates++
		if u.Details != nil {
			detailed++
		}
	}
	type truncationJSON struct {
		Truncation     piTruncation `json:"truncation"`
		FullOutputPath string       `json:"fullOutputPath"`
	}
	t.Run("cut by lines", func(t *testing.T) {
		r := Run(t.Context(), s.env, "bash", json.RawMessage(`{"command":"seq 1 2001"}`))
		var got truncationJSON
		if err := json.Unmarshal(r.Details, &got); err != nil {
			t.Fatalf("details %s: %v", r.Details, err)
		}
		kept := strings.TrimSuffix(numbered(2, 2001), "\n")
		want := truncationJSON{piTruncation{Content: kept, Truncated: true, TruncatedBy: "lines", TotalLines: 2001,
			TotalBytes: int64(len(numbered(1, 2001))), OutputLines: 2000, OutputBytes: len(kept), MaxLines: 2000, MaxBytes: 51200},
			got.FullOutputPath}
		if diff := cmp.Diff(want, got); diff != "" || !strings.HasPrefix(got.FullOutputPath, dir) {
			t.Errorf("details (-want +got):\n%s\n(file %q)", diff, got.FullOutputPath)
		}
		// The data is all of it, not cut: no file named there.
		if r.Shell.Output != numbered(1, 2001) || r.Shell.Truncated || r.Shell.FullOutputPath != "" {
			t.Errorf("structured output %d bytes, truncated %v; want all %d", len(r.Shell.Output), r.Shell.Truncated, len(numbered(1, 2001)))
		}
		if updates == 0 || last.Content != kept || !json.Valid(last.Details) || detailed == 0 {
			t.Errorf("%d updates, %d with details; the last: %d bytes, details %s", updates, detailed, len(last.Content), last.Details)
		}
	})
	t.Run("within the limits", func(t *testing.T) {
		updates, detailed = 0, 0
		r := Run(t.Context(), s.env, "bash", json.RawMessage(`{"command":"echo hi"}`))
		if r.Details != nil || r.Shell.Output != "hi\n" || r.Shell.FullOutputPath != "" || detailed != 0 || last.Content != "hi\n" {
			t.Errorf("details %s, shell %+v, %d updates with details, last %q", r.Details, r.Shell, detailed, last.Content)
		}
	})
	t.Run("past 1 MiB", func(t *testing.T) {
		// 1100002 bytes: y, "é" (2 bytes) repeated, x, so that both cuts
		// fall inside a character, which each leaves out.
		r := Run(t.Context(), s.env, "bash", json.RawMessage(`{"command":"awk 'BEGIN { printf \"y\"; for (i = 0; i < 550000; i++) printf \"é\"; printf \"x\" }'"}`))
		out := r.Shell.Output
		m := regexp.MustCompile(`^(yé+)\n\n\[\.\.\. (\d+) bytes omitted \.\.\.\]\n\n(é+x)$`).FindStringSubmatch(out)
		if m == nil || !r.Shell.Truncated || r.Shell.FullOutputPath == "" {
			t.Fatalf("structured output %.60q…%.60q (%d bytes), truncated %v, file %q", out, out[max(0, len(out)-60):], len(out), r.Shell.Truncated, r.Shell.FullOutputPath)
		}
		if head, tail := len(m[1]), len(m[3]); head != 1<<19-1 || tail != 1<<19-1 || m[2] != strconv.Itoa(1100002-1<<20) {
			t.Errorf("head %d bytes, tail %d, omitted %s: want %d, %d, %d", head, tail, m[2], 1<<19-1, 1<<19-1, 1100002-1<<20)
		}
	})
}
