"""limen's machines from Python, through the C ABI (ctypes, no compiled
extension).

The library is ``liblimen_ffi.so`` (``cargo build --release -p limen-ffi``),
found at ``$LIMEN_LIBRARY`` or in ``target/release`` of the checkout this
package sits in. The conventions are ``docs/c-abi.md``'s: each class owns
one handle and frees it in ``close()``; a failed call raises ``LimenError``
with the library's reason; time is ``now``, nanoseconds of a monotonic clock.
"""

import ctypes
import os
from ctypes import POINTER, Structure, byref, c_bool, c_char_p, c_int, c_size_t, c_uint8
from ctypes import c_int64, c_uint32, c_uint64, c_void_p

__all__ = [
    "LimenError",
    "Refused",
    "version",
    "Schema",
    "canonical",
    "Exposure",
    "Front",
    "EXPOSURE_EVENTS",
]


def _library_path():
    given = os.environ.get("LIMEN_LIBRARY")
    if given:
        return given
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.normpath(os.path.join(here, "..", "..", ".."))
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(root, "target"))
    return os.path.join(target, "release", "liblimen_ffi.so")


_lib = ctypes.CDLL(_library_path())

OK, INVALID_ARGUMENT, BUFFER_TOO_SMALL, REFUSED = 0, 1, 2, 3


class limen_str(Structure):
    _fields_ = [("ptr", POINTER(c_uint8)), ("len", c_size_t)]

    def bytes(self):
        return ctypes.string_at(self.ptr, self.len) if self.len else b""


class limen_flow_refusal(Structure):
    _fields_ = [("pointer", c_char_p), ("reason", c_char_p)]


class limen_exposure_event(Structure):
    _fields_ = [
        ("kind", c_int),
        ("correlation", c_uint64),
        ("request_id", c_uint64),
        ("receiver", c_size_t),
        ("receiver_name", c_char_p),
        ("member", c_size_t),
        ("member_name", c_char_p),
        ("payload", limen_str),
        ("caller_mode", c_char_p),
        ("caller_name", c_char_p),
        ("generation", c_uint64),
        ("stamp", c_uint64),
    ]


def _fn(name, restype, *argtypes):
    f = getattr(_lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)
    return f


_buf = POINTER(c_uint8)
_version = _fn("limen_version", c_char_p)
_last_error = _fn("limen_last_error", c_char_p)
_result_name = _fn("limen_result_name", c_char_p, c_uint32)
_schema_new = _fn("limen_flow_schema_new", c_int, c_char_p, c_size_t, POINTER(c_void_p))
_schema_free = _fn("limen_flow_schema_free", None, c_void_p)
_canonical = _fn(
    "limen_flow_canonical", c_int, c_void_p, c_char_p, c_size_t, _buf, c_size_t, POINTER(c_size_t)
)
_refusal = _fn("limen_flow_schema_refusal", c_int, c_void_p, POINTER(limen_flow_refusal))
_identity_new = _fn("limen_identity_new", c_int, POINTER(c_void_p))
_identity_free = _fn("limen_identity_free", None, c_void_p)
_identity_token = _fn("limen_identity_add_token", c_int, c_void_p, c_char_p, c_char_p, c_uint64)
_identity_refused = _fn("limen_identity_set_refused", c_int, c_void_p, c_char_p)
_identity_grant = _fn("limen_identity_add_grant", c_int, c_void_p, c_char_p, c_char_p)
_exposure_new = _fn(
    "limen_exposure_new", c_int, c_char_p, c_size_t, c_char_p, c_void_p, c_char_p, POINTER(c_void_p)
)
_exposure_free = _fn("limen_exposure_free", None, c_void_p)
_exposure_identity = _fn(
    "limen_exposure_identity", c_int, c_void_p, _buf, c_size_t, POINTER(c_size_t)
)
_exposure_poll = _fn("limen_exposure_poll_event", c_int, c_void_p, POINTER(limen_exposure_event))
_exposure_complete = _fn(
    "limen_exposure_complete", c_int, c_void_p, c_uint64, c_uint32, c_char_p, c_size_t
)
_exposure_born = _fn("limen_exposure_receiver_born", c_int, c_void_p, c_size_t, c_uint64)
_exposure_lost = _fn("limen_exposure_connection_lost", c_int, c_void_p, c_uint64)
_exposure_poll_timeout = _fn("limen_exposure_poll_timeout", c_bool, c_void_p, POINTER(c_uint64))
_exposure_timeout = _fn("limen_exposure_handle_timeout", c_int, c_void_p, c_uint64)
_front_http = _fn("limen_front_new_http", c_int, c_uint64, c_uint64, POINTER(c_void_p))
_front_unix = _fn(
    "limen_front_new_unix", c_int, c_uint64, c_int64, c_int64, c_int64, c_uint64, POINTER(c_void_p)
)
_front_free = _fn("limen_front_free", None, c_void_p)
_front_data = _fn("limen_front_handle_data", c_int, c_void_p, c_uint64, c_char_p, c_size_t)
_front_eof = _fn("limen_front_handle_eof", c_int, c_void_p, c_uint64)
_front_timeout = _fn("limen_front_handle_timeout", c_int, c_void_p, c_uint64)
_front_poll_timeout = _fn("limen_front_poll_timeout", c_bool, c_void_p, POINTER(c_uint64))
_front_poll = _fn("limen_front_poll_event", c_int, c_void_p, POINTER(c_int))
_front_submit = _fn(
    "limen_front_submit", c_int, c_void_p, c_void_p, c_uint64, c_uint64, POINTER(c_uint64)
)
_front_deliver = _fn("limen_front_deliver", c_int, c_void_p, c_void_p, c_uint64)
_front_abort = _fn("limen_front_abort", c_int, c_void_p)
_front_pending = _fn("limen_front_pending_output", c_int, c_void_p, POINTER(limen_str))
_front_consume = _fn("limen_front_consume_output", c_int, c_void_p, c_uint64, c_size_t)
_front_closed = _fn("limen_front_is_closed", c_bool, c_void_p)


class LimenError(Exception):
    """A call that did not return LIMEN_RESULT_OK: its result and reason."""

    def __init__(self, result, reason):
        super().__init__(f"{_result_name(result).decode()}: {reason}")
        self.result = result
        self.reason = reason


class Refused(LimenError):
    """A JSON text that does not decode at its type: where and why."""

    def __init__(self, result, reason, pointer, why):
        super().__init__(result, reason)
        self.pointer = pointer
        self.why = why


def _check(result):
    if result != OK:
        raise LimenError(result, _last_error().decode("utf-8", "replace"))


def _grow(call):
    """Calls call(buf, cap, written) as the convention asks: once for the
    length, then with a buffer of it."""
    written = c_size_t(0)
    r = call(None, 0, byref(written))
    if r == OK:
        return b""
    if r != BUFFER_TOO_SMALL:
        return r
    buf = (c_uint8 * written.value)()
    r = call(buf, written.value, byref(written))
    if r != OK:
        return r
    return bytes(buf[: written.value])


def version():
    """The library's version."""
    return _version().decode()


class Schema:
    """A Flow type read from a JSON Schema (with its ``$schema`` dialect)."""

    def __init__(self, schema_json):
        h = c_void_p()
        _check(_schema_new(schema_json, len(schema_json), byref(h)))
        self._h = h

    def canonical(self, text):
        """The canonical text of the JSON text ``text`` (bytes) at the type;
        raises ``Refused`` when it does not decode."""
        out = _grow(lambda b, c, w: _canonical(self._h, text, len(text), b, c, w))
        if isinstance(out, bytes):
            return out
        reason = _last_error().decode("utf-8", "replace")
        if out == REFUSED:
            r = limen_flow_refusal()
            _check(_refusal(self._h, byref(r)))
            raise Refused(out, reason, r.pointer.decode(), r.reason.decode())
        raise LimenError(out, reason)

    def close(self):
        if self._h:
            _schema_free(self._h)
            self._h = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


ANY = b'{"$schema":"https://json-schema.org/draft/2020-12/schema"}'


def canonical(text, schema=ANY):
    """The canonical text of ``text`` at ``schema`` (json.Value when none)."""
    with Schema(schema) as s:
        return s.canonical(text)


EXPOSURE_EVENTS = {0: "none", 1: "deliver", 2: "dispatch", 3: "ask", 4: "close", 5: "stop"}
RETURNED, FAILED, VIOLATED, PROCESS_EXITS = 0, 1, 2, 3
FRONT_NONE, FRONT_REQUEST, FRONT_LOST, FRONT_CLOSED = 0, 1, 2, 3


class Exposure:
    """An exposure of a program's text, its identity sources a table:
    ``tokens`` ({token: name}), ``grants`` ([(principal, role)])."""

    def __init__(self, program, name, tokens=(), grants=(), refused=None, bound=None):
        ids = c_void_p()
        _check(_identity_new(byref(ids)))
        try:
            for token, who in dict(tokens).items():
                _check(_identity_token(ids, token.encode(), who.encode(), 0))
            if refused is not None:
                _check(_identity_refused(ids, refused.encode()))
            for who, role in grants:
                _check(_identity_grant(ids, who.encode(), role.encode()))
            h = c_void_p()
            _check(
                _exposure_new(
                    program,
                    len(program),
                    name.encode(),
                    ids,
                    bound.encode() if bound else None,
                    byref(h),
                )
            )
        finally:
            _identity_free(ids)
        self._h = h

    @property
    def identity(self):
        out = _grow(lambda b, c, w: _exposure_identity(self._h, b, c, w))
        if not isinstance(out, bytes):
            _check(out)
        return out.decode()

    def poll_event(self):
        """The next event as a dict (``kind`` "none" when none waits); its
        texts are copied."""
        ev = limen_exposure_event()
        _check(_exposure_poll(self._h, byref(ev)))
        kind = EXPOSURE_EVENTS[ev.kind]
        d = {"kind": kind, "correlation": ev.correlation, "request_id": ev.request_id}
        if kind in ("dispatch", "ask"):
            d["receiver"] = ev.receiver
            d["receiver_name"] = ev.receiver_name.decode() if ev.receiver_name else None
        if kind == "dispatch":
            d["member"] = ev.member_name.decode()
            d["payload"] = ev.payload.bytes()
            d["caller"] = ev.caller_name.decode()
        return d

    def complete(self, request_id, how, body=b""):
        _check(_exposure_complete(self._h, request_id, how, body, len(body)))

    def receiver_born(self, receiver, stamp):
        _check(_exposure_born(self._h, receiver, stamp))

    def connection_lost(self, correlation):
        _check(_exposure_lost(self._h, correlation))

    def poll_timeout(self):
        d = c_uint64()
        return d.value if _exposure_poll_timeout(self._h, byref(d)) else None

    def handle_timeout(self, now):
        _check(_exposure_timeout(self._h, now))

    def close(self):
        if self._h:
            _exposure_free(self._h)
            self._h = None


class Front:
    """One connection's front: ``Front.http(now, correlation)`` or
    ``Front.unix(now, uid, gid, pid, correlation)``."""

    def __init__(self, h, correlation):
        self._h = h
        self.correlation = correlation

    @classmethod
    def http(cls, now, correlation):
        h = c_void_p()
        _check(_front_http(now, correlation, byref(h)))
        return cls(h, correlation)

    @classmethod
    def unix(cls, now, uid, gid, pid, correlation):
        h = c_void_p()
        _check(_front_unix(now, uid, gid, pid, correlation, byref(h)))
        return cls(h, correlation)

    def handle_data(self, now, data):
        _check(_front_data(self._h, now, data, len(data)))

    def handle_eof(self, now):
        _check(_front_eof(self._h, now))

    def handle_timeout(self, now):
        _check(_front_timeout(self._h, now))

    def poll_timeout(self):
        d = c_uint64()
        return d.value if _front_poll_timeout(self._h, byref(d)) else None

    def poll_event(self):
        k = c_int()
        _check(_front_poll(self._h, byref(k)))
        return k.value

    def submit(self, exposure, now, wall):
        rid = c_uint64()
        _check(_front_submit(self._h, exposure._h, now, wall, byref(rid)))
        return rid.value

    def deliver(self, exposure, now):
        _check(_front_deliver(self._h, exposure._h, now))

    def abort(self):
        _check(_front_abort(self._h))

    def pending_output(self):
        s = limen_str()
        _check(_front_pending(self._h, byref(s)))
        return s.bytes()

    def consume_output(self, now, n):
        _check(_front_consume(self._h, now, n))

    @property
    def is_closed(self):
        return bool(_front_closed(self._h))

    def close(self):
        if self._h:
            _front_free(self._h)
            self._h = None
