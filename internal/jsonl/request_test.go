package jsonl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

// F4, V3, 12.7: what Request makes of a line before dispatch: the id to
// answer with (valid JSON and UTF-8) and why the line cannot be served.
func TestRequest(t *testing.T) {
	deep := `{"id":7,"method":"hello","params":{"x":` + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + `}}`
	deepAfter := `{"method":"hello","params":` + strings.Repeat(`{"a":`, 20000) + "1" + strings.Repeat("}", 20000) + `,"id":"late"}`
	tests := []struct {
		name, line string
		wantID     string
		wantErr    string // substring; "" for none
	}{
		{name: "plain", line: `{"id":1,"method":"hello"}`, wantID: `1`},
		{name: "id text kept", line: `{"id":1e400,"method":"hello"}`, wantID: `1e400`},
		{name: "no id", line: `{"method":"hello"}`, wantID: `null`},
		{name: "invalid UTF-8 in the id", line: "{\"id\":\"a\xffb\",\"method\":\"hello\"}", wantID: "\"a\uFFFDb\""},
		{name: "malformed", line: `{"id":1,"method":}`, wantID: `null`, wantErr: "malformed JSON: invalid character '}' looking for beginning of value (at byte"},
		{name: "not an object", line: `[1]`, wantID: `null`, wantErr: "expected a JSON object, got array"},
		{name: "nested 10,000 deep keeps its id", line: deep, wantID: `7`, wantErr: "nested more than 10000 levels deep"},
		{name: "id after the deep part", line: deepAfter, wantID: `"late"`, wantErr: "nested more than 10000 levels deep"},
		{name: "duplicate key", line: `{"id":2,"method":"hello","method":"x"}`, wantID: `2`, wantErr: `key "method" appears twice`},
		{name: "duplicate id is ambiguous", line: `{"id":2,"id":3,"method":"hello"}`, wantID: `null`, wantErr: `key "id" appears twice`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, err := Request([]byte(tt.line))
			if string(id) != tt.wantID {
				t.Errorf("id = %s, want %s", id, tt.wantID)
			}
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("err = %v, want none", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("err = %v, want %q", err, tt.wantErr)
			}
			if got, want := errors.Is(err, ErrMalformed), strings.HasPrefix(tt.wantErr, "malformed"); got != want {
				t.Errorf("errors.Is(err, ErrMalformed) = %v, want %v", got, want)
			}
		})
	}
}

// 12.7c: every line written is valid UTF-8, whatever a raw value passed
// through held.
func TestWriterValidUTF8(t *testing.T) {
	var out bytes.Buffer
	w := NewWriter(&out)
	w.Write(context.Background(), []byte("{\"id\":\"\xff\xfe\",\"x\":\"\xc3\"}"))
	w.Close()
	if !utf8.Valid(out.Bytes()) || out.String() != "{\"id\":\"\uFFFD\",\"x\":\"\uFFFD\"}\n" {
		t.Errorf("wrote %q", out.String())
	}
}

// FuzzRequest: any line gets an id that is valid JSON and UTF-8, and no panic.
func FuzzRequest(f *testing.F) {
	for _, s := range []string{`{"id":1,"method":"hello"}`, `{"id":"\u00e9","a":{"b":[1,2]}}`, `[`, `{"id":1,"id":2}`, "{\"id\":\"\xff\"}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		id, _ := Request(line)
		if !utf8.Valid(id) || !json.Valid(id) {
			t.Errorf("Request(%q) id = %q", line, id)
		}
	})
}
