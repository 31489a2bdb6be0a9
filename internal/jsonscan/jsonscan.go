// Package jsonscan reads a few members of JSON objects without reflection
// and without garbage, for the hot paths that decode the same small shapes
// by the thousand (provider deltas, log entries). It validates the whole
// input as JSON. Whatever it is not sure to read exactly as encoding/json
// would (an escaped or non-ASCII key, a key that differs from a field only
// in case, an unexpected type, null, deep nesting) makes the caller fall
// back to json.Unmarshal, which then decides, errors included.
package jsonscan

import (
	"encoding/binary"
	"math/bits"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Member is one wanted Member of an object: its key and, after Object,
// its raw value (nil when absent).
type Member struct {
	Key string
	Val []byte
	// In, when set, reads the value's own members in the same pass, so
	// that nested wanted members cost no second scan: the value must then
	// be an object (with In.One, an array of exactly one object), or the
	// scan fails.
	In *Shape
}

// Shape is what Object wants of an object: the keys of the caller's slow
// path (Fields) and the members it reads (Want, whose keys are among
// Fields). A Shape that is used again keeps what it derives from Fields,
// which must then not change.
type Shape struct {
	Fields []string
	Want   []Member
	One    bool // the value is an array of one such object (Member.In)

	read bool // a scan has set values of Want since they were last cleared
	// Most keys are passed over without a comparison: those whose length
	// or folded first byte no field has. lens and firsts are the sets of
	// fields' lengths and first bytes, as bits (keyBit), once masked.
	masked       bool
	lens, firsts uint64
}

// mask sets lens and firsts, once.
func (s *Shape) mask() {
	if s.masked {
		return
	}
	for _, f := range s.Fields {
		l, f := keyBits(f)
		s.lens |= l
		s.firsts |= f
	}
	s.masked = true
}

// keyBits returns the bit of key's length (63 for any longer) and of its
// first byte folded to lower case (0 for the empty key), which an ASCII
// key shares with every field it folds to.
func keyBits[S string | []byte](key S) (length, first uint64) {
	if len(key) == 0 {
		return 1, 0
	}
	return 1 << min(len(key), 63), 1 << ((key[0] | 0x20) & 63)
}

// Object reports whether data is one valid JSON object whose keys are
// each either one of want's (its val is set; the last one wins, as in
// encoding/json) or none of fields, the keys the caller's slow path
// decodes, in any case. want's keys must be among fields.
func Object(data []byte, fields []string, want []Member) bool {
	end, ok := ObjectAt(data, SkipSpace(data, 0), fields, want)
	return ok && SkipSpace(data, end) == len(data)
}

// ObjectAt is Object of the object that starts at data[i], whatever
// follows it: it returns the object's end. An array's element is read
// with one scan, not a Value to find its end and an Object.
func ObjectAt(data []byte, i int, fields []string, want []Member) (int, bool) {
	s := Shape{Fields: fields, Want: want}
	return s.objectAt(data, i)
}

// Object is Object(data, s.Fields, s.Want), for a shape read again and
// again: what it derives from Fields is kept.
func (s *Shape) Object(data []byte) bool {
	end, ok := s.objectAt(data, SkipSpace(data, 0))
	return ok && SkipSpace(data, end) == len(data)
}

func (s *Shape) objectAt(data []byte, i int) (int, bool) {
	reset(s.Want)
	return object(data, i, 0, s)
}

// reset clears the values of want and of the members nested in it that a
// scan has set.
func reset(want []Member) {
	for i := range want {
		want[i].Val = nil
		if in := want[i].In; in != nil && in.read {
			reset(in.Want)
			in.read = false
		}
	}
}

// object scans the object at data[i:], depth levels deep, and returns its
// end. With a shape each member goes through match, and a key with
// escapes refuses the object; without, members are only checked.
func object(data []byte, i, depth int, s *Shape) (int, bool) {
	if i >= len(data) || data[i] != '{' {
		return 0, false
	}
	var fields []string
	var want []Member
	if s != nil {
		s.mask()
		fields, want = s.Fields, s.Want
	}
	i = SkipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return i + 1, true
	}
	for {
		if i >= len(data) || data[i] != '"' {
			return 0, false
		}
		var end int
		var ok bool
		j := -1 // the wanted member of key
		if s != nil {
			// A key with an escape or a non-ASCII byte is for the slow
			// path: encoding/json folds K (U+212A) to k and ſ (U+017F) to
			// s. An ASCII key folds only to a field of its own length
			// whose first byte folds to its own.
			if end, ok = scanKey(data, i); !ok {
				return 0, false
			}
			key := data[i+1 : end-1]
			if l, f := keyBits(key); s.lens&l != 0 && (f == 0 || s.firsts&f != 0) {
				if j, ok = match(key, fields, want); !ok {
					return 0, false
				}
			}
		} else if end, _, ok = scanString(data, i); !ok {
			return 0, false
		}
		i = SkipSpace(data, end)
		if i >= len(data) || data[i] != ':' {
			return 0, false
		}
		i = SkipSpace(data, i+1)
		var vend int
		if j >= 0 && want[j].In != nil {
			vend, ok = nested(data, i, depth+1, want[j].In)
		} else {
			vend, ok = value(data, i, depth+1)
		}
		if !ok {
			return 0, false
		}
		if j >= 0 {
			// encoding/json decodes a repeated member again into the same
			// value, which merges objects: not this scanner's business.
			if want[j].Val != nil {
				return 0, false
			}
			want[j].Val = data[i:vend]
		}
		i = SkipSpace(data, vend)
		if i >= len(data) {
			return 0, false
		}
		switch data[i] {
		case '}':
			return i + 1, true
		case ',':
			i = SkipSpace(data, i+1)
		default:
			return 0, false
		}
	}
}

// match returns the index in want of the ASCII member key, or -1 for a
// key the caller does not read; it reports false for a key encoding/json
// could match to another field than this scanner does.
func match(key []byte, fields []string, want []Member) (int, bool) {
	for j := range want {
		if string(key) == want[j].Key {
			return j, true
		}
	}
	for _, f := range fields {
		if len(f) == len(key) && foldEqual(f, key) {
			return -1, false
		}
	}
	return -1, true
}

// scanKey returns the end of the string at data[i:] (after its closing
// quote) and reports whether it is one of printable ASCII without
// escapes; any other, valid or not, reports false.
func scanKey(data []byte, i int) (int, bool) {
	j := i + 1
	// Eight bytes at a time: m has the top bit of each byte set where it
	// may be a quote, a backslash, a control or a non-ASCII byte, and of
	// the lowest such byte only if it is one (borrows mark bytes above a
	// match only).
	for ; j+8 <= len(data); j += 8 {
		w := binary.LittleEndian.Uint64(data[j:])
		q, bs := w^quotes, w^backslashes
		if m := ((w-lsb*0x20)&^w | w | (q-lsb)&^q | (bs-lsb)&^bs) & msb; m != 0 {
			j += bits.TrailingZeros64(m) / 8
			return j + 1, data[j] == '"'
		}
	}
	for ; j < len(data); j++ {
		if c := data[j]; c == '"' {
			return j + 1, true
		} else if c < 0x20 || c >= utf8.RuneSelf || c == '\\' {
			return 0, false
		}
	}
	return 0, false
}

// nested scans the value at data[i:], depth levels deep, as in reads it
// (Member.In), and returns its end.
func nested(data []byte, i, depth int, in *Shape) (int, bool) {
	in.read = true
	if !in.One {
		return object(data, i, depth, in)
	}
	if i >= len(data) || data[i] != '[' {
		return 0, false
	}
	end, ok := object(data, SkipSpace(data, i+1), depth+1, in)
	if !ok {
		return 0, false
	}
	if end = SkipSpace(data, end); end >= len(data) || data[end] != ']' {
		return 0, false
	}
	return end + 1, true
}

func foldEqual(s string, b []byte) bool {
	for i := range len(s) {
		x, y := s[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

func SkipSpace(data []byte, i int) int {
	// Most calls find no space: one comparison says so.
	for i < len(data) && data[i] <= ' ' && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// maxDepth bounds the nesting this scanner follows; deeper events take the
// slow path.
const maxDepth = 64

// Value returns the end of the valid JSON value at data[i:].
func Value(data []byte, i int) (int, bool) { return value(data, i, 1) }

func value(data []byte, i, depth int) (int, bool) {
	if i >= len(data) || depth > maxDepth {
		return 0, false
	}
	switch c := data[i]; {
	case c == '"':
		end, _, ok := scanString(data, i)
		return end, ok
	case c == '{':
		return object(data, i, depth, nil)
	case c == '[':
		i = SkipSpace(data, i+1)
		if i < len(data) && data[i] == ']' {
			return i + 1, true
		}
		for {
			var ok bool
			if i, ok = value(data, i, depth+1); !ok {
				return 0, false
			}
			i = SkipSpace(data, i)
			if i >= len(data) {
				return 0, false
			}
			if data[i] == ']' {
				return i + 1, true
			}
			if data[i] != ',' {
				return 0, false
			}
			i = SkipSpace(data, i+1)
		}
	case c == 't':
		return literal(data, i, "true")
	case c == 'f':
		return literal(data, i, "false")
	case c == 'n':
		return literal(data, i, "null")
	case c == '-' || '0' <= c && c <= '9':
		return scanNumber(data, i)
	}
	return 0, false
}

func literal(data []byte, i int, lit string) (int, bool) {
	if len(data)-i >= len(lit) && string(data[i:i+len(lit)]) == lit {
		return i + len(lit), true
	}
	return 0, false
}

// scanNumber follows the JSON number grammar.
func scanNumber(data []byte, i int) (int, bool) {
	if data[i] == '-' {
		i++
	}
	switch {
	case i < len(data) && data[i] == '0':
		i++
	case i < len(data) && '1' <= data[i] && data[i] <= '9':
		i = digits(data, i+1)
	default:
		return 0, false
	}
	if i < len(data) && data[i] == '.' {
		j := digits(data, i+1)
		if j == i+1 {
			return 0, false
		}
		i = j
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		j := digits(data, i)
		if j == i {
			return 0, false
		}
		i = j
	}
	return i, true
}

// digits returns the end of the run of decimal digits at data[i:].
func digits(data []byte, i int) int {
	for i < len(data) && '0' <= data[i] && data[i] <= '9' {
		i++
	}
	return i
}

// scanString returns the end of the string at data[i:] (after its closing
// quote) and whether it holds no escape.
func scanString(data []byte, i int) (end int, plain, ok bool) {
	plain = true
	for j := i + 1; j < len(data); j++ {
		// Eight bytes at a time while none may end the plain run: m has
		// the top bit of each byte (the first lowest) set where it may be
		// a quote, a backslash or a control byte, and of the lowest such
		// byte only if it is one (borrows mark bytes above a match only).
		for j+8 <= len(data) {
			w := binary.LittleEndian.Uint64(data[j:])
			q, bs := w^quotes, w^backslashes
			if m := ((w-lsb*0x20)&^w | (q-lsb)&^q | (bs-lsb)&^bs) & msb; m != 0 {
				j += bits.TrailingZeros64(m) / 8
				break
			}
			j += 8
		}
		for j < len(data) && plainByte[data[j]] {
			j++
		}
		if j == len(data) {
			break
		}
		switch c := data[j]; {
		case c == '"':
			return j + 1, plain, true
		case c < 0x20:
			return 0, false, false
		case c == '\\':
			plain = false
			j++
			if j >= len(data) {
				return 0, false, false
			}
			switch data[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if j+4 >= len(data) || hex4(data[j+1:j+5]) < 0 {
					return 0, false, false
				}
				j += 4
			default:
				return 0, false, false
			}
		}
	}
	return 0, false, false
}

const (
	lsb         = 0x0101010101010101
	msb         = 0x8080808080808080
	quotes      = lsb * '"'
	backslashes = lsb * '\\'
)

// plainByte marks the bytes a JSON string holds as they are.
var plainByte = func() (t [256]bool) {
	for c := range t {
		t[c] = c >= 0x20 && c != '"' && c != '\\'
	}
	return t
}()

func hex4(b []byte) rune {
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return -1
		}
		r = r<<4 | rune(c)
	}
	return r
}

// Unquote appends the text of the scanned JSON string raw (quotes
// included) to b as encoding/json decodes it: invalid UTF-8 and lone
// surrogates become U+FFFD.
func Unquote(b *strings.Builder, raw []byte) {
	s := raw[1 : len(raw)-1]
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c == '\\' {
			b.Write(s[start:i])
			switch s[i+1] {
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'u':
				r := hex4(s[i+2:])
				i += 6
				if utf16.IsSurrogate(r) {
					if i+6 <= len(s) && s[i] == '\\' && s[i+1] == 'u' {
						if d := utf16.DecodeRune(r, hex4(s[i+2:])); d != utf8.RuneError {
							b.WriteRune(d)
							i += 6
							start = i
							continue
						}
					}
					r = utf8.RuneError
				}
				b.WriteRune(r)
				start = i
				continue
			default: // '"', '\\', '/'
				b.WriteByte(s[i+1])
			}
			i += 2
			start = i
			continue
		}
		if c < utf8.RuneSelf {
			i++
			continue
		}
		r, size := utf8.DecodeRune(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.Write(s[start:i])
			b.WriteRune(utf8.RuneError)
			i++
			start = i
			continue
		}
		i += size
	}
	b.Write(s[start:])
}

// IsString reports whether the scanned value raw is a string.
func IsString(raw []byte) bool { return len(raw) > 0 && raw[0] == '"' }

// IsNull reports whether the scanned value raw is absent or null.
func IsNull(raw []byte) bool { return raw == nil || string(raw) == "null" }

// Int reads the scanned value raw as encoding/json reads a number into
// an int: an integer without fraction or exponent, here of at most 18
// digits. An absent value is 0.
func Int(raw []byte) (int, bool) {
	if raw == nil {
		return 0, true
	}
	s, neg := raw, false
	if s[0] == '-' {
		s, neg = s[1:], true
	}
	if len(s) == 0 || len(s) > 18 {
		return 0, false
	}
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}
