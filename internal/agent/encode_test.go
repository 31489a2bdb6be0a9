package agent

import (
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// The hand-written appenders write exactly what encoding/json writes.
func FuzzAppendEvent(f *testing.F) {
	for _, s := range []string{"", "hello", "a\"b\\c", "<&>", "\x00\x01\b\f\n\r\t\x1f\x7f", "\u2028\u2029é😀", "\xff\xfe", "a\xe2\x80"} {
		f.Add(s, 7, true)
	}
	f.Fuzz(func(t *testing.T, s string, id int, b bool) {
		for _, ev := range []Event{&Text{Delta: s}, &Reasoning{Delta: s}, ToolOutput{ID: id, Delta: s},
			ToolStart{ID: id}, TurnStart{}, TurnEnd{Aborted: b}} {
			want, err := Marshal(ev)
			if err != nil {
				t.Fatal(err)
			}
			if got := AppendEvent([]byte("x"), ev); string(got) != "x"+string(want) {
				t.Errorf("AppendEvent(%#v) = %s, want x%s", ev, got, want)
			}
		}
	})
}

// Stamped events are valid UTF-8 whatever the request id holds.
func TestStampValidUTF8(t *testing.T) {
	st := NewStamp("s", json.RawMessage("\"\xff\""))
	for _, ev := range []Event{&Text{Delta: "\xfe"}, ToolBatch{Calls: []Call{{Arguments: json.RawMessage("{\"a\":\"\xff\"}")}}}} {
		if b := st.Append(nil, ev); !utf8.Valid(b) {
			t.Errorf("%T: %q is not UTF-8", ev, b)
		}
	}
}

// S2: a stamped event carries its session and request after its own fields.
func TestStamp(t *testing.T) {
	st := NewStamp("s<1>", json.RawMessage(`{"n":1}`))
	tests := []struct {
		name string
		ev   Event
		want string
	}{
		{name: "text", ev: &Text{Delta: "hi\n"}, want: `{"type":"text","delta":"hi\n","session":"s\u003c1\u003e","request":{"n":1}}`},
		{name: "no fields", ev: TurnStart{}, want: `{"type":"turn_start","session":"s\u003c1\u003e","request":{"n":1}}`},
		{name: "by reflection", ev: Retry{Attempt: 2, DelayMS: 5, Reason: "r"},
			want: `{"type":"retry","attempt":2,"delay_ms":5,"reason":"r","session":"s\u003c1\u003e","request":{"n":1}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(st.Append(nil, tt.ev)); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func BenchmarkAppendEvent(b *testing.B) {
	st := NewStamp("0193a0b2-5b9e-7c1e-9f00-0123456789ab", json.RawMessage(`"p1"`))
	var buf []byte
	for b.Loop() {
		buf = st.Append(buf[:0], &Text{Delta: " word"})
	}
}
