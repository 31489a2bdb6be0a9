package acp

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// sdkDir is where scripts/acp-sdk-setup.sh installs the ACP TypeScript SDK.
func sdkDir() string {
	dir := os.Getenv("E_TEST_CACHE")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".cache", "e-test")
	}
	return filepath.Join(dir, "acp-sdk-2.4.0")
}

// TestTypeScriptSDK drives e acp with the official ACP TypeScript SDK
// (testdata/sdkclient.mjs): initialize, a prompt, a permission request
// answered allow and one answered reject, a cancel mid-turn. It needs Node
// and the SDK (scripts/acp-sdk-setup.sh); without them it is skipped.
func TestTypeScriptSDK(t *testing.T) {
	sdk := sdkDir()
	if _, err := os.Stat(filepath.Join(sdk, "node_modules", "@agentclientprotocol", "sdk", "package.json")); err != nil {
		t.Skipf("the ACP TypeScript SDK is not installed in %s: run scripts/acp-sdk-setup.sh", sdk)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not on PATH")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "e")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/e-agent/e/cmd/e").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	// The script resolves the SDK from its own directory's node_modules.
	client := filepath.Join(dir, "client")
	if err := os.MkdirAll(client, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(sdk, "node_modules"), filepath.Join(client, "node_modules")); err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile(filepath.Join("testdata", "sdkclient.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(client, "sdkclient.mjs"), script, 0o644); err != nil {
		t.Fatal(err)
	}
	cwd := filepath.Join(dir, "work")
	if err := os.MkdirAll(cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, filepath.Join(client, "sdkclient.mjs"), bin, cwd)
	cmd.Env = append(os.Environ(), "E_HOME="+filepath.Join(dir, "home"), "OPENAI_API_KEY=", "ANTHROPIC_API_KEY=")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the SDK client failed: %v\nstdout: %s\nstderr: %s", err, out, stderr.String())
	}
	var got struct {
		ProtocolVersion int               `json:"protocolVersion"`
		StopReasons     []string          `json:"stopReasons"`
		Updates         []string          `json:"updates"`
		Permissions     []map[string]any  `json:"permissions"`
		Text            map[string]string `json:"text"`
		ExitCode        int               `json:"exitCode"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("the client printed %q: %v", out, err)
	}
	t.Logf("SDK client saw: %s", out)
	if got.ProtocolVersion != 1 || got.ExitCode != 0 {
		t.Errorf("protocol version %d, e acp exit %d; want 1 and 0", got.ProtocolVersion, got.ExitCode)
	}
	if diff := cmp.Diff([]string{"end_turn", "end_turn", "end_turn", "cancelled"}, got.StopReasons); diff != "" {
		t.Errorf("stop reasons (-want +got):\n%s", diff)
	}
	if len(got.Permissions) != 2 {
		t.Errorf("%d permission requests, want 2 (the write, the bash): %v", len(got.Permissions), got.Permissions)
	}
	for _, want := range []string{"call_1:completed", "call_2:failed", "agent_message_chunk", "tool_call", "usage_update", "session_info_update"} {
		if !slices.Contains(got.Updates, want) {
			t.Errorf("no %s among the updates: %v", want, got.Updates)
		}
	}
	if b, err := os.ReadFile(filepath.Join(cwd, "sdk.txt")); err != nil || string(b) != "ok" {
		t.Errorf("sdk.txt = %q, %v; want the allowed write to have run", b, err)
	}
	if _, err := os.Stat(filepath.Join(cwd, "rejected")); err == nil {
		t.Error("the rejected bash call ran")
	}
}
