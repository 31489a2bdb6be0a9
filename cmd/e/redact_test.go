package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// echoToken is the key of the echoing provider. Its variable is not named
// *_API_KEY and it has no sk- prefix: only redaction of the key e sent
// catches it.
const echoToken = "tok-9f8e7d6c5b4a39281706"

// echoingProvider is an OpenAI-compatible endpoint on loopback (or a proxy)
// that fails every request and echoes the bearer token it got in
// x-request-id, in the error type and in the message.
func echoingProvider(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		w.Header().Set("x-request-id", tok)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"error":{"type":"bad_%s","message":"key %s refused"}}`, tok, tok)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// commandWithEcho returns e (as command does) whose default model is served
// by echoingProvider.
func commandWithEcho(t *testing.T, args ...string) (*exec.Cmd, string) {
	t.Helper()
	srv := echoingProvider(t)
	cmd := command(t, args...)
	home := strings.TrimPrefix(cmd.Env[len(cmd.Env)-3], "E_HOME=")
	settings := fmt.Sprintf(`{"providers":{"echo":{"api":"openai-chat","base_url":%q,"api_key_env":"ECHO_TOKEN","models":[{"id":"m"}]}},"default_model":"echo/m"}`, srv.URL)
	if err := os.WriteFile(filepath.Join(home, "settings.json"), []byte(settings), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd.Env = append(cmd.Env, "ECHO_TOKEN="+echoToken)
	return cmd, home
}

// 12.6, U2: a provider echoing the bearer token in x-request-id, the error
// type and the message never puts the key on stdout, in e -p --json or in
// e rpc, nor in the saved files.
func TestKeyNeverOnStdout(t *testing.T) {
	t.Run("e -p --json", func(t *testing.T) {
		cmd, home := commandWithEcho(t, "-p", "hi", "--json")
		cmd.Stdin = strings.NewReader("")
		out, _ := cmd.Output()
		if !strings.Contains(string(out), `"request_id":"[redacted]"`) {
			t.Errorf("stdout has no redacted request_id:\n%s", out)
		}
		checkNoToken(t, string(out), home)
	})
	t.Run("e rpc", func(t *testing.T) {
		cmd, home := commandWithEcho(t)
		r := startRPCWith(t, cmd, []string{"rpc", "--ne"})
		sid := create(r)
		prompt(r, "p", sid, "hi")
		r.until(`"id":"p"`)
		r.in.Close()
		r.wait()
		out := strings.Join(r.seen, "\n")
		if !strings.Contains(out, `"request_id":"[redacted]"`) {
			t.Errorf("stdout has no redacted request_id:\n%s", out)
		}
		checkNoToken(t, out, home)
	})
}

func checkNoToken(t *testing.T, out, home string) {
	t.Helper()
	if strings.Contains(out, echoToken) {
		t.Errorf("the key is on stdout:\n%s", out)
	}
	filepath.Walk(home, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return nil
		}
		f, _ := os.Open(p)
		data, _ := io.ReadAll(f)
		f.Close()
		if strings.Contains(string(data), echoToken) {
			t.Errorf("the key is in %s", p)
		}
		return nil
	})
}
