package conformance

import (
	"bufio"
	_ "embed"
	"strings"
)

//go:embed requirements.txt
var requirementsTxt string

// Requirement is one numbered requirement of e's automation surface.
type Requirement struct {
	ID   string
	Text string
}

// Requirements returns every requirement ID in document order.
func Requirements() []Requirement {
	var out []Requirement
	sc := bufio.NewScanner(strings.NewReader(requirementsTxt))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		id, text, _ := strings.Cut(line, " ")
		out = append(out, Requirement{ID: id, Text: text})
	}
	return out
}

// Coverage is one requirement with the cases that cite it.
type Coverage struct {
	Requirement
	Cases []string
}

// CoverageOf maps every requirement to the cases citing it, uncovered
// requirements first, each group in document order.
func CoverageOf(cases []*Case) []Coverage {
	byID := map[string][]string{}
	for _, c := range cases {
		for _, id := range c.Requirements {
			byID[id] = append(byID[id], c.ID)
		}
	}
	var uncovered, covered []Coverage
	for _, r := range Requirements() {
		cv := Coverage{Requirement: r, Cases: byID[r.ID]}
		if len(cv.Cases) == 0 {
			uncovered = append(uncovered, cv)
		} else {
			covered = append(covered, cv)
		}
	}
	return append(uncovered, covered...)
}
