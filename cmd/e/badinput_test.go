package main

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// F5, 12.7: bad input costs nothing: a prompt whose id is not valid UTF-8
// gets every line (its events' request stamps included) as valid UTF-8 and
// JSON; a number of 10^6 digits checked against a bound is answered at once
// (linear: big.Rat took seconds) and the next request is served.
func TestBadInputLines(t *testing.T) {
	r := startRPC(t)
	sid := create(r)
	r.send("{\"id\":\"p\xff\",\"method\":\"session.prompt\",\"params\":{\"session\":\"" + sid + "\",\"prompt\":\"/text hi\"}}")
	resp := r.until(`"id":"p`)
	if !gjson.Get(resp, "result").Exists() {
		t.Errorf("prompt response: %s", resp)
	}
	r.send(`{"id":"big","method":"ask.reply","params":{"ask":` + strings.Repeat("7", 1_000_000) + `}}`)
	if resp := r.until(`"id":"big"`); !strings.Contains(resp, "ask.reply: params.ask: expected at most") {
		t.Errorf("big number response: %s", resp)
	}
	r.in.Close()
	r.wait()
	stamped := 0
	for _, l := range r.seen {
		if !utf8.ValidString(l) || !json.Valid([]byte(l)) {
			t.Errorf("line is not valid UTF-8 JSON: %q", l)
		}
		if gjson.Get(l, "request").String() == "p\uFFFD" {
			stamped++
		}
	}
	if stamped == 0 {
		t.Errorf("no event carries the request id p\\uFFFD; lines:\n%s", strings.Join(r.seen, "\n"))
	}
}
