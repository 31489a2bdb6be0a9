// Package jsonenc appends JSON strings exactly as encoding/json writes
// them, without reflection, for the encoders of hot paths (events by the
// thousand, a long turn's text) whose output is compared byte for byte
// with encoding/json's by fuzz tests.
package jsonenc

import "unicode/utf8"

const hexDigits = "0123456789abcdef"

// plain holds the bytes encoding/json writes as they are in a string:
// ASCII but control characters, '"', '\\' and the HTML characters <, > and &.
var plain = func() (t [256]bool) {
	for b := 0x20; b < utf8.RuneSelf; b++ {
		t[b] = b != '"' && b != '\\' && b != '<' && b != '>' && b != '&'
	}
	return t
}()

// escapes marks the bytes that are not plain (or may start a rune that is
// not), for the 8-byte test below: one table load per byte and one branch
// per 8 beat a word-wide bit trick with five splats on this path.
var escapes = func() (t [256]byte) {
	for b := range t {
		if !plain[b] {
			t[b] = 1
		}
	}
	return t
}()

// AppendString appends s as a JSON string the way encoding/json writes it
// by default: HTML characters, U+2028 and U+2029 escaped, invalid UTF-8
// replaced by U+FFFD, so the result is always valid UTF-8.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		for i+8 <= len(s) {
			c := s[i : i+8]
			if escapes[c[0]]|escapes[c[1]]|escapes[c[2]]|escapes[c[3]]|escapes[c[4]]|escapes[c[5]]|escapes[c[6]]|escapes[c[7]] != 0 {
				break
			}
			i += 8
		}
		for i < len(s) && plain[s[i]] {
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
