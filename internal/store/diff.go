package store

import "strings"

// diffLine is one line of an edit's unified diff: Op is ' ' (kept), '-'
// (removed) or '+' (added).
type diffLine struct {
	Op   string
	Text string
}

// Class is the line's CSS class.
func (d diffLine) Class() string {
	switch d.Op {
	case "-":
		return "del"
	case "+":
		return "add"
	}
	return "ctx"
}

// maxDiffCells bounds the LCS table (old lines × new lines); a larger edit
// shows as all of old removed, then all of new added.
const maxDiffCells = 1 << 20

// lineDiff is old → new as a unified diff of lines: the common first and
// last lines kept, the middle by longest common subsequence.
func lineDiff(old, new string) []diffLine {
	a, b := splitLines(old), splitLines(new)
	var head, tail []diffLine
	for len(a) > 0 && len(b) > 0 && a[0] == b[0] {
		head = append(head, diffLine{" ", a[0]})
		a, b = a[1:], b[1:]
	}
	for len(a) > 0 && len(b) > 0 && a[len(a)-1] == b[len(b)-1] {
		tail = append([]diffLine{{" ", a[len(a)-1]}}, tail...)
		a, b = a[:len(a)-1], b[:len(b)-1]
	}
	out := head
	if len(a)*len(b) > maxDiffCells {
		for _, l := range a {
			out = append(out, diffLine{"-", l})
		}
		for _, l := range b {
			out = append(out, diffLine{"+", l})
		}
		return append(out, tail...)
	}
	// lcs[i][j]: the longest common subsequence of a[i:] and b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			out = append(out, diffLine{" ", a[i]})
			i, j = i+1, j+1
		case j == len(b) || (i < len(a) && lcs[i+1][j] >= lcs[i][j+1]):
			out = append(out, diffLine{"-", a[i]})
			i++
		default:
			out = append(out, diffLine{"+", b[j]})
			j++
		}
	}
	return append(out, tail...)
}

// splitLines cuts s into lines without their newlines; "" has none.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}
