"""A minimal client of e rpc for the client-side kit's own tests
(TestClientKit): it does the task the kit sets (spec/conformance.md §6.1),
correctly, or with one classic bug planted:

    python3 task.py                  # correct
    python3 task.py splitlines       # splits the server's output with str.splitlines()
                                     # and skips the pieces that are not JSON
    python3 task.py reuse-id         # sends every request with id 1
"""

import codecs
import json
import os
import shlex
import subprocess
import sys

BUG = sys.argv[1] if len(sys.argv) > 1 else ""
# What str.splitlines() breaks lines at.
BREAKS = "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"


def main() -> int:
    task = json.loads(os.environ["E_TASK"])
    proc = subprocess.Popen(shlex.split(os.environ["E_RPC"]), stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    next_id = 0
    pending = []  # lines read but not handled yet
    partial = []  # splitlines: the start of a line the next chunk ends
    decoder = codecs.getincrementaldecoder("utf-8")()

    def send(method, params):
        nonlocal next_id
        next_id += 1
        rid = 1 if BUG == "reuse-id" else next_id
        proc.stdin.write((json.dumps({"id": rid, "method": method, "params": params}) + "\n").encode())
        proc.stdin.flush()
        return rid

    def read_line():
        if pending:
            return pending.pop(0)
        if BUG == "splitlines":
            # The bug: a chunk of output split with str.splitlines(), which
            # also breaks lines at U+2028, U+2029 and other separators.
            chunk = proc.stdout.read1(1 << 16)
            if not chunk:
                return None
            parts = (partial.pop() if partial else "") + decoder.decode(chunk)
            parts = parts.splitlines(keepends=True)
            if parts and parts[-1] == parts[-1].rstrip(BREAKS):
                partial.append(parts.pop())  # the chunk ended inside a line
            pending.extend(parts)
            return read_line()
        line = proc.stdout.readline()
        return line.decode() if line else None

    def call(method, params):
        rid = send(method, params)
        while True:
            line = read_line()
            if line is None:
                print(f"e: {method}: the server exited", file=sys.stderr)
                sys.exit(1)
            if not line.strip():
                continue
            try:
                msg = json.loads(line)
            except ValueError:
                if BUG != "splitlines":
                    raise
                continue  # a forgiving reader: what it broke goes unnoticed
            if "type" in msg:
                if msg["type"] == "ask":
                    answer = {"ask": msg["ask"]}
                    if msg["method"] in task["asks"]:
                        answer["result"] = task["asks"][msg["method"]]
                    call("ask.reply", answer)
                continue
            if msg.get("id") != rid:
                continue
            if "error" in msg:
                print(f"e: {method}: {msg['error']}", file=sys.stderr)
                sys.exit(1)
            return msg["result"]

    call("hello", {"ask": True})
    params = {"cwd": task["cwd"]} if task.get("cwd") else {}
    session = call("session.create", params)["session"]
    result = call("session.prompt", {"session": session, "prompt": task["prompt"]})
    if result.get("error") is not None:
        print(f"e: turn failed: {result['error']}", file=sys.stderr)
        return 1
    sys.stdout.write(result["final_output"] + "\n")
    proc.stdin.close()
    proc.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
