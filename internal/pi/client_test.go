package pi

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/e-agent/e/internal/providermock"
)

// piCache is where scripts/pi-client-setup.sh installs Node 22 and pi 1.6.0.
func piCache() string {
	dir := os.Getenv("E_TEST_CACHE")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".cache", "e-test")
	}
	return filepath.Join(dir, "pi-1.6.0")
}

// buildE builds the e binary into dir.
func buildE(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "e")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/e-agent/e/cmd/e").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// piHome writes a pi config dir whose models.json declares the loopback
// mock model as provider "mock" (openai-completions, literal apiKey), and
// whose settings.json keeps one token of recent messages in a compaction.
func piHome(t *testing.T, dir, mockURL string) string {
	t.Helper()
	home := filepath.Join(dir, "pi-agent")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	models := fmt.Sprintf(`{"providers":{"mock":{"baseUrl":%q,"api":"openai-completions","apiKey":"test-key",
		"models":[{"id":"mock-1","contextWindow":32000},{"id":"mock-2","contextWindow":32000}]}}}`, mockURL+"/v1")
	if err := os.WriteFile(filepath.Join(home, "models.json"), []byte(models), 0o600); err != nil {
		t.Fatal(err)
	}
	// The flows' history is far smaller than pi's default 20000 tokens to
	// keep, which leaves a compaction nothing to summarise (pi too fails).
	settings := `{"compaction":{"keepRecentTokens":1}}`
	if err := os.WriteFile(filepath.Join(home, "settings.json"), []byte(settings), 0o600); err != nil {
		t.Fatal(err)
	}
	return home
}

// TestPiRpcClient drives e --mode rpc with pi's own RpcClient from the npm
// package (testdata/rpcclient.mjs), through every command and event
// family: pi 1.6.0's, and the older 0.73.1 client that prime-agent's
// dialect keeps (it waits for agent_end and has no dispositions).
func TestPiRpcClient(t *testing.T) {
	cache := piCache()
	for _, c := range []struct {
		name, client string
		legacy       bool
	}{
		{"1.6.0", filepath.Join(cache, "pi", "node_modules", "@earendil-works", "pi-coding-agent"), false},
		{"0.73.1", filepath.Join(filepath.Dir(cache), "pi-0.73.1", "node_modules", "@mariozechner", "pi-coding-agent"), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			runClient(t, filepath.Join(cache, "node", "bin", "node"),
				filepath.Join(c.client, "dist", "modes", "rpc", "rpc-client.js"), c.legacy)
		})
	}
}

func runClient(t *testing.T, node, client string, legacy bool) {
	for _, p := range []string{node, client} {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("Node 22 and pi's packages are not installed (%s is missing): run scripts/pi-client-setup.sh", p)
		}
	}
	if testing.Short() {
		t.Skip("-short: the RpcClient suite runs a Node process")
	}
	dir := t.TempDir()
	bin := buildE(t, dir)
	mock := httptest.NewServer(providermock.NewServer("openai-chat", 5)) // "w1 w2 w3 w4 w5 "
	defer mock.Close()
	// RpcClient spawns `node CLI --mode rpc …`: a shim named node runs e
	// for that CLI path and the real node otherwise.
	shim := filepath.Join(dir, "shim")
	os.Mkdir(shim, 0o700)
	cli := filepath.Join(dir, "e-as-pi-cli.js")
	script := "#!/bin/sh\nif [ \"$1\" = \"$E_PI_CLI\" ]; then shift; exec \"$E_BIN\" \"$@\"; fi\nexec \"$REAL_NODE\" \"$@\"\n"
	if err := os.WriteFile(filepath.Join(shim, "node"), []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(dir, "work")
	os.Mkdir(work, 0o700)
	ehome := filepath.Join(dir, "e-home")
	os.Mkdir(ehome, 0o700)
	os.WriteFile(filepath.Join(ehome, "settings.json"), []byte(`{"max_attempts":3}`), 0o600)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join("testdata", "rpcclient.mjs"))
	cmd.Env = append(os.Environ(), "PATH="+shim+string(os.PathListSeparator)+os.Getenv("PATH"),
		"E_PI_CLI="+cli, "E_BIN="+bin, "REAL_NODE="+node, "PI_RPC_CLIENT="+client, "WORK="+work,
		"E_HOME="+ehome, "PI_CODING_AGENT_DIR="+piHome(t, dir, mock.URL), "OPENAI_API_KEY=", "ANTHROPIC_API_KEY=")
	if legacy {
		cmd.Env = append(cmd.Env, "PI_CLIENT_LEGACY=1")
	}
	out, err := cmd.CombinedOutput()
	t.Logf("rpcclient.mjs:\n%s", out)
	if err != nil || !strings.Contains(string(out), "\nPASS") {
		t.Fatalf("pi's RpcClient against e --mode rpc: %v", err)
	}
}

// TestPrimeAgentGuideClients runs the Python and Node clients of
// prime-agent's RPC guide (prime-agent-rpc-guide.txt), copied as they are
// into testdata/prime-agent: each spawns `prime-agent --mode rpc
// --no-session` (a shim on PATH that runs e with the same arguments),
// sends a prompt without an id, prints the text deltas until agent_end
// and says it finished. The answer is the offline model's.
func TestPrimeAgentGuideClients(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the guide's clients run Python and Node")
	}
	node := filepath.Join(piCache(), "node", "bin", "node")
	dir := t.TempDir()
	bin := buildE(t, dir)
	shim := filepath.Join(dir, "shim")
	os.Mkdir(shim, 0o700)
	if err := os.WriteFile(filepath.Join(shim, "prime-agent"), []byte("#!/bin/sh\nexec \"$E_BIN\" \"$@\"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(dir, "work")
	os.Mkdir(work, 0o700)
	for _, c := range []struct {
		name, interp, script, want string
	}{
		{"python", "python3", "client.py", "e/offline: received 2 words: \"Hello, world!\"\n--- Agent finished ---\n"},
		{"node", node, "client.cjs", "e/offline: received 3 words: \"Hello from Node!\"\n[agent finished]\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := exec.LookPath(c.interp); err != nil {
				t.Skipf("%s is not installed: %v", c.interp, err)
			}
			script, err := filepath.Abs(filepath.Join("testdata", "prime-agent", c.script))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, c.interp, script)
			cmd.Dir = work
			cmd.Env = append(os.Environ(), "PATH="+shim+string(os.PathListSeparator)+os.Getenv("PATH"), "E_BIN="+bin,
				"E_HOME="+filepath.Join(dir, "e-home-"+c.name), "PI_CODING_AGENT_DIR="+filepath.Join(dir, "pi-agent-"+c.name),
				"OPENAI_API_KEY=", "ANTHROPIC_API_KEY=")
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("%s %s: %v\nstderr:\n%s", c.interp, c.script, err, stderr.String())
			}
			if string(out) != c.want {
				t.Errorf("the guide's %s client printed %q, want %q", c.name, out, c.want)
			}
		})
	}
}
