package conformance

import (
	"bufio"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// Report writes r as human-readable text: one line per passing case,
// the divergence and context for the others.
func (r *Result) Report(w io.Writer) {
	fmt.Fprintf(w, "%-5s %s (%s %s) %.2fs\n", r.Verdict, r.ID, r.Level, strings.Join(r.Requirements, ","), r.Duration.Seconds())
	if r.Verdict == Pass || r.Divergence == nil {
		return
	}
	for _, l := range strings.Split(r.Divergence.String(), "\n") {
		fmt.Fprintf(w, "      %s\n", l)
	}
	if r.Verdict == Skip {
		return
	}
	if len(r.Bindings) > 0 {
		fmt.Fprintf(w, "      bound: %s\n", canon(r.Bindings))
	}
	if len(r.LastLines) > 0 {
		fmt.Fprintf(w, "      last lines received:\n")
		for _, l := range r.LastLines {
			fmt.Fprintf(w, "        %s\n", l)
		}
	}
	if s := strings.TrimSpace(r.Stderr); s != "" {
		lines := strings.Split(s, "\n")
		fmt.Fprintf(w, "      stderr (last %d lines):\n", min(len(lines), 6))
		for _, l := range lines[max(0, len(lines)-6):] {
			fmt.Fprintf(w, "        %s\n", shorten(l))
		}
	}
	if r.Repro != "" {
		fmt.Fprintf(w, "      repro: %s\n", r.Repro)
	}
}

// WriteJSON writes one JSON object per result; a case that failed or
// could not be judged carries its whole transcript, both ways, timed.
func WriteJSON(w io.Writer, results []*Result) error {
	enc := json.NewEncoder(w)
	for _, r := range results {
		if r.Verdict == Pass || r.Verdict == Skip {
			c := *r
			c.Transcript = nil // only a failure needs its conversation
			r = &c
		}
		if err := enc.Encode(r); err != nil {
			return fmt.Errorf("conformance: %w", err)
		}
	}
	return nil
}

type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

// junitSuite follows the strict Ant JUnit schema (JUnit.xsd): package,
// id, name, timestamp, hostname, tests, failures, errors, time;
// properties first; system-out and system-err last. That schema knows no
// skipped cases: a SKIP is a testcase without failure, its reason in
// system-out.
type junitSuite struct {
	Package    string          `xml:"package,attr"`
	ID         int             `xml:"id,attr"`
	Name       string          `xml:"name,attr"`
	Timestamp  string          `xml:"timestamp,attr"`
	Hostname   string          `xml:"hostname,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Time       string          `xml:"time,attr"`
	Properties []junitProperty `xml:"properties>property"`
	Cases      []junitCase     `xml:"testcase"`
	SystemOut  string          `xml:"system-out"`
	SystemErr  string          `xml:"system-err"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitProblem `xml:"failure,omitempty"`
	Error     *junitProblem `xml:"error,omitempty"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"` // failures and errors: the requirement level and step
	Body    string `xml:",chardata"`
}

// WriteJUnit writes results as a JUnit XML report, one testcase per case.
func WriteJUnit(w io.Writer, results []*Result) error {
	host, _ := os.Hostname()
	if host == "" {
		host = "localhost"
	}
	s := junitSuite{Package: "golden", Name: "e-conformance", Tests: len(results), Hostname: host,
		Timestamp:  time.Now().UTC().Format("2006-01-02T15:04:05"),
		Properties: []junitProperty{{Name: "suite", Value: "golden"}, {Name: "protocol", Value: "e rpc"}}}
	var total float64
	for _, r := range results {
		total += r.Duration.Seconds()
		jc := junitCase{Name: r.ID, Classname: "golden." + r.Level, Time: fmt.Sprintf("%.3f", r.Duration.Seconds())}
		if r.Verdict != Pass {
			var b strings.Builder
			r.Report(&b)
			msg := ""
			if r.Divergence != nil {
				msg = r.Divergence.Step + ": " + r.Divergence.Message
			}
			p := &junitProblem{Message: msg, Body: xmlSafe(b.String())}
			if r.Verdict != Skip && r.Divergence != nil {
				p.Type = r.Level + " " + strings.Fields(r.Divergence.Step + " x")[0]
			}
			p.Message = xmlSafe(p.Message)
			switch r.Verdict {
			case Fail:
				jc.Failure, s.Failures = p, s.Failures+1
			case Error:
				jc.Error, s.Errors = p, s.Errors+1
			case Skip:
				s.SystemOut += "SKIP " + r.ID + ": " + p.Message + "\n"
			}
		}
		s.Cases = append(s.Cases, jc)
	}
	s.Time = fmt.Sprintf("%.3f", total)
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return fmt.Errorf("conformance: %w", err)
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(junitSuites{Suites: []junitSuite{s}}); err != nil {
		return fmt.Errorf("conformance: junit: %w", err)
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// xmlSafe drops characters XML 1.0 cannot carry (server output may hold any).
func xmlSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' || r >= 0x20 && r <= 0xD7FF || r >= 0xE000 && r <= 0xFFFD || r >= 0x10000 && r <= 0x10FFFF {
			return r
		}
		return '\uFFFD'
	}, s)
}

// ReadKnownFailing reads a list of case ids, one per line; "#" starts a
// comment.
func ReadKnownFailing(path string) (map[string]bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("conformance: %w", err)
	}
	defer f.Close()
	ids := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		if line = strings.TrimSpace(line); line != "" {
			ids[line] = true
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("conformance: %s: %w", path, err)
	}
	return ids, nil
}
