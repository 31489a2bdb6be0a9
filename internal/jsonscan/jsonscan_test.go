package jsonscan

import (
	"encoding/json"
	"strings"
	"testing"
)

// Value accepts exactly the JSON values encoding/json accepts (up to the
// nesting it follows), and Unquote decodes strings as encoding/json does.
func FuzzValue(f *testing.F) {
	for _, s := range []string{`"a\u00e9\ud83d\ude00\ud800x\"\\\/\b\f\n\r\t"`, `{"a":[1,-0.5e+3,true,false,null,{}]}`,
		`"\xff"`, `01`, `1.`, `"\u12"`, `[1,]`, `{"a" 1}`, ` "x" `,
		`"plain text longer than eight bytes, é and \" then more"`, "\"0123456\x1f89abcdef\"", `"01234567\\"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		data := []byte(s)
		i := SkipSpace(data, 0)
		end, ok := Value(data, i)
		ok = ok && SkipSpace(data, end) == len(data)
		if ok != json.Valid(data) && (ok || strings.Count(s, "[")+strings.Count(s, "{") <= maxDepth) {
			t.Fatalf("Value(%q) = %v, json.Valid says %v", s, ok, json.Valid(data))
		}
		if !ok || !IsString(data[i:end]) {
			return
		}
		var want string
		if err := json.Unmarshal(data, &want); err != nil {
			t.Fatal(err)
		}
		var got strings.Builder
		Unquote(&got, data[i:end])
		if got.String() != want {
			t.Fatalf("Unquote(%q) = %q, encoding/json %q", s, got.String(), want)
		}
	})
}

// Member.In reads nested members in the same scan: an object, or with One
// an array of exactly one object; anything else fails the scan, and no
// value of an earlier scan survives.
func TestNested(t *testing.T) {
	tests := []struct {
		name, data string
		one        bool // b is an array of one object
		ok         bool
		want       [3]string // a, b.c, b.d ("" for absent)
	}{
		{name: "object", data: `{"a":1,"b":{"c":"x","e":2}}`, ok: true, want: [3]string{"1", `"x"`, ""}},
		{name: "absent", data: `{"a":1}`, ok: true, want: [3]string{"1", "", ""}},
		{name: "null", data: `{"a":1,"b":null}`},
		{name: "not an object", data: `{"b":[1]}`},
		{name: "nested key folds to a field", data: `{"b":{"C":"x"}}`},
		{name: "repeated nested key", data: `{"b":{"c":"x","c":"y"}}`},
		{name: "repeated member", data: `{"b":{"c":"x"},"b":{"d":"y"}}`},
		{name: "invalid inside", data: `{"b":{"c":"x","e":tru}}`},
		{name: "one", data: ` {"b": [ {"d":true} ] } `, one: true, ok: true, want: [3]string{"", "", "true"}},
		{name: "one of none", data: `{"b":[]}`, one: true},
		{name: "one of two", data: `{"b":[{"c":1},{"c":2}]}`, one: true},
		{name: "one of an object", data: `{"b":{"c":1}}`, one: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sub := []Member{{Key: "c"}, {Key: "d"}}
			in := &Shape{Fields: []string{"c", "d"}, Want: sub, One: tt.one}
			want := []Member{{Key: "a"}, {Key: "b", In: in}}
			// A scan that sets every value first, so a stale one would show.
			stale := `{"a":0,"b":{"c":0,"d":0}}`
			if in.One {
				stale = `{"a":0,"b":[{"c":0,"d":0}]}`
			}
			if !Object([]byte(stale), []string{"a", "b"}, want) {
				t.Fatalf("Object(%s) failed", stale)
			}
			ok := Object([]byte(tt.data), []string{"a", "b"}, want)
			if ok != tt.ok {
				t.Fatalf("Object(%s) = %v, want %v", tt.data, ok, tt.ok)
			}
			if !ok {
				return
			}
			got := [3]string{string(want[0].Val), string(sub[0].Val), string(sub[1].Val)}
			if got != tt.want {
				t.Errorf("Object(%s) read %q, want %q", tt.data, got, tt.want)
			}
		})
	}
}
