package store

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/e-agent/e/internal/jsonenc"
	"github.com/e-agent/e/internal/jsonscan"
	"github.com/e-agent/e/internal/regfile"
)

// Summary describes one saved session for session.list (M4).
type Summary struct {
	Path     string    `json:"path"`
	Title    string    `json:"title"`
	Name     string    `json:"name"`
	Modified time.Time `json:"modified"`
	Messages int       `json:"messages"` // message entries on the branch
	Turns    int       `json:"turns"`    // user messages with a text part
	Cwd      string    `json:"cwd"`
}

// Slug names the directory of cwd's sessions: the path without its leading
// separator, separators (and characters unsafe in file names) turned into
// '-', wrapped in "--": /work/main → --work-main--. The mapping is lossy
// (/a-b and /a/b share a directory), so List also compares the header's
// cwd. Long paths keep a prefix and a hash, to stay a valid file name.
func Slug(cwd string) string {
	s := strings.Map(func(r rune) rune {
		switch {
		case r == '/' || r == '\\' || r == ':' || r == '<' || r == '>' || r == '"' || r == '|' || r == '?' || r == '*', unicode.IsControl(r):
			return '-'
		}
		return r
	}, strings.TrimLeft(filepath.Clean(cwd), `/\`))
	if len(s) > 160 {
		sum := sha256.Sum256([]byte(cwd))
		cut := 140
		for !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "-" + hex.EncodeToString(sum[:8])
	}
	return "--" + s + "--"
}

// cacheName is the per-directory listing cache: a summary per log, valid
// while the log's size and mtime are unchanged. It is disposable.
const cacheName = ".list-cache.json"

// maxCache bounds the cache a listing reads (H1): 400,000 summaries; a
// bigger file is rebuilt, not read.
const maxCache = 64 << 20

type listCache struct {
	Version int               `json:"version"`
	Files   map[string]cached `json:"files"`
}

type cached struct {
	Size     int64  `json:"size"`
	MtimeNS  int64  `json:"mtime_ns"`
	Invalid  bool   `json:"invalid,omitempty"` // not a readable session log
	Title    string `json:"title,omitempty"`
	Name     string `json:"name,omitempty"`
	Messages int    `json:"messages"`
	Turns    int    `json:"turns"`
	Cwd      string `json:"cwd"`
}

// List returns the saved sessions of cwd, or of every directory when all is
// set, newest first (M4). Only logs changed since the last listing are read.
func List(home, cwd string, all bool) ([]Summary, error) {
	root := filepath.Join(home, "sessions")
	var dirs []string
	if all {
		des, err := os.ReadDir(root)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("store: list: %w", err)
		}
		for _, de := range des {
			if de.IsDir() {
				dirs = append(dirs, filepath.Join(root, de.Name()))
			}
		}
	} else {
		cwd = filepath.Clean(cwd)
		dirs = []string{filepath.Join(root, Slug(cwd))}
	}
	var out []Summary
	for _, dir := range dirs {
		s, err := listDir(dir)
		if err != nil {
			return nil, err
		}
		for _, x := range s {
			if all || x.Cwd == cwd {
				out = append(out, x)
			}
		}
	}
	slices.SortFunc(out, func(a, b Summary) int {
		if c := b.Modified.Compare(a.Modified); c != 0 {
			return c
		}
		return cmp.Compare(a.Path, b.Path)
	})
	return out, nil
}

func listDir(dir string) ([]Summary, error) {
	des, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store: list: %w", err)
	}
	var old listCache
	if b, err := regfile.ReadFile(filepath.Join(dir, cacheName), maxCache); err == nil {
		// A bad cache is rebuilt, never an error.
		if json.Unmarshal(b, &old) != nil || old.Version != 1 {
			old = listCache{}
		}
	}
	fresh := listCache{Version: 1, Files: make(map[string]cached, len(des))}
	type file struct {
		name        string
		size, mtime int64 // mtime in Unix nanoseconds
		have, ok    bool  // size and mtime are known; c is valid
		c           cached
	}
	var files []file
	var stale []int
	for _, de := range des {
		name := de.Name()
		if !isLogName(name) || !de.Type().IsRegular() {
			continue
		}
		f := file{name: name}
		if c, ok := old.Files[name]; ok {
			fi, err := de.Info()
			if err != nil {
				continue // removed while listing
			}
			f.size, f.mtime, f.have = fi.Size(), fi.ModTime().UnixNano(), true
			f.c, f.ok = c, c.Size == f.size && c.MtimeNS == f.mtime
		}
		if !f.ok {
			stale = append(stale, len(files)) // and stat there, in parallel
		}
		files = append(files, f)
	}
	// Reading the stale logs is the slow part of a cold listing: spread it.
	if len(stale) > 0 {
		d, err := openLogDir(dir)
		if err != nil {
			return nil, fmt.Errorf("store: list: %w", err)
		}
		defer d.Close()
		var wg sync.WaitGroup
		next := atomic.Int64{}
		for range min(runtime.GOMAXPROCS(0), len(stale)) {
			wg.Go(func() {
				var buf []byte
				for i := next.Add(1) - 1; i < int64(len(stale)); i = next.Add(1) - 1 {
					f := &files[stale[i]]
					r, size, mtime, err := d.open(f.name)
					if err != nil {
						f.have = false
						continue // removed while listing
					}
					f.size, f.mtime, f.have = size, mtime, true
					f.c = summarize(r, size, &buf)
					r.Close()
					f.c.Size, f.c.MtimeNS = size, mtime
				}
			})
		}
		wg.Wait()
	}
	out := make([]Summary, 0, len(files))
	for _, f := range files {
		if !f.have {
			continue
		}
		fresh.Files[f.name] = f.c
		if f.c.Invalid {
			continue
		}
		out = append(out, Summary{Path: filepath.Join(dir, f.name), Title: f.c.Title, Name: f.c.Name, Modified: time.Unix(0, f.mtime).UTC(),
			Messages: f.c.Messages, Turns: f.c.Turns, Cwd: f.c.Cwd})
	}
	if len(stale) > 0 || len(fresh.Files) != len(old.Files) {
		writeCache(dir, &fresh) // best effort: the listing is right without it
	}
	return out, nil
}

// isLogName accepts <id>.jsonl and rejects the sidecars (<id>.jsonl.errors.jsonl …).
func isLogName(name string) bool {
	stem, ok := strings.CutSuffix(name, ".jsonl")
	return ok && validID(stem)
}

func writeCache(dir string, c *listCache) {
	b := c.appendJSON(nil)
	f, err := os.CreateTemp(dir, cacheName+".*")
	if err != nil {
		return
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), filepath.Join(dir, cacheName))
	}
	if err != nil {
		os.Remove(f.Name())
	}
}

// appendJSON appends c as JSON without reflection: a cold listing of
// thousands of logs writes a summary of each.
func (c *listCache) appendJSON(dst []byte) []byte {
	dst = slices.Grow(dst, 160*len(c.Files)) // about a summary's size
	dst = strconv.AppendInt(append(dst, `{"version":`...), int64(c.Version), 10)
	dst = append(dst, `,"files":{`...)
	first := true
	for name, f := range c.Files {
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = append(jsonenc.AppendString(dst, name), `:{"size":`...)
		dst = strconv.AppendInt(dst, f.Size, 10)
		dst = strconv.AppendInt(append(dst, `,"mtime_ns":`...), f.MtimeNS, 10)
		if f.Invalid {
			dst = append(dst, `,"invalid":true`...)
		}
		if f.Title != "" {
			dst = jsonenc.AppendString(append(dst, `,"title":`...), f.Title)
		}
		if f.Name != "" {
			dst = jsonenc.AppendString(append(dst, `,"name":`...), f.Name)
		}
		dst = strconv.AppendInt(append(dst, `,"messages":`...), int64(f.Messages), 10)
		dst = strconv.AppendInt(append(dst, `,"turns":`...), int64(f.Turns), 10)
		dst = append(jsonenc.AppendString(append(dst, `,"cwd":`...), f.Cwd), '}')
	}
	return append(dst, "}}"...)
}

// Count returns the number of message entries in branch and the number of
// turns: user messages with a text part (tool results are not turns).
func Count(branch []Entry) (messages, turns int) {
	for _, e := range branch {
		if e.Type != TypeMessage {
			continue
		}
		messages++
		if role, _, ok := peek(e.Message); ok && role == "user" {
			turns++
		}
	}
	return messages, turns
}

// Title returns the session's title: the last "title" entry on branch, else
// the first user text, whitespace collapsed, at most 80 characters.
func Title(branch []Entry) string {
	for i := len(branch) - 1; i >= 0; i-- {
		if branch[i].Type == TypeTitle {
			return branch[i].Name
		}
	}
	for _, e := range branch {
		if e.Type != TypeMessage {
			continue
		}
		if role, text, ok := peek(e.Message); ok && role == "user" {
			return titleOf(text)
		}
	}
	return ""
}

// titleOf is the title a user's text gives: whitespace collapsed, at most
// 80 characters.
func titleOf(text string) string { return clip(strings.Join(strings.Fields(text), " "), 80) }

// Name returns the session's label (C8): the last "name" entry on branch,
// else the header's name.
func Name(h Header, branch []Entry) string {
	for i := len(branch) - 1; i >= 0; i-- {
		if branch[i].Type == TypeName {
			return branch[i].Name
		}
	}
	return h.Name
}

func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i, k := 0, 0
	for i = range s {
		if k == n-1 {
			break
		}
		k++
	}
	return s[:i] + "…"
}

// peek returns a message's role and its first text part; ok is false when
// the message has no text part.
func peek(m json.RawMessage) (role, text string, ok bool) {
	if role, text, ok, sure := peekScan(m, true); sure {
		return role, text, ok
	}
	return peekJSON(m)
}

// userText reports whether m is a user message with a text part, as peek
// would, without copying the text: a listing's scan asks it of every
// message of a log.
func userText(m json.RawMessage) bool {
	role, _, ok, sure := peekScan(m, false)
	if !sure {
		role, _, ok = peekJSON(m)
	}
	return ok && role == "user"
}

// peekJSON is peek by encoding/json, for any message.
func peekJSON(m json.RawMessage) (role, text string, ok bool) {
	var msg struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(m, &msg) != nil {
		return "", "", false
	}
	var s string
	if json.Unmarshal(msg.Content, &s) == nil {
		return msg.Role, s, true
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	json.Unmarshal(msg.Content, &parts)
	for _, p := range parts {
		if p.Type == "text" {
			return msg.Role, p.Text, true
		}
	}
	return msg.Role, "", false
}

var (
	messageFields = []string{"role", "content"}
	partFields    = []string{"type", "text"}
)

// peekScan is peek without reflection for the messages e writes; sure is
// false for any other, which peek decodes with encoding/json. txt is ""
// unless withText.
func peekScan(m json.RawMessage, withText bool) (role, txt string, ok, sure bool) {
	msg := [...]jsonscan.Member{{Key: "role"}, {Key: "content"}}
	if !jsonscan.Object(m, messageFields, msg[:]) || !jsonscan.IsString(msg[0].Val) {
		return "", "", false, false
	}
	role = text(msg[0].Val)
	c := msg[1].Val
	switch {
	case jsonscan.IsString(c):
		if withText {
			txt = text(c)
		}
		return role, txt, true, true
	case len(c) == 0 || c[0] != '[':
		return "", "", false, false
	}
	for i := jsonscan.SkipSpace(c, 1); c[i] != ']'; {
		end, _ := jsonscan.Value(c, i) // valid: Object scanned it
		part := [...]jsonscan.Member{{Key: "type"}, {Key: "text"}}
		if !jsonscan.Object(c[i:end], partFields, part[:]) || !jsonscan.IsString(part[0].Val) ||
			part[1].Val != nil && !jsonscan.IsString(part[1].Val) {
			return "", "", false, false
		}
		if text(part[0].Val) == "text" {
			t := ""
			if part[1].Val != nil && withText {
				t = text(part[1].Val)
			}
			return role, t, true, true
		}
		i = jsonscan.SkipSpace(c, end)
		if c[i] == ',' {
			i = jsonscan.SkipSpace(c, i+1)
		}
	}
	return role, "", false, true
}

// Locate resolves ref, a session log's path (relative to cwd) or a
// session's id, to an absolute path: an id (no path separator, no .jsonl)
// that names no file in cwd is looked up in every directory of home's
// sessions folder. An id found nowhere is an error wrapping fs.ErrNotExist
// that names the folder searched.
func Locate(home, cwd, ref string) (string, error) {
	path := ref
	if !filepath.IsAbs(path) {
		path = filepath.Join(cwd, path)
	}
	if strings.ContainsAny(ref, `/\`) || strings.HasSuffix(ref, ".jsonl") {
		return path, nil
	}
	if st, err := os.Stat(path); err == nil && !st.IsDir() {
		return path, nil
	}
	root := filepath.Join(home, "sessions")
	if ref == "" || strings.ContainsAny(ref, "*?[") {
		return "", fmt.Errorf("store: session %q: not a session id or log path: %w", ref, fs.ErrNotExist)
	}
	matches, _ := filepath.Glob(filepath.Join(root, "*", ref+".jsonl"))
	switch len(matches) {
	case 0:
		return "", fmt.Errorf("store: session %q: no log %s.jsonl in %s (pass a log's path, or an id from session.list): %w", ref, ref, root, fs.ErrNotExist)
	case 1:
		return matches[0], nil
	}
	return "", fmt.Errorf("store: session %q: %d logs in %s (%s): pass the path", ref, len(matches), root, strings.Join(matches, ", "))
}
