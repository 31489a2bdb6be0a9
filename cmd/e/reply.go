package main

import "bytes"

// reply writes the streamed answer of e -p in text mode, where stdout
// carries only the reply (P3). Text already printed cannot be taken back,
// so when an attempt fails after streaming text (discarded, reason retry),
// the next attempt's text is matched against what is on the screen and
// only what goes beyond it is printed. A provider that repeats itself
// (most do for a deterministic request) leaves stdout exactly the reply;
// one whose retried answer differs gets a line break, a note on stderr and
// the new answer in full. Each model call's answer is a message of its
// own: one that follows an earlier answer's text starts on a new line, so
// "Let me check." and, after a tool call, "All good." do not run together.
type reply struct {
	write   func(string)
	note    func(string)
	midLine func() bool // stdout's last line is unfinished
	shown   []byte      // text on stdout of the current model call's attempts
	pos     int         // how much of shown the current attempt has reproduced
	spoke   bool        // an earlier model call printed text
}

// text takes one delta of the current attempt.
func (r *reply) text(d string) {
	if r.pos == len(r.shown) {
		r.print(d)
		return
	}
	rest := r.shown[r.pos:]
	k := commonPrefix(d, rest)
	switch {
	case k == len(d):
		r.pos += k
	case k == len(rest):
		r.pos = len(r.shown)
		r.print(d[k:])
	default:
		r.restart(string(r.shown[:r.pos]) + d)
	}
}

// discard starts the next attempt: it reproduces the screen from the top.
func (r *reply) discard() { r.pos = 0 }

// callDone ends a model call (its usage event): an answer shorter than the
// text on the screen is a divergence too.
func (r *reply) callDone() {
	if r.pos < len(r.shown) {
		r.restart(string(r.shown[:r.pos]))
	}
	r.spoke = r.spoke || len(r.shown) > 0
	r.shown, r.pos = r.shown[:0], 0
}

func (r *reply) restart(text string) {
	if !bytes.HasSuffix(r.shown, []byte("\n")) {
		r.write("\n")
	}
	r.note("e: the answer changed when a failed model call was retried; the text above this point was discarded")
	r.shown, r.pos = r.shown[:0], 0
	r.print(text)
}

func (r *reply) print(s string) {
	if s == "" {
		return
	}
	if len(r.shown) == 0 && r.spoke && r.midLine != nil && r.midLine() {
		r.write("\n")
	}
	r.write(s)
	r.shown = append(r.shown, s...) // appended, not +=: a long answer has many deltas
	r.pos = len(r.shown)
}

func commonPrefix(a string, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}
