#!/usr/bin/env python3
"""A random racing pi-dialect client, for record/replay checks of the
recorder (spec/conformance.md 5, "Clients that race running work").

    race-pi-client.py SEED -- CMD ARGS...

It starts CMD (e.g. `e-conformance record --out x.txtar -- e --mode rpc`),
runs a few prompts on the offline model and, while each runs, sends lines
chosen by SEED at random moments (get_state, steer, follow_up, abort,
get_messages), without waiting for what they cause; it waits for each
run's agent_settled, then closes stdin. Exit status: CMD's.
"""

import json
import random
import subprocess
import sys
import threading
import time


def main():
    seed = int(sys.argv[1])
    cmd = sys.argv[sys.argv.index("--") + 1:]
    rnd = random.Random(seed)
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    settled = threading.Semaphore(0)

    def read():
        for raw in p.stdout:
            try:
                obj = json.loads(raw)
            except ValueError:
                continue
            if obj.get("type") == "agent_settled":
                settled.release()

    threading.Thread(target=read, daemon=True).start()
    n = 0

    def send(obj):
        nonlocal n
        n += 1
        obj = dict(obj, id="c%d" % n)
        p.stdin.write((json.dumps(obj) + "\n").encode())
        p.stdin.flush()

    for _ in range(rnd.randint(1, 3)):
        send({"type": "prompt", "message": "/delay %d\n/long %d" % (rnd.choice([0, 20, 80]), rnd.choice([20, 200]))})
        for _ in range(rnd.randint(0, 3)):
            time.sleep(rnd.choice([0, 0.005, 0.03, 0.1]))
            kind = rnd.choice(["get_state", "steer", "follow_up", "abort", "get_messages"])
            if kind in ("steer", "follow_up"):
                send({"type": kind, "message": "/text %s %d" % (kind, n)})
            else:
                send({"type": kind})
        if not settled.acquire(timeout=20):
            break
        # A follow_up or steer may start another run: let it settle too.
        while settled.acquire(timeout=0.5):
            pass
    p.stdin.close()
    sys.exit(p.wait())


if __name__ == "__main__":
    main()
