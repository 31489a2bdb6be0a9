package jsonenc

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// marshalNoHTML is what an encoding/json Encoder with SetEscapeHTML(false)
// writes for s, without its newline.
func marshalNoHTML(t *testing.T, s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// AppendString and AppendStringNoHTML write exactly what encoding/json
// writes, with and without HTML escaping, for short strings (the byte
// path) and long ones (8 plain bytes at a time, then the byte path from
// the first that is not plain).
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "hello", "a\"b\\c", "<&>", "\x00\x01\b\f\n\r\t\x1f\x7f", "\u2028\u2029é😀",
		"\xff\xfe", "a\xe2\x80", "0123456789abcdef<", "plain text longer than eight\n bytes", "日本語のテキスト、八バイト以上"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, in := range []string{s, s + strings.Repeat("x", 9) + s, strings.Repeat("ab", 5) + s} {
			want, err := json.Marshal(in)
			if err != nil {
				t.Fatal(err)
			}
			if got := AppendString([]byte("x"), in); string(got) != "x"+string(want) {
				t.Errorf("AppendString(%q) = %s, want x%s", in, got, want)
			}
			if got, want := AppendStringNoHTML([]byte("x"), in), marshalNoHTML(t, in); string(got) != "x"+want {
				t.Errorf("AppendStringNoHTML(%q) = %s, want x%s", in, got, want)
			}
		}
	})
}

func TestAppendStringEveryByte(t *testing.T) {
	for b := range 256 {
		for _, in := range []string{string(rune(b)), string([]byte{byte(b)}), "abcdefgh" + string([]byte{byte(b)}) + "ijklmnop"} {
			want, _ := json.Marshal(in)
			if got := AppendString(nil, in); string(got) != string(want) {
				t.Errorf("AppendString(%q) = %s, want %s", in, got, want)
			}
			if got, want := AppendStringNoHTML(nil, in), marshalNoHTML(t, in); string(got) != want {
				t.Errorf("AppendStringNoHTML(%q) = %s, want %s", in, got, want)
			}
		}
	}
}

// BenchmarkAppendString reports the cost per byte of plain text from 100
// bytes to 1 MB (flat when nothing grows faster than the text), of a
// streamed word, and of text with escapes or other scripts.
func BenchmarkAppendString(b *testing.B) {
	inputs := []struct{ name, s string }{{"word", " w12345"}}
	for _, n := range []int{100, 10_000, 1_000_000} {
		inputs = append(inputs, struct{ name, s string }{strconv.Itoa(n), strings.Repeat("plain words ", n/12+1)[:n]})
	}
	inputs = append(inputs, struct{ name, s string }{"escapes", strings.Repeat("a \"quoted\" <line>\n\tand more text here\n", 1000)},
		struct{ name, s string }{"cjk", strings.Repeat("日本語のテキスト、", 1000)})
	for _, in := range inputs {
		b.Run(in.name, func(b *testing.B) {
			var dst []byte
			b.SetBytes(int64(len(in.s)))
			for b.Loop() {
				dst = AppendString(dst[:0], in.s)
			}
		})
	}
}
