package pi

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

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
