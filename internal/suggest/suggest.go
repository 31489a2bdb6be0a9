// Package suggest finds the known word a mistyped one was meant to be, so an
// error about an unknown command, flag or setting can name the right one.
package suggest

import "unicode/utf8"

// Nearest returns the candidate closest to s by edit distance, when it is
// close enough to be a plausible typo: at most a third of the longer word's
// characters changed (so words under three characters get none). ok is
// false when none is.
func Nearest(s string, candidates []string) (best string, ok bool) {
	bestD := -1
	for _, c := range candidates {
		d := distance(s, c)
		if limit := max(utf8.RuneCountInString(s), utf8.RuneCountInString(c)) / 3; d > limit {
			continue
		}
		if bestD < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	return best, bestD >= 0
}

// distance is the Damerau–Levenshtein (optimal string alignment) distance:
// insertions, deletions, substitutions and swaps of neighbours count one.
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
