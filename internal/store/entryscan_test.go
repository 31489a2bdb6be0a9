package store

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The entry scanner accepts only what encoding/json decodes, and reads it
// the same.
func FuzzScanEntry(f *testing.F) {
	for _, s := range []string{
		`{"type":"message","id":"0000000a","parent":"00000009","time":"2026-12-01T09:00:00.123456789Z","message":{"role":"user","content":[{"type":"text","text":"hi"}]}}`,
		`{"type":"message","id":"b","parent":"a","time":"2026-12-01T09:00:00Z","message":{"role":"assistant","content":[]},"call":{"model":"e/offline","attempts":1,"duration_ms":3,"usage":{"input":1}}}`,
		`{"type":"compaction","id":"c","parent":"b","time":"2026-12-01T09:00:00+01:00","summary":"s\u00e9\n\ud800","kept":"a","tokens_before":123}`,
		`{"type":"settings","id":"d","parent":"","time":"2026-12-01T09:00:00Z","model":"m","effort":"high"}`,
		`{"type":"name","id":"e","time":"2026-12-01T09:00:00Z","name":"x\xff"}`,
		`{"type":"error","id":"f","time":"2026-12-01T09:00:00Z","error":"boom","tools":[{"id":1}]}`,
		`{"type":"message","id":"g","Type":"x","time":"2026-12-01T09:00:00Z"}`,
		`{"type":"message","id":"g","time":null}`,
		`{"type":"message","id":"g","time":"2026-13-01T09:00:00Z"}`,
		`{"type":"message","id":"g","time":"2026-02-29T09:00:00.1Z"}`,
		`{"type":"message","id":"g","time":"2028-02-29T23:59:59.000000001Z"}`,
		`{"type":"message","id":"g","time":"2026-12-01T24:00:00Z"}`,
		`{"type":"message","id":"g","time":"2026-12-01T09:00:00.Z"}`,
		`{"type":"message","id":"g","time":"2026-12-01T09:00:00.1234567891Z"}`,
		`{"type":"message","id":"g","time":"2026-12-01t09:00:00Z"}`,
		`{"type":"message","id":"g","time":"+026-12-01T09:00:00Z"}`,
		`{"type":"message","id":"g","tokens_before":1.5}`,
		`{"type":"shell","id":"h","parent":"g","time":"2026-12-01T09:00:00Z","shell":{"command":"ls","output":"a\n","exit_code":0,"exclude":true}}`,
		`{"type":"shell","id":"h","time":"2026-12-01T09:00:00Z","shell":{"command":"ls","output":"","exit_code":null,"cancelled":true}}`,
	} {
		f.Add(s, "a")
	}
	f.Fuzz(func(t *testing.T, line, prev string) {
		// Without a day, with a day that another entry's time filled, and
		// with the day this line's own time just filled.
		var other, same dayCache
		parseUTC([]byte(`"2026-12-02T00:00:00Z"`), &other)
		for i, day := range []*dayCache{nil, &other, &same, &same} {
			var got Entry
			if !scanEntry([]byte(line), &got, prev, day) {
				if i > 0 {
					t.Fatalf("%q scanned without a day, not with day %d", line, i)
				}
				return
			}
			var want Entry
			if err := json.Unmarshal([]byte(line), &want); err != nil {
				t.Fatalf("scanned %q, which encoding/json rejects: %v", line, err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("%q, day %d (-encoding/json +scanner):\n%s", line, i, diff)
			}
			if got.Time != want.Time { // the same representation, not only the same instant
				t.Fatalf("%q, day %d: time %#v, encoding/json %#v", line, i, got.Time, want.Time)
			}
		}
	})
}

// peekScan reads what encoding/json reads, where it is sure.
func FuzzPeek(f *testing.F) {
	for _, s := range []string{
		`{"role":"user","content":[{"type":"text","text":"hi"}]}`,
		`{"role":"user","content":"plain"}`,
		`{"role":"assistant","content":[{"type":"reasoning","text":"r"},{"type":"text","text":"a\u00e9"}]}`,
		`{"role":"tool","content":[{"type":"tool_result","text":"x"}]}`,
		`{"role":"user","content":[{"type":"text"}]}`,
		`{"role":"user","content":[1,{"type":"text","text":"x"}]}`,
		`{"Role":"user","content":[]}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, m string) {
		role, text, ok, sure := peekScan(json.RawMessage(m), true)
		if !sure {
			return
		}
		wantRole, wantText, wantOK := peekJSON(json.RawMessage(m))
		if !json.Valid([]byte(m)) {
			t.Fatalf("scanned %q, which is not JSON", m)
		}
		if role != wantRole || text != wantText || ok != wantOK {
			t.Fatalf("%q: scanner %q %q %v, encoding/json %q %q %v", m, role, text, ok, wantRole, wantText, wantOK)
		}
	})
}

// scanHeader reads what encoding/json reads, or leaves the line to it.
func FuzzScanHeader(f *testing.F) {
	for _, s := range []string{
		`{"type":"session","version":1,"id":"01J0","cwd":"/w","created":"2026-12-01T09:00:00.5Z","model":"m","effort":"e"}`,
		`{"type":"session","version":1,"id":"01J0","cwd":"/w\u00e9","created":"2026-12-01T09:00:00+01:00","parent_session":"/p.jsonl","model":"m","effort":"","name":"n\n"}`,
		`{"type":"session","version":"1","cwd":"/w"}`,
		`{"type":"session","version":1,"cwd":null}`,
		`{"type":"session","Version":2,"created":"2026-13-01T09:00:00Z"}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		var got Header
		if !scanHeader([]byte(line), &got) {
			return
		}
		var want Header
		if err := json.Unmarshal([]byte(line), &want); err != nil {
			t.Fatalf("scanned %q, which encoding/json rejects: %v", line, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("%q (-encoding/json +scanner):\n%s", line, diff)
		}
	})
}
