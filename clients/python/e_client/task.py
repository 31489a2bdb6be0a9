"""Runs one task against e rpc, as the client-side conformance kit expects
(spec/conformance.md, "Client conformance"):

    E_RPC="e rpc" E_TASK='{"prompt":"/text hi","cwd":null,"asks":{}}' python3 -m e_client.task

It spawns $E_RPC, says hello with ask:true, creates a session (in the
task's cwd when given), prompts, answers each ask with the task's result
for its method (none: no result), serves the task's client_tools with its
tool_results (by tool name), prints the turn's final_output as its
last stdout line and exits 0; a failed turn or request prints the error on
stderr and exits 1.
"""

from __future__ import annotations

import json
import os
import sys

from . import Client, RPCError


def main() -> int:
    task = json.loads(os.environ.get("E_TASK") or "{}")
    asks = task.get("asks") or {}
    client = Client(on_ask=lambda ask: asks.get(ask["method"]))
    try:
        client.hello(ask=True)
        results = task.get("tool_results") or {}
        tools = [
            client.register_tool(
                t["name"], lambda args, call: results.get(call.name, ""), t.get("description"), t.get("parameters")
            )
            for t in task.get("client_tools") or []
        ]
        session = client.create_session(cwd=task.get("cwd"), client_tools=tools or None)
        turn = session.prompt(task["prompt"])
        for _ in turn:
            pass  # a real client would show the events
        result = turn.result()
        if result.get("error") is not None:
            print(f"e: turn failed: {result['error']}", file=sys.stderr)
            return 1
        sys.stdout.write(result["final_output"] + "\n")
        sys.stdout.flush()
        return 0
    except RPCError as err:
        code = f" [{err.code}]" if err.code else ""
        print(f"e: {err.method}: {err.message}{code}", file=sys.stderr)
        return 1
    finally:
        client.close(timeout=5)


if __name__ == "__main__":
    sys.exit(main())
