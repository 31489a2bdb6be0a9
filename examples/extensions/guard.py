#!/usr/bin/env python3
"""guard: a reference extension for e (spec/extensions.md), standard library only.

Registers deploy {target}, which asks the person to confirm before it acts, and
a gate that denies bash commands matching the regular expression in
$GUARD_DENY (default "rm -rf"). Single-threaded: lines that arrive while we
wait for an answer are kept in a backlog and handled afterwards.
"""
import json, os, re, sys

PATTERN = os.environ.get("GUARD_DENY") or "rm -rf"
DENY = re.compile(PATTERN)
backlog, last_id = [], 0

def send(msg):  # one line per message; stdout carries nothing else
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()

def read_line():
    line = sys.stdin.buffer.readline()  # splits on LF only
    if not line:
        sys.exit(0)  # EOF: e closed our stdin
    return json.loads(line)

def request(method, params):  # a request to e; waits for its response
    global last_id
    last_id += 1
    my_id = "guard-%d" % last_id
    send({"id": my_id, "method": method, "params": params})
    while True:
        msg = read_line()
        if "method" not in msg and msg.get("id") == my_id:
            return msg
        backlog.append(msg)

def deploy(args):
    target = args.get("target", "")
    answer = request("ui.confirm", {"title": "Deploy?", "message": "to " + target})
    if "error" in answer:
        return {"content": "not deployed: " + answer["error"], "failed": True}
    if answer["result"].get("confirmed"):
        return {"content": "deployed to " + target}
    return {"content": "cancelled"}

def handle(msg):
    method, params = msg.get("method"), msg.get("params") or {}
    if method == "initialize":
        tool = {"name": "deploy", "description": "Deploy the current build to a target, after the person confirms.",
                "parameters": {"type": "object", "required": ["target"], "properties": {"target": {"type": "string"}}}}
        send({"id": msg["id"], "result": {"protocol": 1, "name": "guard", "gate": True, "events": [], "tools": [tool]}})
    elif method == "tool.call" and params.get("name") == "deploy":
        send({"id": msg["id"], "result": deploy(params.get("arguments") or {})})
    elif method == "tool.gate":
        command = (params.get("arguments") or {}).get("command") or ""
        if params.get("name") == "bash" and DENY.search(command):
            send({"id": msg["id"], "result": {"allow": False, "reason": "guard denies commands matching " + PATTERN}})
        else:
            send({"id": msg["id"], "result": {"allow": True}})
    elif method == "shutdown":
        sys.exit(0)
    elif "id" in msg and method:  # events and cancel need no answer; unknown requests do
        send({"id": msg["id"], "error": "guard does not handle " + method})

while True:
    handle(backlog.pop(0) if backlog else read_line())
