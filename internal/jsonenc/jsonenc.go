// Package jsonenc appends JSON strings exactly as encoding/json writes
// them, without reflection, for the encoders of hot paths (events by the
// thousand, a long turn's text) whose output is compared byte for byte
// with encoding/json's by fuzz tests.
package jsonenc

import (
	"strings"
	"unicode/utf8"
)

const hexDigits = "0123456789abcdef"

// escapes marks the bytes encoding/json does not write as they are in a
// string (or that may start a rune it does not): control characters, '"',
// '\\', the HTML characters <, > and &, and every byte from 0x80. One
// table load per byte and one branch per 8 bytes (below) beat a word-wide
// bit trick with five splats on this path.
var escapes = table("<>&")

// escapesNoHTML is escapes for an Encoder with SetEscapeHTML(false), which
// writes <, > and & as they are.
var escapesNoHTML = table("")

func table(html string) (t [256]byte) {
	for b := range t {
		if b < 0x20 || b >= utf8.RuneSelf || b == '"' || b == '\\' || strings.IndexByte(html, byte(b)) >= 0 {
			t[b] = 1
		}
	}
	return t
}

// AppendString appends s as a JSON string the way encoding/json writes it
// by default: HTML characters, U+2028 and U+2029 escaped, invalid UTF-8
// replaced by U+FFFD, so the result is always valid UTF-8.
func AppendString(dst []byte, s string) []byte { return appendString(dst, s, &escapes) }

// AppendStringNoHTML is AppendString as an encoding/json Encoder with
// SetEscapeHTML(false) writes a string: <, > and & as they are, as
// JavaScript's JSON.stringify writes them (pi's wire), the rest the same.
func AppendStringNoHTML(dst []byte, s string) []byte { return appendString(dst, s, &escapesNoHTML) }

// appendString appends s as a JSON string, escaping the bytes esc marks.
func appendString(dst []byte, s string, esc *[256]byte) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		for i+8 <= len(s) {
			c := s[i : i+8]
			if esc[c[0]]|esc[c[1]]|esc[c[2]]|esc[c[3]]|esc[c[4]]|esc[c[5]]|esc[c[6]]|esc[c[7]] != 0 {
				break
			}
			i += 8
		}
		for i < len(s) && esc[s[i]] == 0 {
			i++
		}
		if i == len(s) {
			break
		}
		b := s[i]
		if b < utf8.RuneSelf {
			dst = append(dst, s[start:i]...)
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case c == utf8.RuneError && size == 1:
			dst = append(append(dst, s[start:i]...), `\ufffd`...)
		case c == '\u2028' || c == '\u2029':
			dst = append(append(dst, s[start:i]...), '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(append(dst, s[start:]...), '"')
}
