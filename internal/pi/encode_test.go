package pi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/e-agent/e/internal/agent"
	"github.com/e-agent/e/internal/jsonl"
	"github.com/e-agent/e/internal/model"
)

// hostile are delta texts encoders get wrong: JSON's and HTML's special
// characters (pi writes <, > and & as they are), control characters,
// U+2028/U+2029, invalid UTF-8 and lone surrogates, long runs on either
// side of the 8-byte fast path.
var hostile = []string{"", "w1 ", "<script>&amp;</script>", `"quoted" \back\slash/`, "\x00\x01\b\f\n\r\t\x1f\x7f",
	"\u2028\u2029", "é😀日本語", "\xff\xfe", "a\xe2\x80", "\xed\xa0\x80", "\ufffd", "\\u003c",
	strings.Repeat("plain ", 40) + "<", strings.Repeat("\"<&>", 30), "ends in a half rune \xf0\x9f"}

// randomString draws a hostile text or a random mix of their bytes and runes.
func randomString(r *rand.Rand) string {
	if r.IntN(3) == 0 {
		return hostile[r.IntN(len(hostile))]
	}
	var b strings.Builder
	for range r.IntN(40) {
		switch r.IntN(4) {
		case 0:
			b.WriteByte(byte(r.IntN(256)))
		case 1:
			b.WriteRune(rune(r.IntN(0x110000)))
		default:
			s := hostile[r.IntN(len(hostile))]
			b.WriteString(s[:r.IntN(len(s)+1)])
		}
	}
	return b.String()
}

// randomFloat draws a cost: zero of either sign, or a finite number of any
// magnitude, across encoding/json's switches to and from exponents.
func randomFloat(r *rand.Rand) float64 {
	switch r.IntN(6) {
	case 0:
		return 0
	case 1:
		return math.Copysign(0, -1)
	case 2:
		return math.Float64frombits(r.Uint64() &^ (0x7ff << 52)) // subnormal
	case 3:
		return float64(r.IntN(1e6)) * 1e-6 * []float64{1e-7, 1e-6, 1, 1e20, 1e21}[r.IntN(5)]
	}
	for {
		if f := math.Float64frombits(r.Uint64()); !math.IsInf(f, 0) && !math.IsNaN(f) {
			return f
		}
	}
}

// fill sets every field of the struct v points to at random, pointers nil
// or not; a field of a kind it does not know fails the test, as the
// encoder would not know it either.
func fill(t *testing.T, r *rand.Rand, v reflect.Value) {
	t.Helper()
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			fill(t, r, v.Field(i))
		}
	case reflect.Pointer:
		if r.IntN(2) == 0 {
			v.SetZero()
			return
		}
		v.Set(reflect.New(v.Type().Elem()))
		fill(t, r, v.Elem())
	case reflect.Int64:
		v.SetInt([]int64{0, 1, -1, r.Int64(), -r.Int64(), int64(r.IntN(1e6))}[r.IntN(6)])
	case reflect.Float64:
		v.SetFloat(randomFloat(r))
	case reflect.Bool:
		v.SetBool(r.IntN(2) == 0)
	case reflect.String:
		if r.IntN(3) > 0 { // omitzero strings are often empty
			v.SetString(randomString(r))
		}
	case reflect.Slice:
		if v.Type() != reflect.TypeFor[[]Content]() {
			t.Fatalf("%s: a slice of %s: teach appendEvent and this test", v.Type(), v.Type().Elem())
		}
		if r.IntN(8) > 0 { // nil: null
			v.Set(reflect.ValueOf(randomContents(r)))
		}
	default:
		t.Fatalf("%s: a field of kind %s: teach appendEvent and this test", v.Type(), v.Kind())
	}
}

// randomContents draws content blocks of every type, tool calls' arguments
// JSON with spaces to compact, not an object, or not JSON.
func randomContents(r *rand.Rand) []Content {
	out := []Content{}
	for range r.IntN(4) {
		c := Content{Type: []string{"text", "thinking", "image", "toolCall", "", "other"}[r.IntN(6)], Text: randomString(r)}
		if r.IntN(2) == 0 {
			c.Signature = randomString(r)
		}
		c.Data, c.MimeType = []byte(randomString(r)), randomString(r)
		c.ID, c.Name = randomString(r), randomString(r)
		c.Arguments = json.RawMessage([]string{`{"path":"a"}`, "{ \"a\" : [1, 2.5e-7] ,\n \"b\":\"<&>\u2028\\u003c\" }", "",
			"null", "[1]", `{"a":`, "{\"x\":\"\xff\"}"}[r.IntN(7)])
		out = append(out, c)
	}
	return out
}

// TestAppendDeltaUpdate checks the hand encoder of a delta's message_update
// against marshal, byte for byte, over generated usages (every field of
// pi's Usage, so a field added to the schema fails here) and hostile texts.
func TestAppendDeltaUpdate(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 20000 {
		var u Usage
		if i > 0 { // the first: the zero usage of an unpriced answer
			fill(t, r, reflect.ValueOf(&u).Elem())
		}
		typ := []string{"text_delta", "thinking_delta", "toolcall_delta"}[r.IntN(3)]
		idx, delta := r.IntN(1000), randomString(r)
		want, err := marshal(MessageUpdate{Type: "message_update", Usage: u,
			AssistantMessageEvent: AssistantEvent{Type: typ, ContentIndex: idx, Text: delta}})
		if err != nil {
			t.Fatal(err)
		}
		if got := appendDeltaUpdate([]byte("x"), typ, idx, delta, &u); string(got) != "x"+string(want) {
			t.Fatalf("appendDeltaUpdate(%q, %d, %q, %+v):\n got %s\nwant x%s", typ, idx, delta, u, got, want)
		}
	}
}

// randomMessage draws a message of a type Feed emits, every field set at
// random (a field added to the schema fails the test until appendEvent
// writes it).
func randomMessage(t *testing.T, r *rand.Rand) any {
	var m any
	switch r.IntN(4) {
	case 0:
		m = &UserMessage{}
	case 1, 2:
		m = &AssistantMessage{}
	default:
		m = &ToolResultMessage{}
	}
	v := reflect.ValueOf(m).Elem()
	fill(t, r, v)
	if tr, ok := m.(*ToolResultMessage); ok && r.IntN(2) == 0 {
		tr.Details = nil // usually none: they are bash's of a cut output
	}
	return v.Interface()
}

// TestAppendEvent checks the hand encoder of the events that carry whole
// messages against marshal, byte for byte, over generated events, and
// that what it leaves to marshal (bash details, a system message, tool
// call arguments that are not JSON, an unknown assistantMessageEvent) is
// left, not half written.
func TestAppendEvent(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	encoded := map[string]int{}
	for range 20000 {
		var ev Event
		switch r.IntN(6) {
		case 0:
			ev = MessageStart{Type: "message_start", Message: randomMessage(t, r)}
		case 1:
			ev = MessageEnd{Type: "message_end", Message: randomMessage(t, r)}
		case 2:
			var results []ToolResultMessage
			if r.IntN(4) > 0 {
				results = []ToolResultMessage{}
				for range r.IntN(3) {
					if m, ok := randomMessage(t, r).(ToolResultMessage); ok {
						results = append(results, m)
					}
				}
			}
			ev = TurnEnd{Type: "turn_end", Message: randomMessage(t, r), ToolResults: results}
		case 3:
			var msgs []any
			if r.IntN(4) > 0 {
				msgs = []any{}
				for range r.IntN(4) {
					msgs = append(msgs, randomMessage(t, r))
				}
				if r.IntN(10) == 0 {
					msgs = append(msgs, SystemMessage{Role: "system", Content: "sys"})
				}
			}
			ev = AgentEnd{Type: "agent_end", Messages: msgs, WillRetry: r.IntN(2) == 0}
		default:
			var u Usage
			fill(t, r, reflect.ValueOf(&u).Elem())
			types := []string{"text_start", "thinking_start", "text_delta", "thinking_delta", "toolcall_delta", "text_end",
				"thinking_end", "toolcall_start", "toolcall_end", "bogus"}
			ae := AssistantEvent{Type: types[r.IntN(len(types))], ContentIndex: r.IntN(100), Text: randomString(r),
				ID: randomString(r), ToolName: randomString(r)}
			if cs := randomContents(r); len(cs) > 0 {
				ae.ToolCall = cs[0]
			}
			ev = MessageUpdate{Type: "message_update", Usage: u, AssistantMessageEvent: ae}
		}
		if r.IntN(50) == 0 {
			ev = AgentSettled{Type: "agent_settled"} // not one of appendEvent's
		}
		want, err := marshal(ev)
		got, ok := appendEvent([]byte("x"), ev)
		switch {
		case ok && err != nil:
			t.Fatalf("appendEvent(%+v) wrote what marshal refuses (%v):\n%s", ev, err, got)
		case ok && string(got) != "x"+string(want):
			t.Fatalf("appendEvent(%+v):\n got %s\nwant x%s", ev, got, want)
		case ok:
			encoded[fmt.Sprintf("%T", ev)]++
		}
	}
	for _, typ := range []string{"pi.MessageStart", "pi.MessageEnd", "pi.TurnEnd", "pi.AgentEnd", "pi.MessageUpdate"} {
		if encoded[typ] < 100 {
			t.Errorf("appendEvent encoded %d %s events of 20000 events, want more", encoded[typ], typ)
		}
	}
}

// TestWriteDeltaAsFeed checks that e --mode rpc writes the same lines with
// writeDelta and appendEvent as Feed and marshal alone make, over turns of
// text, thinking and tool calls whose deltas are hostile texts.
func TestWriteDeltaAsFeed(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	use := agent.UsageEvent{Usage: agent.NewUsage(model.Usage{Input: 10, Output: 2})}
	call := func(id int) []agent.Event {
		return []agent.Event{agent.ToolBatch{Calls: []agent.Call{{ID: id, Name: "read", Arguments: json.RawMessage(`{"path":"a"}`)}}},
			agent.ToolStart{ID: id}, agent.ToolEnd{ID: id, Outcome: "completed", Content: "ab"}}
	}
	fast := 0 // deltas writeDelta wrote
	for run := range 200 {
		var events []agent.Event
		deltas := func() {
			for range r.IntN(4) {
				for range 1 + r.IntN(5) {
					if r.IntN(3) == 0 {
						events = append(events, &agent.Reasoning{Delta: randomString(r)})
					} else {
						events = append(events, &agent.Text{Delta: randomString(r)})
					}
				}
			}
		}
		events = append(events, agent.TurnStart{})
		for i := range r.IntN(3) {
			deltas()
			events = append(append(events, use), call(i)...)
		}
		deltas()
		if r.IntN(4) == 0 {
			events = append(events, agent.TurnEnd{Aborted: true})
		} else {
			events = append(events, use, agent.TurnEnd{})
		}
		// Feed and marshal alone, then as sink does.
		var lines [2]bytes.Buffer
		for i := range lines {
			price := &model.Price{Input: 3, Output: 15}
			if run%2 == 0 {
				price = nil
			}
			out := jsonl.NewWriter(&lines[1])
			fr := &front{out: out, deltas: out.NewHold(), tr: &Translator{Now: func() time.Time { return time.UnixMilli(1) },
				Info: model.Info{Provider: "e", Name: "m", API: model.APIOpenAIChat, Price: price}}}
			fr.tr.Begin("hello", nil)
			feed := func(f func(*Translator) []Event) {
				for _, ev := range f(fr.tr) {
					b, err := marshal(ev)
					if err != nil {
						t.Fatal(err)
					}
					lines[0].Write(append(b, '\n'))
				}
			}
			for _, ev := range events {
				switch {
				case i == 0:
					feed(func(t *Translator) []Event { return t.Feed(ev) })
				case fr.writeDelta(ev):
					fast++
				default:
					fr.translate(func(t *Translator) []Event { return t.Feed(ev) })
				}
			}
			if i == 0 {
				feed((*Translator).Settle)
			} else {
				fr.translate((*Translator).Settle)
			}
			if err := fr.out.Close(); err != nil {
				t.Fatal(err)
			}
		}
		if feed, fast := lines[0].String(), lines[1].String(); feed != fast {
			t.Fatalf("events %v:\nthrough Feed:\n%s\nwith writeDelta:\n%s", events, feed, fast)
		}
	}
	if fast == 0 {
		t.Fatal("writeDelta never wrote a delta")
	}
}
