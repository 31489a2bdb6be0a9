package store

import (
	"encoding/json"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/e-agent/e/internal/jsonscan"
)

// entryFields are Entry's keys, for jsonscan's case check.
var entryFields = []string{"type", "id", "parent", "time", "message", "model", "effort", "summary", "kept",
	"tokens_before", "name", "call", "tools", "error", "shell"}

// scanEntry reads line into e as json.Unmarshal would, without reflection
// for all but the call and tools members; it reports false when line is
// for json.Unmarshal, which then decides. e.Message is a view of line. prev
// is the previous entry's id: a parent equal to it shares its string. day,
// when not nil, is the day of the previous entry's time (parseUTC).
func scanEntry(line []byte, e *Entry, prev string, day *dayCache) bool {
	m := [...]jsonscan.Member{{Key: "type"}, {Key: "id"}, {Key: "parent"}, {Key: "time"}, {Key: "message"},
		{Key: "model"}, {Key: "effort"}, {Key: "summary"}, {Key: "kept"}, {Key: "tokens_before"}, {Key: "name"},
		{Key: "call"}, {Key: "tools"}, {Key: "error"}, {Key: "shell"}}
	if !jsonscan.Object(line, entryFields, m[:]) {
		return false
	}
	for _, f := range m {
		if f.Val != nil && jsonscan.IsNull(f.Val) {
			return false
		}
	}
	*e = Entry{}
	ok := true
	str := func(raw []byte, dst *string) {
		if raw == nil || !ok {
			return
		}
		if !jsonscan.IsString(raw) {
			ok = false
			return
		}
		*dst = text(raw)
	}
	switch t := m[0].Val; string(t) { // the types there are, without allocating
	case `"message"`:
		e.Type = TypeMessage
	case `"settings"`:
		e.Type = TypeSettings
	case `"compaction"`:
		e.Type = TypeCompaction
	default:
		str(t, &e.Type)
	}
	str(m[1].Val, &e.ID)
	if p := m[2].Val; p != nil && len(p) == len(prev)+2 && string(p[1:len(p)-1]) == prev {
		e.Parent = prev
	} else {
		str(p, &e.Parent)
	}
	if t := m[3].Val; t != nil {
		var ok bool
		if e.Time, ok = parseUTC(t, day); !ok && (!jsonscan.IsString(t) || e.Time.UnmarshalJSON(t) != nil) {
			return false
		}
	}
	e.Message = m[4].Val
	str(m[5].Val, &e.Model)
	str(m[6].Val, &e.Effort)
	str(m[7].Val, &e.Summary)
	str(m[8].Val, &e.Kept)
	if t := m[9].Val; t != nil {
		n, isInt := jsonscan.Int(t)
		if !isInt {
			return false
		}
		e.Tokens = int64(n)
	}
	str(m[10].Val, &e.Name)
	if c := m[11].Val; c != nil && json.Unmarshal(c, &e.Call) != nil {
		return false
	}
	if r := m[12].Val; r != nil && json.Unmarshal(r, &e.Runs) != nil {
		return false
	}
	str(m[13].Val, &e.Error)
	if r := m[14].Val; r != nil && json.Unmarshal(r, &e.Shell) != nil {
		return false
	}
	return ok
}

// text decodes the scanned JSON string raw.
func text(raw []byte) string {
	s := raw[1 : len(raw)-1]
	if !strings.ContainsRune(string(s), '\\') && utf8.Valid(s) {
		return string(s)
	}
	var b strings.Builder
	jsonscan.Unquote(&b, raw)
	return b.String()
}

// headerFields are Header's keys, for jsonscan's case check.
var headerFields = []string{"type", "version", "id", "cwd", "created", "parent_session", "model", "effort", "name"}

// scanHeader reads line into h as json.Unmarshal would, without
// reflection; false when line is for json.Unmarshal, which then decides.
func scanHeader(line []byte, h *Header) bool {
	m := [...]jsonscan.Member{{Key: "type"}, {Key: "version"}, {Key: "id"}, {Key: "cwd"}, {Key: "created"},
		{Key: "parent_session"}, {Key: "model"}, {Key: "effort"}, {Key: "name"}}
	if !jsonscan.Object(line, headerFields, m[:]) {
		return false
	}
	*h = Header{}
	for i, dst := range [...]*string{&h.Type, nil, &h.ID, &h.Cwd, nil, &h.Parent, &h.Model, &h.Effort, &h.Name} {
		raw := m[i].Val
		switch {
		case raw == nil:
		case i == 1:
			n, ok := jsonscan.Int(raw)
			if !ok {
				return false
			}
			h.Version = n
		case i == 4:
			if !jsonscan.IsString(raw) || h.Created.UnmarshalJSON(raw) != nil {
				return false
			}
		case !jsonscan.IsString(raw):
			return false
		default:
			*dst = text(raw)
		}
	}
	return true
}

// headerOf decodes a header line into h.
func headerOf(line []byte, h *Header) error {
	if scanHeader(line, h) {
		return nil
	}
	*h = Header{}
	return json.Unmarshal(line, h)
}

// parseUTC reads raw, a JSON string, when it has the form e writes,
// "2006-01-02T15:04:05Z" with a fraction of 1 to 9 digits or none, as
// time.Time's UnmarshalJSON does, at a fraction of its cost (a resume
// reads one per entry). ok is false for any other form, or a time that
// does not exist: UnmarshalJSON decides those. day, when not nil, keeps
// the last day seen: the entries of a log mostly share their day, and
// adding the time of day to its midnight costs a fraction of time.Date.
func parseUTC(raw []byte, day *dayCache) (t time.Time, ok bool) {
	n := len(raw)
	if n < 22 || raw[0] != '"' || raw[n-1] != '"' || raw[n-2] != 'Z' {
		return time.Time{}, false
	}
	s := raw[1 : n-2]
	if s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' {
		return time.Time{}, false
	}
	num := func(b []byte) int {
		v := 0
		for _, c := range b {
			if c < '0' || c > '9' {
				return -1
			}
			v = v*10 + int(c-'0')
		}
		return v
	}
	year, month, mday := num(s[0:4]), num(s[5:7]), num(s[8:10])
	hour, minute, sec := num(s[11:13]), num(s[14:16]), num(s[17:19])
	nsec := 0
	if frac := s[19:]; len(frac) > 0 {
		if frac[0] != '.' || len(frac) < 2 || len(frac) > 10 {
			return time.Time{}, false
		}
		if nsec = num(frac[1:]); nsec < 0 {
			return time.Time{}, false
		}
		for range 10 - len(frac) {
			nsec *= 10
		}
	}
	if hour < 0 || hour > 23 || minute < 0 || minute > 59 || sec < 0 || sec > 59 {
		return time.Time{}, false
	}
	clock := time.Duration(hour*3600+minute*60+sec)*time.Second + time.Duration(nsec)
	if day != nil && day.valid && [10]byte(s[:10]) == day.date {
		return day.midnight.Add(clock), true
	}
	if year < 0 || month < 1 || month > 12 || mday < 1 {
		return time.Time{}, false
	}
	midnight := time.Date(year, time.Month(month), mday, 0, 0, 0, 0, time.UTC)
	if midnight.Day() != mday { // 2026-02-30 and the like
		return time.Time{}, false
	}
	if day != nil {
		*day = dayCache{date: [10]byte(s[:10]), midnight: midnight, valid: true}
	}
	return midnight.Add(clock), true
}

// dayCache is a day parseUTC has read: its text (2006-01-02) and midnight.
type dayCache struct {
	date     [10]byte
	midnight time.Time
	valid    bool
}
