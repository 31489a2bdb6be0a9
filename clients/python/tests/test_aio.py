"""Tests of e_client.aio, the asyncio client, against the real e rpc (offline model)."""

from __future__ import annotations

import asyncio
import subprocess
import unittest

from e_client import RPCError, ServerExited
from e_client.aio import AsyncClient

from .test_client import EnvMixin, e_bin


class AsyncClientTest(EnvMixin, unittest.IsolatedAsyncioTestCase):
    async def client(self, **kw) -> AsyncClient:  # type: ignore[override]
        c = await AsyncClient.start([e_bin(), "rpc", "--ne"], cwd=self.cwd, env=self.env, stderr=subprocess.DEVNULL, **kw)
        self.addAsyncCleanup(c.close)
        return c

    async def test_turn_streams_events(self) -> None:
        e = await self.client()
        hello = await e.hello()
        self.assertIn("session.prompt", hello["methods"])
        s = await e.create_session()
        turn = s.prompt("/text hello async\u2028world")
        events = [ev async for ev in turn]
        self.assertEqual(events[0]["type"], "turn_start")
        self.assertEqual(events[-1]["type"], "turn_end")
        self.assertEqual("".join(ev["delta"] for ev in events if ev["type"] == "text"), "hello async\u2028world")
        self.assertEqual((await turn.result())["final_output"], "hello async\u2028world")

    async def test_concurrent_sessions(self) -> None:
        e = await self.client()
        await e.hello()
        a, b = await asyncio.gather(e.create_session(), e.create_session())
        ra, rb = await asyncio.gather(a.run("/text one"), b.run("/text two"))
        self.assertEqual((ra["final_output"], rb["final_output"]), ("one", "two"))

    async def test_error_is_exception_with_code(self) -> None:
        e = await self.client()
        with self.assertRaises(RPCError) as ctx:
            await e.call("session.info", {"session": "nope"})
        self.assertEqual(ctx.exception.method, "session.info")
        self.assertTrue(ctx.exception.code)

    async def test_async_ask_handler(self) -> None:
        asked = []

        async def on_ask(ask):
            asked.append(ask["method"])
            return {"decision": "allow"}

        e = await self.client(on_ask=on_ask)
        await e.hello()
        s = await e.create_session(approval="all")
        result = await s.run('/tool ls {"path": "."}\n/then\n/text done')
        self.assertEqual(result["final_output"], "done")
        self.assertEqual(asked, ["tool.approve"])

    async def test_server_death_fails_waiting_calls(self) -> None:
        e = await self.client()
        s = await e.create_session()
        turn = s.prompt("/delay 100\n/long 1000")
        async for ev in turn:
            if ev["type"] == "text":
                e._proc.kill()  # type: ignore[union-attr]
                break
        with self.assertRaises(ServerExited):
            await turn.result(timeout=10)
        with self.assertRaises(ServerExited):
            await s.info()


if __name__ == "__main__":
    unittest.main()
