"""Tests of e_client against the real e rpc (offline model), built once.

E_BIN names an e binary to use; otherwise the tests build one with go build.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest

HERE = pathlib.Path(__file__).resolve().parent.parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE))

from e_client import Client, RPCError, ServerExited, protocol  # noqa: E402

_built: dict[str, str] = {}


def e_bin() -> str:
    if os.environ.get("E_BIN"):
        return os.environ["E_BIN"]
    if "bin" not in _built:
        d = tempfile.mkdtemp(prefix="e-client-py-")
        subprocess.run(["go", "build", "-o", os.path.join(d, "e"), "./cmd/e"], cwd=REPO, check=True)
        _built["bin"] = os.path.join(d, "e")
    return _built["bin"]


class EnvMixin:
    def setUp(self) -> None:  # noqa: D401
        self.home = tempfile.mkdtemp(prefix="e-home-")
        self.cwd = tempfile.mkdtemp(prefix="e-cwd-")
        self.env = {**os.environ, "E_HOME": self.home, "OPENAI_API_KEY": "", "ANTHROPIC_API_KEY": ""}

    def tearDown(self) -> None:
        shutil.rmtree(self.home, ignore_errors=True)
        shutil.rmtree(self.cwd, ignore_errors=True)

    def client(self, **kw) -> Client:
        c = Client([e_bin(), "rpc", "--ne"], cwd=self.cwd, env=self.env, stderr=subprocess.DEVNULL, **kw)
        self.addCleanup(c.close)
        return c


class ClientTest(EnvMixin, unittest.TestCase):
    def test_turn_streams_typed_events(self) -> None:
        e = self.client()
        hello = e.hello()
        self.assertIn("session.prompt", hello["methods"])
        s = e.create_session()
        turn = s.prompt("/text hello world")
        events = list(turn)
        types = [ev["type"] for ev in events]
        self.assertEqual(types[0], "turn_start")
        self.assertEqual(types[-1], "turn_end")
        for ev in events:
            self.assertIn(ev["type"], protocol.EVENT_TYPES)
            self.assertEqual(ev["session"], s.id)
        self.assertEqual("".join(ev["delta"] for ev in events if ev["type"] == "text"), "hello world")
        result = turn.result()
        self.assertEqual(result["final_output"], "hello world")
        self.assertIsNone(result["error"])

    def test_output_schema_and_budget(self) -> None:  # J1, J2, N1, N2
        e = self.client()
        s = e.create_session()
        schema = {"type": "object", "required": ["ok"], "properties": {"ok": {"type": "boolean"}}}
        result = s.run("review", output_schema=schema)
        self.assertEqual(result["stop_reason"], "completed")
        self.assertEqual(result["structured_output"], {"ok": False})
        result = s.run('/tool bash {"command":"true"}\n/then\n/text never', max_model_calls=1)
        self.assertEqual(result["stop_reason"], "max_model_calls")
        self.assertIsNone(result["structured_output"])

    def test_error_is_exception_with_code(self) -> None:
        e = self.client()
        with self.assertRaises(RPCError) as ctx:
            e.call("session.info", {"session": "nope"})
        err = ctx.exception
        self.assertEqual(err.method, "session.info")
        self.assertIn("nope", err.message)
        if "code" in err.response:  # the server sends codes (issue 11.5)
            self.assertEqual(err.code, err.response["code"])
        with self.assertRaises(RPCError) as ctx:
            e.call("no.such.method")
        self.assertIn("unknown method", ctx.exception.message)

    def test_steer_and_interrupt(self) -> None:
        e = self.client()
        s = e.create_session()
        turn = s.prompt("/delay 50\n/long 400")
        seen_text = False
        for ev in turn:
            if ev["type"] == "text" and not seen_text:
                seen_text = True
                self.assertTrue(s.steer("stop soon")["held"])
                s.interrupt()
        self.assertTrue(turn.result()["aborted"])
        with self.assertRaises(RPCError) as ctx:
            s.steer("nothing runs")
        self.assertIn("no running turn", ctx.exception.message)

    def test_ask_through_callback(self) -> None:
        asked = []

        def on_ask(ask):
            asked.append(ask)
            return {"decision": "allow"}

        e = self.client(on_ask=on_ask)
        e.hello(ask=True)
        s = e.create_session(approval="all")
        result = s.run('/tool ls {"path": "."}\n/then\n/text listed')
        self.assertEqual(result["final_output"], "listed")
        self.assertEqual([a["method"] for a in asked], ["tool.approve"])
        self.assertEqual(asked[0]["params"]["name"], "ls")
        self.assertEqual(result["tools"], {"calls": 1, "failures": 0})

    def test_server_death_fails_waiting_calls(self) -> None:
        e = self.client()
        s = e.create_session()
        turn = s.prompt("/delay 100\n/long 1000")
        for ev in turn:
            if ev["type"] == "text":
                e._proc.kill()
                break
        start = time.monotonic()
        with self.assertRaises(ServerExited):
            turn.result(timeout=10)
        self.assertLess(time.monotonic() - start, 10)
        with self.assertRaises(ServerExited):
            s.info()

    def test_concurrent_sessions(self) -> None:
        e = self.client()
        sessions = [e.create_session() for _ in range(3)]
        results: dict[str, str] = {}

        def run(s):
            results[s.id] = s.run(f"/text from {s.id}")["final_output"]

        threads = [threading.Thread(target=run, args=(s,)) for s in sessions]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        self.assertEqual(results, {s.id: f"from {s.id}" for s in sessions})


TWO_TICKETS = '/tool ticket {"id":1}\n/tool ticket {"id":2}\n/then\n/text ok'
TICKET = {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}


class ClientToolsTest(EnvMixin, unittest.TestCase):
    """Tools the client provides (G1, G2), served by register_tool's handlers."""

    def test_two_concurrent_calls(self) -> None:  # G1
        e = self.client()
        both = threading.Barrier(2, timeout=20)  # each handler waits for the other: both run at once

        def ticket(args: dict, call) -> str:
            both.wait()
            return f"ticket {args['id']}: open"

        e.hello(ask=True)
        s = e.create_session(client_tools=[e.register_tool("ticket", ticket, "Look up a ticket.", TICKET)])
        turn = s.prompt(TWO_TICKETS)
        ends = {ev["id"]: ev for ev in turn if ev["type"] == "tool_end"}
        result = turn.result()
        self.assertEqual(result["final_output"], "ok")
        self.assertEqual(result["tools"], {"calls": 2, "failures": 0})
        self.assertEqual({i: ev["content"] for i, ev in ends.items()}, {1: "ticket 1: open", 2: "ticket 2: open"})

    def test_handler_error_and_refusal_before_hello(self) -> None:  # G1
        e = self.client()

        def broken(args: dict, call) -> str:
            raise ValueError("no such ticket")

        spec = e.register_tool("ticket", broken, parameters=TICKET)
        with self.assertRaises(RPCError) as cm:
            e.create_session(client_tools=[spec])
        self.assertEqual(cm.exception.code, "invalid_params")
        e.hello(ask=True)
        s = e.create_session(client_tools=[spec])
        turn = s.prompt('/tool ticket {"id":1}\n/then\n/text ok')
        ends = [ev for ev in turn if ev["type"] == "tool_end"]
        self.assertEqual([(ev["outcome"], ev["content"]) for ev in ends], [("failed", "no such ticket")])

    def test_interrupt_cancels_pending_calls(self) -> None:  # G2
        e = self.client()
        started, returned = threading.Semaphore(0), threading.Semaphore(0)
        cancelled: list[bool] = []

        def ticket(args: dict, call) -> str:
            started.release()
            cancelled.append(call.cancelled.wait(20))
            returned.release()
            return "too late"

        e.hello(ask=True)
        s = e.create_session(client_tools=[e.register_tool("ticket", ticket, parameters=TICKET)])
        turn = s.prompt(TWO_TICKETS)
        for _ in range(2):
            self.assertTrue(started.acquire(timeout=20))
        s.interrupt()
        outcomes = [ev["outcome"] for ev in turn if ev["type"] == "tool_end"]
        self.assertTrue(turn.result()["aborted"])
        self.assertEqual(outcomes, ["interrupted", "interrupted"])
        for _ in range(2):  # the handlers see the cancel lines on their threads
            self.assertTrue(returned.acquire(timeout=20))
        self.assertEqual(cancelled, [True, True])

    def test_never_answering_client_times_out(self) -> None:  # G2
        e = self.client()
        e.hello(ask=True)

        def never(args: dict, call) -> str:
            call.cancelled.wait(20)
            return "too late"

        s = e.create_session(client_tools=[e.register_tool("ticket", never)], client_tool_timeout_ms=100)
        turn = s.prompt('/tool ticket {"id":1}\n/then\n/text went on')
        ends = [ev for ev in turn if ev["type"] == "tool_end"]
        self.assertEqual(turn.result()["final_output"], "went on")
        self.assertEqual(ends[0]["outcome"], "failed")
        self.assertIn("timed out", ends[0]["content"])


class ReadmeTest(EnvMixin, unittest.TestCase):
    def test_shell_then_fork_at_its_entry(self) -> None:  # M18, M19
        e = self.client()
        s = e.create_session()
        turn = s.shell("echo hi; exit 3")
        self.assertEqual("".join(ev["delta"] for ev in turn if ev["type"] == "shell_output"), "hi\n")
        shell = turn.result()
        self.assertEqual((shell["output"], shell["exit_code"], shell["cancelled"]), ("hi\n", 3, False))
        self.assertEqual(s.run("/text after")["final_output"], "after")
        fork = s.fork(at=shell["entry"])
        entries = e.call("session.entries", {"session": fork.id})
        self.assertEqual([x["id"] for x in entries["entries"]], [shell["entry"]])
        self.assertEqual(entries["entries"][0]["shell"]["command"], "echo hi; exit 3")

    def test_readme_example_runs_as_written(self) -> None:
        readme = (HERE / "README.md").read_text()
        example = re.search(r"```python\n(.*?)```", readme, re.S).group(1)
        self.assertLessEqual(len(example.strip().splitlines()), 10)
        bindir = tempfile.mkdtemp(prefix="e-path-")
        self.addCleanup(shutil.rmtree, bindir, True)
        os.symlink(e_bin(), os.path.join(bindir, "e"))
        env = {**self.env, "PATH": bindir + os.pathsep + os.environ.get("PATH", "")}
        out = subprocess.run([sys.executable, "-"], input=example, text=True, capture_output=True,
                             cwd=HERE, env=env, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout.splitlines()[-1], "hello from python")


class TaskTest(EnvMixin, unittest.TestCase):
    def run_task(self, task: dict) -> subprocess.CompletedProcess:
        env = {**self.env, "E_RPC": f"{e_bin()} rpc --ne", "E_TASK": json.dumps(task), "PYTHONPATH": str(HERE)}
        return subprocess.run([sys.executable, "-m", "e_client.task"], capture_output=True, text=True,
                              env=env, cwd=self.cwd, timeout=60)

    def test_task_prints_final_output(self) -> None:
        out = self.run_task({"prompt": "/text one two", "cwd": self.cwd, "asks": {}})
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout.splitlines()[-1], "one two")

    def test_task_failure_exits_1(self) -> None:
        out = self.run_task({"prompt": "/error fatal boom", "cwd": None, "asks": {}})
        self.assertEqual(out.returncode, 1)
        self.assertIn("boom", out.stderr)
        out = self.run_task({"prompt": "/text x", "cwd": os.path.join(self.cwd, "missing"), "asks": {}})
        self.assertEqual(out.returncode, 1)
        self.assertIn("session.create", out.stderr)


if __name__ == "__main__":
    unittest.main()
