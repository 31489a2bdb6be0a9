package agent

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/e-agent/e/internal/model"
	"github.com/e-agent/e/internal/store"
)

// M10, T1: Set validates model and effort together; a rejected update
// changes neither, an accepted one is recorded as a settings entry.
func TestSet(t *testing.T) {
	str := func(s string) *string { return &s }
	tests := []struct {
		name       string
		model      *string
		effort     *string
		wantModel  string
		wantEffort string
		wantErr    string
	}{
		{name: "effort only", effort: str("low"), wantModel: model.OfflineID, wantEffort: "low"},
		{name: "empty effort is the default", effort: str(""), wantModel: model.OfflineID, wantEffort: "medium"},
		{name: "bare model name resolves to its id", model: str("offline"), wantModel: model.OfflineID, wantEffort: "medium"},
		{name: "model and effort", model: str(model.OfflineID), effort: str("high"), wantModel: model.OfflineID, wantEffort: "high"},
		{name: "new model without effort takes its default", model: str("openai/gpt-4.1"), wantModel: "openai/gpt-4.1", wantEffort: ""},
		{name: "invalid effort", effort: str("ultra"), wantErr: `effort "ultra" not supported by model "e/offline"`},
		{name: "effort the new model lacks", model: str("openai/gpt-4.1"), effort: str("high"),
			wantErr: `effort "high" not supported by model "openai/gpt-4.1" (it has no effort levels)`},
		{name: "unknown model", model: str("nope/x"), effort: str("low"), wantErr: `unknown model "nope/x"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := testSession(t, testEngine(t), nil)
			m, ef, err := s.Set(tt.model, tt.effort)
			info := s.Info()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				if info.Model != model.OfflineID || info.Effort != "medium" {
					t.Errorf("after a rejected Set: %s/%s, want both unchanged", info.Model, info.Effort)
				}
				if n := len(s.Entries()); n != 0 {
					t.Errorf("a rejected Set recorded %d entries", n)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m != tt.wantModel || ef != tt.wantEffort || info.Model != m || info.Effort != ef {
				t.Errorf("Set = %s/%s, Info %s/%s; want %s/%s", m, ef, info.Model, info.Effort, tt.wantModel, tt.wantEffort)
			}
			ens := s.Entries()
			if len(ens) != 1 || ens[0].Type != store.TypeSettings || ens[0].Model != m || ens[0].Effort != ef {
				t.Errorf("entries %+v, want one settings entry with %s/%s", ens, m, ef)
			}
		})
	}
}

// The result of a turn after Set names the new model and effort.
func TestSetAppliesToNextTurn(t *testing.T) {
	s := testSession(t, testEngine(t), nil)
	effort := "high"
	if _, _, err := s.Set(nil, &effort); err != nil {
		t.Fatal(err)
	}
	res, _ := prompt(t, s, "/text hi")
	if res.Model != model.OfflineID || res.Effort != "high" {
		t.Errorf("result %s/%s, want e/offline/high", res.Model, res.Effort)
	}
}

// With Behaviour.SetWhileRunning, a Set after Begin but before the run's
// goroutine has read the settings (pi's set_thinking_level right after
// prompt) is for the next run: the run keeps what Begin found.
func TestSetAfterBegin(t *testing.T) {
	eng := testEngine(t)
	eng.Behaviour.SetWhileRunning = true
	s := testSession(t, eng, nil)
	if err := s.Begin(); err != nil {
		t.Fatal(err)
	}
	high := "high"
	if _, _, err := s.Set(nil, &high); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	if res := s.Prompt(t.Context(), "/text hi", nil, rec.sink); res.Effort != "medium" {
		t.Errorf("the begun run's effort = %q, want medium, the one Begin found", res.Effort)
	}
	if res, _ := prompt(t, s, "/text next"); res.Effort != "high" {
		t.Errorf("the next run's effort = %q, want high", res.Effort)
	}
}

func TestTitle(t *testing.T) {
	long := strings.Repeat("é", 70)
	tests := []struct {
		name, prompt, want string
	}{
		{name: "plain", prompt: "fix the bug", want: "fix the bug"},
		{name: "first line, trimmed", prompt: "  line one  \nline two", want: "line one"},
		{name: "leading blank lines", prompt: "\n\n  second", want: "second"},
		{name: "cut at 60 runes", prompt: long, want: strings.Repeat("é", 60) + "…"},
		{name: "exactly 60", prompt: strings.Repeat("a", 60), want: strings.Repeat("a", 60)},
		{name: "empty", prompt: " \n ", want: "untitled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Title(tt.prompt); got != tt.want {
				t.Errorf("Title(%q) = %q, want %q", tt.prompt, got, tt.want)
			}
		})
	}
}

// The first prompt names the session once: a session_name event and a
// title entry; later prompts do not rename it.
func TestSessionName(t *testing.T) {
	s := testSession(t, testEngine(t), nil)
	_, rec := prompt(t, s, "/text first\nmore")
	if diff := cmp.Diff([]SessionName{{Name: "/text first"}}, ofType[SessionName](rec)); diff != "" {
		t.Errorf("session_name (-want +got):\n%s", diff)
	}
	_, rec = prompt(t, s, "/text second")
	if got := ofType[SessionName](rec); len(got) != 0 {
		t.Errorf("second turn renamed the session: %+v", got)
	}
	if got := s.Info().Title; got != "/text first" {
		t.Errorf("title %q", got)
	}
	if got := entryTypes(s); got != "message title message message message" {
		t.Errorf("entries %q", got)
	}
	if err := s.Rename("label"); err != nil {
		t.Fatal(err)
	}
	if in := s.Info(); in.Name != "label" || in.Messages != 4 {
		t.Errorf("info %+v, want name label and 4 messages", in)
	}
}

// I1: images are sniffed by content and bounded in number and size.
func TestLoadImages(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	jpeg := []byte("\xff\xd8\xff\xe0\x00\x10JFIF\x00")
	gif := []byte("GIF89a\x01\x00\x01\x00")
	webp := []byte("RIFF\x24\x00\x00\x00WEBPVP8 ")
	type file struct {
		name string
		data []byte
		size int64 // > 0: extend to this size (sparse)
	}
	tests := []struct {
		name      string
		files     []file
		paths     []string // default: the files' names
		wantTypes []string
		wantErr   string
		special   string // a file "s" of this class: fifo, zero (a link to /dev/zero), socket
	}{
		{
			name: "the four formats",
			files: []file{{name: "a.png", data: png}, {name: "b.jpg", data: jpeg}, {name: "c.gif", data: gif},
				{name: "d.webp", data: webp}},
			wantTypes: []string{"image/png", "image/jpeg", "image/gif", "image/webp"},
		},
		{
			name:      "the content decides, not the name",
			files:     []file{{name: "photo.txt", data: jpeg}},
			wantTypes: []string{"image/jpeg"},
		},
		{
			name:    "text named .png",
			files:   []file{{name: "fake.png", data: []byte("just some text\n")}},
			wantErr: "images[0]: ",
		},
		{
			name:    "more than 10",
			files:   []file{{name: "a.png", data: png}},
			paths:   strings.Split(strings.Repeat("a.png ", 11), " ")[:11],
			wantErr: "images: 11 files given, at most 10 allowed",
		},
		{
			name:      "exactly 10",
			files:     []file{{name: "a.png", data: png}},
			paths:     strings.Split(strings.Repeat("a.png ", 10), " ")[:10],
			wantTypes: strings.Split(strings.Repeat("image/png ", 10), " ")[:10],
		},
		{
			name:    "over 20 MiB",
			files:   []file{{name: "ok.png", data: png}, {name: "big.png", data: png, size: MaxImageBytes + 1}},
			wantErr: "images[1]: ",
		},
		{
			name: "over 40 MiB in all",
			files: []file{{name: "a.png", data: png, size: 15 << 20}, {name: "b.png", data: png, size: 15 << 20},
				{name: "c.png", data: png, size: 15 << 20}},
			wantErr: "images[2]: ",
		},
		{
			name:    "missing",
			paths:   []string{"nope.png"},
			wantErr: "images[0]: ",
		},
		{
			name:    "directory",
			files:   []file{{name: "d/x.png", data: png}},
			paths:   []string{"d"},
			wantErr: "d: a directory, not a regular file",
		},
		// Y1: special files are refused at once, naming the path, never read.
		{name: "fifo", special: "fifo", paths: []string{"s"}, wantErr: "s: a named pipe (FIFO), not a regular file"},
		{name: "dev zero symlink", special: "zero", paths: []string{"s"}, wantErr: "s: a character device, not a regular file"},
		{name: "socket", special: "socket", paths: []string{"s"}, wantErr: "s: a socket, not a regular file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			paths := tt.paths
			for _, f := range tt.files {
				p := filepath.Join(dir, f.name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, f.data, 0o644); err != nil {
					t.Fatal(err)
				}
				if f.size > 0 {
					if err := os.Truncate(p, f.size); err != nil {
						t.Fatal(err)
					}
				}
				if tt.paths == nil {
					paths = append(paths, f.name)
				}
			}
			switch p := filepath.Join(dir, "s"); tt.special {
			case "fifo":
				if err := syscall.Mkfifo(p, 0o600); err != nil {
					t.Fatal(err)
				}
			case "zero":
				if err := os.Symlink("/dev/zero", p); err != nil {
					t.Fatal(err)
				}
			case "socket":
				l, err := net.Listen("unix", p)
				if err != nil {
					t.Fatal(err)
				}
				defer l.Close()
			}
			parts, err := LoadImages(dir, paths)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var types []string
			for _, p := range parts {
				types = append(types, p.MediaType)
				if p.Type != model.PartImage || len(p.Data) == 0 {
					t.Errorf("part %+v is not an image with data", p.Type)
				}
			}
			if diff := cmp.Diff(tt.wantTypes, types); diff != "" {
				t.Errorf("media types (-want +got):\n%s", diff)
			}
		})
	}
}

// Refusals name the file and the broken rule (I1).
func TestLoadImagesMessages(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.png")
	if err := os.WriteFile(big, []byte("\x89PNG\r\n\x1a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, MaxImageBytes+1); err != nil {
		t.Fatal(err)
	}
	fake := filepath.Join(dir, "fake.png")
	if err := os.WriteFile(fake, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path, want string
	}{
		{big, fmt.Sprintf("images[0]: %s is %d bytes, over the 20 MiB limit per image", big, MaxImageBytes+1)},
		{fake, fmt.Sprintf("images[0]: %s is not a PNG, JPEG, GIF or WebP image (content looks like text/plain; charset=utf-8)", fake)},
	}
	for _, tt := range tests {
		t.Run(filepath.Base(tt.path), func(t *testing.T) {
			_, err := LoadImages(dir, []string{tt.path})
			if err == nil || err.Error() != tt.want {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

// The history a model call sees, from messages decoded once, is History of
// the entries however they grew: appended turns, a compaction keeping some,
// a shell command, and a session resumed from entries.
func TestHistoryDecodedOnce(t *testing.T) {
	msg := func(role, text string) store.Entry {
		b, _ := json.Marshal(model.Message{Role: role, Content: []model.Part{{Type: model.PartText, Text: text}}})
		return store.Entry{Type: store.TypeMessage, ID: text, Message: b}
	}
	s := testEngine(t).NewSession(Options{ID: "h", Cwd: t.TempDir(), Model: model.OfflineID,
		Entries: []store.Entry{msg("user", "u1"), msg("assistant", "a1")}})
	steps := [][]store.Entry{
		nil,
		{msg("user", "u2"), {Type: store.TypeMessage, ID: "bad", Message: json.RawMessage(`{"role":1}`)}, msg("assistant", "a2")},
		{{Type: store.TypeCompaction, ID: "c", Summary: "sum", Kept: "u2"}, msg("user", "u3")},
		{{Type: store.TypeShell, ID: "sh", Shell: &store.ShellRun{Command: "ls", Output: "a\n"}}, {Type: store.TypeTitle, ID: "t", Name: "x"}},
	}
	for i, add := range steps {
		s.mu.Lock()
		s.entries = append(s.entries, add...)
		got, want := s.history(s.entries), History(s.entries)
		n := min(3, len(s.entries))
		prefix, wantPrefix := s.history(s.entries[:n]), History(s.entries[:n])
		s.mu.Unlock()
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("step %d (-History +history):\n%s", i, diff)
		}
		if diff := cmp.Diff(wantPrefix, prefix); diff != "" {
			t.Errorf("step %d, a prefix (-History +history):\n%s", i, diff)
		}
	}
}

// A message the turn appends is kept as the history's decoded message
// only when decoding its entry gives it back exactly; the others (invalid
// UTF-8, tool arguments, image data) are decoded from the entry, so the
// history a model call sees is History of the entries either way.
func TestHistorySeeded(t *testing.T) {
	text := func(role, s string) model.Message {
		return model.Message{Role: role, Content: []model.Part{{Type: model.PartText, Text: s}}}
	}
	tests := []struct {
		name   string
		m      model.Message
		seeded bool
	}{
		{name: "text", m: text(model.RoleAssistant, "hello ☃"), seeded: true},
		{name: "empty content", m: model.Message{Role: model.RoleAssistant}, seeded: true},
		{name: "reasoning and text", m: model.Message{Role: model.RoleAssistant, Content: []model.Part{
			{Type: model.PartReasoning, Text: "hm", Signature: "sig"}, {Type: model.PartText, Text: "ok"}}}, seeded: true},
		{name: "tool result", m: model.Message{Role: model.RoleTool, Content: []model.Part{
			{Type: model.PartToolResult, CallID: "c1", Text: "out", IsError: true}}}, seeded: true},
		{name: "invalid UTF-8 text", m: text(model.RoleAssistant, "a\xffb")},
		{name: "invalid UTF-8 signature", m: model.Message{Role: model.RoleAssistant, Content: []model.Part{
			{Type: model.PartReasoning, Text: "hm", Signature: "\xc3"}}}},
		{name: "tool call", m: model.Message{Role: model.RoleAssistant, Content: []model.Part{
			{Type: model.PartToolCall, ID: "c1", Name: "ls", Arguments: json.RawMessage(`{ "path" : "." }`)}}}},
		{name: "empty image data", m: model.Message{Role: model.RoleUser, Content: []model.Part{
			{Type: model.PartImage, MediaType: "image/png", Data: []byte{}}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := testSession(t, testEngine(t), nil)
			if err := s.appendMessage(text(model.RoleUser, "first")); err != nil {
				t.Fatal(err)
			}
			if err := s.append(store.Entry{Type: store.TypeTitle, Name: "first"}); err != nil {
				t.Fatal(err)
			}
			if err := s.appendMessage(tt.m); err != nil {
				t.Fatal(err)
			}
			s.mu.Lock()
			seeded := len(s.parsed) == len(s.entries)
			got, want := s.history(s.entries), History(s.entries)
			s.mu.Unlock()
			if seeded != tt.seeded {
				t.Errorf("seeded = %v, want %v", seeded, tt.seeded)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-History +history):\n%s", diff)
			}
		})
	}
}
