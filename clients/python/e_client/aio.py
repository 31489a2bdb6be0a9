"""The asyncio client of e rpc, beside the threaded one (same protocol, same
errors, stdlib only).

    import asyncio
    from e_client.aio import AsyncClient

    async def main() -> None:
        async with AsyncClient() as e:              # spawns `e rpc` ($E_RPC or E_BIN overrides)
            await e.hello()
            s = await e.create_session()
            turn = s.prompt("/text hello from asyncio")
            async for ev in turn:                   # typed events, until the response
                if ev["type"] == "text":
                    print(ev["delta"], end="")
            print((await turn.result())["final_output"])

    asyncio.run(main())

Everything runs on the event loop that made the client: one reader task
routes responses to their requests' futures and events to their turns'
queues. Event types this client does not know are yielded as they are:
skip what you do not know (the protocol is additive).
"""

from __future__ import annotations

import asyncio
import inspect
import json
from typing import Any, AsyncIterator, Awaitable, Callable, Optional, Union

from . import RPCError, ServerExited, default_command, protocol

__all__ = ["AsyncClient", "AsyncSession", "AsyncTurn"]

# e rpc's lines can be long (a 1 MB answer is one result line); the
# stream's default 64 KiB limit would fail them.
_LINE_LIMIT = 1 << 30

_DONE = object()  # ends a turn's event queue


class _Call:
    def __init__(self, method: str, loop: asyncio.AbstractEventLoop):
        self.method = method
        self.events: asyncio.Queue = asyncio.Queue()
        self.future: asyncio.Future = loop.create_future()

    def finish(self, result: Any = None, error: Optional[RPCError] = None) -> None:
        if self.future.done():
            return
        if error is not None:
            self.future.set_exception(error)
        else:
            self.future.set_result(result)
        self.events.put_nowait(_DONE)


AskHandler = Callable[[protocol.AskLine], Union[Any, Awaitable[Any]]]


class AsyncClient:
    """One e rpc process, driven from one asyncio event loop. Make it with
    ``await AsyncClient.start(...)`` or ``async with AsyncClient(...)``."""

    def __init__(
        self,
        command: Optional[list[str]] = None,
        *,
        on_ask: Optional[AskHandler] = None,
        on_notice: Optional[Callable[[protocol.NoticeLine], None]] = None,
        cwd: Optional[str] = None,
        env: Optional[dict[str, str]] = None,
        stderr: Any = None,
    ):
        self.on_ask = on_ask
        self.on_notice = on_notice
        self._args = (command or default_command(), cwd, env, stderr)
        self._proc: Optional[asyncio.subprocess.Process] = None
        self._next_id = 0
        self._calls: dict[int, _Call] = {}
        self._exited: Optional[str] = None
        self._reader: Optional[asyncio.Task] = None
        self._tasks: set[asyncio.Task] = set()  # ask handlers in flight

    @classmethod
    async def start(cls, command: Optional[list[str]] = None, **kw: Any) -> "AsyncClient":
        """Spawns the server and returns the client."""
        c = cls(command, **kw)
        await c._spawn()
        return c

    async def _spawn(self) -> None:
        command, cwd, env, stderr = self._args
        self._proc = await asyncio.create_subprocess_exec(
            *command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=stderr,
            cwd=cwd,
            env=env,
            limit=_LINE_LIMIT,
        )
        self._reader = asyncio.get_running_loop().create_task(self._read())

    async def __aenter__(self) -> "AsyncClient":
        if self._proc is None:
            await self._spawn()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    # -- the wire --

    async def _read(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        detail = "end of output"
        try:
            while True:
                # readline splits at \n only: U+2028 inside a string is not a line end.
                raw = await self._proc.stdout.readline()
                if not raw:
                    break
                try:
                    line = json.loads(raw)
                except ValueError:
                    continue  # not a protocol line; nothing to route
                if isinstance(line, dict):
                    self._route(line)
        except (OSError, ValueError) as err:
            detail = str(err)
        code = await self._proc.wait()
        self._exited = f"{detail}, exit status {code}"
        calls, self._calls = self._calls, {}
        for call in calls.values():
            call.finish(error=ServerExited(call.method, self._exited))

    def _route(self, line: dict) -> None:
        kind = line.get("type")
        if kind == "ask":
            task = asyncio.get_running_loop().create_task(self._answer(line))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
            return
        if kind == "notice":
            if self.on_notice:
                self.on_notice(line)  # type: ignore[arg-type]
            return
        if kind is not None:
            # An event: it belongs to the request it serves.
            call = self._calls.get(line.get("request"))  # type: ignore[arg-type]
            if call is not None:
                call.events.put_nowait(line)
            return
        if "result" not in line and "error" not in line:
            return
        call = self._calls.pop(line.get("id"), None)  # type: ignore[arg-type]
        if call is None:
            return
        if "error" in line:
            call.finish(error=RPCError(call.method, str(line["error"]), str(line.get("code") or ""), line))
        else:
            call.finish(result=line["result"])

    async def _answer(self, ask: dict) -> None:
        result = None
        if self.on_ask is not None:
            try:
                result = self.on_ask(ask)  # type: ignore[arg-type]
                if inspect.isawaitable(result):
                    result = await result
            except Exception:  # a failing handler declines the question
                result = None
        params: dict[str, Any] = {"ask": ask["ask"]}
        if result is not None:
            params["result"] = result
        try:
            await self.call("ask.reply", params)
        except RPCError:
            pass  # the ask was cancelled meanwhile, or the server went away

    # -- requests --

    def send(self, method: str, params: Optional[dict] = None) -> _Call:
        """Sends a request and returns at once; see call and AsyncTurn."""
        if self._proc is None or self._proc.stdin is None:
            raise RuntimeError("e_client.aio: the client is not started (await AsyncClient.start() or use async with)")
        self._next_id += 1
        rid = self._next_id
        call = _Call(method, asyncio.get_running_loop())
        if self._exited is not None:
            call.finish(error=ServerExited(method, self._exited))
            return call
        line: dict[str, Any] = {"id": rid, "method": method}
        if params:
            line["params"] = {k: v for k, v in params.items() if v is not None}
        try:
            # ensure_ascii keeps U+2028/U+2029 escaped: every JSON reader agrees on them.
            self._proc.stdin.write((json.dumps(line, separators=(",", ":")) + "\n").encode())
        except (BrokenPipeError, ConnectionResetError, RuntimeError) as err:
            call.finish(error=ServerExited(method, str(err)))
            return call
        self._calls[rid] = call
        return call

    async def call(self, method: str, params: Optional[dict] = None, timeout: Optional[float] = None) -> Any:
        """Sends a request and returns its result, or raises RPCError."""
        c = self.send(method, params)
        assert self._proc is not None and self._proc.stdin is not None
        try:
            await self._proc.stdin.drain()
        except (BrokenPipeError, ConnectionResetError) as err:
            c.finish(error=ServerExited(method, str(err)))
        return await asyncio.wait_for(asyncio.shield(c.future), timeout)

    async def hello(self, ask: bool = True) -> protocol.HelloResult:
        """hello: with ask, extension questions and approvals reach on_ask."""
        return await self.call("hello", {"ask": ask})

    async def models(self) -> protocol.ModelsListResult:
        return await self.call("models.list")

    async def create_session(self, **params: Any) -> "AsyncSession":
        """session.create with its params (cwd=, model=, save=, resume=, …)."""
        result: protocol.SessionCreateResult = await self.call("session.create", params)
        return AsyncSession(self, result["session"], result)

    async def list_sessions(self, cwd: Optional[str] = None, all: Optional[bool] = None) -> protocol.SessionListResult:
        return await self.call("session.list", {"cwd": cwd, "all": all})

    async def shutdown(self) -> None:
        try:
            await self.call("shutdown")
        except ServerExited:
            pass

    async def close(self, timeout: float = 10) -> int:
        """Closes stdin (e rpc then ends every session and exits) and waits."""
        if self._proc is None:
            return 0
        if self._proc.stdin is not None and not self._proc.stdin.is_closing():
            self._proc.stdin.close()
        try:
            code = await asyncio.wait_for(self._proc.wait(), timeout)
        except asyncio.TimeoutError:
            self._proc.kill()
            code = await self._proc.wait()
        if self._reader is not None:
            await self._reader
        return code


class AsyncTurn:
    """A running session.prompt or session.shell: ``async for`` its events,
    then ``await result()``."""

    def __init__(self, client: AsyncClient, call: _Call):
        self._client = client
        self._call = call

    def __aiter__(self) -> AsyncIterator[protocol.Event]:
        return self._events()

    async def _events(self) -> AsyncIterator[protocol.Event]:
        while True:
            ev = await self._call.events.get()
            if ev is _DONE:
                return
            yield ev

    async def result(self, timeout: Optional[float] = None) -> Any:
        """The response's result; raises RPCError when the request failed."""
        return await asyncio.wait_for(asyncio.shield(self._call.future), timeout)


class AsyncSession:
    """One session of an AsyncClient."""

    def __init__(self, client: AsyncClient, id: str, info: Any = None):
        self.client = client
        self.id = id
        self.created = info

    def prompt(self, text: str, images: Optional[list[str]] = None) -> AsyncTurn:
        """Starts a turn; ``async for`` the AsyncTurn for its events."""
        return AsyncTurn(self.client, self.client.send("session.prompt", {"session": self.id, "prompt": text, "images": images}))

    def shell(self, command: str, exclude: Optional[bool] = None, timeout_ms: Optional[int] = None) -> AsyncTurn:
        """Runs a shell command of the user's into the session's context (M18)."""
        return AsyncTurn(
            self.client,
            self.client.send("session.shell", {"session": self.id, "command": command, "exclude": exclude, "timeout_ms": timeout_ms}),
        )

    async def run(self, text: str) -> protocol.Result:
        """Runs a turn to its end and returns its result."""
        turn = self.prompt(text)
        async for _ in turn:
            pass
        return await turn.result()

    async def steer(self, text: str) -> protocol.SessionSteerResult:
        return await self.client.call("session.steer", {"session": self.id, "text": text})

    async def interrupt(self) -> None:
        await self.client.call("session.interrupt", {"session": self.id})

    async def info(self) -> protocol.SessionInfoResult:
        return await self.client.call("session.info", {"session": self.id})

    async def messages(self) -> protocol.SessionMessagesResult:
        return await self.client.call("session.messages", {"session": self.id})

    async def set(self, model: Optional[str] = None, effort: Optional[str] = None) -> protocol.SessionSetResult:
        return await self.client.call("session.set", {"session": self.id, "model": model, "effort": effort})

    async def compact(self, focus: Optional[str] = None) -> protocol.SessionCompactResult:
        return await self.client.call("session.compact", {"session": self.id, "focus": focus})

    async def fork(self, at: Optional[str] = None) -> "AsyncSession":
        """A new session with this one's history, or its history up to entry at."""
        result = await self.client.call("session.fork", {"session": self.id, "at": at})
        return AsyncSession(self.client, result["session"], result)

    async def close(self) -> None:
        await self.client.call("session.close", {"session": self.id})
