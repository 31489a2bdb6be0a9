package conformance

import (
	"bytes"
	"encoding/xml"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func mustDecode(t *testing.T, s string) any {
	t.Helper()
	v, err := decode([]byte(s))
	if err != nil {
		t.Fatalf("decode %s: %v", s, err)
	}
	return v
}

func TestMatch(t *testing.T) {
	tests := []struct {
		name, want, got string
		bound           map[string]any
		wantPtr         string // "" means the match must succeed
	}{
		{name: "subset object", want: `{"a":1}`, got: `{"a":1,"b":2}`},
		{name: "missing field", want: `{"a":1,"c":3}`, got: `{"a":1}`, wantPtr: "/c"},
		{name: "nested pointer", want: `{"a":{"b/c":[1,{"d":"x"}]}}`, got: `{"a":{"b/c":[1,{"d":"y"}]}}`, wantPtr: "/a/b~1c/1/d"},
		{name: "array length", want: `[1,2]`, got: `[1,2,3]`, wantPtr: "(root)"},
		{name: "id keeps exact text 1e400", want: `{"id":1e400}`, got: `{"id":1e400}`},
		{name: "id -0 differs from 0", want: `{"id":-0}`, got: `{"id":0}`, wantPtr: "/id"},
		{name: "big integer id", want: `{"id":12345678901234567890}`, got: `{"id":12345678901234567891}`, wantPtr: "/id"},
		{name: "request stamp exact", want: `{"request":1.50}`, got: `{"request":1.5}`, wantPtr: "/request"},
		{name: "numbers elsewhere by value", want: `{"n":100}`, got: `{"n":1e2}`},
		{name: "$any present", want: `{"a":"$any"}`, got: `{"a":null}`},
		{name: "$any absent", want: `{"a":"$any"}`, got: `{}`, wantPtr: "/a"},
		{name: "$absent", want: `{"a":"$absent"}`, got: `{"a":1}`, wantPtr: "/a"},
		{name: "$absent ok", want: `{"a":"$absent"}`, got: `{}`},
		{name: "$string", want: `"$string"`, got: `1`, wantPtr: "(root)"},
		{name: "$nonempty", want: `"$nonempty"`, got: `""`, wantPtr: "(root)"},
		{name: "$int>=0", want: `"$int>=0"`, got: `0`},
		{name: "$int>=0 negative", want: `"$int>=0"`, got: `-1`, wantPtr: "(root)"},
		{name: "$int>0 fraction", want: `"$int>0"`, got: `1.5`, wantPtr: "(root)"},
		{name: "$int>0 integral in another notation", want: `"$int>0"`, got: `1.0`},
		{name: "$int exponent", want: `"$int"`, got: `15e-1`, wantPtr: "(root)"},
		{name: "$int>=0 exponent form", want: `"$int>=0"`, got: `1e3`},
		{name: "$datetime", want: `"$datetime"`, got: `"2026-01-02T03:04:05.123Z"`},
		{name: "$datetime bad", want: `"$datetime"`, got: `"yesterday"`, wantPtr: "(root)"},
		{name: "$path under root", want: `"$path"`, got: `"/tmp/case/cwd/a.txt"`},
		{name: "$path elsewhere", want: `"$path"`, got: `"/etc/passwd"`, wantPtr: "(root)"},
		{name: "$contains", want: `"$contains:tool_mode"`, got: `"session.create: params.tool_mode: want a string"`},
		{name: "$regexp", want: `"$regexp:^a+b$"`, got: `"aaab"`},
		{name: "$regexp no", want: `"$regexp:^a+b$"`, got: `"ab!"`, wantPtr: "(root)"},
		{name: "$$ escapes", want: `"$$any"`, got: `"$any"`},
		{name: "$all", want: `{"$all":["$contains:a","$contains:b"]}`, got: `"xbxa"`},
		{name: "$all one fails", want: `{"$all":["$contains:a","$contains:b"]}`, got: `"xxa"`, wantPtr: "(root)"},
		{name: "$oneof", want: `{"$oneof":["$absent",[]]}`, got: `[]`},
		{name: "$oneof absent", want: `{"t":{"$oneof":["$absent",[]]}}`, got: `{}`},
		{name: "$oneof none", want: `{"$oneof":[1,2]}`, got: `3`, wantPtr: "(root)"},
		{name: "$some", want: `{"$some":{"role":"tool"}}`, got: `[{"role":"user"},{"role":"tool","x":1}]`},
		{name: "$some none", want: `{"$some":{"role":"tool"}}`, got: `[{"role":"user"}]`, wantPtr: "(root)"},
		{name: "$not", want: `{"t":{"$not":{"$some":{"name":"ping"}}}}`, got: `{"t":[{"name":"read"}]}`},
		{name: "$not absent", want: `{"t":{"$not":{"$some":{"name":"ping"}}}}`, got: `{}`},
		{name: "$not matches", want: `{"t":{"$not":{"$some":{"name":"ping"}}}}`, got: `{"t":[{"name":"ping"}]}`, wantPtr: "/t"},
		{name: "placeholder binds", want: `{"a":"{{s}}","b":"{{s}}"}`, got: `{"a":"x","b":"x"}`},
		{name: "placeholder differs", want: `{"a":"{{s}}","b":"{{s}}"}`, got: `{"a":"x","b":"y"}`, wantPtr: "/b"},
		{name: "placeholder bound earlier", want: `{"a":"{{s}}"}`, got: `{"a":"y"}`, bound: map[string]any{"s": "x"}, wantPtr: "/a"},
		{name: "placeholder not null", want: `{"a":"{{s}}"}`, got: `{"a":null}`, wantPtr: "/a"},
		{name: "placeholder in string", want: `"{{cwd}}/sub"`, got: `"/tmp/case/cwd/sub"`, bound: map[string]any{"cwd": "/tmp/case/cwd"}},
		{name: "placeholder in regexp quoted", want: `"$regexp:^{{home}}/.*\\.jsonl$"`, got: `"/tmp/ca.e/home/s/x.jsonl"`, bound: map[string]any{"home": "/tmp/ca.e/home"}},
		{name: "placeholder in regexp no wildcard", want: `"$regexp:^{{home}}/"`, got: `"/tmp/caXe/home/"`, bound: map[string]any{"home": "/tmp/ca.e/home"}, wantPtr: "(root)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &matcher{bindings: map[string]any{}, roots: []string{"/tmp/case"}}
			for k, v := range tt.bound {
				m.bindings[k] = v
			}
			mm := m.match("", mustDecode(t, tt.want), mustDecode(t, tt.got), true, map[string]any{})
			got := ""
			if mm != nil {
				got = mm.pointer
				if got == "" {
					got = "(root)"
				}
			}
			if got != tt.wantPtr {
				t.Errorf("mismatch at %q, want %q (%v)", got, tt.wantPtr, mm)
			}
		})
	}
}

func TestSubstitute(t *testing.T) {
	b := map[string]any{"s": "01A\"B", "n": mustDecode(t, "1e400"), "cwd": "/tmp/x"}
	got, err := substitute([]byte(`{"id":1e400,"params":{"session":"{{s}}","k":"{{n}}","cwd":"{{cwd}}/sub"}}`), b)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":1e400,"params":{"session":"01A\"B","k":1e400,"cwd":"/tmp/x/sub"}}`
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	if _, err := substitute([]byte(`{"s":"{{nope}}"}`), b); err == nil || !strings.Contains(err.Error(), "#wait") {
		t.Errorf("unbound placeholder: err %v, want a hint to add #wait", err)
	}
}

func TestParseArchive(t *testing.T) {
	a := parseArchive([]byte("comment\n-- a --\nA\r\n-- b/c --\n\nB\n-- not a marker\n"))
	got := map[string]string{}
	for _, f := range a.files {
		got[f.name] = string(f.data)
	}
	want := map[string]string{"a": "A\r\n", "b/c": "\nB\n-- not a marker\n"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	if string(a.comment) != "comment\n" {
		t.Errorf("comment %q", a.comment)
	}
	if round := formatArchive(a); string(round) != "comment\n-- a --\nA\r\n-- b/c --\n\nB\n-- not a marker\n" {
		t.Errorf("format: %q", round)
	}
}

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int
	}{{"123", 123}, {"64KiB", 65536}, {"10MiB", 10 << 20}, {"10MiB+1", 10<<20 + 1}, {"10MiB-16", 10<<20 - 16}}
	for _, tt := range tests {
		if got, err := parseSize(tt.in); err != nil || got != tt.want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
	if _, err := parseSize("lots"); err == nil {
		t.Error("parseSize(lots) succeeded")
	}
}

func TestLoadCaseErrors(t *testing.T) {
	tests := []struct {
		name, data, want string
	}{
		{name: "no header", data: "-- client --\n{}\n", want: "missing case.json"},
		{name: "bad level", data: "-- case.json --\n{\"id\":\"x\",\"level\":\"COULD\",\"requirements\":[\"F1\"]}\n-- client --\n", want: "level"},
		{name: "unknown requirement", data: "-- case.json --\n{\"id\":\"x\",\"level\":\"MUST\",\"requirements\":[\"Z9\"]}\n-- client --\n", want: "unknown requirement Z9"},
		{name: "wait without label", data: hdr + "-- client --\n#wait nope\n-- expect --\n{\"id\":1}\n", want: "no expect line has that label"},
		{name: "optional with label", data: hdr + "-- client --\n-- expect --\n? @x {\"id\":1}\n", want: "optional line cannot have a label"},
		{name: "unknown matcher", data: hdr + "-- client --\n-- expect --\n{\"id\":1,\"x\":\"$wat\"}\n", want: "unknown matcher"},
		{name: "pattern id", data: hdr + "-- client --\n-- expect --\n{\"id\":\"$any\"}\n", want: "literal request id"},
		{name: "unknown directive", data: hdr + "-- client --\n#sleep 5\n", want: "unknown directive"},
		{name: "unknown section", data: hdr + "-- client --\n-- extra --\n", want: "unknown section"},
		{name: "bad tape", data: hdr + "-- client --\n-- tape.json --\n[{\"txt\":\"x\"}]\n", want: "tape.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseCase([]byte(tt.data))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err %v, want one containing %q", err, tt.want)
			}
		})
	}
}

const hdr = "-- case.json --\n{\"id\":\"x\",\"level\":\"MUST\",\"requirements\":[\"F1\"]}\n"

func TestWriteJUnitIsXML(t *testing.T) {
	results := []*Result{
		{ID: "a", Level: "MUST", Verdict: Pass, Duration: time.Second},
		{ID: "b", Level: "MUST", Verdict: Fail, Divergence: &Divergence{Step: "expect line 3", Message: "bad <thing> & \x01 control"}},
		{ID: "c", Level: "SHOULD", Verdict: Error, Divergence: &Divergence{Step: "setup", Message: "no server"}},
		{ID: "d", Level: "MAY", Verdict: Skip, Divergence: &Divergence{Step: "case", Message: "later"}},
	}
	var b bytes.Buffer
	if err := WriteJUnit(&b, results); err != nil {
		t.Fatal(err)
	}
	var got junitSuites
	if err := xml.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatalf("not XML: %v\n%s", err, b.String())
	}
	s := got.Suites[0]
	if s.Tests != 4 || s.Failures != 1 || s.Errors != 1 || s.Cases[1].Failure == nil || !strings.Contains(s.SystemOut, "SKIP d: case: later") {
		t.Errorf("counts wrong: %+v", s)
	}
	// The strict Ant schema's required attributes and failure type.
	for _, attr := range []string{`package="golden"`, `id="0"`, `timestamp="`, `hostname="`, `type="MUST expect"`, "<properties>", "<system-out>", "<system-err>"} {
		if !strings.Contains(b.String(), attr) {
			t.Errorf("JUnit report lacks %s:\n%s", attr, b.String())
		}
	}
}

func TestSplitCommand(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{in: "e rpc", want: []string{"e", "rpc"}},
		{in: `"/path with space/e" rpc --ef 'very high'`, want: []string{"/path with space/e", "rpc", "--ef", "very high"}},
		{in: `a\ b c`, want: []string{"a b", "c"}},
	}
	for _, tt := range tests {
		got, err := SplitCommand(tt.in)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("SplitCommand(%q) (-want +got)\n%s", tt.in, diff)
		}
	}
	if _, err := SplitCommand(`"open`); err == nil {
		t.Error("unterminated quote accepted")
	}
}

func TestCoverageListsUncoveredFirst(t *testing.T) {
	cov := CoverageOf([]*Case{{ID: "x", Requirements: []string{"F1", "D1"}}})
	if len(cov) != len(Requirements()) {
		t.Fatalf("%d entries, want one per requirement (%d)", len(cov), len(Requirements()))
	}
	last := cov[len(cov)-1]
	if last.ID != "D1" || len(last.Cases) != 1 || len(cov[0].Cases) != 0 {
		t.Errorf("order wrong: first %+v last %+v", cov[0], last)
	}
}

// The schema validator rejects an event without its session stamp (S2);
// additive by default, it notes unknown fields and event types and lets
// them through (P8), while Strict refuses them.
func TestSchemaValidator(t *testing.T) {
	tests := []struct {
		name, line, method string
		strict             bool
		wantErr            string // substring; "" for valid
		wantNotes          int
	}{
		{name: "event without session", line: `{"type":"text","delta":"x","request":"p1"}`, wantErr: "session"},
		{name: "good event", line: `{"type":"text","delta":"x","session":"s","request":"p1"}`},
		{name: "unknown event type", line: `{"type":"future_thing","session":"s","request":"p1"}`, wantNotes: 1},
		{name: "unknown event type, strict", line: `{"type":"future_thing","session":"s","request":"p1"}`, strict: true, wantErr: "future_thing"},
		{name: "bad result", line: `{"id":1,"result":{"held":"yes"}}`, method: "session.steer", wantErr: "held"},
		{name: "unknown envelope field", line: `{"id":1,"result":{"held":true},"x_future":1}`, method: "session.steer", wantNotes: 1},
		{name: "unknown result field", line: `{"id":1,"result":{"held":true,"x_future":{"a":1}}}`, method: "session.steer", wantNotes: 1},
		{name: "unknown result field, strict", line: `{"id":1,"result":{"held":true,"x_future":1}}`, method: "session.steer", strict: true, wantErr: "/result/x_future"},
		{name: "unknown error field", line: `{"id":1,"error":"rpc: bad","x_future":true}`, wantNotes: 1},
		{name: "unknown event field", line: `{"type":"text","delta":"x","session":"s","request":"p1","x_future":"y"}`, wantNotes: 1},
		{name: "unknown event field, strict", line: `{"type":"text","delta":"x","session":"s","request":"p1","x_future":"y"}`, strict: true, wantErr: "/x_future"},
		{name: "unknown field still checks the rest", line: `{"type":"text","delta":1,"session":"s","request":"p1","x_future":"y"}`, wantErr: "delta", wantNotes: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			notes, err := SchemaValidator{Strict: tt.strict}.ValidateLine([]byte(tt.line), tt.method)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("error %v, want one containing %q", err, tt.wantErr)
			}
			if len(notes) != tt.wantNotes {
				t.Errorf("notes %q, want %d", notes, tt.wantNotes)
			}
		})
	}
}

// The HTML report is one page without external resources, with the
// verdicts by requirement and each failure's divergence and transcript.
func TestWriteHTML(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	results := []*Result{
		{ID: "a", Level: "MUST", Requirements: []string{"M7"}, Verdict: Pass},
		{ID: "b", Level: "MUST", Requirements: []string{"M7", "S2"}, Verdict: Fail, Repro: "e-conformance b",
			Divergence: &Divergence{Step: "expect line 3", Message: "<bad> & wrong"},
			Transcript: []Exchange{{At: now, Dir: "sent", Line: `{"id":1}`}, {At: now.Add(5 * time.Millisecond), Dir: "received", Line: `{"id":1,"result":{}}`}}},
	}
	var b bytes.Buffer
	if err := WriteHTML(&b, results); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{`id="case-b"`, "&lt;bad&gt; &amp; wrong", "5 ms received", "<td>M7</td>", "1 passed", "1 failed"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(page, "src=") || strings.Contains(page, "href=") {
		t.Error("the page refers to external resources")
	}
}
