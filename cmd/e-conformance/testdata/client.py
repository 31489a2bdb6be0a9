"""A minimal client of the client-side conformance contract, with one bug
switched on by $BUG (none: a correct client). The test proves that each
bug fails the scenarios meant to catch it.

  hang          waits forever when the server dies (reads with no EOF check)
  text-errors   decides a turn failed when its text mentions "error"/"failed"
  u2028         splits the server's output with str.splitlines()
  strict        fails on event types and members it does not know
  output        prints the result's output instead of final_output
  no-asks       never answers asks
  no-tools      never answers tool calls
  small-lines   reads lines with a 64 KiB buffer
  ignore-errors treats an error response like an empty result
"""

import json
import os
import shlex
import subprocess
import sys
import time

BUG = os.environ.get("BUG", "")
KNOWN_EVENTS = {"turn_start", "text", "turn_end", "tool_batch", "tool_start", "tool_end", "error", "warning", "usage"}
KNOWN_FIELDS = {"type", "delta", "session", "request", "aborted", "calls", "id", "outcome", "summary", "content", "message",
                "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_5m_tokens", "cache_write_1h_tokens", "prompt_tokens"}

task = json.loads(os.environ["E_TASK"])
proc = subprocess.Popen(shlex.split(os.environ["E_RPC"]), stdin=subprocess.PIPE, stdout=subprocess.PIPE)
next_id = 0


def send(method, params):
    global next_id
    next_id += 1
    proc.stdin.write((json.dumps({"id": next_id, "method": method, "params": params}) + "\n").encode())
    proc.stdin.flush()
    return next_id


def lines():
    """The server's lines, decoded."""
    if BUG == "u2028":
        buf = ""
        while True:
            chunk = proc.stdout.read1(65536)
            if not chunk:
                break
            buf += chunk.decode()
            parts = buf.splitlines(keepends=True)
            buf = ""
            for p in parts:
                if p.endswith(("\n", "\r", "\u2028", "\u2029")):
                    yield json.loads(p)
                else:
                    buf = p
        return
    while True:
        raw = proc.stdout.readline(65536) if BUG == "small-lines" else proc.stdout.readline()
        if not raw:
            if BUG == "hang":
                while True:
                    time.sleep(1)
            return
        yield json.loads(raw)


stream = lines()


def wait(rid):
    for line in stream:
        t = line.get("type")
        if t == "ask":
            if BUG != "no-asks":
                answer = task["asks"].get(line["method"])
                params = {"ask": line["ask"]}
                if answer is not None:
                    params["result"] = answer
                send("ask.reply", params)
            continue
        if t == "tool_call":
            if BUG != "no-tools":
                content = (task.get("tool_results") or {}).get(line["name"], "")
                send("tool.result", {"call": line["call"], "content": content})
            continue
        if t is not None:
            if BUG == "strict":
                if t not in KNOWN_EVENTS and t != "notice":
                    raise SystemExit(f"unknown event {t}")
                if set(line) - KNOWN_FIELDS - {"ask", "extension", "level", "method", "params", "reasoning_tokens"} and t != "notice":
                    raise SystemExit(f"unknown fields in {t}")
            continue
        if line.get("id") != rid:
            continue  # an ask.reply's response
        if "error" in line:
            if BUG == "ignore-errors":
                return {"session": "", "final_output": "", "error": None}
            print(f"error: {line['error']}", file=sys.stderr)
            sys.exit(1)
        return line["result"]
    print("error: the server went away", file=sys.stderr)
    sys.exit(1)


wait(send("hello", {"ask": True}))
params = {"cwd": task["cwd"]} if task["cwd"] else {}
if task.get("client_tools"):
    params["client_tools"] = task["client_tools"]
session = wait(send("session.create", params))["session"]
result = wait(send("session.prompt", {"session": session, "prompt": task["prompt"]}))
failed = result.get("error") is not None
if BUG == "text-errors":
    text = result.get("output", "").lower()
    failed = failed or "error" in text or "failed" in text
if failed:
    print(f"turn failed: {result.get('error')}", file=sys.stderr)
    sys.exit(1)
print(result["output"] if BUG == "output" else result["final_output"])
proc.stdin.close()
