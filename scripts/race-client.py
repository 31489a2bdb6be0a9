#!/usr/bin/env python3
"""A random racing client of any of e's JSON Lines front ends, for
record/replay checks of the recorder (spec/conformance.md 5, "Clients that
race running work").

    race-client.py DIALECT SEED [--bug KIND] -- CMD ARGS...

DIALECT is erpc (e rpc), pi (e --mode rpc) or acp (e acp). The client
starts CMD (e.g. `e-conformance record --out x.txtar -- e rpc`), runs a
few prompts on the offline model and, while each runs, sends lines chosen
by SEED at random moments (e rpc: session.info, session.steer,
session.interrupt, session.messages, a second session.prompt; pi:
get_state, steer, follow_up, abort, get_messages; ACP: session/cancel, a
second session/prompt, session/list), without waiting for what they cause;
it waits for each prompt's end (e rpc: its response; pi: agent_settled;
ACP: the prompt's answer), then closes stdin. ACP's session/new names the
directory the recorder says it runs in (its first stderr line).

--bug plays a client with a real-world bug (e rpc only, but close-mid-turn
and garbage, which every dialect takes):
  before-hello    sends session.create and a prompt before hello
  ignore-asks     asks for tool approvals (approval "all") and never answers
  reuse-ids       gives every request the same id
  garbage         sends a non-JSON line and a JSON array among its requests
  close-mid-turn  closes stdin while the first prompt runs, then waits
  replace         (pi and ACP) ends each prompt's racing lines with one that
                  stops the run to replace or end the session: pi's
                  new_session or compact, ACP's session/close (then stops)
Exit status: CMD's.
"""

import json
import random
import re
import subprocess
import sys
import threading
import time


class Client:
    def __init__(self, cmd, bug):
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.bug = bug
        self.n = 0
        self.lock = threading.Lock()
        self.lines = []  # every decoded stdout object, in order
        self.cond = threading.Condition(self.lock)
        self.cwd = None
        threading.Thread(target=self.read, daemon=True).start()
        threading.Thread(target=self.read_stderr, daemon=True).start()

    def read(self):
        for raw in self.p.stdout:
            try:
                obj = json.loads(raw)
            except ValueError:
                continue
            with self.cond:
                self.lines.append(obj)
                self.cond.notify_all()
        with self.cond:
            self.lines.append(None)  # EOF
            self.cond.notify_all()

    def read_stderr(self):
        for raw in self.p.stderr:
            sys.stderr.buffer.write(raw)
            m = re.match(rb"e-conformance record: cwd (.*)\n", raw)
            if m:
                with self.cond:
                    self.cwd = m.group(1).decode()
                    self.cond.notify_all()

    def wait(self, pred, timeout=20, start=0):
        """Waits for a line (from index start) pred holds for; returns it,
        or None at EOF or timeout."""
        end = time.monotonic() + timeout
        with self.cond:
            i = start
            while True:
                while i < len(self.lines):
                    obj = self.lines[i]
                    i += 1
                    if obj is None:
                        return None
                    if pred(obj):
                        return obj
                left = end - time.monotonic()
                if left <= 0:
                    return None
                self.cond.wait(left)

    def mark(self):
        with self.lock:
            return len(self.lines)

    def send(self, obj, notify=False):
        """Sends obj with the next id (none when notify), returns the id."""
        self.n += 1
        if not notify:
            obj = dict(obj, id="same" if self.bug == "reuse-ids" else "c%d" % self.n)
        self.raw((json.dumps(obj) + "\n").encode())
        return obj.get("id")

    def raw(self, b):
        try:
            self.p.stdin.write(b)
            self.p.stdin.flush()
        except (BrokenPipeError, ValueError):
            pass

    def close(self):
        try:
            self.p.stdin.close()
        except (BrokenPipeError, ValueError):
            pass


def prompt_text(rnd):
    return "/delay %d\n/long %d" % (rnd.choice([0, 20, 80]), rnd.choice([20, 200]))


def erpc(c, rnd):
    if c.bug != "before-hello":
        c.send({"method": "hello", "params": {"ask": True}})
    params = {"model": "e/offline"}
    if c.bug == "ignore-asks":
        params["approval"] = "all"
    mark = c.mark()
    cid = c.send({"method": "session.create", "params": params})
    if c.bug == "before-hello":
        c.send({"method": "hello", "params": {"ask": True}})
    created = c.wait(lambda o: "type" not in o and o.get("id") == cid and "session" in (o.get("result") or {}), start=mark)
    if created is None:
        return
    s = created["result"]["session"]
    for k in range(rnd.randint(1, 3)):
        text = prompt_text(rnd)
        if c.bug == "ignore-asks":
            text = '/tool bash {"command":"echo hi"}\n/then\n' + text
        mark = c.mark()
        pid = c.send({"method": "session.prompt", "params": {"session": s, "prompt": text}})
        if c.bug == "garbage" and k == 0:
            c.raw(b"this is not json\n")
            c.raw(b"[1,2,3]\n")
        for _ in range(rnd.randint(0, 3)):
            time.sleep(rnd.choice([0, 0.005, 0.03, 0.1]))
            kind = rnd.choice(["session.info", "session.steer", "session.interrupt", "session.messages", "session.prompt"])
            params = {"session": s}
            if kind == "session.steer":
                params["text"] = "/text steer %d" % c.n
            if kind == "session.prompt":
                params["prompt"] = "/text again %d" % c.n
            c.send({"method": kind, "params": params})
        if c.bug == "close-mid-turn":
            time.sleep(rnd.choice([0, 0.01, 0.05]))
            return
        # The prompt's own response; with reused ids, any response
        # after the prompt's events (a reply to that id).
        c.wait(lambda o: "type" not in o and o.get("id") == pid and isinstance(o.get("result"), dict) and "output" in o["result"]
               or o.get("type") == "turn_end", start=mark)
        time.sleep(0.2)  # a racing second prompt may run: let it end


def pi(c, rnd):
    # The same choices, in the same order, as scripts/race-pi-client.py
    # made, so that its seeds replay the same sessions.
    for _ in range(rnd.randint(1, 3)):
        mark = c.mark()
        c.send({"type": "prompt", "message": prompt_text(rnd)})
        if c.bug == "garbage":
            c.raw(b"this is not json\n")
        for _ in range(rnd.randint(0, 3)):
            time.sleep(rnd.choice([0, 0.005, 0.03, 0.1]))
            kind = rnd.choice(["get_state", "steer", "follow_up", "abort", "get_messages"])
            if kind in ("steer", "follow_up"):
                c.send({"type": kind, "message": "/text %s %d" % (kind, c.n)})
            else:
                c.send({"type": kind})
        if c.bug == "replace":
            # Its own random stream: the seeds replay the same sessions
            # without the bug.
            time.sleep(c.rnd.choice([0, 0.002, 0.005, 0.03]))
            c.send({"type": c.rnd.choice(["new_session", "compact"])})
        if c.bug == "close-mid-turn":
            return
        if c.wait(lambda o: o.get("type") == "agent_settled", start=mark) is None:
            break
        # A follow_up or steer may start another run: let it settle too.
        while c.wait(lambda o: o.get("type") == "agent_settled", timeout=0.5, start=c.mark()) is not None:
            pass


def acp(c, rnd):
    c.send({"jsonrpc": "2.0", "method": "initialize", "params": {"protocolVersion": 1}})
    with c.cond:
        c.cond.wait_for(lambda: c.cwd is not None, timeout=10)
    mark = c.mark()
    nid = c.send({"jsonrpc": "2.0", "method": "session/new", "params": {"cwd": c.cwd, "mcpServers": []}})
    new = c.wait(lambda o: o.get("id") == nid and "result" in o, start=mark)
    if new is None:
        return
    sid = new["result"]["sessionId"]
    for _ in range(rnd.randint(1, 3)):
        mark = c.mark()
        pid = c.send({"jsonrpc": "2.0", "method": "session/prompt",
                      "params": {"sessionId": sid, "prompt": [{"type": "text", "text": prompt_text(rnd)}]}})
        if c.bug == "garbage":
            c.raw(b"this is not json\n")
        for _ in range(rnd.randint(0, 3)):
            time.sleep(rnd.choice([0, 0.005, 0.03, 0.1]))
            kind = rnd.choice(["session/cancel", "session/prompt", "session/list"])
            if kind == "session/cancel":
                c.send({"jsonrpc": "2.0", "method": kind, "params": {"sessionId": sid}}, notify=True)
            elif kind == "session/prompt":
                c.send({"jsonrpc": "2.0", "method": kind,
                        "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "/text again %d" % c.n}]}})
            else:
                c.send({"jsonrpc": "2.0", "method": kind, "params": {}})
        if c.bug == "replace":
            time.sleep(c.rnd.choice([0, 0.002, 0.005, 0.03]))
            c.send({"jsonrpc": "2.0", "method": "session/close", "params": {"sessionId": sid}})
            c.wait(lambda o: o.get("id") == pid and "method" not in o, start=mark)
            return
        if c.bug == "close-mid-turn":
            return
        c.wait(lambda o: o.get("id") == pid and "method" not in o, start=mark)
        time.sleep(0.2)  # a racing second prompt may run: let it end


def main():
    args = sys.argv[1:]
    cut = args.index("--")
    cmd, args = args[cut + 1:], args[:cut]
    dialect, seed = args[0], int(args[1])
    bug = args[args.index("--bug") + 1] if "--bug" in args else None
    c = Client(cmd, bug)
    c.rnd = random.Random(seed + 1000)
    {"erpc": erpc, "pi": pi, "acp": acp}[dialect](c, random.Random(seed))
    c.close()
    sys.exit(c.p.wait())


if __name__ == "__main__":
    main()
