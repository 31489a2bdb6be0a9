"""A client of e rpc, e's session server over JSON Lines (stdlib only).

    from e_client import Client

    with Client() as e:                      # spawns `e rpc` ($E_RPC or E_BIN overrides)
        e.hello()
        s = e.create_session()
        turn = s.prompt("/text hello from python")
        for ev in turn:                       # typed events (protocol.Event), until the response
            if ev["type"] == "text":
                print(ev["delta"], end="")
        print(turn.result()["final_output"])  # the turn result (protocol.Result)

Errors are exceptions: RPCError carries the server's machine-readable code
(``err.code == "turn_running"``) beside its one-line message; ServerExited
says the server died, and every call waiting on it fails with it at once.
Asks (extension questions, tool approvals) go to the ``on_ask`` callback,
whose return value is sent back as ``ask.reply``'s result.

Tools the client provides (G1): register a handler, give the spec it
returns to a session, and each tool_call line runs the handler on a thread
of its own (calls of one wave run at once); its return value is sent back
as ``tool.result``'s content (a str as it is, anything else as JSON), an
exception as an error result. A cancelled call (interrupt, close, timeout)
sets ``call.cancelled``; what its handler returns then is dropped.

    ticket = e.register_tool("ticket", lambda args, call: f"ticket {args['id']}: open",
                             description="Look up a ticket.",
                             parameters={"type": "object", "properties": {"id": {"type": "integer"}}})
    s = e.create_session(client_tools=[ticket])

The protocol's wire types are in ``e_client.protocol``, generated from the
JSON Schemas; events are the dicts json.loads makes, which those
TypedDicts describe. Event types this client does not know are yielded
as they are: skip what you do not know (the protocol is additive).
"""

from __future__ import annotations

import json
import os
import queue
import shlex
import subprocess
import threading
from typing import Any, Callable, Iterator, Optional

from . import protocol

__all__ = ["Client", "Session", "Turn", "ToolCall", "RPCError", "ServerExited", "protocol"]


class RPCError(Exception):
    """An error response: ``code`` (e.g. "turn_running"; "" when the server
    sent none) and ``message`` (the server's one line)."""

    def __init__(self, method: str, message: str, code: str = "", response: Any = None):
        super().__init__(message)
        self.method = method
        self.message = message
        self.code = code
        self.response = response


class ServerExited(RPCError):
    """The server closed its stdout (it exited or crashed) while a call waited."""

    def __init__(self, method: str, detail: str):
        super().__init__(method, f"e rpc exited: {detail}", "server_exited")


def default_command() -> list[str]:
    """The server command line: $E_RPC (shell words), else $E_BIN rpc, else e rpc."""
    if os.environ.get("E_RPC"):
        return shlex.split(os.environ["E_RPC"])
    return [os.environ.get("E_BIN", "e"), "rpc"]


_DONE = object()  # ends a turn's event queue


class ToolCall:
    """A tool_call line its handler serves: ``name``, ``arguments``, ``session``,
    ``line`` (the whole line) and ``cancelled``, set when e cancels the call."""

    def __init__(self, line: protocol.ToolCallLine):
        self.line = line
        self.name: str = line["name"]
        self.arguments: dict = line["arguments"]
        self.session: str = line["session"]
        self.cancelled = threading.Event()


ToolHandler = Callable[[dict, ToolCall], Any]


class _Call:
    """One request waiting for its response; events of the request queue here."""

    def __init__(self, method: str):
        self.method = method
        self.events: queue.Queue = queue.Queue()
        self.done = threading.Event()
        self.result: Any = None
        self.error: Optional[RPCError] = None


class Client:
    """One e rpc process. Thread-safe: calls may come from any thread."""

    def __init__(
        self,
        command: Optional[list[str]] = None,
        *,
        on_ask: Optional[Callable[[protocol.AskLine], Any]] = None,
        on_notice: Optional[Callable[[protocol.NoticeLine], None]] = None,
        cwd: Optional[str] = None,
        env: Optional[dict[str, str]] = None,
        stderr: Any = None,
    ):
        self.on_ask = on_ask
        self.on_notice = on_notice
        self._tools: dict[str, ToolHandler] = {}
        self._tool_calls: dict[int, ToolCall] = {}
        self._proc = subprocess.Popen(
            command or default_command(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            cwd=cwd,
            env=env,
        )
        self._lock = threading.Lock()
        self._next_id = 0
        self._calls: dict[int, _Call] = {}
        self._exited: Optional[str] = None
        self._reader = threading.Thread(target=self._read, name="e-rpc-reader", daemon=True)
        self._reader.start()

    # -- the wire --

    def _write(self, line: dict) -> None:
        # ensure_ascii keeps U+2028/U+2029 escaped: every JSON reader agrees on them.
        data = (json.dumps(line, separators=(",", ":")) + "\n").encode()
        with self._lock:
            if self._exited is not None:
                raise ServerExited(line.get("method", ""), self._exited)
            try:
                self._proc.stdin.write(data)
                self._proc.stdin.flush()
            except (BrokenPipeError, ValueError, OSError) as err:
                raise ServerExited(line.get("method", ""), str(err)) from err

    def _read(self) -> None:
        detail = "end of output"
        try:
            # Binary lines split at \n only: U+2028 inside a string is not a line end.
            for raw in self._proc.stdout:
                try:
                    line = json.loads(raw)
                except ValueError:
                    continue  # not a protocol line; nothing to route
                if isinstance(line, dict):
                    self._route(line)
        except (OSError, ValueError) as err:
            detail = str(err)
        code = self._proc.wait()
        detail = f"{detail}, exit status {code}"
        with self._lock:
            self._exited = detail
            calls, self._calls = self._calls, {}
        for call in calls.values():
            call.error = ServerExited(call.method, detail)
            call.done.set()
            call.events.put(_DONE)

    def _route(self, line: dict) -> None:
        kind = line.get("type")
        if kind == "ask":
            threading.Thread(target=self._answer, args=(line,), daemon=True).start()
            return
        if kind == "notice":
            if self.on_notice:
                self.on_notice(line)  # type: ignore[arg-type]
            return
        if kind == "tool_call":
            call = ToolCall(line)  # type: ignore[arg-type]
            with self._lock:
                self._tool_calls[line["call"]] = call
            threading.Thread(target=self._serve_tool, args=(call,), daemon=True).start()
            return
        if kind == "tool_call_cancelled":
            with self._lock:
                cancelled = self._tool_calls.pop(line.get("call"), None)  # type: ignore[arg-type]
            if cancelled is not None:
                cancelled.cancelled.set()
            return
        if kind is not None:
            # An event: it belongs to the request it serves.
            call = self._calls.get(line.get("request"))  # type: ignore[arg-type]
            if call is not None:
                call.events.put(line)
            return
        if "result" not in line and "error" not in line:
            return
        with self._lock:
            call = self._calls.pop(line.get("id"), None)  # type: ignore[arg-type]
        if call is None:
            return
        if "error" in line:
            call.error = RPCError(call.method, str(line["error"]), str(line.get("code") or ""), line)
        else:
            call.result = line["result"]
        call.done.set()
        call.events.put(_DONE)

    def _answer(self, ask: dict) -> None:
        result = None
        if self.on_ask is not None:
            try:
                result = self.on_ask(ask)  # type: ignore[arg-type]
            except Exception:  # a failing callback declines the question
                result = None
        params: dict[str, Any] = {"ask": ask["ask"]}
        if result is not None:
            params["result"] = result
        try:
            self.call("ask.reply", params)
        except RPCError:
            pass  # the ask was cancelled meanwhile, or the server went away

    def register_tool(
        self,
        name: str,
        handler: ToolHandler,
        description: Optional[str] = None,
        parameters: Optional[dict] = None,
    ) -> protocol.ClientTool:
        """Serves the client tool name with handler(arguments, call) and returns its spec
        for create_session(client_tools=[…]) (which needs hello with ask:true first)."""
        self._tools[name] = handler
        spec: dict[str, Any] = {"name": name}
        if description is not None:
            spec["description"] = description
        if parameters is not None:
            spec["parameters"] = parameters
        return spec  # type: ignore[return-value]

    def _serve_tool(self, call: ToolCall) -> None:
        handler = self._tools.get(call.name)
        is_error = False
        try:
            if handler is None:
                raise LookupError(f"this client has no handler for tool {call.name!r}")
            out = handler(call.arguments, call)
            content = out if isinstance(out, str) else json.dumps(out)
        except Exception as err:  # the model reads what failed
            content, is_error = str(err) or type(err).__name__, True
        with self._lock:
            pending = self._tool_calls.pop(call.line["call"], None) is not None
        if not pending:
            return  # cancelled meanwhile: e no longer waits for it
        try:
            self.call("tool.result", {"call": call.line["call"], "content": content, "is_error": is_error or None})
        except RPCError:
            pass  # cancelled in the meantime (unknown_call), or the server went away

    # -- requests --

    def start(self, method: str, params: Optional[dict] = None) -> _Call:
        """Sends a request and returns at once; see call and Turn."""
        with self._lock:
            self._next_id += 1
            rid = self._next_id
            call = _Call(method)
            if self._exited is None:
                self._calls[rid] = call
        line: dict[str, Any] = {"id": rid, "method": method}
        if params:
            line["params"] = {k: v for k, v in params.items() if v is not None}
        try:
            self._write(line)
        except RPCError as err:
            with self._lock:
                self._calls.pop(rid, None)
            call.error = err
            call.done.set()
            call.events.put(_DONE)
        return call

    def call(self, method: str, params: Optional[dict] = None, timeout: Optional[float] = None) -> Any:
        """Sends a request and returns its result, or raises RPCError."""
        c = self.start(method, params)
        if not c.done.wait(timeout):
            raise TimeoutError(f"{method}: no response in {timeout} s")
        if c.error is not None:
            raise c.error
        return c.result

    def hello(self, ask: bool = True) -> protocol.HelloResult:
        """hello: with ask, extension questions and approvals reach on_ask."""
        return self.call("hello", {"ask": ask})

    def models(self) -> protocol.ModelsListResult:
        return self.call("models.list")

    def create_session(self, **params: Any) -> "Session":
        """session.create with its params (cwd=, model=, save=, resume=, …)."""
        result: protocol.SessionCreateResult = self.call("session.create", params)
        return Session(self, result["session"], result)

    def list_sessions(self, cwd: Optional[str] = None, all: Optional[bool] = None) -> protocol.SessionListResult:
        return self.call("session.list", {"cwd": cwd, "all": all})

    def shutdown(self) -> None:
        try:
            self.call("shutdown")
        except ServerExited:
            pass

    def close(self, timeout: float = 10) -> int:
        """Closes stdin (e rpc then ends every session and exits) and waits."""
        with self._lock:
            try:
                self._proc.stdin.close()
            except OSError:
                pass
        try:
            return self._proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            return self._proc.wait()
        finally:
            self._reader.join(timeout)
            self._proc.stdout.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class Turn:
    """A running session.prompt or session.shell: iterate for its events, then result()
    (the turn result, or for a shell command how it ended)."""

    def __init__(self, call: _Call):
        self._call = call

    def __iter__(self) -> Iterator[protocol.Event]:
        while True:
            ev = self._call.events.get()
            if ev is _DONE:
                return
            yield ev

    def result(self, timeout: Optional[float] = None) -> Any:
        """The response's result; raises RPCError when the request failed."""
        if not self._call.done.wait(timeout):
            raise TimeoutError(f"{self._call.method}: no response yet")
        if self._call.error is not None:
            raise self._call.error
        return self._call.result


class Session:
    """One session of a Client."""

    def __init__(self, client: Client, id: str, info: Any = None):
        self.client = client
        self.id = id
        self.created = info

    def prompt(self, text: str, images: Optional[list[str]] = None, **params: Any) -> Turn:
        """Starts a turn; iterate the Turn for its events. params are session.prompt's others:
        output_schema= (a JSON Schema the final answer must be a value of: the result's
        structured_output, J1), max_model_calls=, max_tokens=, max_cost_usd=, max_duration_ms=
        (the turn's budget, N1; the result's stop_reason says what ended it)."""
        return Turn(
            self.client.start("session.prompt", {"session": self.id, "prompt": text, "images": images, **params})
        )

    def shell(self, command: str, exclude: Optional[bool] = None, timeout_ms: Optional[int] = None) -> Turn:
        """Runs a shell command of the user's into the session's context (M18). Iterate the
        Turn for shell_output events; result() is a SessionShellResult. exclude keeps it in
        the log but out of the model's context."""
        return Turn(
            self.client.start(
                "session.shell", {"session": self.id, "command": command, "exclude": exclude, "timeout_ms": timeout_ms}
            )
        )

    def run(self, text: str, **params: Any) -> protocol.Result:
        """Runs a turn to its end and returns its result (params as for prompt)."""
        turn = self.prompt(text, **params)
        for _ in turn:
            pass
        return turn.result()

    def steer(self, text: str) -> protocol.SessionSteerResult:
        return self.client.call("session.steer", {"session": self.id, "text": text})

    def interrupt(self) -> None:
        self.client.call("session.interrupt", {"session": self.id})

    def info(self) -> protocol.SessionInfoResult:
        return self.client.call("session.info", {"session": self.id})

    def messages(self) -> protocol.SessionMessagesResult:
        return self.client.call("session.messages", {"session": self.id})

    def set(self, model: Optional[str] = None, effort: Optional[str] = None) -> protocol.SessionSetResult:
        return self.client.call("session.set", {"session": self.id, "model": model, "effort": effort})

    def compact(self, focus: Optional[str] = None) -> protocol.SessionCompactResult:
        return self.client.call("session.compact", {"session": self.id, "focus": focus})

    def fork(self, at: Optional[str] = None) -> "Session":
        """A new session with this one's history, or its history up to entry at."""
        result = self.client.call("session.fork", {"session": self.id, "at": at})
        return Session(self.client, result["session"], result)

    def close(self) -> None:
        self.client.call("session.close", {"session": self.id})
