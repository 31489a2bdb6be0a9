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
