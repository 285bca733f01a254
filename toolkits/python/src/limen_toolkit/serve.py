"""Serving a listing's declarations over standard input and output: the
Tool process protocol (flow-host-boundary.txt § The Tool process protocol,
§ Toolkits) on asyncio, as limen's Rust toolkit (``toolkit/src/serve.rs``)
and core's ``ToolkitConn`` serve it.

:func:`serve` takes a listing's text (what ``flow tools`` writes) and one
handler per declaration, keyed by its identity. describe is answered from
the listing (its declarations and fingerprints byte for byte); each call's
args are decoded at the declared types by :mod:`limen_toolkit.codec` (a
call whose args do not decode, or that names no declaration served, is
NotRun: the author's code never runs); calls are multiplexed, so a handler
that awaits lets others run; each reply is written canonically. A handler
ends a call four ways: it returns the success value (Ok), raises
:class:`Failed` with the declared error (Failed), :class:`NotRun` (say so
only when nothing was done) or :class:`Unknown`; any other exception is
Unknown, since what the code did before it stopped is not known.

The host's ``cancel`` cancels the handler's task: ``asyncio.CancelledError``
is raised where the author's code awaits. Code that lets it escape is
answered Unknown ("cancelled by the host"); code that catches it decides
the outcome itself. A call cancelled before its code started is NotRun and
never runs.

Standard output is the protocol's: while :func:`serve` runs, ``sys.stdout``
refuses writes (print to ``sys.stderr``), and file descriptor 1 points at
standard error, so not even a child process can corrupt the protocol.

Speed: input is read in large pieces and split into lines here; a call in
exactly the form limen's host writes, to a declaration whose parameters are
all ``Text``, ``Int`` or ``Bool``, is read by one regular expression
without building the JSON tree; a handler runs at once in the reading
callback (``coro.send(None)``) and only a handler that suspends costs an
``asyncio.Task``; the replies of one read are written with one system call.
"""

from __future__ import annotations

import asyncio
import inspect
import io
import json
import os
import re
import sys
import threading
import types
from dataclasses import dataclass, field
from json.encoder import encode_basestring
from typing import Any, Awaitable, BinaryIO, Callable, Generator, Mapping, Optional

from .codec import DEFAULT_LIMITS, Limits, Refused, _close, _Decoder, _Num, _Obj, _parse, encode
from .types import BOOL, INT, JSON, TEXT, Env, SchemaError, Type, type_from_schema, written
from .values import JsonValue

__all__ = [
    "CANCELLED_BEFORE", "CANCELLED_BY_HOST", "DATA_VERSION", "Context", "Failed", "Handler",
    "ListingError", "NotRun", "StdoutIsTheProtocol", "ToolkitLimits", "Unknown", "serve",
    "serve_async",
]

DATA_VERSION = "1.0"
"""The data version this toolkit speaks (describe's ``data``)."""

CANCELLED_BEFORE = "cancelled before the Tool's code started"
"""The NotRun reason of a call cancelled before its code started (the Rust
toolkit's words)."""

CANCELLED_BY_HOST = "cancelled by the host"
"""The Unknown reason of a call whose code let the host's cancel escape."""


class Context:
    """One call, as the author's code sees it beside its arguments."""

    __slots__ = ("run_id", "call_id", "expects", "_cancelled")

    def __init__(self, run_id: str, call_id: str, expects: JsonValue = None) -> None:
        self.run_id = run_id
        """The host's run id: with :attr:`call_id`, the call's correlation
        key (a call sent again after a crash has the same pair)."""
        self.call_id = call_id
        """The call's history id."""
        self.expects = expects
        """For a generic Tool, the schema of the success type the caller
        expects (a type parameter's values are JSON of that shape); else
        ``None``."""
        self._cancelled = False

    @property
    def cancelled(self) -> bool:
        """Whether the host has cancelled this call. A cancel proves
        nothing: the call is still answered with what its code ends with."""
        return self._cancelled

    def __repr__(self) -> str:
        return f"Context(run_id={self.run_id!r}, call_id={self.call_id!r})"


class Failed(Exception):
    """The declared error: the reply is Failed with ``value`` (a value of
    the declared error type, as :mod:`limen_toolkit.values` holds it)."""

    def __init__(self, value: Any) -> None:
        super().__init__(value)
        self.value = value


class Unknown(Exception):
    """The call may or may not have happened: the reply is Unknown."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class NotRun(Exception):
    """The call definitely did not happen: raise it only when nothing was
    done. The reply is NotRun."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class ListingError(ValueError):
    """A listing :func:`serve` cannot serve, or handlers that do not match
    it."""


class StdoutIsTheProtocol(RuntimeError):
    """Raised by a write to ``sys.stdout`` while the Tool serves: standard
    output carries the Tool protocol."""


Handler = Callable[[Context, list[Any]], Awaitable[Any]]
"""A declaration's code: the call's context and its arguments (generic
values, one per parameter in declaration order) in, the success value
out."""


@dataclass(frozen=True)
class ToolkitLimits:
    """The bounds of a call, the Rust toolkit's (core's
    ``ToolkitLimits``): the longest line and the decoding limits."""

    max_line: int = DEFAULT_LIMITS.max_bytes
    """The longest call line, in bytes without its newline."""
    decode: Limits = field(default=DEFAULT_LIMITS)
    """The bounds of every decoded argument."""


# -- the declarations ---------------------------------------------------------


class _Tool:
    """One served declaration: its types, its handler, and how a call to it
    in the host's own form is read and answered fast."""

    __slots__ = ("identity", "names", "params", "ok", "err", "env", "scope", "handler",
                 "fast", "ok_text")

    def __init__(self, identity: str, signature: Any, handler: Handler, limits: ToolkitLimits) -> None:
        self.identity = identity
        self.handler = handler
        if not isinstance(signature, dict):
            raise ListingError(f"`{identity}`: a signature is an object")
        generic = signature.get("generic", [])
        # A type parameter's values reach the author as JSON.
        self.scope: dict[str, Type] = {str(g): JSON for g in generic}
        env: Env = {}

        def read(schema: Any, what: str) -> Type:
            try:
                ty, more = type_from_schema(schema)
            except (SchemaError, KeyError, TypeError, IndexError) as e:
                raise ListingError(f"`{identity}`: {what}: {e}") from None
            env.update(more)
            return ty

        self.names: list[str] = []
        self.params: list[Type] = []
        for p in signature.get("params", []):
            if not (isinstance(p, list) and len(p) == 2 and isinstance(p[0], str)):
                raise ListingError(f"`{identity}`: a parameter is [name, schema]")
            self.names.append(p[0])
            self.params.append(read(p[1], f"parameter `{p[0]}`"))
        self.ok = _close(read(signature.get("ok"), "the success type"), self.scope)
        self.err = _close(read(signature.get("err"), "the error type"), self.scope)
        self.env = env
        self.fast = _fast_args(self, limits)
        self.ok_text = _fast_writer(self.ok, env)


_TEXT_RE = r'"([^"\\\x00-\x1f]*)"'
_BOOL_RE = r"(true|false)"


def _fast_args(tool: _Tool, limits: ToolkitLimits) -> Optional[
        tuple[str, int, Optional[Callable[[tuple[str, ...]], list[Any]]]]]:
    """For a declaration whose parameters are all ``Text``, ``Int`` or
    ``Bool`` (and not generic), a regular expression that matches exactly
    the args object bodies the canonical writer makes with no escape in a
    string (the members in code-point order), its number of groups, and how
    its groups become the arguments (``None``: as they are); ``None`` for
    any other declaration. A body it does not match takes the general path,
    which reads (and judges) it as core does; one it matches decodes there
    to the same arguments."""
    if tool.scope or not all(t in (TEXT, INT, BOOL) for t in tool.params):
        return None
    if not all(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", n) for n in tool.names):
        return None
    # Python's int() takes at most 4300 digits unless told otherwise.
    digits = min(limits.decode.max_int_digits, sys.get_int_max_str_digits() or 4300) \
        if hasattr(sys, "get_int_max_str_digits") else limits.decode.max_int_digits
    if digits < 1:
        return None
    int_re = r"(-?(?:0|[1-9][0-9]{0,%d}))" % (digits - 1)
    order = sorted(range(len(tool.names)), key=lambda i: tool.names[i].encode())
    parts = []
    for i in order:
        t = tool.params[i]
        parts.append('"%s":%s' % (tool.names[i], _TEXT_RE if t == TEXT else int_re if t == INT else _BOOL_RE))
    pattern = ",".join(parts)
    # Where each group goes, and what it becomes.
    if order == list(range(len(order))) and all(t == TEXT for t in tool.params):
        return pattern, len(order), None
    kinds = [tool.params[i] for i in order]
    place = [order.index(i) for i in range(len(order))]

    def convert(groups: tuple[str, ...]) -> list[Any]:
        vals = [int(g) if k == INT else (g == "true") if k == BOOL else g for g, k in zip(groups, kinds)]
        return [vals[p] for p in place]

    return pattern, len(order), convert


def _fast_calls(tools: list[_Tool]) -> tuple[
        Optional[Callable[[str], Optional[re.Match[str]]]],
        dict[str, tuple[int, int, Optional[Callable[[tuple[str, ...]], list[Any]]], Handler, bool, _Tool]]]:
    """One regular expression for a whole call line in exactly the form
    limen's host writes (no escape in its key or tool), to any declaration
    :func:`_fast_args` reads: the run id and call id, then one alternative
    per declaration (its identity, its args), each ending in an empty group
    named after it, so ``lastgroup`` says which matched. With it, what
    each name stands for: where its args' groups are, how they become the
    arguments, the handler, whether the success type is Text, and the
    declaration."""
    alternatives: list[tuple[str, str]] = []
    plans: dict[str, tuple[int, int, Optional[Callable[[tuple[str, ...]], list[Any]]],
                           Handler, bool, _Tool]] = {}
    group = 2
    for n, tool in enumerate(tools):
        fast = tool.fast
        # An identity the host writes with an escape is never in this form.
        if fast is None or re.search(r'["\\\x00-\x1f]', tool.identity):
            continue
        pattern, count, convert = fast
        name = f"t{n}"
        alternatives.append((tool.identity, f'","args":\\{{{pattern}(?P<{name}>)'))
        plans[name] = (group, group + count, convert, tool.handler, tool.ok == TEXT, tool)
        group += count + 1
    if not alternatives:
        return None, {}
    common = os.path.commonprefix([identity for identity, _ in alternatives])
    body = "|".join(re.escape(identity[len(common):]) + rest for identity, rest in alternatives)
    line = (r'\{"jsonrpc":"2\.0","method":"call","params":\{"runId":"([^"\\\x00-\x1f]*)",'
            r'"callId":"([^"\\\x00-\x1f]*)","tool":"' + re.escape(common)
            + "(?:" + body + r")\}\}\}")
    return re.compile(line).fullmatch, plans


def _fast_writer(ty: Type, env: Env) -> Callable[[Any], str]:
    """The canonical text of a success value of ``ty``: a short way for a
    plain ``str`` (``Text``), ``int`` (``Int``) or ``bool`` (``Bool``),
    :func:`~limen_toolkit.codec.encode` (strict) for anything else."""
    def general(v: Any) -> str:
        text = encode(v, ty, env)
        if not text.isascii():
            text.encode("utf-8")  # a lone surrogate in json.Value text
        return text

    if ty == TEXT:
        def text(v: Any) -> str:
            # Printable, no quote, no backslash: written as it is.
            if type(v) is str and v.isprintable() and '"' not in v and "\\" not in v:
                return '"' + v + '"'
            return general(v)
        return text
    if ty == INT:
        def integer(v: Any) -> str:
            if type(v) is int:
                try:
                    return str(v)
                except ValueError:
                    pass
            return general(v)
        return integer
    return general


@dataclass
class _Listing:
    describe: str
    tools: list[tuple[str, Any]]


def _read_listing(text: str) -> _Listing:
    """A listing's declarations, and describe's result written from them as
    the Rust toolkit writes it: ``{"data", "tools"}`` with each entry's
    members in the listing's order, compact."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise ListingError(f"$: not JSON: {e}") from None
    if not isinstance(doc, dict):
        raise ListingError('$: a listing is {"data", "tools"}')
    for k in doc:
        if k not in ("data", "tools"):
            raise ListingError(f"$.{k}: `{k}` is not a member of a listing")
    data = doc.get("data")
    if not isinstance(data, str) or not re.fullmatch(r"(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)", data):
        raise ListingError("$.data: the data version is a string, MAJOR.MINOR")
    if data.split(".")[0] != DATA_VERSION.split(".")[0]:
        raise ListingError(f"$.data: data version {data} has another major than ours, {DATA_VERSION}")
    entries = doc.get("tools")
    if not isinstance(entries, list):
        raise ListingError("$.tools: `tools` is an array of entries")
    tools: list[tuple[str, Any]] = []
    out = []
    for i, entry in enumerate(entries):
        at = f"$.tools[{i}]"
        if not isinstance(entry, dict) or set(entry) != {"tool", "fingerprint", "signature"}:
            raise ListingError(f'{at}: an entry is {{"tool", "fingerprint", "signature"}}')
        if not isinstance(entry["tool"], str) or not isinstance(entry["fingerprint"], str):
            raise ListingError(f"{at}: `tool` and `fingerprint` are strings")
        if any(t == entry["tool"] for t, _ in tools):
            raise ListingError(f"{at}.tool: `{entry['tool']}` is listed twice")
        tools.append((entry["tool"], entry["signature"]))
        out.append({"tool": entry["tool"], "fingerprint": entry["fingerprint"], "signature": entry["signature"]})
    describe = json.dumps({"data": DATA_VERSION, "tools": out}, separators=(",", ":"), ensure_ascii=False)
    return _Listing(describe, tools)


# -- the protocol's texts ------------------------------------------------------

_PARSE_ERROR = -32700
_INVALID_REQUEST = -32600
_METHOD_NOT_FOUND = -32601

_REPLY = '{"jsonrpc":"2.0","method":"reply","params":{"runId":'
_PIECE_LINES = 64
"""How many lines of a read are answered before their replies are
written (the Rust toolkit's pieces): a read can hold hundreds of calls,
and answering all before writing any keeps the host idle meanwhile."""
_ASCII_WS = " \t\n\r\x0c"
_ABSENT: Any = object()
_UNSTARTED: Any = object()


def _q(s: str) -> str:
    """A string's JSON text, as core writes it (only ``"``, ``\\`` and
    control characters escaped), a lone surrogate as U+FFFD."""
    text: str = encode_basestring(s)
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            text = "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in text)
    return text


_Prepared = Optional["tuple[_Tool, Context, list[Any]]"]
"""A call read, to run: its declaration, context and arguments."""


def _key(run: str, call: str) -> str:
    """A call key as core displays it in a log line."""
    return f"run {json.dumps(run, ensure_ascii=False)}, call {json.dumps(call, ensure_ascii=False)}"


def _reply_line(run: str, call: str, outcome: str) -> str:
    return f'{_REPLY}{_q(run)},"callId":{_q(call)},"outcome":{{{outcome}}}}}}}\n'


def _raised(e: BaseException) -> str:
    text = str(e)
    name = type(e).__name__
    return f"the Tool's code raised {name}: {text}" if text else f"the Tool's code raised {name}"


_MAX_CAPTURE = 1024
_MAX_TRACKED = 4
_METHOD, _ID, _RUN, _CALL = range(4)
_STRING_STOP = re.compile(rb'["\\]')
_SCALAR = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-+.")
_WS = frozenset(b" \t\n\x0c\r")


class _IdScanner:
    """Whom a line that is no message, or is too long to hold, was meant
    for: core's ``IdScanner`` (``core/src/flow/tool/oversize.rs``), byte for
    byte. It reads a line in pieces in constant memory, follows JSON's
    structure loosely and never fails, and keeps the top-level ``method``
    and ``params.runId`` and ``params.callId``."""

    def __init__(self) -> None:
        self.depth = 0
        # Each frame: [object, expect_key, params].
        self.frames: list[list[bool]] = []
        self.in_string = False
        self.escape = False
        self.string_is_key = False
        self.key = bytearray()
        self.key_long = False
        self.target: Optional[int] = None
        self.capture = bytearray()
        self.capture_long = False
        self.in_scalar = False
        self.next_is_params = False
        self.found: list[Optional[str]] = [None, None, None, None]

    def feed(self, data: bytes) -> None:
        i, n = 0, len(data)
        while i < n:
            if self.in_string and not self.escape and not self.string_is_key and self.target is None:
                # Inside a string nothing is kept: on to its next quote or
                # backslash.
                m = _STRING_STOP.search(data, i)
                if m is None:
                    return
                i = m.start()
            self.byte(data[i])
            i += 1

    def key_of_call(self) -> Optional[tuple[str, str]]:
        """The call the line names, if it is a call that names one."""
        self.end_scalar()
        method, _, run, call = self.found
        if method == "call" and run is not None and call is not None:
            return run, call
        return None

    def top(self) -> Optional[list[bool]]:
        if self.depth == 0 or self.depth > _MAX_TRACKED or not self.frames:
            return None
        return self.frames[-1]

    def byte(self, b: int) -> None:
        if self.in_string:
            self.push_string_byte(b)
            if self.escape:
                self.escape = False
            elif b == 0x5C:
                self.escape = True
            elif b == 0x22:
                self.in_string = False
                self.end_string()
            return
        if self.in_scalar:
            if b in _SCALAR:
                self.push_capture(b)
                return
            self.end_scalar()
        if b == 0x22:
            self.in_string = True
            top = self.top()
            self.string_is_key = top is not None and top[0] and top[1] and self.depth <= _MAX_TRACKED
            if self.string_is_key:
                self.key.clear()
                self.key_long = False
            self.start_value_capture()
            self.push_string_byte(b)
        elif b in (0x7B, 0x5B):
            params = self.next_is_params and b == 0x7B
            self.next_is_params = False
            self.target = None
            self.depth += 1
            if self.depth <= _MAX_TRACKED:
                self.frames.append([b == 0x7B, b == 0x7B, params])
        elif b in (0x7D, 0x5D):
            if self.depth <= _MAX_TRACKED and self.frames:
                self.frames.pop()
            self.depth = max(0, self.depth - 1)
        elif b == 0x3A:
            top = self.top()
            if top is not None:
                top[1] = False
            self.choose_target()
        elif b == 0x2C:
            top = self.top()
            if top is not None:
                top[1] = top[0]
            self.target = None
            self.next_is_params = False
        elif b in _WS:
            pass
        else:
            self.start_value_capture()
            self.in_scalar = True
            self.push_capture(b)

    def choose_target(self) -> None:
        self.target = None
        self.next_is_params = False
        if self.key_long:
            return
        top = self.top()
        in_params = top is not None and top[2] and self.depth == 2
        key = bytes(self.key)
        if self.depth == 1 and key == b'"method"':
            self.target = _METHOD
        elif self.depth == 1 and key == b'"id"':
            self.target = _ID
        elif self.depth == 1 and key == b'"params"':
            self.next_is_params = True
        elif self.depth == 2 and key == b'"runId"' and in_params:
            self.target = _RUN
        elif self.depth == 2 and key == b'"callId"' and in_params:
            self.target = _CALL

    def start_value_capture(self) -> None:
        self.capture.clear()
        self.capture_long = False
        if self.string_is_key and self.in_string:
            self.target = None
        self.next_is_params = False

    def push_string_byte(self, b: int) -> None:
        if self.string_is_key:
            if len(self.key) < _MAX_CAPTURE:
                self.key.append(b)
            else:
                self.key_long = True
        else:
            self.push_capture(b)

    def push_capture(self, b: int) -> None:
        if self.target is None:
            return
        if len(self.capture) < _MAX_CAPTURE:
            self.capture.append(b)
        else:
            self.capture_long = True

    def end_string(self) -> None:
        if self.string_is_key:
            self.string_is_key = False
            return
        self.end_value()

    def end_scalar(self) -> None:
        if self.in_scalar:
            self.in_scalar = False
            self.end_value()

    def end_value(self) -> None:
        target, self.target = self.target, None
        if target is None or self.capture_long:
            return
        raw = bytes(self.capture)
        self.capture.clear()
        if self.found[target] is not None:
            return
        try:
            text = json.loads(raw.decode("utf-8"))
            if isinstance(text, str):
                text.encode("utf-8")
                self.found[target] = text
        except ValueError:
            # Not a string token (or a lone surrogate): not found.
            pass


def _scan_key(line: bytes) -> Optional[tuple[str, str]]:
    """The call a whole line names (:class:`_IdScanner`)."""
    scanner = _IdScanner()
    scanner.feed(line)
    return scanner.key_of_call()


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _lone_surrogate(raw: Any) -> bool:
    """Whether a parsed line holds a lone surrogate in any string or key."""
    if isinstance(raw, str):
        return not raw.isascii() and any(0xD800 <= ord(c) <= 0xDFFF for c in raw)
    if isinstance(raw, _Obj):
        return any(_lone_surrogate(k) or _lone_surrogate(v) for k, v in raw)
    if isinstance(raw, list):
        return any(_lone_surrogate(v) for v in raw)
    return False


def _str(v: Any) -> bool:
    """Whether a parsed JSON value is a string (not a number kept as text)."""
    return isinstance(v, str) and not isinstance(v, _Num)


@types.coroutine
def _resume(coro: Any, first: Any) -> Generator[Any, Any, Any]:
    """Goes on with a coroutine that has already run up to its first
    suspension (which yielded ``first``), as ``await`` would: what the task
    sends or throws goes to it, what it yields goes to the task."""
    value = first
    while True:
        try:
            sent = yield value
        except GeneratorExit:
            coro.close()
            raise
        except BaseException as exc:
            try:
                value = coro.throw(exc)
            except StopIteration as stop:
                return stop.value
        else:
            try:
                value = coro.send(sent)
            except StopIteration as stop:
                return stop.value


async def _await(aw: Awaitable[Any]) -> Any:
    return await aw


# -- standard output kept for the protocol ------------------------------------

_STDOUT_HELP = ("standard output carries the Tool protocol while the Tool serves: "
                "write to sys.stderr instead (print(..., file=sys.stderr))")


class _RefusingBinary(io.RawIOBase):
    def writable(self) -> bool:
        return True

    def write(self, b: Any) -> int:
        raise StdoutIsTheProtocol(_STDOUT_HELP)


class _RefusingStdout(io.TextIOBase):
    """``sys.stdout`` while the Tool serves: every write is refused with an
    error that names the fix."""

    def __init__(self) -> None:
        super().__init__()
        self._buffer = _RefusingBinary()

    @property
    def buffer(self) -> _RefusingBinary:
        return self._buffer

    def writable(self) -> bool:
        return True

    def write(self, s: str) -> int:
        raise StdoutIsTheProtocol(_STDOUT_HELP)

    def flush(self) -> None:
        pass


# -- the connection ------------------------------------------------------------


class _Writer:
    """Standard output when it is not a pipe (a file): plain blocking
    writes."""

    def __init__(self, out: Any) -> None:
        self.out = out

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            n = self.out.write(view)
            view = view[n if n is not None else len(view):]
        if hasattr(self.out, "flush"):
            self.out.flush()


class _WriteSide(asyncio.Protocol):
    """The pipe transport's protocol for standard output: when the host
    does not read our replies, we stop reading its calls."""

    def __init__(self, server: _Server) -> None:
        self.server = server
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def pause_writing(self) -> None:
        self.server.pause_reading(True)

    def resume_writing(self) -> None:
        self.server.pause_reading(False)

    def connection_lost(self, exc: Optional[Exception]) -> None:
        if not self.closed.done():
            self.closed.set_result(None)
        self.server.output_lost()


class _Server(asyncio.Protocol):
    """The implementation's side of one connection (core's ``ToolkitConn``
    and the Rust toolkit's serve loop in one): reads lines, answers
    describe, runs calls, writes replies."""

    def __init__(self, listing: _Listing, handlers: Mapping[str, Handler], limits: ToolkitLimits,
                 eager: bool = True) -> None:
        self.loop = asyncio.get_running_loop()
        self.eager = eager
        self.limits = limits
        self.tools: dict[str, _Tool] = {}
        missing = [t for t, _ in listing.tools if t not in handlers]
        extra = [t for t in handlers if all(t != u for u, _ in listing.tools)]
        if missing or extra:
            raise ListingError("the handlers do not match the listing: "
                               + "; ".join([f"no handler for `{t}`" for t in missing]
                                           + [f"`{t}` is not listed" for t in extra]))
        for identity, sig in listing.tools:
            self.tools[identity] = _Tool(identity, sig, handlers[identity], limits)
        # Calls in the host's own form, to the declarations read fast.
        self.fast_call, self.plans = _fast_calls(list(self.tools.values()))
        self.describe = listing.describe
        self.partial = b""
        # Reading past the line limit: the length so far and its head.
        self.skipping: Optional[tuple[int, _IdScanner]] = None
        self.out: list[str] = []
        self.flush_soon = False
        # Calls whose code suspended, by key: their task and context.
        self.running: dict[tuple[str, str], tuple[asyncio.Task[None], Context]] = {}
        # Calls read and not yet started (only while a read holds a cancel).
        self.pending: Optional[dict[tuple[str, str], Context]] = None
        self.ended = False
        self.finished: asyncio.Future[None] = self.loop.create_future()
        self.writer: Any = None
        self.reader: Any = None

    # -- input -----------------------------------------------------------------

    def data_received(self, data: bytes) -> None:
        self.feed(data)

    def eof_received(self) -> bool:
        self.eof()
        return False

    def connection_lost(self, exc: Optional[Exception]) -> None:
        self.eof()

    def pause_reading(self, pause: bool) -> None:
        reader = self.reader
        if reader is None or not hasattr(reader, "pause_reading"):
            return
        try:
            reader.pause_reading() if pause else reader.resume_reading()
        except RuntimeError:
            pass

    def output_lost(self) -> None:
        # Nobody reads our replies any more: nothing left to do.
        if not self.finished.done():
            self.finished.set_result(None)

    def feed(self, data: bytes) -> None:
        """Bytes read from standard input."""
        if self.ended:
            return
        max_line = self.limits.max_line
        if self.skipping is not None:
            nl = data.find(b"\n")
            length, scanner = self.skipping
            if nl < 0:
                scanner.feed(data)
                self.skipping = (length + len(data), scanner)
                return
            scanner.feed(data[:nl])
            self.skipping = None
            self.oversized(length + nl, scanner.key_of_call())
            data = data[nl + 1:]
        if self.partial:
            data = self.partial + data
            self.partial = b""
        last = data.rfind(b"\n")
        rest = data[last + 1:]
        if len(rest) > max_line:
            # A line longer than the limit: only its length and whom it
            # names are kept, as it goes by.
            scanner = _IdScanner()
            scanner.feed(rest)
            self.skipping = (len(rest), scanner)
        else:
            self.partial = rest
        if last > 0:
            self.block(data[:last])
        elif last == 0:
            pass
        self.flush()

    def eof(self) -> None:
        """Standard input ended: the host sends nothing more. A last line
        with no newline is no message, and is dropped; the calls running
        are still answered, then the loop ends."""
        if self.ended:
            return
        self.ended = True
        unfinished = None
        if self.skipping is not None:
            unfinished = self.skipping[0]
        elif self.partial.strip(_ASCII_WS.encode()):
            unfinished = len(self.partial)
        if unfinished:
            self.log(f"a last line of {unfinished} bytes with no newline at the end of input: dropped")
        self.partial, self.skipping = b"", None
        self.flush()
        self.maybe_finish()

    def maybe_finish(self) -> None:
        if self.ended and not self.running and not self.finished.done():
            self.finished.set_result(None)

    def block(self, data: bytes) -> None:
        """Complete lines (without the last newline)."""
        if len(data) > self.limits.max_line:
            # Some line may be over the limit: one at a time.
            for raw in data.split(b"\n"):
                line = raw[:-1] if raw.endswith(b"\r") else raw
                if len(line) > self.limits.max_line:
                    self.oversized(len(line), _scan_key(line))
                else:
                    self.block(raw)
            return
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            for raw in data.split(b"\n"):
                try:
                    self.lines(raw.decode("utf-8"))
                except UnicodeDecodeError:
                    self.general(raw)
            return
        self.lines(text)

    def lines(self, text: str) -> None:
        """The lines of one read. A read that holds a cancel is read whole
        before any of its calls runs, so that a cancel behind a call in the
        same read reaches it before it starts; any other runs each call as
        soon as it is read, and the replies are written every
        :data:`_PIECE_LINES` lines, so the host reads them while we work."""
        if '"cancel"' in text:
            return self.careful(text)
        lines = text.split("\n")
        if len(lines) <= _PIECE_LINES:
            return self.piece(lines)
        for i in range(0, len(lines), _PIECE_LINES):
            self.piece(lines[i:i + _PIECE_LINES])
            self.flush()

    def piece(self, lines: list[str]) -> None:
        """Runs the calls of some lines: the hot path."""
        plans = self.plans
        running = self.running
        append = self.out.append
        call_match = self.fast_call
        if call_match is None:
            for line in lines:
                prepared = self.general(line)
                if prepared is not None:
                    self.start(*prepared)
            return
        max_line = self.limits.decode.max_string_bytes >> 2
        eager = self.eager
        coroutine = types.CoroutineType
        for line in lines:
            m = call_match(line)
            if m is not None and len(line) <= max_line:
                groups = m.groups()
                run = groups[0]
                call = groups[1]
                if not (running and (run, call) in running):
                    start, end, convert, handler, text_ok, tool = plans[m.lastgroup]  # type: ignore[index]
                    if convert is not None:
                        args = convert(groups[start:end])
                    elif end == start + 1:
                        args = [groups[start]]
                    else:
                        args = list(groups[start:end])
                    cx = Context(run, call)
                    if not eager:
                        self.start(tool, cx, args)
                        continue
                    try:
                        coro: Any = handler(cx, args)
                        if type(coro) is not coroutine:
                            coro = self.awaitable(coro)
                        first = coro.send(None)
                    except StopIteration as stop:
                        v = stop.value
                        # A plain Text written as it is; anything else by
                        # the declaration's writer, which judges it.
                        if text_ok and type(v) is str and v.isprintable() and '"' not in v \
                                and "\\" not in v:
                            append(f'{_REPLY}"{run}","callId":"{call}","outcome":{{"Ok":"{v}"}}}}}}\n')
                        else:
                            self.answer(run, call, self.ok_outcome(tool, v))
                    except BaseException as e:
                        self.answer(run, call, self.outcome_of(tool, e, cx))
                    else:
                        self.suspended(tool, cx, coro, first)
                    continue
            prepared = self.general(line)
            if prepared is not None:
                self.start(*prepared)

    def careful(self, text: str) -> None:
        """A read that holds a cancel: its calls are all read first."""
        self.pending = {}
        calls: list[tuple[_Tool, Context, list[Any]]] = []
        try:
            for line in text.split("\n"):
                prepared = self.general(line)
                if prepared is not None:
                    tool, cx, args = prepared
                    key = (cx.run_id, cx.call_id)
                    if key in self.pending:
                        self.log(f"a second call with {_key(*key)} while it is open: ignored")
                        continue
                    self.pending[key] = cx
                    calls.append(prepared)
        finally:
            self.pending = None
        for tool, cx, args in calls:
            self.start(tool, cx, args)

    # -- calls -------------------------------------------------------------------

    def awaitable(self, value: Any) -> Any:
        """What a handler returned, as a coroutine: an awaitable awaited, a
        plain value (a handler that is not ``async``) as it is."""
        if inspect.isawaitable(value):
            return _await(value)

        async def done() -> Any:
            return value
        return done()

    def start(self, tool: _Tool, cx: Context, args: list[Any]) -> None:
        """Runs a call's code until it ends or first suspends."""
        run, call = cx.run_id, cx.call_id
        if cx._cancelled:
            return self.answer(run, call, '"NotRun":' + _q(CANCELLED_BEFORE))
        if not self.eager:
            # The handler is called in its task, so even a plain function
            # that raises is answered there.
            return self.suspended(tool, cx, (tool.handler, args), _UNSTARTED)
        try:
            coro: Any = tool.handler(cx, args)
            if type(coro) is not types.CoroutineType:
                coro = self.awaitable(coro)
            first = coro.send(None)
        except StopIteration as stop:
            self.answer(run, call, self.ok_outcome(tool, stop.value))
        except BaseException as e:
            self.answer(run, call, self.outcome_of(tool, e, cx))
        else:
            self.suspended(tool, cx, coro, first)

    def suspended(self, tool: _Tool, cx: Context, coro: Any, first: Any) -> None:
        """A call whose code awaits: from here on a task runs it."""
        task = self.loop.create_task(self.finish(tool, cx, coro, first))
        self.running[(cx.run_id, cx.call_id)] = (task, cx)

    async def finish(self, tool: _Tool, cx: Context, coro: Any, first: Any) -> None:
        try:
            if first is _UNSTARTED:
                handler, args = coro
                value = handler(cx, args)
                if inspect.isawaitable(value):
                    value = await value
            else:
                value = await _resume(coro, first)
        except BaseException as e:
            outcome = self.outcome_of(tool, e, cx)
        else:
            outcome = self.ok_outcome(tool, value)
        self.running.pop((cx.run_id, cx.call_id), None)
        self.answer(cx.run_id, cx.call_id, outcome)
        if not self.flush_soon:
            self.flush_soon = True
            self.loop.call_soon(self.flush)
        self.maybe_finish()

    def ok_outcome(self, tool: _Tool, value: Any) -> str:
        try:
            return '"Ok":' + tool.ok_text(value)
        except (Refused, ValueError, RecursionError) as e:
            return self.wrong_value(tool, e)

    def wrong_value(self, tool: _Tool, e: BaseException) -> str:
        return '"Unknown":' + _q(f"the Tool's code returned a value not of the success type {written(tool.ok)}: {e}")

    def outcome_of(self, tool: _Tool, e: BaseException, cx: Context) -> str:
        """The outcome of code that ended by raising ``e``."""
        if isinstance(e, Failed):
            try:
                text = encode(e.value, tool.err, tool.env)
                text.encode("utf-8")
            except (Refused, ValueError, RecursionError) as bad:
                return '"Unknown":' + _q(
                    f"the Tool's code failed with a value not of the error type {written(tool.err)}: {bad}")
            return '"Failed":' + text
        if isinstance(e, Unknown):
            return '"Unknown":' + _q(str(e.reason))
        if isinstance(e, NotRun):
            return '"NotRun":' + _q(str(e.reason))
        if isinstance(e, asyncio.CancelledError):
            return '"Unknown":' + _q(CANCELLED_BY_HOST if cx._cancelled else _raised(e))
        if isinstance(e, Exception):
            return '"Unknown":' + _q(_raised(e))
        # SystemExit, KeyboardInterrupt: the process is asked to end.
        raise e

    # -- the general path: any line, judged as core judges it ------------------------

    def general(self, line: str | bytes) -> _Prepared:
        """Reads any line; a call to run comes back, anything else is
        answered or logged here."""
        if isinstance(line, bytes):
            if not line.strip(_ASCII_WS.encode()):
                return None
            if line.endswith(b"\r"):
                line = line[:-1]
        else:
            if not line.strip(_ASCII_WS):
                return None
            if line.endswith("\r"):
                line = line[:-1]
        try:
            raw = _parse(line, self.limits.decode)
            # Core's reader refuses a lone surrogate escape anywhere in a
            # line; Python's keeps it in the string.
            if _SURROGATE_ESCAPE.search(line if isinstance(line, str) else line.decode("utf-8")) \
                    and _lone_surrogate(raw):
                raise Refused((), "not JSON: a lone surrogate escape")
        except Refused as e:
            return self.malformed(line, _PARSE_ERROR, e.reason)
        if not isinstance(raw, _Obj):
            return self.malformed(line, _INVALID_REQUEST, "a JSON-RPC message is a JSON object")
        seen: set[str] = set()
        duplicate = None
        version: Optional[bool] = None
        ident: Any = _ABSENT
        method: Any = _ABSENT
        params: Any = _ABSENT
        result: Any = _ABSENT
        error: Any = _ABSENT
        for k, v in raw:
            if k in seen and duplicate is None:
                duplicate = k
            seen.add(k)
            if k == "jsonrpc":
                version = _str(v) and v == "2.0"
            elif k == "id":
                ident = v
            elif k == "method":
                method = v
            elif k == "params":
                params = v
            elif k == "result":
                result = v
            elif k == "error":
                error = v
        id_ok = ident is _ABSENT or ident is None or isinstance(ident, str)
        id_text = None
        if ident is not _ABSENT and id_ok:
            id_text = "null" if ident is None else str(ident) if isinstance(ident, _Num) else _q(ident)

        def invalid(id_: Optional[str], why: str) -> _Prepared:
            return self.malformed(line, _INVALID_REQUEST, why, id_)

        if duplicate is not None:
            return invalid(id_text, f"the member `{duplicate}` is given twice")
        if version is None:
            return invalid(id_text, 'a JSON-RPC 2.0 message has `"jsonrpc": "2.0"`')
        if not version:
            return invalid(id_text, '`jsonrpc` must be "2.0"')
        if not id_ok:
            return invalid(None, "an id is a string, a number or null")
        if method is not _ABSENT:
            if not _str(method):
                return invalid(id_text, "`method` is a string")
            if result is not _ABSENT or error is not _ABSENT:
                return invalid(id_text, "a request has no `result` or `error`")
            if params is not _ABSENT and not isinstance(params, list):
                return invalid(id_text, "`params` is an object or an array")
            if id_text is not None:
                if method == "describe":
                    self.out.append(f'{{"jsonrpc":"2.0","id":{id_text},"result":{self.describe}}}\n')
                else:
                    self.error(id_text, _METHOD_NOT_FOUND, f"no method `{method}`")
                return None
            if method == "call":
                return self.call(params)
            if method == "cancel":
                self.cancel(params)
                return None
            self.log(f"a message the protocol does not send here: a notification `{method}`")
            return None
        if id_text is None:
            return invalid(None, "a message with no `method` is a response, and a response has an `id`")
        if (result is _ABSENT) == (error is _ABSENT):
            return invalid(id_text, "a response holds exactly one of `result` and `error`")
        self.log("a message the protocol does not send here: "
                 + ("a response" if error is _ABSENT else "an error response"))
        return None

    def malformed(self, line: str | bytes, code: int, why: str,
                  id_text: Optional[str] = None) -> _Prepared:
        """A line that is no JSON-RPC 2.0 message: NotRun to the call it
        names, if it names one, else a JSON-RPC error."""
        key = _scan_key(line if isinstance(line, bytes) else line.encode("utf-8", "surrogatepass"))
        if key is not None:
            return self.not_run(key[0], key[1], f"the call is not a JSON-RPC 2.0 message: {why}")
        self.error(id_text or "null", code, why)
        return None

    def error(self, id_text: str, code: int, message: str) -> None:
        self.out.append(f'{{"jsonrpc":"2.0","id":{id_text},"error":{{"code":{code},"message":{_q(message)}}}}}\n')

    def members(self, raw: Any, what: str) -> dict[str, Any]:
        """An object's members; ``ValueError`` with core's words when it is
        no object or gives a member twice."""
        if not isinstance(raw, _Obj):
            raise ValueError(f"{what} is not an object")
        out: dict[str, Any] = {}
        for k, v in raw:
            if k in out:
                raise ValueError(f"{what} gives the member `{k}` twice")
            out[k] = v
        return out

    def key_of(self, m: dict[str, Any]) -> tuple[str, str]:
        for name in ("runId", "callId"):
            if name not in m:
                raise ValueError(f"it has no `{name}`")
            if not _str(m[name]):
                raise ValueError(f"`{name}` is not a string")
        return m["runId"], m["callId"]

    def call(self, params: Any) -> _Prepared:
        """A call notification's params, read as core reads them."""
        try:
            m = self.members(None if params is _ABSENT else params, "the call's params")
        except ValueError as e:
            self.log(f"{e}: dropped")
            return None
        try:
            run, call = self.key_of(m)
            run.encode("utf-8")
            call.encode("utf-8")
        except ValueError as e:
            # UnicodeEncodeError is a ValueError: a lone surrogate in a key.
            self.log(f"the call names no call: {e}: dropped")
            return None
        if "tool" not in m:
            return self.not_run(run, call, "the call has no `tool`")
        if not _str(m["tool"]):
            return self.not_run(run, call, "the call's `tool` is not a string")
        if "args" not in m:
            return self.not_run(run, call, "the call has no `args`")
        if self.is_open(run, call):
            self.log(f"a second call with {_key(run, call)} while it is open: ignored")
            return None
        tool = self.tools.get(m["tool"])
        if tool is None:
            return self.not_run(run, call, f"this implementation serves no Tool `{m['tool']}`")
        try:
            args = self.decode_args(tool, m["args"])
        except ValueError as e:
            return self.not_run(run, call, f"the args do not decode: {e}")
        expects: JsonValue = None
        if "expects" in m:
            try:
                expects = _Decoder(tool.env, self.limits.decode).json(m["expects"], (), 0)
            except Refused as e:
                return self.not_run(run, call, f"the call's `expects` is not JSON: {e}")
        return tool, Context(run, call, expects), args

    def decode_args(self, tool: _Tool, raw: Any) -> list[Any]:
        """A call's args at the declared types (core's ``decode_args``)."""
        m = self.members(raw, "`args`")
        values: list[Any] = [_ABSENT] * len(tool.names)
        decoder = _Decoder(tool.env, self.limits.decode)
        for name, v in m.items():
            try:
                i = tool.names.index(name)
            except ValueError:
                raise ValueError(f"the Tool has no parameter `{name}`") from None
            try:
                values[i] = decoder.value(v, tool.params[i], (), 0, dict(tool.scope))
            except Refused as e:
                raise ValueError(f"the argument `{name}` does not decode: {e}") from None
        for name, v in zip(tool.names, values):
            if v is _ABSENT:
                raise ValueError(f"the parameter `{name}` has no argument")
        return values

    def cancel(self, params: Any) -> None:
        try:
            m = self.members(None if params is _ABSENT else params, "the cancel's params")
            key = self.key_of(m)
        except ValueError as e:
            self.log(f"{e}: ignored")
            return
        if self.pending is not None and key in self.pending:
            self.pending[key]._cancelled = True
            return
        entry = self.running.get(key)
        if entry is None:
            self.log(f"a cancel for {_key(*key)}, which is not open: ignored")
            return
        task, cx = entry
        cx._cancelled = True
        # Delivered after the task's first step, which is already due: a
        # task cancelled before its first step would never run the code it
        # goes on with, nor answer the call.
        self.loop.call_soon(task.cancel)

    def is_open(self, run: str, call: str) -> bool:
        key = (run, call)
        return key in self.running or (self.pending is not None and key in self.pending)

    def not_run(self, run: str, call: str, why: str) -> _Prepared:
        if self.is_open(run, call):
            self.log(f"a second call with {_key(run, call)} while it is open: ignored")
        else:
            self.answer(run, call, '"NotRun":' + _q(why))
        return None

    def oversized(self, length: int, key: Optional[tuple[str, str]]) -> None:
        why = f"the call is {length} bytes, over the implementation's limit of {self.limits.max_line} bytes"
        if key is not None:
            self.not_run(key[0], key[1], why)
        else:
            self.log(f"a line of {length} bytes: dropped")

    # -- output ------------------------------------------------------------------

    def answer(self, run: str, call: str, outcome: str) -> None:
        self.out.append(_reply_line(run, call, outcome))

    def flush(self) -> None:
        """Writes the replies waiting, with one write."""
        self.flush_soon = False
        if not self.out or self.writer is None:
            return
        text = "".join(self.out)
        self.out.clear()
        self.writer.write(text.encode("utf-8"))

    def log(self, why: str) -> None:
        print(f"limen-toolkit: {why}", file=sys.stderr)


# -- running ---------------------------------------------------------------------


def _fileno(stream: Any) -> Optional[int]:
    try:
        return int(stream.fileno())
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return None


async def serve_async(listing: str, handlers: Mapping[str, Handler], *,
                      limits: ToolkitLimits = ToolkitLimits(), eager: bool = True,
                      stdin: Optional[BinaryIO] = None, stdout: Optional[BinaryIO] = None) -> None:
    """:func:`serve` on the running event loop: returns once standard input
    has ended and every call read has been answered."""
    loop = asyncio.get_running_loop()
    server = _Server(_read_listing(listing), handlers, limits, eager)
    guard = stdout is None
    saved: Optional[tuple[Any, int]] = None
    if guard:
        # The protocol takes the real standard output; fd 1 and sys.stdout
        # no longer reach it.
        if sys.stdout is not None:
            sys.stdout.flush()
        out_fd = os.dup(1)
        saved = (sys.stdout, os.dup(1))
        os.dup2(2, 1)
        sys.stdout = _RefusingStdout()
        out_stream: Any = os.fdopen(out_fd, "wb", buffering=0)
    else:
        out_stream = stdout
    in_stream: Any = stdin if stdin is not None else sys.stdin.buffer
    write_side: Optional[_WriteSide] = None
    thread: Optional[threading.Thread] = None
    in_fd = _fileno(in_stream)
    was_blocking = None if in_fd is None else os.get_blocking(in_fd)
    try:
        try:
            if _fileno(out_stream) is None:
                raise ValueError("no file descriptor")
            transport, write_side = await loop.connect_write_pipe(lambda: _WriteSide(server), out_stream)
            server.writer = transport
        except (ValueError, OSError):
            server.writer = _Writer(out_stream)
        try:
            if in_fd is None:
                raise ValueError("no file descriptor")
            reader, _ = await loop.connect_read_pipe(lambda: server, in_stream)
            server.reader = reader
        except (ValueError, OSError):
            # A regular file, or no file descriptor: read on a thread.
            def pump() -> None:
                try:
                    while True:
                        chunk = in_stream.read1(1 << 18) if hasattr(in_stream, "read1") \
                            else in_stream.read(1 << 18)
                        if not chunk:
                            break
                        loop.call_soon_threadsafe(server.feed, bytes(chunk))
                finally:
                    loop.call_soon_threadsafe(server.eof)
            thread = threading.Thread(target=pump, name="limen-toolkit stdin", daemon=True)
            thread.start()
        await server.finished
        server.flush()
        if write_side is not None:
            server.writer.close()
            await write_side.closed
    finally:
        for task, _ in list(server.running.values()):
            task.cancel()
        if server.reader is not None:
            server.reader.close()
        if in_fd is not None and was_blocking is not None:
            try:
                os.set_blocking(in_fd, was_blocking)
            except OSError:
                pass
        if saved is not None:
            stream, fd = saved
            # What went to fd 1 meanwhile (sys.__stdout__'s buffer too) goes
            # to stderr, before fd 1 is the protocol's again.
            if sys.__stdout__ is not None:
                try:
                    sys.__stdout__.flush()
                except (OSError, ValueError):
                    pass
            os.dup2(fd, 1)
            os.close(fd)
            sys.stdout = stream


def serve(listing: str, handlers: Mapping[str, Handler], *,
          limits: ToolkitLimits = ToolkitLimits(), eager: bool = True,
          stdin: Optional[BinaryIO] = None, stdout: Optional[BinaryIO] = None) -> None:
    """Serves the declarations of ``listing`` (the text ``flow tools``
    writes) with ``handlers`` (one per declaration, keyed by its identity,
    e.g. ``example.com/tools@1.0.0/search.flow.find``) on standard input and
    output, until standard input ends and every call read has been
    answered. ``stdin`` and ``stdout`` replace them (binary streams); with
    the real standard output, ``sys.stdout`` refuses writes while serving
    (:class:`StdoutIsTheProtocol`).

    ``eager`` (the default) runs each handler at once, in the callback that
    read its call, and makes an ``asyncio.Task`` only when it first
    suspends: a call that never awaits costs no task. Until then the code
    runs outside any task (``asyncio.current_task()`` is ``None``), so code
    that needs its task before its first ``await`` (``asyncio.timeout()``,
    ``asyncio.TaskGroup()``) either awaits first or is served with
    ``eager=False``, which gives every call a task of its own from the
    start."""
    asyncio.run(serve_async(listing, handlers, limits=limits, eager=eager, stdin=stdin,
                            stdout=stdout))
