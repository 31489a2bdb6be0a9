import subprocess
import json
import sys

# Spawn agent in RPC mode without session persistence

proc = subprocess.Popen(
    ["prime-agent", "--mode", "rpc", "--no-session"],
    stdin=subprocess.PIPE,
    stdout=subprocess.PIPE,
    text=True,
)

def send(cmd: dict) -> None:
    """Send a command with proper JSONL framing."""
    proc.stdin.write(json.dumps(cmd) + "\n")
    proc.stdin.flush()

def read_events():
    """Yield parsed events from stdout."""
    for line in proc.stdout:
        yield json.loads(line)

# Submit prompt

send({"type": "prompt", "message": "Hello, world!"})

# Process streaming response

for ev in read_events():
    if ev.get("type") == "message_update":
        delta = ev.get("assistantMessageEvent", {})
        if delta.get("type") == "text_delta":
            sys.stdout.write(delta["delta"])
            sys.stdout.flush()
    
    if ev.get("type") == "agent_end":
        print("\n--- Agent finished ---")
        break

