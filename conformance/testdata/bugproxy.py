#!/usr/bin/env python3
"""bugproxy: planted defects for the conformance suite, written apart from it.

    bugproxy.py MODE -- CMD ARGS...     run CMD behind the proxy, planting MODE
    bugproxy.py --list                  the modes, one JSON object a line

The self-test (e-conformance selftest) has its own mutation proxy, derived
from the schemas. This one is a second implementation on purpose, in
another language, sharing no code with it: a defect the suite misses that
the self-test's machinery cannot express shows up here. It plays what an
outside checker plays: a server that answers a method without doing it,
ignores a parameter, drops, duplicates, reorders or restamps lines, gets
counts or exit statuses wrong; and the controls a conforming server may
differ by (unknown fields and events, other JSON spellings, other
chunking and timing, CRLF).

The runner derives every front end from "… rpc" ("… --mode rpc", "… acp",
"… -p …", "… trust DIR"), so the proxy sees which one it fronts from the
arguments. A mode plants its defect in one front end and is transparent in
the others. conformance/bugproxy_test.go runs every mode against the suite.
"""

import json
import os
import select
import signal
import subprocess
import sys
import threading
import time


# ---------------------------------------------------------------- JSON
# Numbers keep their exact text (ids such as 1e400 must survive a
# re-encoding), so the decoder wraps them and the encoder is our own.

class Num:
    __slots__ = ("text",)

    def __init__(self, text):
        self.text = text

    def __int__(self):
        return int(float(self.text)) if any(c in self.text for c in ".eE") else int(self.text)


def loads(b):
    return json.loads(b, parse_int=Num, parse_float=Num, parse_constant=Num)


def enc_str(s, ascii_only=False, escape_all=False):
    out = ['"']
    for ch in s:
        o = ord(ch)
        if escape_all:
            if o > 0xFFFF:
                o -= 0x10000
                out.append("\\u%04x\\u%04x" % (0xD800 + (o >> 10), 0xDC00 + (o & 0x3FF)))
            else:
                out.append("\\u%04x" % o)
        elif ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "/" and ascii_only:
            out.append("\\/")  # legal, and nobody's first choice
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif o < 0x20 or (ascii_only and o > 0x7E) or ch in "\u2028\u2029":
            if o > 0xFFFF:
                o -= 0x10000
                out.append("\\u%04X\\u%04X" % (0xD800 + (o >> 10), 0xDC00 + (o & 0x3FF)))
            else:
                out.append("\\u%04X" % o)
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def dumps(v, style=None):
    """Encodes v compactly, or in style "spaced" (blanks around : and ,,
    keys in reverse order, non-ASCII and / escaped) or "escaped" (every
    string character a \\u escape)."""
    spaced = style == "spaced"
    escape_all = style == "escaped"

    def enc(x):
        if isinstance(x, Num):
            return x.text
        if x is True:
            return "true"
        if x is False:
            return "false"
        if x is None:
            return "null"
        if isinstance(x, str):
            return enc_str(x, ascii_only=spaced, escape_all=escape_all)
        if isinstance(x, int):
            return str(x)
        if isinstance(x, list):
            if spaced:
                return "[ " + " , ".join(enc(i) for i in x) + " ]" if x else "[ ]"
            return "[" + ",".join(enc(i) for i in x) + "]"
        if isinstance(x, dict):
            items = list(x.items())
            if spaced:
                items.reverse()
                return "{ " + " , ".join(enc(k) + " : " + enc(v) for k, v in items) + " }" if items else "{ }"
            return "{" + ",".join(enc(k) + ":" + enc(v) for k, v in items) + "}"
        raise TypeError("bugproxy: cannot encode %r" % (x,))

    return enc(v)


def line(v, style=None):
    return (dumps(v, style) + "\n").encode()


def idkey(v):
    return dumps(v)


# ---------------------------------------------------------------- state

class State:
    def __init__(self, dialect):
        self.dialect = dialect
        self.methods = {}  # request id (encoded) -> method (pi: command type)
        self.params = {}  # request id (encoded) -> params of the request
        self.sessions = []  # session ids in the order the server named them
        self.held = []  # lines a mode holds back
        self.count = {}  # per-mode counters
        self.lock = threading.Lock()
        self.out_fd = 1
        self.signalled = False

    def bump(self, key):
        self.count[key] = self.count.get(key, 0) + 1
        return self.count[key]

    def method_of(self, obj):
        if "id" not in obj:
            return None
        return self.methods.get(idkey(obj["id"]))

    def note_session(self, sid):
        if isinstance(sid, str) and sid not in self.sessions:
            self.sessions.append(sid)


def is_response(st, obj):
    d = st.dialect
    if d == "erpc":
        return "type" not in obj and "id" in obj
    if d == "pi":
        return obj.get("type") == "response"
    if d == "acp":
        return "id" in obj and "method" not in obj
    return False


def is_event(st, obj):
    d = st.dialect
    if d == "erpc":
        return isinstance(obj.get("type"), str)
    if d == "pi":
        return isinstance(obj.get("type"), str) and obj.get("type") != "response"
    if d == "acp":
        return "method" in obj
    return isinstance(obj.get("type"), str)


# ---------------------------------------------------------------- modes

MODES = {}


class Mode:
    def __init__(self, name, dialect, desc, kind="bug", hint=(), client=None, server=None,
                 start=None, end=None, exit=None, stderr=None, write=None, signals=True, keep_stdin=False):
        self.name, self.dialect, self.desc, self.kind = name, dialect, desc, kind
        self.hint = list(hint)
        self.client, self.server, self.start, self.end = client, server, start, end
        self.exit, self.stderr, self.write, self.signals = exit, stderr, write, signals
        self.keep_stdin = keep_stdin


def mode(name, dialect, desc, **kw):
    if name in MODES:
        raise SystemExit("bugproxy: mode %s defined twice" % name)
    MODES[name] = Mode(name, dialect, desc, **kw)


# Client-side helpers: each returns (bytes to forward or None, [replies]).

def swallow(method, result, dialect="erpc", match=None):
    """Answers method with success at once and never lets the server see it."""

    def client(st, obj, raw):
        key = "type" if dialect == "pi" else "method"
        if obj.get(key) != method or (match and not match(obj)):
            return raw, []
        res = result(obj) if callable(result) else result
        if dialect == "pi":
            r = {"type": "response", "command": method, "success": True}
            if "id" in obj:
                r = {"id": obj["id"], **r}
            if res is not None:
                r["data"] = res
            return None, [line(r)]
        if dialect == "acp":
            if "id" not in obj:
                return None, []  # a notification: nothing to answer
            return None, [line({"jsonrpc": "2.0", "id": obj["id"], "result": res})]
        return None, [line({"id": obj.get("id"), "result": res})]

    return client


def drop_param(method, field, where="params"):
    """Forwards method (None: a one-shot line, which has no method) without
    one optional parameter."""

    def client(st, obj, raw):
        p = obj.get(where) if where else obj
        if obj.get("method", obj.get("type")) != method or not isinstance(p, dict) or field not in p:
            return raw, []
        del p[field]
        return line(obj), []

    return client


def edit_param(method, field, fn):
    def client(st, obj, raw):
        p = obj.get("params")
        if obj.get("method") != method or not isinstance(p, dict) or field not in p:
            return raw, []
        p[field] = fn(p[field])
        return line(obj), []

    return client


def plus_one(n):
    if isinstance(n, Num):
        try:
            return Num(str(int(n) + 1))
        except (ValueError, RecursionError):
            return n
    return n


def server_edit(pred, fn):
    """Rewrites the lines pred selects with fn(obj) (in place, or a return)."""

    def server(st, obj, raw):
        if not pred(st, obj):
            return [raw]
        r = fn(st, obj)
        if r is None:
            r = obj
        if isinstance(r, list):
            return r
        return [line(r)]

    return server


def drop_lines(pred, limit=None):
    def server(st, obj, raw):
        if pred(st, obj) and (limit is None or st.bump("drop") <= limit):
            return []
        return [raw]

    return server


def at(obj, *path):
    for p in path:
        if isinstance(obj, dict):
            obj = obj.get(p)
        elif isinstance(obj, list) and isinstance(p, int) and p < len(obj):
            obj = obj[p]
        else:
            return None
    return obj


def typ(t):
    return lambda st, o: o.get("type") == t


def resp_of(method):
    return lambda st, o: is_response(st, o) and st.method_of(o) == method


# ---- e rpc: a method answered with success, not performed

E = "erpc"
mode("erpc/steer-swallowed", E, "session.steer answered {held:true}; the text never reaches the turn",
     hint=["steer-reaches-next-model-call", "steer-during-answer-continues"],
     client=swallow("session.steer", {"held": True}))
mode("erpc/steer-text-replaced", E, "session.steer delivers another text than the one sent",
     hint=["steer-reaches-next-model-call"],
     client=edit_param("session.steer", "text", lambda t: "ok"))
mode("erpc/unsteer-swallowed", E, "session.unsteer answers nothing withdrawn and withdraws nothing",
     hint=["session-unsteer"], client=swallow("session.unsteer", {"withdrawn": []}))
mode("erpc/interrupt-swallowed", E, "session.interrupt answered {}; the turn goes on",
     hint=["prompt-interrupt", "interrupt-during-bash"], client=swallow("session.interrupt", {}))
mode("erpc/close-swallowed", E, "session.close answered {}; the session stays open",
     hint=["session-close"], client=swallow("session.close", {}))
mode("erpc/shutdown-swallowed", E, "shutdown answered {}; the process does not exit",
     hint=["shutdown-exits-without-eof", "shutdown"], client=swallow("shutdown", {}))
mode("erpc/compact-swallowed", E, "session.compact answers a made-up result and compacts nothing",
     hint=["session-compact", "compact-counts-agree"],
     client=swallow("session.compact", {"tokens_before": 0, "tokens_after": 0, "summary_chars": 0, "summary": "",
                                        "first_kept": "", "usage": None}))
mode("erpc/fork-swallowed", E, "session.fork answers with the original session instead of a new one",
     hint=["session-fork", "session-fork-grows-apart"],
     client=swallow("session.fork", lambda o: {"session": at(o, "params", "session"), "path": None}))
mode("erpc/set-swallowed", E, "session.set answers with the values asked for and sets nothing",
     hint=["session-set-model", "session-set-switches"],
     client=swallow("session.set", lambda o: {"model": at(o, "params", "model") or "tape/model",
                                              "effort": at(o, "params", "effort")}))
mode("erpc/ask-reply-swallowed", E, "ask.reply answered {}; the extension never gets the answer",
     hint=["ext-ask-reply-result", "approval-allow"], client=swallow("ask.reply", {}))
mode("erpc/messages-empty", E, "session.messages answers an empty history without reading it",
     hint=["session-messages"],
     server=server_edit(resp_of("session.messages"), lambda st, o: o.get("result") and o["result"].update(messages=[])))
mode("erpc/entries-empty", E, "session.entries answers no entries without reading them",
     hint=["session-entries"],
     server=server_edit(resp_of("session.entries"), lambda st, o: o.get("result") and o["result"].update(entries=[])))
mode("erpc/list-empty", E, "session.list answers no sessions without looking",
     hint=["session-save-and-list", "session-list-cwd-and-all"],
     server=server_edit(resp_of("session.list"), lambda st, o: o.get("result") and o["result"].update(sessions=[])))
mode("erpc/info-messages-off-by-one", E, "session.info counts one message more than there are",
     hint=["session-info", "session-fork-at"],
     server=server_edit(resp_of("session.info"),
                        lambda st, o: isinstance(o.get("result"), dict) and "messages" in o["result"] and
                        o["result"].update(messages=plus_one(o["result"]["messages"]))))
mode("erpc/export-swallowed", E, "session.export answers a path it never wrote",
     hint=["session-export"],
     client=swallow("session.export", lambda o: {"path": at(o, "params", "path") or "/tmp/never-written.html", "title": "x"}))

# ---- e rpc: a well-typed optional parameter ignored

for field, hint in [
    ("cwd", ["oneshot-cwd-name-resume"]),
    ("name", ["oneshot-cwd-name-resume"]),
    ("resume", ["oneshot-cwd-name-resume", "oneshot-resume-warnings"]),
    ("save", ["oneshot-save"]),
    ("model", ["oneshot-model"]),
    ("effort", ["oneshot-reference-line"]),
    ("tool_mode", ["oneshot-reference-line"]),
]:
    # A version-1 line's fields work as for session.create (O4).
    mode("erpc/ignore/oneshot/%s" % field, E, "a one-shot line's %s is ignored" % field,
         hint=hint, client=drop_param(None, field, where=None))

for meth, field, hint in [
    ("hello", "ask", ["hello-ask-true", "ext-ask-reply-result"]),
    ("session.create", "cwd", ["session-create-relative-cwd", "session-create-absolute-cwd"]),
    ("session.create", "model", ["session-create-offline-model", "session-create-effort-override"]),
    ("session.create", "effort", ["session-create-effort-override"]),
    ("session.create", "tools", ["tools-allowlist"]),
    ("session.create", "tool_mode", ["tool-mode-none"]),
    ("session.create", "save", ["session-save-and-list"]),
    ("session.create", "resume", ["session-resume-readonly", "session-resume-locked"]),
    ("session.create", "name", ["session-name-in-list"]),
    ("session.create", "approval", ["approval-allow", "approval-reject"]),
    ("session.create", "approval_timeout_ms", ["approval-timeout"]),
    ("session.create", "mcp_servers", ["mcp-session-tools"]),
    ("session.prompt", "images", ["prompt-image-needs-image-input", "prompt-image-missing-file"]),
    ("session.compact", "focus", ["compact-focus-reaches-model"]),
    ("session.fork", "at", ["session-fork-at"]),
    ("session.set", "model", ["session-set-model"]),
    ("session.set", "effort", ["session-set", "prompt-result-effort"]),
    ("session.set", "name", ["session-set-switches"]),
    ("session.set", "approval", ["session-set-approval"]),
    ("session.set", "approval_timeout_ms", ["session-set-approval-timeout"]),
    ("session.set", "auto_compact", ["compact-auto-off"]),
    ("session.set", "auto_retry", ["session-set-switches"]),
    ("session.list", "cwd", ["session-list-cwd-and-all"]),
    ("session.list", "all", ["session-list-cwd-and-all"]),
    ("session.entries", "since", ["session-entries"]),
    ("session.export", "path", ["session-export"]),
    ("session.shell", "timeout_ms", ["session-shell-timeout"]),
    ("session.shell", "exclude", ["session-shell"]),
    ("ask.reply", "result", ["ext-ask-reply-result"]),
]:
    mode("erpc/ignore/%s/%s" % (meth, field), E, "%s ignores params.%s" % (meth, field),
         hint=hint, client=drop_param(meth, field))

# ---- e rpc: lines dropped, duplicated, reordered, restamped


def first_per_request(t):
    seen = set()

    def pred(st, o):
        if o.get("type") != t:
            return False
        k = idkey(o.get("request"))
        if k in seen:
            return False
        seen.add(k)
        return True

    return pred


mode("erpc/drop-first-text", E, "the first text delta of each request is lost",
     hint=["prompt-text", "offline-text"], server=drop_lines(first_per_request("text")))
mode("erpc/drop-turn_start", E, "turn_start never sent", hint=["prompt-one-turn-start-one-turn-end"],
     server=drop_lines(typ("turn_start")))
mode("erpc/drop-turn_end", E, "turn_end never sent", hint=["prompt-one-turn-start-one-turn-end"],
     server=drop_lines(typ("turn_end")))
mode("erpc/drop-usage-event", E, "usage events never sent", hint=["prompt-usage-disjoint", "offline-usage"],
     server=drop_lines(typ("usage")))
mode("erpc/drop-tool_end", E, "tool_end never sent", hint=["prompt-tool-read"],
     server=drop_lines(typ("tool_end")))
mode("erpc/drop-null-id-error", E, "a malformed line gets no answer (F4)",
     hint=["framing-malformed-keeps-serving"],
     server=drop_lines(lambda st, o: is_response(st, o) and o.get("id") is None))
mode("erpc/drop-notice", E, "notice lines never sent", hint=["notice-missing-extension-after-hello"],
     server=drop_lines(typ("notice")))
mode("erpc/dup-create-response", E, "the response to session.create comes twice",
     hint=["session-create-defaults"],
     server=server_edit(resp_of("session.create"), lambda st, o: [line(o), line(o)]))
mode("erpc/dup-turn_start", E, "turn_start comes twice", hint=["prompt-one-turn-start-one-turn-end"],
     server=server_edit(typ("turn_start"), lambda st, o: [line(o), line(o)]))
mode("erpc/dup-tool_start", E, "tool_start comes twice", hint=["prompt-tool-read"],
     server=server_edit(typ("tool_start"), lambda st, o: [line(o), line(o)]))


def hold_until_response(t):
    """Holds each event of type t until the response to its request, then
    writes it after that response (S2)."""

    def server(st, obj, raw):
        if obj.get("type") == t and "request" in obj:
            st.held.append((idkey(obj["request"]), raw))
            return []
        if is_response(st, obj):
            k = idkey(obj.get("id"))
            mine = [r for (rk, r) in st.held if rk == k]
            st.held = [(rk, r) for (rk, r) in st.held if rk != k]
            return [raw] + mine
        return [raw]

    return server


mode("erpc/turn_end-after-response", E, "turn_end comes after the prompt's response",
     hint=["prompt-one-turn-start-one-turn-end"], server=hold_until_response("turn_end"))
mode("erpc/usage-after-response", E, "usage events come after the prompt's response",
     hint=["prompt-usage-disjoint"], server=hold_until_response("usage"))


def swap_first_two_events():
    state = {}

    def server(st, obj, raw):
        if not is_event(st, obj) or "request" not in obj:
            return [raw]
        k = idkey(obj["request"])
        n = state.get(k, 0)
        state[k] = n + 1
        if n == 0:
            st.held.append((k, raw))
            return []
        if n == 1:
            mine = [r for (rk, r) in st.held if rk == k]
            st.held = [(rk, r) for (rk, r) in st.held if rk != k]
            return [raw] + mine
        return [raw]

    def flush(st, obj, raw):
        # a response releases what is held for it
        if is_response(st, obj):
            k = idkey(obj.get("id"))
            mine = [r for (rk, r) in st.held if rk == k]
            st.held = [(rk, r) for (rk, r) in st.held if rk != k]
            return mine + [raw]
        return server(st, obj, raw)

    return flush


mode("erpc/swap-first-two-events", E, "a request's first two events come in the other order",
     hint=["prompt-one-turn-start-one-turn-end", "prompt-text"], server=swap_first_two_events())


def restamp(field, value):
    def fn(st, o):
        if field in o:
            o[field] = value(st, o) if callable(value) else value

    return fn


mode("erpc/session-stamp-bogus", E, "events carry a session id that is no session",
     hint=["prompt-text"], server=server_edit(lambda st, o: is_event(st, o) and "session" in o and o.get("type") != "ask",
                                              restamp("session", "s-bogus")))
def id_of(method):
    """The id of the first request of method the client sent, or "other"."""

    def value(st, o):
        for k, m in st.methods.items():
            if m == method:
                return loads(k.encode())
        return "other"

    return value


mode("erpc/request-stamp-of-create", E, "events carry the id of another request (the session.create)",
     hint=["prompt-text"],
     server=server_edit(lambda st, o: is_event(st, o) and "request" in o, restamp("request", id_of("session.create"))))
mode("erpc/request-stamp-dropped", E, "events carry no request stamp",
     hint=["prompt-text"], server=server_edit(lambda st, o: is_event(st, o) and "request" in o,
                                              lambda st, o: o.pop("request")))


def swap_sessions(st, o):
    s = o.get("session")
    if len(st.sessions) >= 2 and s in st.sessions[:2]:
        o["session"] = st.sessions[1] if s == st.sessions[0] else st.sessions[0]


def track_sessions(inner):
    def server(st, obj, raw):
        r = obj.get("result")
        if is_response(st, obj) and isinstance(r, dict):
            st.note_session(r.get("session"))
        return inner(st, obj, raw)

    return server


mode("erpc/session-stamps-swapped", E, "with two sessions, each one's events carry the other's id",
     hint=["sessions-concurrent", "ext-shared-by-sessions"],
     server=track_sessions(server_edit(lambda st, o: is_event(st, o) and "session" in o and o.get("type") != "ask",
                                       swap_sessions)))


def edit_text(fn, types=("text",), field="delta"):
    return server_edit(lambda st, o: o.get("type") in types and isinstance(o.get(field), str),
                       lambda st, o: o.update({field: fn(o[field])}))


mode("erpc/text-deltas-lose-last-char", E, "every text delta loses its last character",
     hint=["prompt-text", "offline-text"], server=edit_text(lambda s: s[:-1]))
mode("erpc/text-deltas-doubled-char", E, "every text delta repeats its first character",
     hint=["prompt-text"], server=edit_text(lambda s: s[:1] + s))
mode("erpc/reasoning-as-text", E, "reasoning deltas are sent as text",
     hint=["prompt-reasoning"], server=server_edit(typ("reasoning"), lambda st, o: o.update(type="text")))
mode("erpc/final_output-truncated", E, "the prompt result's final_output loses its last character",
     hint=["prompt-text", "prompt-tool-read"],
     server=server_edit(lambda st, o: isinstance(at(o, "result", "final_output"), str) and at(o, "result", "final_output"),
                        lambda st, o: o["result"].update(final_output=o["result"]["final_output"][:-1])))
mode("erpc/usage-event-input-plus-one", E, "usage events count one input token more",
     hint=["prompt-usage-disjoint", "offline-usage"],
     server=server_edit(lambda st, o: o.get("type") == "usage" and "input_tokens" in o,
                        lambda st, o: o.update(input_tokens=plus_one(o["input_tokens"]))))
mode("erpc/result-usage-output-plus-one", E, "the prompt result counts one output token more",
     hint=["prompt-usage-summed", "prompt-usage-disjoint"],
     server=server_edit(lambda st, o: isinstance(at(o, "result", "usage", "output_tokens"), Num),
                        lambda st, o: o["result"]["usage"].update(output_tokens=plus_one(o["result"]["usage"]["output_tokens"]))))
mode("erpc/turn_end-aborted-flipped", E, "turn_end says the opposite of whether the turn was aborted",
     hint=["prompt-interrupt", "prompt-text"],
     server=server_edit(lambda st, o: o.get("type") == "turn_end" and isinstance(o.get("aborted"), bool),
                        lambda st, o: o.update(aborted=not o["aborted"])))

CODES = ["invalid_params", "not_found", "unknown_session", "turn_running", "invalid_request", "internal"]


def rotate_code(st, o):
    c = o.get("code")
    if isinstance(c, str):
        o["code"] = CODES[(CODES.index(c) + 1) % len(CODES)] if c in CODES else "invalid_params"


mode("erpc/error-code-changed", E, "every error carries another (valid) code",
     hint=["error-code-unknown-session", "error-code-turn-running", "error-code-not-found"],
     server=server_edit(lambda st, o: is_response(st, o) and "error" in o, rotate_code))
mode("erpc/error-becomes-success", E, "an error response becomes {result:{}}",
     hint=["error-code-unknown-method", "session-info-unknown"],
     server=server_edit(lambda st, o: is_response(st, o) and "error" in o and o.get("id") is not None,
                        lambda st, o: {"id": o["id"], "result": {}}))
mode("erpc/error-empty-message", E, "error messages are empty strings",
     hint=["unknown-method", "session-create-error-one-line"],
     server=server_edit(lambda st, o: is_response(st, o) and isinstance(o.get("error"), str),
                        lambda st, o: o.update(error="")))
mode("erpc/stdout-noise-at-start", E, "a banner on stdout before the first line",
     hint=["hello-result", "eof-exits-zero"], start=lambda st: [b"e rpc ready\n"])
mode("erpc/stdout-noise-after-responses", E, "a debug line on stdout after each response",
     hint=["hello-result"],
     server=server_edit(lambda st, o: is_response(st, o), lambda st, o: [line(o), b"debug: answered\n"]))
mode("erpc/exit-zero-becomes-one", E, "a clean exit (EOF, shutdown) reports status 1",
     hint=["eof-exits-zero", "shutdown"], exit=lambda c: 1 if c == 0 else c)
mode("erpc/exit-signal-becomes-zero", E, "a SIGTERM or SIGHUP exit reports status 0",
     hint=["sigterm-during-bash", "sighup-idle"], exit=lambda c: 0 if c in (129, 130, 143) else c)
mode("erpc/signals-ignored", E, "SIGTERM, SIGHUP and SIGINT never reach the server",
     hint=["sighup-idle", "sigterm-during-bash"], signals=False)
mode("erpc/ask-method-changed", E, "ask lines name another method (ui.confirm becomes ui.input)",
     hint=["ext-ask-reply-result", "hello-ask-true"],
     server=server_edit(lambda st, o: o.get("type") == "ask" and isinstance(o.get("method"), str),
                        lambda st, o: o.update(method="ui.input" if o["method"] != "ui.input" else "ui.confirm")))
mode("erpc/ask-params-emptied", E, "ask lines carry empty params",
     hint=["ext-ask-reply-result", "approval-allow"],
     server=server_edit(lambda st, o: o.get("type") == "ask" and isinstance(o.get("params"), dict),
                        lambda st, o: o.update(params={})))
mode("erpc/ask-number-shifted", E, "ask lines carry a number one more than the server's",
     hint=["ext-ask-reply-result", "approval-allow"],
     server=server_edit(lambda st, o: o.get("type") == "ask" and isinstance(o.get("ask"), Num),
                        lambda st, o: o.update(ask=plus_one(o["ask"]))))
mode("erpc/ask-session-dropped", E, "a tool approval's ask line loses its session",
     hint=["approval-allow", "approval-reject"],
     server=server_edit(lambda st, o: o.get("type") == "ask" and "session" in o, lambda st, o: o.pop("session")))
mode("erpc/oneshot-answer-without-id", E, "one-shot answers lose their id",
     hint=["oneshot-basic"],
     server=server_edit(lambda st, o: is_response(st, o) and st.method_of(o) == "oneshot", lambda st, o: o.pop("id")))


def oneshot_swap(st, obj, raw):
    if is_response(st, obj) and st.method_of(obj) == "oneshot":
        if not st.held:
            st.held.append(("oneshot", raw))
            return []
        held = [r for _, r in st.held]
        st.held = []
        return [raw] + held
    return [raw]


mode("erpc/oneshot-answers-swapped", E, "one-shot answers come in the other order (O5)",
     hint=["oneshot-in-order"], server=oneshot_swap)
mode("erpc/oneshot-final-output-changed", E, "one-shot answers carry another final_output",
     hint=["oneshot-basic", "oneshot-reference-line"],
     server=server_edit(lambda st, o: is_response(st, o) and st.method_of(o) == "oneshot" and isinstance(o.get("final_output"), str),
                        lambda st, o: o.update(final_output=o["final_output"] + "!")))
mode("erpc/oneshot-with-events", E, "a one-shot line gets a text event before its answer (O1: no events)",
     hint=["oneshot-basic"],
     server=server_edit(lambda st, o: is_response(st, o) and st.method_of(o) == "oneshot",
                        lambda st, o: [line({"type": "text", "delta": "x", "session": None, "request": o.get("id")}), line(o)]))
mode("erpc/oneshot-error-as-success", E, "a refused one-shot line is answered as a completed turn",
     hint=["oneshot-empty-prompt", "oneshot-missing-prompt"],
     server=server_edit(lambda st, o: is_response(st, o) and st.method_of(o) == "oneshot" and o.get("error"),
                        lambda st, o: o.update(error=None)))
mode("erpc/hello-drops-a-method", E, "hello's methods list leaves out session.fork",
     hint=["hello-methods"],
     server=server_edit(lambda st, o: is_response(st, o) and isinstance(at(o, "result", "methods"), list),
                        lambda st, o: o["result"].update(methods=[m for m in o["result"]["methods"] if m != "session.fork"])))
mode("erpc/hello-ask-echo-false", E, "hello answers ask:false whatever was asked",
     hint=["hello-ask-true"],
     server=server_edit(lambda st, o: is_response(st, o) and at(o, "result", "ask") is True,
                        lambda st, o: o["result"].update(ask=False)))
mode("erpc/numeric-ids-as-strings", E, "responses to numeric ids echo them as strings",
     hint=["prompt-numeric-request-id", "framing-id-exact-text"],
     server=server_edit(lambda st, o: is_response(st, o) and isinstance(o.get("id"), Num),
                        lambda st, o: o.update(id=o["id"].text)))
def text_again_after_response(st, obj, raw):
    # The latest text delta of each request is written once more after
    # the request's response (S2: no event after the response).
    if obj.get("type") == "text" and "request" in obj:
        st.count["last-text"] = st.count.get("last-text", {})
        st.count["last-text"][idkey(obj["request"])] = raw
        return [raw]
    if is_response(st, obj):
        again = st.count.get("last-text", {}).pop(idkey(obj.get("id")), None)
        return [raw, again] if again else [raw]
    return [raw]


mode("erpc/event-after-response", E, "a prompt's last text delta is repeated after its response (S2)",
     hint=["prompt-text"], server=text_again_after_response)
mode("erpc/models-list-empty", E, "models.list answers no models",
     hint=["models-list", "models-list-available"],
     server=server_edit(resp_of("models.list"), lambda st, o: o.get("result") and o["result"].update(models=[])))
mode("erpc/create-result-model-wrong", E, "session.create answers another model than the session runs",
     hint=["session-create-defaults", "session-create-offline-model"],
     server=server_edit(lambda st, o: resp_of("session.create")(st, o) and isinstance(at(o, "result", "model"), str),
                        lambda st, o: o["result"].update(model="tape/other")))
mode("erpc/tool-output-on-stdout-raw", E, "a tool's output leaks onto stdout as a bare line",
     hint=["framing-tool-output-stays-off-stdout", "prompt-tool-read"],
     server=server_edit(typ("tool_end"), lambda st, o: [b"tool says hi\n", line(o)]))
mode("erpc/stdin-eof-ignored", E, "the server never sees EOF on stdin, so it never exits on its own",
     hint=["eof-exits-zero"], keep_stdin=True)

# ---- e -p (print): exit statuses and outputs

P = "print"
mode("print/exit-zero-becomes-one", P, "e -p reports a completed turn with status 1",
     hint=["print-text"], exit=lambda c: 1 if c == 0 else c)
mode("print/exit-one-becomes-zero", P, "e -p reports a failed turn with status 0",
     hint=["print-model-error", "print-json-result-error-details"], exit=lambda c: 0 if c == 1 else c)
mode("print/exit-two-becomes-one", P, "e -p reports a usage error with status 1",
     hint=["print-usage-unknown-flag", "print-empty-prompt"], exit=lambda c: 1 if c == 2 else c)
mode("print/stdout-banner", P, "e -p prints a banner line on stdout before the reply",
     hint=["print-text"], start=lambda st: [b"e: thinking...\n"])
mode("print/text-loses-last-char", P, "e -p's reply loses its last character",
     hint=["print-text", "print-stdin-only"], write="text-cut")
mode("print/json-no-result-line", P, "e -p --json never prints the result line",
     hint=["print-json-result"], server=drop_lines(typ("result")))
mode("print/json-event-after-result", P, "e -p --json prints an event after the result line",
     hint=["print-json-result"],
     server=server_edit(typ("result"), lambda st, o: [line(o), line({"type": "turn_end", "aborted": False})]))
mode("print/json-result-usage-plus-one", P, "e -p --json's result counts one output token more",
     hint=["print-json-result-usage"],
     server=server_edit(lambda st, o: o.get("type") == "result" and isinstance(at(o, "usage", "output_tokens"), Num),
                        lambda st, o: o["usage"].update(output_tokens=plus_one(o["usage"]["output_tokens"]))))
mode("print/json-drops-text", P, "e -p --json leaves out the text events",
     hint=["print-json-result", "print-json-same-events"], server=drop_lines(typ("text")))
mode("print/stderr-silenced", P, "e -p says nothing on stderr (the error, the warnings)",
     hint=["print-usage-unknown-flag", "print-model-error"], stderr="silence")
mode("print/stderr-on-stdout", P, "e -p writes its diagnostics to stdout",
     hint=["print-model-error", "print-usage-unknown-flag"], stderr="to-stdout")
mode("print/no-tools-ignored", P, "e -p --no-tools still offers tools", hint=["print-no-tools"],
     client=None, write="argv-drop:--no-tools")
mode("print/model-flag-ignored", P, "e -p -m is ignored", hint=["print-model-effort", "print-unknown-model"],
     write="argv-drop-pair:-m")
mode("print/stdin-ignored", P, "e -p ignores piped stdin", hint=["print-arg-and-stdin", "print-stdin-only"],
     write="stdin-null")

# ---- pi dialect (e --mode rpc)

PI = "pi"
for cmd, data, hint in [
    ("prompt", {"disposition": "started"}, ["pi-prompt-text"]),
    ("steer", None, ["pi-queue-abort", "pi-compact-threshold-queue", "pi-images-queued"]),
    ("follow_up", {"disposition": "queued"}, ["pi-follow-up-idle", "pi-queue-abort"]),
    ("abort", None, ["pi-abort-response-id", "pi-abort-before-run", "pi-queue-abort"]),
    ("abort_bash", None, ["pi-abort-bash"]),
    ("abort_retry", None, ["pi-abort-retry-wait"]),
    ("clear_queue", {"steering": [], "followUp": []}, ["pi-queue-abort"]),
    ("new_session", {"cancelled": False}, ["pi-session-commands", "pi-switch-session"]),
    ("set_thinking_level", None, ["pi-session-commands", "pi-level-during-run"]),
    ("set_session_name", None, ["pi-session-commands", "pi-trimmed-texts"]),
    ("set_model", None, ["pi-models-json"]),
    ("set_auto_compaction", None, ["pi-compact-before-run", "pi-settings-commands"]),
    ("set_auto_retry", None, ["pi-auto-retry-off"]),
    ("set_steering_mode", None, ["pi-settings-commands"]),
    ("set_follow_up_mode", None, ["pi-settings-commands"]),
    ("compact", {"summary": "done"}, ["pi-compact-result", "pi-compact-too-small"]),
    ("bash", {"output": "", "exitCode": 0, "cancelled": False, "truncated": False}, ["pi-bash-tool-content", "pi-abort-bash"]),
    ("switch_session", {"cancelled": False}, ["pi-switch-session"]),
]:
    mode("pi/%s-swallowed" % cmd, PI, "pi %s answered with success and never performed" % cmd,
         hint=hint, client=swallow(cmd, data, dialect="pi"))

for cmd, field, hint in [
    ("prompt", "images", ["pi-images-no-vision", "pi-images-queued"]),
    ("steer", "images", ["pi-images-queued"]),
    ("follow_up", "images", ["pi-images-queued"]),
    ("compact", "customInstructions", ["pi-compact-instructions"]),
    ("bash", "excludeFromContext", ["pi-bash-exclude"]),
    ("prompt", "streamingBehavior", ["pi-prompt-streaming-behavior"]),
    ("get_entries", "since", ["pi-command-options"]),
    ("export_html", "outputPath", ["pi-command-options"]),
    ("new_session", "parentSession", ["pi-command-options"]),
]:
    mode("pi/ignore/%s/%s" % (cmd, field), PI, "pi %s ignores %s" % (cmd, field),
         hint=hint, client=drop_param(cmd, field, where=None))


def pi_resp(st, o):
    return o.get("type") == "response"


mode("pi/success-flipped", PI, "pi responses say success:false where they succeeded",
     hint=["pi-prompt-text", "pi-session-commands"],
     server=server_edit(lambda st, o: pi_resp(st, o) and o.get("success") is True,
                        lambda st, o: o.update(success=False, error="failed")))
mode("pi/failure-flipped", PI, "pi responses to failing commands say success:true",
     hint=["pi-errors", "pi-compact-too-small"],
     server=server_edit(lambda st, o: pi_resp(st, o) and o.get("success") is False,
                        lambda st, o: (o.update(success=True), o.pop("error", None))))
mode("pi/command-renamed", PI, "pi responses name another command",
     hint=["pi-prompt-text"],
     server=server_edit(pi_resp, lambda st, o: o.update(command="get_state" if o.get("command") != "get_state" else "prompt")))
mode("pi/response-id-changed", PI, "pi responses carry another id", hint=["pi-prompt-text", "pi-command-ids"],
     server=server_edit(lambda st, o: pi_resp(st, o) and "id" in o, lambda st, o: o.update(id="x" + dumps(o["id"]))))
mode("pi/response-id-dropped", PI, "pi responses lose their id", hint=["pi-prompt-text", "pi-command-ids"],
     server=server_edit(lambda st, o: pi_resp(st, o) and "id" in o, lambda st, o: o.pop("id")))
mode("pi/drop-agent_end", PI, "agent_end never sent", hint=["pi-prompt-text"], server=drop_lines(typ("agent_end")))
mode("pi/drop-turn_start", PI, "turn_start never sent", hint=["pi-prompt-text"], server=drop_lines(typ("turn_start")))
mode("pi/drop-first-message_update", PI, "the first message_update of a run is lost",
     hint=["pi-prompt-text"], server=drop_lines(typ("message_update"), limit=1))
mode("pi/dup-message_end", PI, "message_end comes twice", hint=["pi-prompt-text"],
     server=server_edit(typ("message_end"), lambda st, o: [line(o), line(o)]))


def pi_swap(first, second):
    def server(st, obj, raw):
        if obj.get("type") == first and not st.held:
            st.held.append((first, raw))
            return []
        if st.held and obj.get("type") == second:
            held = [r for _, r in st.held]
            st.held = []
            return [raw] + held
        if st.held and obj.get("type") != first:
            held = [r for _, r in st.held]
            st.held = []
            return held + [raw]
        return [raw]

    return server


mode("pi/turn_end-before-message_end", PI, "turn_end comes before the message_end it follows",
     hint=["pi-prompt-text"], server=pi_swap("message_end", "turn_end"))
mode("pi/text_delta-loses-last-char", PI, "every text_delta loses its last character",
     hint=["pi-prompt-text"],
     server=server_edit(lambda st, o: at(o, "assistantMessageEvent", "type") == "text_delta",
                        lambda st, o: o["assistantMessageEvent"].update(delta=o["assistantMessageEvent"]["delta"][:-1])))
mode("pi/text_end-content-changed", PI, "text_end's content differs from the deltas",
     hint=["pi-prompt-text"],
     server=server_edit(lambda st, o: at(o, "assistantMessageEvent", "type") == "text_end",
                        lambda st, o: o["assistantMessageEvent"].update(content="other")))
mode("pi/stopReason-changed", PI, "an assistant message_end says stopReason length for stop",
     hint=["pi-prompt-text"],
     server=server_edit(lambda st, o: o.get("type") == "message_end" and at(o, "message", "stopReason") == "stop",
                        lambda st, o: o["message"].update(stopReason="length")))
mode("pi/usage-input-plus-one", PI, "assistant messages count one input token more",
     hint=["pi-answer-provider-fields", "pi-compact-result"],
     server=server_edit(lambda st, o: o.get("type") == "message_end" and isinstance(at(o, "message", "usage", "input"), Num),
                        lambda st, o: o["message"]["usage"].update(input=plus_one(o["message"]["usage"]["input"]))))
mode("pi/isStreaming-flipped", PI, "get_state says the opposite of whether a run streams",
     hint=["pi-compact-during-run", "pi-abort-compact", "pi-session-commands"],
     server=server_edit(lambda st, o: pi_resp(st, o) and isinstance(at(o, "data", "isStreaming"), bool),
                        lambda st, o: o["data"].update(isStreaming=not o["data"]["isStreaming"])))
mode("pi/get_messages-empty", PI, "get_messages answers no messages", hint=["pi-abort-before-run", "pi-tool-call"],
     server=server_edit(lambda st, o: pi_resp(st, o) and isinstance(at(o, "data", "messages"), list),
                        lambda st, o: o["data"].update(messages=[])))
mode("pi/ui-request-method-changed", PI, "extension_ui_request names another method",
     hint=["pi-extension-ui"],
     server=server_edit(typ("extension_ui_request"), lambda st, o: o.update(method="notify" if o.get("method") != "notify" else "confirm")))
mode("pi/stdout-noise", PI, "a banner on stdout before the first line", hint=["pi-prompt-text"],
     start=lambda st: [b"pi ready\n"])
mode("pi/exit-zero-becomes-one", PI, "a clean exit reports status 1", hint=["pi-prompt-text"],
     exit=lambda c: 1 if c == 0 else c)
mode("pi/exit-signal-becomes-zero", PI, "a SIGTERM exit reports status 0", hint=["pi-sigterm-idle"],
     exit=lambda c: 0 if c in (129, 130, 143) else c)
mode("pi/agent_settled-aborted-flipped", PI, "agent_settled says the opposite of aborted",
     hint=["pi-prompt-text", "pi-abort-response-id"],
     server=server_edit(lambda st, o: o.get("type") == "agent_settled" and isinstance(o.get("aborted"), bool),
                        lambda st, o: o.update(aborted=not o["aborted"])))
mode("pi/tool-result-isError-flipped", PI, "tool_execution_end says the opposite of isError",
     hint=["pi-tool-call"],
     server=server_edit(lambda st, o: o.get("type") == "tool_execution_end" and isinstance(o.get("isError"), bool),
                        lambda st, o: o.update(isError=not o["isError"])))

PJ = "pijson"
mode("pijson/drop-agent_end", PJ, "e --mode json never prints agent_end", hint=["pi-json-mode"],
     server=drop_lines(typ("agent_end")))
mode("pijson/exit-zero-becomes-one", PJ, "e --mode json reports a completed run with status 1",
     hint=["pi-json-mode"], exit=lambda c: 1 if c == 0 else c)
mode("pijson/text-changed", PJ, "e --mode json's text deltas say something else",
     hint=["pi-json-mode"],
     server=server_edit(lambda st, o: at(o, "assistantMessageEvent", "type") == "text_delta",
                        lambda st, o: o["assistantMessageEvent"].update(delta=o["assistantMessageEvent"]["delta"].upper())))

# ---- ACP (e acp)

A = "acp"
mode("acp/cancel-swallowed", A, "session/cancel never reaches the agent; the prompt runs on",
     hint=["acp-cancel", "acp-cancel-permission"], client=swallow("session/cancel", None, dialect="acp"))
mode("acp/close-swallowed", A, "session/close answered {} and the session stays open",
     hint=["acp-close"], client=swallow("session/close", {}, dialect="acp"))
mode("acp/set_config_option-swallowed", A, "session/set_config_option answers the options unchanged",
     hint=["acp-config-options"], client=swallow("session/set_config_option", {"configOptions": []}, dialect="acp"))
mode("acp/prompt-swallowed", A, "session/prompt answered end_turn without running",
     hint=["acp-prompt-text"], client=swallow("session/prompt", {"stopReason": "end_turn"}, dialect="acp"))
mode("acp/ignore/session-new/mcpServers", A, "session/new ignores mcpServers",
     hint=["acp-mcp-servers"],
     client=lambda st, o, raw: (line({**o, "params": {**o["params"], "mcpServers": []}}), [])
     if o.get("method") == "session/new" and isinstance(at(o, "params", "mcpServers"), list) and at(o, "params", "mcpServers") else (raw, []))
mode("acp/ignore/session-list/cwd", A, "session/list ignores cwd", hint=["acp-sessions"],
     client=drop_param("session/list", "cwd"))
mode("acp/ignore/prompt/image", A, "session/prompt drops its image blocks",
     hint=["acp-prompt-image"],
     client=lambda st, o, raw: (line({**o, "params": {**o["params"], "prompt": [b for b in o["params"]["prompt"] if at(b, "type") != "image"]}}), [])
     if o.get("method") == "session/prompt" and isinstance(at(o, "params", "prompt"), list) and any(at(b, "type") == "image" for b in o["params"]["prompt"]) else (raw, []))


def acp_perm_invert(st, o, raw):
    # The client's answer to a permission request picks the other option.
    if "method" in o or "id" not in o or at(o, "result", "outcome", "outcome") != "selected":
        return raw, []
    oid = at(o, "result", "outcome", "optionId")
    swap = {"allow_once": "reject_once", "reject_once": "allow_once", "allow_always": "reject_always",
            "reject_always": "allow_always"}
    for k, v in swap.items():
        if isinstance(oid, str) and k.split("_")[0] in oid:
            o["result"]["outcome"]["optionId"] = oid.replace(k.split("_")[0], v.split("_")[0])
            break
    return line(o), []


mode("acp/permission-answer-inverted", A, "the agent acts on the other permission option than the one chosen",
     hint=["acp-permission-allow", "acp-permission-reject"], client=acp_perm_invert)


def acp_resp(st, o):
    return "id" in o and "method" not in o


mode("acp/stopReason-changed", A, "session/prompt answers max_tokens for end_turn",
     hint=["acp-prompt-text"],
     server=server_edit(lambda st, o: acp_resp(st, o) and at(o, "result", "stopReason") == "end_turn",
                        lambda st, o: o["result"].update(stopReason="max_tokens")))
mode("acp/cancelled-as-end_turn", A, "a cancelled prompt answers end_turn", hint=["acp-cancel"],
     server=server_edit(lambda st, o: acp_resp(st, o) and at(o, "result", "stopReason") == "cancelled",
                        lambda st, o: o["result"].update(stopReason="end_turn")))
mode("acp/jsonrpc-version-wrong", A, "responses say jsonrpc 1.0", hint=["acp-initialize"],
     server=server_edit(acp_resp, lambda st, o: o.update(jsonrpc="1.0")))
mode("acp/error-code-changed", A, "every error carries another code", hint=["acp-errors", "acp-close"],
     server=server_edit(lambda st, o: acp_resp(st, o) and isinstance(at(o, "error", "code"), Num),
                        lambda st, o: o["error"].update(code=Num("-32603" if o["error"]["code"].text != "-32603" else "-32600"))))
mode("acp/response-id-changed", A, "responses carry another id", hint=["acp-initialize"],
     server=server_edit(lambda st, o: acp_resp(st, o) and o.get("id") is not None, lambda st, o: o.update(id=Num("9999"))))
mode("acp/update-sessionId-wrong", A, "session/update names a session that does not exist",
     hint=["acp-prompt-text"],
     server=server_edit(lambda st, o: o.get("method") == "session/update" and isinstance(at(o, "params", "sessionId"), str),
                        lambda st, o: o["params"].update(sessionId="sess-bogus")))


def acp_sessions_swapped(st, obj, raw):
    r = obj.get("result")
    if acp_resp(st, obj) and isinstance(r, dict):
        st.note_session(r.get("sessionId"))
    sid = at(obj, "params", "sessionId")
    if "method" in obj and len(st.sessions) >= 2 and sid in st.sessions[:2]:
        obj["params"]["sessionId"] = st.sessions[1] if sid == st.sessions[0] else st.sessions[0]
        return [line(obj)]
    return [raw]


mode("acp/updates-of-two-sessions-swapped", A, "with two sessions, each one's updates name the other",
     hint=["acp-two-sessions", "acp-close"], server=acp_sessions_swapped)
mode("acp/chunk-loses-last-char", A, "agent_message_chunk texts lose their last character",
     hint=["acp-prompt-text"],
     server=server_edit(lambda st, o: at(o, "params", "update", "sessionUpdate") == "agent_message_chunk" and isinstance(at(o, "params", "update", "content", "text"), str),
                        lambda st, o: o["params"]["update"]["content"].update(text=o["params"]["update"]["content"]["text"][:-1])))
mode("acp/thought-as-message", A, "agent_thought_chunk sent as agent_message_chunk",
     hint=["acp-prompt-text", "acp-usage"],
     server=server_edit(lambda st, o: at(o, "params", "update", "sessionUpdate") == "agent_thought_chunk",
                        lambda st, o: o["params"]["update"].update(sessionUpdate="agent_message_chunk")))
mode("acp/permission-options-emptied", A, "session/request_permission offers no options",
     hint=["acp-permission-allow"],
     server=server_edit(lambda st, o: o.get("method") == "session/request_permission" and isinstance(at(o, "params", "options"), list),
                        lambda st, o: o["params"].update(options=[])))
mode("acp/permission-toolCall-id-changed", A, "session/request_permission names another tool call",
     hint=["acp-permission-allow", "acp-permission-reject"],
     server=server_edit(lambda st, o: o.get("method") == "session/request_permission" and isinstance(at(o, "params", "toolCall", "toolCallId"), str),
                        lambda st, o: o["params"]["toolCall"].update(toolCallId="other")))
mode("acp/tool-status-failed", A, "tool_call_update says failed for completed",
     hint=["acp-permission-allow", "acp-mcp-servers"],
     server=server_edit(lambda st, o: at(o, "params", "update", "status") == "completed",
                        lambda st, o: o["params"]["update"].update(status="failed")))


def acp_update_after_answer(st, obj, raw):
    # The last update of a session before a prompt's answer comes after it (K5).
    if obj.get("method") == "session/update":
        st.held = [(at(obj, "params", "sessionId"), raw)]
        return []
    if acp_resp(st, obj) and at(obj, "result", "stopReason"):
        held = [r for _, r in st.held]
        st.held = []
        return [raw] + held
    held = [r for _, r in st.held]
    st.held = []
    return held + [raw]


mode("acp/update-after-prompt-answer", A, "a prompt's last update comes after its answer (K5)",
     hint=["acp-prompt-text"], server=acp_update_after_answer)
mode("acp/protocolVersion-wrong", A, "initialize answers protocolVersion 2", hint=["acp-initialize"],
     server=server_edit(lambda st, o: acp_resp(st, o) and at(o, "result", "protocolVersion") is not None,
                        lambda st, o: o["result"].update(protocolVersion=Num("2"))))
mode("acp/usage-plus-one", A, "usage_update counts one token more in use", hint=["acp-usage"],
     server=server_edit(lambda st, o: isinstance(at(o, "params", "update", "used"), Num),
                        lambda st, o: o["params"]["update"].update(used=plus_one(o["params"]["update"]["used"]))))
mode("acp/load-replays-nothing", A, "session/load answers without replaying the history",
     hint=["acp-sessions"], write="acp-load-no-replay")
mode("acp/stdout-noise", A, "a banner on stdout before the first line", hint=["acp-initialize"],
     start=lambda st: [b"acp agent starting\n"])
mode("acp/exit-signal-becomes-zero", A, "a SIGTERM exit reports status 0", hint=["acp-sigterm-idle"],
     exit=lambda c: 0 if c in (129, 130, 143) else c)
mode("acp/exit-zero-becomes-one", A, "a clean exit reports status 1", hint=["acp-initialize"],
     exit=lambda c: 1 if c == 0 else c)

# ---- controls: what a conforming server may do; every case must pass

ALL = "all"


def add_unknown(v, depth=0):
    if isinstance(v, dict):
        for k in list(v.keys()):
            if k not in ("id", "request"):  # an id is echoed as it came (F2)
                v[k] = add_unknown(v[k], depth + 1)
        v["x_unknown_%d" % depth] = {"nested": [Num("1"), "two", None]}
    elif isinstance(v, list):
        return [add_unknown(i, depth + 1) for i in v]
    return v


def unknown_everywhere(st, obj, raw):
    return [line(add_unknown(obj))]


def unknown_event_before(st, obj, raw):
    d = st.dialect
    if d in ("erpc", "print") and obj.get("type") and obj.get("type") not in ("ask", "result"):
        ev = {"type": "x_unknown_event", "detail": {"a": 1}}
        for k in ("session", "request"):
            if k in obj:
                ev[k] = obj[k]
        return [line(ev), raw]
    if d == "erpc" and is_response(st, obj):
        return [line({"type": "x_unknown_notice", "detail": "process"}), raw]
    if d in ("pi", "pijson") and obj.get("type") != "response":
        return [line({"type": "x_unknown_event", "detail": {"a": 1}}), raw]
    if d == "acp" and obj.get("method") == "session/update":
        sid = at(obj, "params", "sessionId")
        return [line({"jsonrpc": "2.0", "method": "session/update",
                      "params": {"sessionId": sid, "update": {"sessionUpdate": "x_unknown_update", "x": 1}}}),
                line({"jsonrpc": "2.0", "method": "_x_vendor/notice", "params": {"detail": 1}}), raw]
    return [raw]


mode("control/identity", ALL, "no change", kind="control")
mode("control/unknown-field-everywhere", ALL, "an unknown member in every object of every line, at every depth",
     kind="control", server=unknown_everywhere)
mode("control/unknown-event-inserted", ALL, "an unknown event type before each event (stamped alike), an unknown notice before each e rpc response",
     kind="control", server=unknown_event_before)
mode("control/re-encoded-spaced", ALL, "every line re-encoded: blanks around : and ,, keys reversed, non-ASCII and / escaped",
     kind="control", server=lambda st, o, raw: [line(o, "spaced")])
mode("control/re-encoded-escaped", ALL, "every string written with \\u escapes only", kind="control",
     server=lambda st, o, raw: [line(o, "escaped")])
mode("control/crlf", ALL, "every line ends in CRLF", kind="control",
     server=lambda st, o, raw: [raw[:-1] + b"\r\n" if raw.endswith(b"\n") else raw])
mode("control/split-writes", ALL, "each line written in three pieces, a few ms apart", kind="control", write="split")
mode("control/coalesced", ALL, "lines held up to 5 ms and written several at a time", kind="control", write="coalesce")


def rechunk(st, obj, raw):
    d = st.dialect
    out = []
    if d in ("erpc", "print") and obj.get("type") in ("text", "reasoning") and isinstance(obj.get("delta"), str) and len(obj["delta"]) > 1:
        s = obj["delta"]
        for i in range(0, len(s), 3):
            out.append(line({**obj, "delta": s[i:i + 3]}))
        return out
    if d in ("pi", "pijson") and at(obj, "assistantMessageEvent", "type") == "text_delta":
        s = obj["assistantMessageEvent"]["delta"]
        if isinstance(s, str) and len(s) > 1:
            h = len(s) // 2
            for part in (s[:h], s[h:]):
                o = dict(obj)
                o["assistantMessageEvent"] = {**obj["assistantMessageEvent"], "delta": part}
                out.append(line(o))
            return out
    if d == "acp" and at(obj, "params", "update", "sessionUpdate") == "agent_message_chunk":
        s = at(obj, "params", "update", "content", "text")
        if isinstance(s, str) and len(s) > 1:
            h = len(s) // 2
            for part in (s[:h], s[h:]):
                u = {**obj["params"]["update"], "content": {**obj["params"]["update"]["content"], "text": part}}
                out.append(line({**obj, "params": {**obj["params"], "update": u}}))
            return out
    return [raw]


mode("control/deltas-rechunked", ALL, "text deltas cut into pieces (e rpc: 3 characters each; pi, ACP: halves)",
     kind="control", server=rechunk)
mode("control/slow-lines", ALL, "each line 15 ms late", kind="control", write="slow")
mode("control/stderr-chatter", ALL, "noise on stderr before and after", kind="control", stderr="noise")


# ---------------------------------------------------------------- running


def dialect_of(argv):
    a = argv[1:]
    if not a:
        return "other"
    if a[0] == "trust":
        return "other"
    if a[0] == "rpc":
        return "erpc"
    if a[0] == "acp":
        return "acp"
    for i, x in enumerate(a[:-1]):
        if x == "--mode" and a[i + 1] == "rpc":
            return "pi"
        if x == "--mode" and a[i + 1] == "json":
            return "pijson"
    return "print"


def main():
    args = sys.argv[1:]
    if args == ["--list"]:
        for m in MODES.values():
            print(json.dumps({"name": m.name, "dialect": m.dialect, "kind": m.kind, "hint": m.hint, "desc": m.desc}))
        return 0
    if len(args) < 3 or args[1] != "--":
        sys.stderr.write("bugproxy: usage: bugproxy.py MODE -- CMD ARGS... | --list\n")
        return 2
    m = MODES.get(args[0])
    if m is None:
        sys.stderr.write("bugproxy: no mode %r (bugproxy.py --list names them)\n" % args[0])
        return 2
    argv = args[2:]
    dialect = dialect_of(argv)
    if dialect == "other" or (m.dialect != ALL and m.dialect != dialect):
        os.execvp(argv[0], argv)  # nothing to plant here: be the server
    return Proxy(m, dialect, argv).run()


class Proxy:
    def __init__(self, m, dialect, argv):
        self.m, self.argv = m, argv
        self.st = State(dialect)
        self.out_lock = threading.Lock()
        self.pending = []  # coalesce: lines waiting
        self.pending_at = 0.0

    # -- output to the client

    def emit(self, chunks):
        w = self.m.write
        with self.out_lock:
            for c in chunks:
                if not c:
                    continue
                if w == "split" and len(c) > 2:
                    a, b = len(c) // 3, 2 * len(c) // 3
                    for part in (c[:a], c[a:b], c[b:]):
                        os.write(1, part)
                        time.sleep(0.001)
                elif w == "slow":
                    time.sleep(0.015)
                    os.write(1, c)
                elif w == "coalesce":
                    self.pending.append(c)
                else:
                    write_all(1, c)
            if w == "coalesce" and self.pending:
                # Written when the next line does not come within 5 ms.
                self.pending_at = time.monotonic()

    def coalescer(self):
        while not self.done.is_set():
            time.sleep(0.005)
            with self.out_lock:
                if self.pending and time.monotonic() - self.pending_at >= 0.005:
                    write_all(1, b"".join(self.pending))
                    self.pending = []

    def flush_pending(self):
        with self.out_lock:
            if self.pending:
                write_all(1, b"".join(self.pending))
                self.pending = []

    # -- the two directions

    def client_side(self):
        parts = []  # the line being read, in pieces (a 10 MiB line comes in many)
        fd = 0
        try:
            while True:
                # A tail without LF (a client's #raw) is forwarded when
                # nothing follows it within 50 ms.
                r, _, _ = select.select([fd], [], [], 0.05 if parts else None)
                if not r:
                    self.to_child(b"".join(parts))
                    parts = []
                    continue
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    break
                while True:
                    i = chunk.find(b"\n")
                    if i < 0:
                        if chunk:
                            parts.append(chunk)
                        break
                    parts.append(chunk[:i + 1])
                    self.client_line(b"".join(parts))
                    parts, chunk = [], chunk[i + 1:]
            if parts:
                self.to_child(b"".join(parts))
        except OSError:
            pass
        finally:
            if not self.m.keep_stdin:
                try:
                    self.child.stdin.close()
                except OSError:
                    pass

    def client_line(self, ln):
        obj = None
        s = ln.strip()
        if s.startswith(b"{"):
            try:
                obj = loads(s)
            except (ValueError, RecursionError):
                obj = None
        if isinstance(obj, dict):
            with self.st.lock:
                if "id" in obj:
                    meth = obj.get("type") if self.st.dialect == "pi" else obj.get("method", "oneshot")
                    if isinstance(meth, str):
                        self.st.methods[idkey(obj["id"])] = meth
                        self.st.params[idkey(obj["id"])] = obj.get("params")
                if self.m.client:
                    fwd, replies = self.m.client(self.st, obj, ln)
                else:
                    fwd, replies = ln, []
            if replies:
                self.emit(replies)
            if fwd is not None:
                self.to_child(fwd)
            return
        self.to_child(ln)

    def to_child(self, b):
        if not b:
            return
        try:
            self.child.stdin.write(b)
            self.child.stdin.flush()
        except (OSError, ValueError):
            pass

    def server_side(self):
        out = self.child.stdout
        if self.m.start:
            self.emit(self.m.start(self.st))
        text = []
        while True:
            ln = out.readline()
            if not ln:
                break
            if self.m.write == "text-cut":
                text.append(ln)
                continue
            if self.m.write == "acp-load-no-replay" and self.skip_replay(ln):
                continue
            obj = None
            if ln.endswith(b"\n") and ln.lstrip().startswith(b"{"):
                try:
                    obj = loads(ln)
                except (ValueError, RecursionError):
                    obj = None
            if isinstance(obj, dict) and self.m.server:
                with self.st.lock:
                    lines = self.m.server(self.st, obj, ln)
                self.emit(lines)
            else:
                self.emit([ln])
        if text:
            whole = b"".join(text)
            if whole.endswith(b"\n") and len(whole) > 1:
                whole = whole[:-2] + b"\n"
            self.emit([whole])
        with self.st.lock:
            held = [r if isinstance(r, bytes) else line(r) for _, r in self.st.held]
            self.st.held = []
        self.emit(held)
        if self.m.end:
            self.emit(self.m.end(self.st))

    def skip_replay(self, ln):
        # acp/load-replays-nothing: the session/update lines between a
        # session/load request and its answer are dropped.
        try:
            obj = loads(ln)
        except (ValueError, RecursionError):
            return False
        loading = [k for k, v in self.st.methods.items() if v == "session/load"]
        answered = self.st.count.setdefault("answered", set())
        if "id" in obj and "method" not in obj:
            answered.add(idkey(obj["id"]))
            return False
        return obj.get("method") == "session/update" and any(k not in answered for k in loading)

    def stderr_side(self):
        for ln in self.child.stderr:
            if self.m.stderr == "to-stdout":
                self.emit([ln])

    def run(self):
        argv = list(self.argv)
        w = self.m.write or ""
        if w.startswith("argv-drop:"):
            argv = [a for a in argv if a != w.split(":", 1)[1]]
        elif w.startswith("argv-drop-pair:"):
            flag = w.split(":", 1)[1]
            if flag in argv:
                i = argv.index(flag)
                argv = argv[:i] + argv[i + 2:]
        stdin = subprocess.DEVNULL if w == "stdin-null" else subprocess.PIPE
        stderr = subprocess.PIPE if self.m.stderr in ("silence", "to-stdout") else None
        if self.m.stderr == "noise":
            sys.stderr.write("bugproxy: warming up\nWARN something odd but harmless\n")
            sys.stderr.flush()
        for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            signal.signal(s, self.forward)
        self.child = subprocess.Popen(argv, stdin=stdin, stdout=subprocess.PIPE, stderr=stderr, bufsize=0)
        self.done = threading.Event()
        threads = [threading.Thread(target=self.server_side, daemon=True)]
        if stderr is not None:
            threads.append(threading.Thread(target=self.stderr_side, daemon=True))
        for t in threads:
            t.start()
        if stdin is subprocess.PIPE:
            threading.Thread(target=self.client_side, daemon=True).start()
        else:
            # stdin-null: the client's stdin is read and dropped
            threading.Thread(target=lambda: sys.stdin.buffer.read(), daemon=True).start()
        if w == "coalesce":
            threading.Thread(target=self.coalescer, daemon=True).start()
        code = self.child.wait()
        for t in threads:
            t.join()
        self.done.set()
        self.flush_pending()
        if code < 0:
            code = 128 - code
        if self.m.stderr == "noise":
            sys.stderr.write("bugproxy: done\n")
            sys.stderr.flush()
        if self.m.exit:
            code = self.m.exit(code)
        os._exit(code)

    def forward(self, signum, frame):
        if self.m.signals:
            try:
                self.child.send_signal(signum)
            except (OSError, AttributeError):
                pass


def write_all(fd, b):
    while b:
        n = os.write(fd, b)
        b = b[n:]


if __name__ == "__main__":
    sys.exit(main())
