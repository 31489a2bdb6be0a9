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
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
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
	s = labelled.ReplaceAllString(s, "${1}"+redacted)
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
