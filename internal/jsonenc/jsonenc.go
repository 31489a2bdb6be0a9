// Package jsonenc appends JSON strings exactly as encoding/json writes
// them, without reflection, for the encoders of hot paths (events by the
// thousand, a long turn's text) whose output is compared byte for byte
// with encoding/json's by fuzz tests.
package jsonenc

import (
	"math/bits"
	"unicode/utf8"
)

const hexDigits = "0123456789abcdef"

// plain holds the bytes encoding/json writes as they are in a string:
// ASCII but control characters, '"', '\\' and the HTML characters <, > and &.
var plain = func() (t [256]bool) {
	for b := 0x20; b < utf8.RuneSelf; b++ {
		t[b] = b != '"' && b != '\\' && b != '<' && b != '>' && b != '&'
	}
	return t
}()

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// Splat of the bytes that are not plain, for the 8-byte test below.
const (
	quote     = lsb * '"'
	backslash = lsb * '\\'
	less      = lsb * '<'
	greater   = lsb * '>'
	amp       = lsb * '&'
)

// AppendString appends s as a JSON string the way encoding/json writes it
// by default: HTML characters, U+2028 and U+2029 escaped, invalid UTF-8
// replaced by U+FFFD, so the result is always valid UTF-8.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		for i+8 <= len(s) {
			// m has the top bit of each of these 8 bytes (the first lowest)
			// set where the byte may not be plain, and of the lowest such
			// byte only if it is not: the subtractions' borrows mark bytes
			// above a match, never below it.
			c := s[i : i+8]
			w := uint64(c[0]) | uint64(c[1])<<8 | uint64(c[2])<<16 | uint64(c[3])<<24 |
				uint64(c[4])<<32 | uint64(c[5])<<40 | uint64(c[6])<<48 | uint64(c[7])<<56
			q, bs, l, g, a := w^quote, w^backslash, w^less, w^greater, w^amp
			m := (w | (w-lsb*0x20)&^w | (q-lsb)&^q | (bs-lsb)&^bs | (l-lsb)&^l | (g-lsb)&^g | (a-lsb)&^a) & msb
			if m != 0 {
				i += bits.TrailingZeros64(m) / 8
				break
			}
			i += 8
		}
		if i == len(s) {
			break
		}
		b := s[i]
		if plain[b] {
			i++
			continue
		}
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
