package server

import (
	"bytes"
	"testing"
)

// FuzzRequestLine: whatever one input line holds, the server answers it
// with schema-valid lines and keeps serving (F4, V1–V3): the hello that
// follows it is answered.
func FuzzRequestLine(f *testing.F) {
	for _, seed := range []string{
		`{"id":1,"method":"ask.reply","params":{"ask":1e30}}`,
		`{"id":1,"method":"session.create","params":{"tool_mode":false}}`,
		`{"id":{"a":[1]},"method":"session.prompt","params":{"session":"x","prompt":"y"}}`,
		`{"id":"one","prompt":"/text hi","save":"yes"}`,
		`{"id":1e400,"method":"hello","params":{"ask":null}}`,
		`{"method":7}`, `[1,2]`, `{`, `"x"`, `{"id":1,"method":"session.list","params":{"cwd":"","all":1}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		line = bytes.ReplaceAll(line, []byte("\n"), []byte(" "))
		if len(line) > 1<<16 {
			return
		}
		// No tools: a fuzzed prompt must never get to run a shell command.
		c := startServer(t, serverSetup{opts: Options{NoTools: true}})
		c.send(string(line) + "\n")
		c.send(`{"id":"fuzz-hello","method":"hello"}` + "\n")
		c.until(`"fuzz-hello"`) // every line on the way is checked against the schemas
	})
}
