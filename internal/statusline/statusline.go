// Package statusline keeps one status line on a terminal: rewritten in
// place, cut to the terminal's width, erased before anything else is
// written there.
package statusline

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Line is a status line on w. Its zero value is not usable; see New.
type Line struct {
	w       io.Writer
	width   int
	escapes bool // erase-line and dim are understood (not TERM=dumb)
	dim     bool
	shown   int // width on screen, 0 when none
}

// New returns a status line on w, width columns wide (0: 80). term is
// $TERM and noColor whether $NO_COLOR is set: "dumb" gets no escape
// sequence, NO_COLOR no dimming.
func New(w io.Writer, width int, term string, noColor bool) *Line {
	if width <= 0 {
		width = 80
	}
	return &Line{w: w, width: width, escapes: term != "dumb", dim: !noColor && term != "dumb"}
}

// Show replaces the line with s, cut to the width.
func (l *Line) Show(s string) {
	if n := l.width - 1; utf8.RuneCountInString(s) > n {
		s = string([]rune(s)[:n-1]) + "…"
	}
	l.Clear()
	if l.dim {
		fmt.Fprint(l.w, "\x1b[2m"+s+"\x1b[0m")
	} else {
		fmt.Fprint(l.w, s)
	}
	l.shown = utf8.RuneCountInString(s)
}

// Clear erases the line, if one is shown.
func (l *Line) Clear() {
	if l.shown == 0 {
		return
	}
	if l.escapes {
		fmt.Fprint(l.w, "\r\x1b[K")
	} else {
		fmt.Fprint(l.w, "\r"+strings.Repeat(" ", l.shown)+"\r")
	}
	l.shown = 0
}
