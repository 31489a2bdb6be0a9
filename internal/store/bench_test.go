package store_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/e-agent/e/internal/store"
)

// writeLog writes a session log of n entries directly (Create's fsyncs
// would dominate the set-up), alternating user and assistant messages.
func writeLog(b *testing.B, path, cwd string, n int) {
	b.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.Encode(store.Header{Type: "session", Version: 1, ID: filepath.Base(path[:len(path)-6]), Cwd: cwd, Created: time.Now(), Model: "m", Effort: "e"})
	parent := ""
	for i := range n {
		m := userMsg(fmt.Sprintf("please look at file %d and tell me what it does, in detail", i))
		if i%2 == 1 {
			m = assistantMsg(fmt.Sprintf("file %d reads its input, counts the words and prints a table of the most frequent ones", i))
		}
		id := fmt.Sprintf("%08x", i)
		enc.Encode(store.Entry{Type: store.TypeMessage, ID: id, Parent: parent, Time: time.Now(), Message: m})
		parent = id
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		b.Fatal(err)
	}
}

// M4: listing 10,000 sessions of one directory, each with 10 messages.
func BenchmarkList10000(b *testing.B) {
	home := b.TempDir()
	cwd := "/work/bench"
	dir := filepath.Join(home, "sessions", store.Slug(cwd))
	os.MkdirAll(dir, 0o700)
	for range 10000 {
		writeLog(b, filepath.Join(dir, store.NewID()+".jsonl"), cwd, 10)
	}
	list := func(b *testing.B) {
		s, err := store.List(home, cwd, false)
		if err != nil || len(s) != 10000 || s[0].Messages != 10 || s[0].Turns != 5 {
			b.Fatalf("List: %d sessions, %v", len(s), err)
		}
	}
	b.Run("cold", func(b *testing.B) {
		for b.Loop() {
			os.Remove(filepath.Join(dir, ".list-cache.json"))
			list(b)
		}
	})
	b.Run("cached", func(b *testing.B) {
		list(b)
		for b.Loop() {
			list(b)
		}
	})
}

// C6, C7: resuming a 100,000-entry log.
func BenchmarkResume100k(b *testing.B) {
	path := filepath.Join(b.TempDir(), store.NewID()+".jsonl")
	writeLog(b, path, "/work/bench", 100000)
	if fi, err := os.Stat(path); err == nil {
		b.Logf("log of %d bytes", fi.Size())
	}
	b.Run("OpenWritable", func(b *testing.B) {
		for b.Loop() {
			l, _, es, err := store.OpenWritable(path)
			if err != nil || len(es) != 100000 {
				b.Fatalf("%d entries, %v", len(es), err)
			}
			l.Close()
		}
	})
	b.Run("ReadOnly", func(b *testing.B) {
		for b.Loop() {
			_, es, err := store.ReadOnly(path)
			if err != nil || len(es) != 100000 {
				b.Fatalf("%d entries, %v", len(es), err)
			}
		}
	})
	b.Run("Branch", func(b *testing.B) {
		_, es, _ := store.ReadOnly(path)
		for b.Loop() {
			if n := len(store.Branch(es)); n != 100000 {
				b.Fatalf("branch of %d", n)
			}
		}
	})
}
