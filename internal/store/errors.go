package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/e-agent/e/internal/regfile"
)

// AppendError appends details (U2's error_details) to the private sidecar
// <logPath>.errors.jsonl (0600, U3) as one line
// {"time":…,"details":…}, with secrets redacted. Nothing leaves the machine.
func AppendError(logPath string, details any) error {
	d, err := json.Marshal(details)
	if err != nil {
		return fmt.Errorf("store: error sidecar for %s: %w", logPath, err)
	}
	r := json.RawMessage(Redact(string(d)))
	if !json.Valid(r) {
		// An odd environment value cut through the JSON: keep it as text.
		r, _ = json.Marshal(string(r))
	}
	line, err := json.Marshal(struct {
		Time    time.Time       `json:"time"`
		Details json.RawMessage `json:"details"`
	}{time.Now().UTC(), r})
	if err != nil {
		return fmt.Errorf("store: error sidecar for %s: %w", logPath, err)
	}
	path := logPath + ".errors.jsonl"
	f, _, err := regfile.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600) // a FIFO there must not block (Y1)
	if err != nil {
		return fmt.Errorf("store: error sidecar: %w", err)
	}
	_, err = f.Write(append(line, '\n'))
	if err := errors.Join(err, f.Close()); err != nil {
		return fmt.Errorf("store: error sidecar %s: %w", path, err)
	}
	return nil
}

// redacted replaces a secret.
const redacted = "[REDACTED]"

// The patterns never match a quote or a backslash, so redacting serialized
// JSON leaves it valid.
var (
	keyPattern = regexp.MustCompile(`sk-(?:ant-)?[A-Za-z0-9_\-]{16,}`)
	// Bearer tokens and x-api-key values, keeping the label: group 1.
	labelled = regexp.MustCompile(`(?i)(bearer\s+|x-api-key\\*"?\s*[:=]\s*\[?\s*\\*"?\s*)[A-Za-z0-9._~+/\-]{8,}=*`)
)

// Redact replaces API keys in s with [REDACTED]: sk-… and sk-ant-… keys,
// Bearer tokens, x-api-key values, and the values of environment variables
// named *_API_KEY (8 characters or more) currently set.
func Redact(s string) string {
	if i := labelStart(s); i >= 0 {
		// No match starts before i: the pattern, case-insensitive and
		// without a literal prefix, runs at tens of MB/s, and a long
		// answer's text seldom holds a label at all.
		s = s[:i] + labelled.ReplaceAllString(s[i:], "${1}"+redacted)
	}
	s = keyPattern.ReplaceAllString(s, redacted)
	var vals []string
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		if strings.HasSuffix(strings.ToUpper(k), "_API_KEY") && len(v) >= 8 {
			vals = append(vals, v)
			// As it appears inside JSON text, too.
			if q, _ := json.Marshal(v); string(q[1:len(q)-1]) != v {
				vals = append(vals, string(q[1:len(q)-1]))
			}
		}
	}
	// Longest first, so a key containing another is replaced whole.
	sort.Slice(vals, func(i, j int) bool { return len(vals[i]) > len(vals[j]) })
	for _, v := range vals {
		s = strings.ReplaceAll(s, v, redacted)
	}
	return s
}

// labelFirst marks the bytes a match of labelled can start with: the
// first letter of "bearer" or "x-api-key" in either case (neither has
// another Unicode case).
var labelFirst = [256]bool{'b': true, 'B': true, 'x': true, 'X': true}

// labelStart returns the index of the first label labelled can match in s
// (bearer, x-api-key, in any case), or -1 if there is none.
func labelStart(s string) int {
	for i := 0; i < len(s); i++ {
		for i+8 <= len(s) && !(labelFirst[s[i]] || labelFirst[s[i+1]] || labelFirst[s[i+2]] || labelFirst[s[i+3]] ||
			labelFirst[s[i+4]] || labelFirst[s[i+5]] || labelFirst[s[i+6]] || labelFirst[s[i+7]]) {
			i += 8
		}
		if i < len(s) && labelFirst[s[i]] && isLabel(s[i:]) {
			return i
		}
	}
	return -1
}

// isLabel reports whether s starts with "bearer" or "x-api-key" as
// labelled's (?i) matches them: Unicode simple case folding, under which
// K also matches the Kelvin sign.
func isLabel(s string) bool {
	if len(s) >= 6 && strings.EqualFold(s[:6], "bearer") {
		return true
	}
	if len(s) < 9 || !strings.EqualFold(s[:6], "x-api-") {
		return false
	}
	rest := s[6:]
	if rest[0] == 'k' || rest[0] == 'K' {
		rest = rest[1:]
	} else if strings.HasPrefix(rest, "\u212A") {
		rest = rest[len("\u212A"):]
	} else {
		return false
	}
	return len(rest) >= 2 && strings.EqualFold(rest[:2], "ey")
}
