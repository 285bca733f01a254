"""Type-directed, strict decoding and canonical writing (§ Value encoding,
§ The canonical form, § Decoding), under the same rules as limen's core.

:func:`decode` reads a JSON text at a declared type: no coercion, no
default, no repair, no guessed constructor; a failure is :class:`Refused`
with the JSON path of the offending value and the reason. :func:`encode`
writes a value's canonical text, refusing a value that is not of the type.
"""

from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Callable, NoReturn

from .types import (
    BOOL, BYTES, DECIMAL, DURATION, HOST_TOKEN, INSTANT, INT, JSON, NEVER, TEXT,
    DictT, Enum, Env, ListT, Named, OptionT, Param, Prim, Record, ResultT, SetT,
    TupleT, Type, written,
)
from .values import (
    Duration, Err, FlowDict, FlowSet, HostToken, Instant, JsonValue, Ok,
    RecordValue, Some, Variant,
)


@dataclass(frozen=True)
class Limits:
    """The decoding limits; the defaults are core's ``Limits::default()``."""

    max_bytes: int = 16 << 20
    max_depth: int = 128
    max_int_digits: int = 4300
    max_decimal_digits: int = 4300
    max_decimal_exponent: int = 1000
    max_string_bytes: int = 1 << 20
    max_collection_len: int = 1 << 20


DEFAULT_LIMITS = Limits()
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def path_text(path: tuple[str | int, ...]) -> str:
    """A JSON path as core writes it: ``$``, ``.key``, ``["key"]``, ``[i]``."""
    out = "$"
    for seg in path:
        if isinstance(seg, int):
            out += f"[{seg}]"
        elif _IDENT.match(seg):
            out += "." + seg
        else:
            out += "[" + _string(seg) + "]"
    return out


class Refused(ValueError):
    """A value refused at its declared type: where, and why."""

    def __init__(self, path: tuple[str | int, ...], reason: str) -> None:
        super().__init__(f"{path_text(path)}: {reason}")
        self.path = path
        self.reason = reason


def _refuse(path: tuple[str | int, ...], reason: str) -> NoReturn:
    raise Refused(path, reason)


class _Num(str):
    """A number token, kept as spelled until the type says what it is."""


class _Obj(list[tuple[str, Any]]):
    """An object's members in order (duplicates checked when read)."""


def _parse(text: bytes | str, limits: Limits) -> Any:
    if isinstance(text, bytes):
        if len(text) > limits.max_bytes:
            _refuse((), f"the text is {len(text)} bytes, past the limit of {limits.max_bytes}")
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as e:
            _refuse((), f"not UTF-8: {e.reason}")

    def constant(name: str) -> NoReturn:
        _refuse((), f"not JSON: {name}")

    try:
        return json.loads(
            text,
            parse_int=_Num,
            parse_float=_Num,
            parse_constant=constant,
            object_pairs_hook=_Obj,
        )
    except json.JSONDecodeError as e:
        # Where, as core gives it: 1-based line and column in characters
        # (Python's reader counts as core's tokenizer does). The path is
        # always `$`: see decisions.md, the Python codec in core's words.
        _refuse((), f"not JSON: {e.msg} at {e.lineno}:{e.colno}")
    except RecursionError:
        # Deeper than Python's own reader goes (about 1000 levels): core
        # would name the path where its depth limit is passed, which only a
        # reader that streams the text knows; refused as the TypeScript
        # toolkit's reader refuses it.
        _refuse((), "not JSON: nested too deep")


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE_ESCAPE_BYTES = re.compile(rb"\\u[dD][89a-fA-F]")


def _lone_surrogate(raw: Any) -> bool:
    """Whether parsed JSON holds a lone surrogate in any string or key: core's
    reader refuses a lone surrogate escape anywhere in a text, Python's keeps
    it in the string."""
    if isinstance(raw, str):
        return not raw.isascii() and any(0xD800 <= ord(c) <= 0xDFFF for c in raw)
    if isinstance(raw, _Obj):
        return any(_lone_surrogate(k) or _lone_surrogate(v) for k, v in raw)
    if isinstance(raw, list):
        return any(_lone_surrogate(v) for v in raw)
    return False


def _digits(tok: str) -> tuple[bool, str, int]:
    """Sign, significant digits (no leading or trailing zeros; "" for zero)
    and power of ten of a number token, without building the number (an
    exponent of any size is kept exact)."""
    neg = tok.startswith("-")
    body = tok[1:] if neg else tok
    e = body.find("e")
    if e < 0:
        e = body.find("E")
    exp = 0
    if e >= 0:
        exp = int(body[e + 1:]) if len(body) - e < 4000 else _huge_exponent(body[e + 1:])
        body = body[:e]
    dot = body.find(".")
    if dot >= 0:
        exp -= len(body) - dot - 1
        body = body[:dot] + body[dot + 1:]
    digits = body.lstrip("0")
    stripped = digits.rstrip("0")
    if not stripped:
        return False, "", 0
    return neg, stripped, exp + len(digits) - len(stripped)


def _huge_exponent(t: str) -> int:
    """An exponent too long for ``int()``'s digit limit: past every limit
    either way, kept past it (core's tokenizer saturates it too)."""
    return -_HUGE * 10 if t.startswith("-") else _HUGE * 10


def _number_text(neg: bool, digits: str, exp: int) -> str:
    if not digits:
        return "0"
    sign = "-" if neg else ""
    if exp >= 0:
        return sign + digits + "0" * exp
    point = len(digits) + exp
    if point > 0:
        return sign + digits[:point] + "." + digits[point:]
    return sign + "0." + "0" * -point + digits


def _shorten(s: str) -> str:
    """A found value's text as core shows it: 40 characters, then ``…``."""
    return s if len(s) <= 40 else s[:40] + "…"


def _found(raw: Any) -> str:
    """How a refusal shows the value it found, in core's words: a number as
    written, a string quoted, both shortened."""
    if isinstance(raw, _Num):
        return _shorten(raw)
    if isinstance(raw, str):
        return _string(_shorten(raw))
    if raw is None:
        return "null"
    if raw is True:
        return "true"
    if raw is False:
        return "false"
    return "an object" if isinstance(raw, _Obj) else "an array"


def _string(s: str) -> str:
    out = ['"']
    for ch in s:
        o = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif o < 0x20:
            out.append({8: "\\b", 12: "\\f", 10: "\\n", 13: "\\r", 9: "\\t"}.get(o, f"\\u{o:04x}"))
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _shape(ty: Type, what: str) -> str:
    """``ty (what)``, as core's mismatches name the expected shape."""
    return f"{written(ty)} ({what})"


# Past this an exponent may have saturated in core's tokenizer, so its
# messages say only "over 10^14".
_HUGE = 100_000_000_000_000
_OPTION_SHAPE = '"None" or {"Some": …}'
_RESULT_SHAPE = '{"Ok": …} or {"Err": …}'
_ENUM_SHAPE = "a constructor name or an object of one member"
_PAIR = "a [key, value] pair"
_DURATION_SHAPE = 'a "PT<seconds>S" string'
_SHORT_INT = re.compile(r"-?[0-9]{1,15}\Z")
_BASE64 = re.compile(r"[A-Za-z0-9+/]*={0,2}\Z")


class _Decoder:
    """Decodes parsed JSON at a type in core's order and core's words:
    members and elements in the text's order, so the first failure is the
    one core finds, at the same path, with the same reason. ``budget`` is
    how far the value's canonical text may outgrow the text it was read
    from (core's: the limit less the text's length)."""

    def __init__(self, env: Env, limits: Limits, budget: int | None = None) -> None:
        self.env = env
        self.limits = limits
        self.budget = limits.max_bytes if budget is None else budget

    # -- checks every value is held to ------------------------------------

    def grow(self, neg: bool, digits: str, exp: int, token: str, path: tuple[str | int, ...]) -> None:
        """Counts how much longer a number's canonical text is than its
        token, within the budget (core's ``grow``)."""
        if not digits:
            return
        if exp >= 0:
            written_len = len(digits) + exp
        else:
            written_len = len(digits) + 1 if len(digits) > -exp else 2 - exp
        more = written_len + neg - len(token)
        if more <= 0:
            return
        if more > self.budget:
            _refuse(path, "written out, the value's canonical text would pass the limit of "
                          f"{self.limits.max_bytes} bytes")
        self.budget -= more

    def text(self, s: str, path: tuple[str | int, ...]) -> str:
        if len(s) * 3 > self.limits.max_string_bytes:
            n = len(s.encode("utf-8", "surrogatepass"))
            if n > self.limits.max_string_bytes:
                _refuse(path, f"the string is {n} bytes, past the limit of {self.limits.max_string_bytes}")
        return s

    def too_long(self, path: tuple[str | int, ...]) -> NoReturn:
        _refuse(path, f"past the limit of {self.limits.max_collection_len} elements in one array or object")

    def too_deep(self, path: tuple[str | int, ...]) -> NoReturn:
        _refuse(path, f"arrays and objects nest deeper than the limit of {self.limits.max_depth}")

    def skip(self, raw: Any, path: tuple[str | int, ...], depth: int) -> None:
        """An ignored member's value: read, and held only to the depth
        limit (core skips it)."""
        if depth > self.limits.max_depth:
            self.too_deep(path)
        if isinstance(raw, _Obj):
            for _, v in raw:
                self.skip(v, path, depth + 1)
        elif isinstance(raw, list):
            for v in raw:
                self.skip(v, path, depth + 1)

    def decimal_parts(self, raw: _Num, path: tuple[str | int, ...]) -> tuple[bool, str, int]:
        """A number's parts within the Decimal limits (core's ``decimal``)."""
        parts = _digits(raw)
        _, digits, exp = parts
        if not digits:
            return parts
        lim = self.limits
        if len(digits) > lim.max_decimal_digits:
            _refuse(path, f"the number has {len(digits)} significant digits, past the limit of "
                          f"{lim.max_decimal_digits}")
        if abs(exp) > lim.max_decimal_exponent:
            size = "is over 10^14 in size" if abs(exp) >= _HUGE else f"is {exp}"
            _refuse(path, f"the number's exponent {size}, past the limit of ±{lim.max_decimal_exponent}")
        return parts

    # -- the declared type directs every step ----------------------------

    def value(self, raw: Any, ty: Type, path: tuple[str | int, ...], depth: int,
              scope: dict[str, Type]) -> Any:
        if depth > self.limits.max_depth:
            self.too_deep(path)
        if isinstance(ty, Param):
            bound = scope.get(ty.name)
            if bound is None:
                _refuse(path, f"the type parameter {ty.name} is not bound")
            return self.value(raw, bound, path, depth, {})
        if isinstance(ty, Prim):
            return self.prim(raw, ty, path, depth)
        if isinstance(ty, ListT):
            return self.elements(raw, ty, ty.item, path, depth, scope)
        if isinstance(ty, SetT):
            vals = self.elements(raw, ty, ty.item, path, depth, scope)
            item = _close(ty.item, scope)
            return FlowSet(self.ordered(vals, lambda v: self.canon(v, item), path,
                                        "a set holds each element once; this one equals [{}]"))
        if isinstance(ty, TupleT):
            return self.fixed(raw, ty, path, depth, scope)
        if isinstance(ty, DictT):
            return self.dictionary(raw, ty, path, depth, scope)
        if isinstance(ty, OptionT):
            if raw == "None" and not isinstance(raw, _Num):
                return None
            tag, v = self.tagged(raw, ty, _OPTION_SHAPE, ("Some",), path)
            inner = self.value(v, ty.inner, path + (tag,), depth + 1, scope)
            self.one_member(raw, ty, _OPTION_SHAPE, path)
            return Some(inner)
        if isinstance(ty, ResultT):
            tag, v = self.tagged(raw, ty, _RESULT_SHAPE, ("Ok", "Err"), path)
            inner = self.value(v, ty.ok if tag == "Ok" else ty.err, path + (tag,), depth + 1, scope)
            self.one_member(raw, ty, _RESULT_SHAPE, path)
            return Ok(inner) if tag == "Ok" else Err(inner)
        assert isinstance(ty, Named)
        return self.named(raw, ty, path, depth, scope)

    def elements(self, raw: Any, ty: Type, item: Type, path: tuple[str | int, ...], depth: int,
             scope: dict[str, Type]) -> list[Any]:
        """A list's elements, decoded in order, within the collection limit."""
        if not isinstance(raw, list) or isinstance(raw, _Obj):
            _refuse(path, f"expected {_shape(ty, 'an array')}, found {_found(raw)}")
        if len(raw) > self.limits.max_collection_len:
            # Core reads the elements before the one past the limit.
            for i, v in enumerate(raw[: self.limits.max_collection_len]):
                self.value(v, item, path + (i,), depth + 1, scope)
            self.too_long(path + (self.limits.max_collection_len,))
        return [self.value(v, item, path + (i,), depth + 1, scope) for i, v in enumerate(raw)]

    def fixed(self, raw: Any, ty: TupleT, path: tuple[str | int, ...], depth: int,
              scope: dict[str, Type]) -> tuple[Any, ...]:
        # The elements given are decoded first, then the length is judged.
        what = _shape(ty, f"an array of {len(ty.items)}")
        if not isinstance(raw, list) or isinstance(raw, _Obj):
            _refuse(path, f"expected {what}, found {_found(raw)}")
        out = tuple(self.value(v, t, path + (i,), depth + 1, scope)
                    for i, (v, t) in enumerate(zip(raw, ty.items)))
        if len(raw) < len(ty.items):
            _refuse(path, f"expected {what}, found an array of {len(raw)}")
        if len(raw) > len(ty.items):
            _refuse(path, f"expected {what}, found a longer array")
        return out

    def ordered(self, vals: list[Any], key: Callable[[Any], str], path: tuple[str | int, ...],
                why: str) -> tuple[Any, ...]:
        """``vals`` in canonical order of ``key``; two with one key are
        refused as core refuses them: the first equal pair in that order
        (ties by index), at the later one's index."""
        keyed = sorted(((key(v), i, v) for i, v in enumerate(vals)), key=lambda kv: (kv[0], kv[1]))
        for a, b in zip(keyed, keyed[1:]):
            if a[0] == b[0]:
                _refuse(path + (b[1],), why.format(a[1]))
        return tuple(v for _, _, v in keyed)

    def canon(self, v: Any, ty: Type) -> str:
        return _Encoder(self.env).value(v, ty, (), 0)

    def tagged(self, raw: Any, ty: Type, what: str, tags: tuple[str, ...],
               path: tuple[str | int, ...]) -> tuple[str, Any]:
        """The first member of a tagged object, checked to be one of
        ``tags``; a second is judged by :meth:`one_member` after its value."""
        if not isinstance(raw, _Obj):
            _refuse(path, f"expected {_shape(ty, what)}, found {_found(raw)}")
        if not raw:
            _refuse(path, f"expected {_shape(ty, what)}, found an empty object")
        k, v = raw[0]
        if k not in tags:
            _refuse(path, f"expected {_shape(ty, what)}, found an object with key {_string(_shorten(k))}")
        return k, v

    def one_member(self, raw: _Obj, ty: Type, what: str, path: tuple[str | int, ...]) -> None:
        if len(raw) > 1:
            _refuse(path, f"expected {_shape(ty, what)}, found a second member {_string(_shorten(raw[1][0]))}")

    def prim(self, raw: Any, ty: Prim, path: tuple[str | int, ...], depth: int) -> Any:
        if ty == INT:
            if not isinstance(raw, _Num):
                _refuse(path, f"expected Int, found {_found(raw)}")
            if _SHORT_INT.match(raw):
                return int(raw)
            neg, digits, exp = _digits(raw)
            if not digits:
                return 0
            if exp < 0:
                _refuse(path, f"expected Int, found {_shorten(raw)}, which is not whole")
            if len(digits) + exp > self.limits.max_int_digits:
                n = "over 10^14" if exp >= _HUGE else str(len(digits) + exp)
                _refuse(path, f"the Int has {n} digits, past the limit of {self.limits.max_int_digits}")
            self.grow(neg, digits, exp, raw, path)
            i = int(digits + "0" * exp)
            return -i if neg else i
        if ty == DECIMAL:
            if not isinstance(raw, _Num):
                _refuse(path, f"expected Decimal, found {_found(raw)}")
            neg, digits, exp = self.decimal_parts(raw, path)
            self.grow(neg, digits, exp, raw, path)
            return Decimal(_number_text(neg, digits, exp))
        if ty == BOOL:
            if raw is True or raw is False:
                return raw
            _refuse(path, f"expected Bool, found {_found(raw)}")
        if ty == JSON:
            return self.json(raw, path, depth)
        if ty == HOST_TOKEN:
            return HostToken(self.json(raw, path, depth))
        if ty == NEVER:
            _refuse(path, f"Never has no values, found {_found(raw)}")
        string = isinstance(raw, str) and not isinstance(raw, _Num)
        if ty == TEXT:
            if not string:
                _refuse(path, f"expected Text, found {_found(raw)}")
            return self.text(raw, path)
        if ty == BYTES:
            if not string:
                _refuse(path, f"expected {_shape(ty, 'a base64 string')}, found {_found(raw)}")
            s = self.text(raw, path)
            b = None
            if len(s) % 4 == 0 and _BASE64.match(s):
                try:
                    b = base64.b64decode(s, validate=True)
                except ValueError:
                    b = None
            if b is None or base64.b64encode(b).decode("ascii") != s:
                _refuse(path, f"expected Bytes, found {_string(_shorten(s))}, which is not canonical base64 "
                              "(standard alphabet, padded)")
            return b
        if ty == INSTANT:
            if not string:
                _refuse(path, f"expected {_shape(ty, 'an RFC 3339 date-time string')}, found {_found(raw)}")
            s = self.text(raw, path)
            got = _read_instant(s)
            if isinstance(got, str):
                _refuse(path, f"expected Instant, found {_string(_shorten(s))}: {got}")
            return Instant(got)
        if not string:
            _refuse(path, f"expected {_shape(ty, _DURATION_SHAPE)}, found {_found(raw)}")
        s = self.text(raw, path)
        got = _read_duration(s)
        if isinstance(got, str):
            _refuse(path, f"expected Duration, found {_string(_shorten(s))}: {got}")
        return Duration(got)

    def json(self, raw: Any, path: tuple[str | int, ...], depth: int) -> JsonValue:
        """``json.Value``: exact numbers (an ``int`` when whole and within
        the Int limit, else a ``Decimal``), a key given twice refused once
        the object is read, as core does."""
        if depth > self.limits.max_depth:
            self.too_deep(path)
        if isinstance(raw, _Num):
            if _SHORT_INT.match(raw):
                return int(raw)
            neg, digits, exp = self.decimal_parts(raw, path)
            self.grow(neg, digits, exp, raw, path)
            if exp >= 0 and len(digits) + exp <= self.limits.max_int_digits:
                n = int((digits or "0") + "0" * exp)
                return -n if neg else n
            return Decimal(_number_text(neg, digits, exp))
        if isinstance(raw, str):
            return self.text(raw, path)
        if isinstance(raw, _Obj):
            out: dict[str, JsonValue] = {}
            dup = None
            for i, (k, v) in enumerate(raw):
                at = path + (k,)
                self.text(k, at)
                if i >= self.limits.max_collection_len:
                    self.too_long(at)
                value = self.json(v, at, depth + 1)
                if dup is None and k in out:
                    dup = k
                out[k] = value
            if dup is not None:
                _refuse(path, f"the key {_string(_shorten(dup))} is given twice")
            return out
        if isinstance(raw, list):
            if len(raw) > self.limits.max_collection_len:
                for i, v in enumerate(raw[: self.limits.max_collection_len]):
                    self.json(v, path + (i,), depth + 1)
                self.too_long(path + (self.limits.max_collection_len,))
            return [self.json(v, path + (i,), depth + 1) for i, v in enumerate(raw)]
        return raw  # type: ignore[no-any-return]

    def dictionary(self, raw: Any, ty: DictT, path: tuple[str | int, ...], depth: int,
                   scope: dict[str, Type]) -> Any:
        key = _close(ty.key, scope)
        if key == TEXT:
            # Members decoded as they come; a key given twice refused after,
            # the first in code-point order.
            if not isinstance(raw, _Obj):
                _refuse(path, f"expected {_shape(ty, 'an object')}, found {_found(raw)}")
            entries: list[tuple[str, Any]] = []
            for i, (k, v) in enumerate(raw):
                at = path + (k,)
                self.text(k, at)
                if i >= self.limits.max_collection_len:
                    self.too_long(at)
                entries.append((k, self.value(v, ty.value, at, depth + 1, scope)))
            entries.sort(key=lambda kv: kv[0])
            for a, b in zip(entries, entries[1:]):
                if a[0] == b[0]:
                    _refuse(path, f"the key {_string(_shorten(a[0]))} is given twice")
            return dict(entries)
        if not isinstance(raw, list) or isinstance(raw, _Obj):
            _refuse(path, f"expected {_shape(ty, 'an array of [key, value] pairs')}, found {_found(raw)}")
        pairs = []
        for i, p in enumerate(raw):
            at = path + (i,)
            if i >= self.limits.max_collection_len:
                self.too_long(at)
            if not isinstance(p, list) or isinstance(p, _Obj):
                _refuse(at, f"expected {_PAIR}, found {_found(p)}")
            if len(p) < 1:
                _refuse(at, f"expected {_PAIR}, found a shorter array")
            k = self.value(p[0], ty.key, at + (0,), depth + 2, scope)
            if len(p) < 2:
                _refuse(at, f"expected {_PAIR}, found a shorter array")
            v = self.value(p[1], ty.value, at + (1,), depth + 2, scope)
            if len(p) > 2:
                _refuse(at, f"expected {_PAIR}, found a longer array")
            pairs.append((k, v))
        return FlowDict(self.ordered(pairs, lambda kv: self.canon(kv[0], key), path,
                                     "a dict holds each key once; this key equals the key of [{}]"))

    def fields(self, raw: Any, fields: tuple[tuple[str, Type], ...], what: str,
               path: tuple[str | int, ...], depth: int, scope: dict[str, Type]) -> tuple[tuple[str, Any], ...]:
        """A record's (or a constructor's) fields, as core reads them:
        members in the text's order, a field given twice refused when its
        second comes, ignored members skipped (a key among them given twice
        refused too), missing fields after."""
        if not isinstance(raw, _Obj):
            _refuse(path, f"expected {what}, found {_found(raw)}")
        types = {name: _close(fty, scope) for name, fty in fields}
        got: dict[str, Any] = {}
        ignored: set[str] = set()
        for i, (k, v) in enumerate(raw):
            at = path + (k,)
            self.text(k, at)
            if i >= self.limits.max_collection_len:
                self.too_long(at)
            closed = types.get(k)
            if closed is None:
                if k in ignored:
                    _refuse(path, f"the key {_string(_shorten(k))} is given twice")
                ignored.add(k)
                self.skip(v, at, depth + 1)
            elif k in got:
                _refuse(path, f"the key {_string(_shorten(k))} is given twice")
            elif isinstance(closed, OptionT):
                got[k] = Some(self.value(v, closed.inner, at, depth + 1, {}))
            else:
                got[k] = self.value(v, closed, at, depth + 1, {})
        out: list[tuple[str, Any]] = []
        for name, closed in types.items():
            if name in got:
                out.append((name, got[name]))
            elif isinstance(closed, OptionT):
                out.append((name, None))
            else:
                _refuse(path, f"missing required field {_string(_shorten(name))}")
        return tuple(out)

    def named(self, raw: Any, ty: Named, path: tuple[str | int, ...], depth: int,
              scope: dict[str, Type]) -> Any:
        decl = self.env.get(ty.identity)
        if decl is None:
            _refuse(path, f"the type {ty.identity} is not declared")
        args = tuple(_close(a, scope) for a in ty.args)
        if len(args) != len(decl.params):
            _refuse(path, f"the type {ty.identity} takes {len(decl.params)} type arguments, given {len(args)}")
        inner = dict(zip(decl.params, args))
        if isinstance(decl, Record):
            return RecordValue(decl.identity, self.fields(raw, decl.fields, _shape(ty, "an object"),
                                                          path, depth, inner))
        assert isinstance(decl, Enum)

        def find(name: str) -> Any:
            for c in decl.constructors:
                if c.name == name:
                    return c
            names = ", ".join(c.name for c in decl.constructors)
            _refuse(path, f"{written(ty)} has no constructor {_string(_shorten(name))}; it has {names}")

        if isinstance(raw, str) and not isinstance(raw, _Num):
            c = find(raw)
            if c.payload is not None:
                _refuse(path, f"constructor {_string(c.name)} carries a payload: expected {{{_string(c.name)}: …}}")
            return Variant(decl.identity, c.name)
        if not isinstance(raw, _Obj):
            _refuse(path, f"expected {_shape(ty, _ENUM_SHAPE)}, found {_found(raw)}")
        if not raw:
            _refuse(path, f"expected {_shape(ty, _ENUM_SHAPE)}, found an empty object")
        tag, v = raw[0]
        c = find(tag)
        if c.payload is None:
            _refuse(path, f"constructor {_string(c.name)} carries no payload: expected {_string(c.name)}")
        at = path + (tag,)
        if isinstance(c.payload, tuple):
            out = Variant(decl.identity, tag, self.fields(
                v, c.payload, f"an object of the fields of {_string(c.name)}", at, depth + 1, inner), True)
        else:
            out = Variant(decl.identity, tag, self.value(v, c.payload, at, depth + 1, inner))
        self.one_member(raw, ty, _ENUM_SHAPE, path)
        return out


def _close(ty: Type, scope: dict[str, Type]) -> Type:
    """``ty`` with the parameters of ``scope`` substituted."""
    if not scope:
        return ty
    if isinstance(ty, Param):
        return scope.get(ty.name, ty)
    if isinstance(ty, ListT):
        return ListT(_close(ty.item, scope))
    if isinstance(ty, SetT):
        return SetT(_close(ty.item, scope))
    if isinstance(ty, TupleT):
        return TupleT(tuple(_close(t, scope) for t in ty.items))
    if isinstance(ty, DictT):
        return DictT(_close(ty.key, scope), _close(ty.value, scope))
    if isinstance(ty, OptionT):
        return OptionT(_close(ty.inner, scope))
    if isinstance(ty, ResultT):
        return ResultT(_close(ty.ok, scope), _close(ty.err, scope))
    if isinstance(ty, Named):
        return Named(ty.identity, tuple(_close(a, scope) for a in ty.args))
    return ty


# -- time --------------------------------------------------------------------

_NS = 1_000_000_000
_DAY_NS = 86_400 * _NS
_LIMIT_NS = 1 << 127
_DAYS_IN_MONTH = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _days_from_civil(y: int, m: int, d: int) -> int:
    y -= m <= 2
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def _civil_from_days(z: int) -> tuple[int, int, int]:
    z += 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + (3 if mp < 10 else -9)
    return yoe + era * 400 + (m <= 2), m, d


class _Cursor:
    """A cursor over a time's spelling; each read gives why it failed as a
    ``str`` (core's words)."""

    def __init__(self, s: str, i: int = 0) -> None:
        self.s = s
        self.i = i

    def run(self) -> str:
        """The ASCII digits from here on."""
        start = self.i
        while self.i < len(self.s) and "0" <= self.s[self.i] <= "9":
            self.i += 1
        return self.s[start:self.i]

    def digits(self, n: int, what: str) -> int | str:
        part = self.s[self.i:self.i + n]
        if len(part) != n or not all("0" <= c <= "9" for c in part):
            return f"expected {n} digits of {what}"
        self.i += n
        return int(part)

    def expect(self, c: str, what: str) -> str | None:
        if self.s[self.i:self.i + 1] != c:
            return f"expected {what}"
        self.i += 1
        return None

    def fraction(self) -> int | str:
        """Up to nine fraction digits as nanoseconds; later digits must be 0."""
        digits = self.run()
        if not digits:
            return "expected digits after `.`"
        if digits[9:].strip("0"):
            return "it is finer than a nanosecond"
        return int(digits[:9].ljust(9, "0"))


def _read_instant(s: str) -> int | str:
    """An RFC 3339 date-time's nanoseconds since the epoch, or why it is not
    one (core's ``time::instant``)."""
    c = _Cursor(s)
    sign = s[:1] if s[:1] in ("+", "-") else ""
    c.i = len(sign)
    year_digits = c.run()
    if not sign:
        if len(year_digits) != 4:
            return "expected a four-digit year"
        year = int(year_digits)
    else:
        if len(year_digits) < 4 or (len(year_digits) > 4 and year_digits[0] == "0"):
            return "a signed year has at least four digits and no extra leading zero"
        if len(year_digits) > 30:
            return "the year is out of range"
        v = int(year_digits)
        if 0 <= v <= 9999 and not (sign == "-" and v > 0):
            return "a year within 0000..9999 is written without a sign"
        year = -v if sign == "-" else v
    e = c.expect("-", "`-` after the year")
    if e is not None:
        return e
    month = c.digits(2, "the month")
    if isinstance(month, str):
        return month
    e = c.expect("-", "`-` after the month")
    if e is not None:
        return e
    day = c.digits(2, "the day")
    if isinstance(day, str):
        return day
    if not 1 <= month <= 12:
        return f"month {month:02d} does not exist"
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    dim = 29 if month == 2 and leap else _DAYS_IN_MONTH[month - 1]
    if not 1 <= day <= dim:
        return f"day {day:02d} does not exist in that month"
    if s[c.i:c.i + 1] not in ("T", "t"):
        return "expected `T` after the date"
    c.i += 1
    hour = c.digits(2, "the hour")
    if isinstance(hour, str):
        return hour
    e = c.expect(":", "`:` after the hour")
    if e is not None:
        return e
    minute = c.digits(2, "the minute")
    if isinstance(minute, str):
        return minute
    e = c.expect(":", "`:` after the minute")
    if e is not None:
        return e
    second = c.digits(2, "the second")
    if isinstance(second, str):
        return second
    if hour > 23 or minute > 59:
        return "the time of day does not exist"
    if second == 60:
        return "a leap second does not exist on a time line without leap seconds"
    if second > 59:
        return "the time of day does not exist"
    nanos = 0
    if s[c.i:c.i + 1] == ".":
        c.i += 1
        f = c.fraction()
        if isinstance(f, str):
            return f
        nanos = f
    offset = 0
    o = s[c.i:c.i + 1]
    if o in ("Z", "z"):
        c.i += 1
    elif o in ("+", "-"):
        c.i += 1
        oh = c.digits(2, "the offset's hours")
        if isinstance(oh, str):
            return oh
        e = c.expect(":", "`:` in the offset")
        if e is not None:
            return e
        om = c.digits(2, "the offset's minutes")
        if isinstance(om, str):
            return om
        if oh > 23 or om > 59:
            return "the offset does not exist"
        offset = (oh * 3600 + om * 60) * (-1 if o == "-" else 1)
    else:
        return "expected `Z` or an offset such as `+01:00`"
    if c.i != len(s):
        return "unexpected text after the offset"
    seconds = _days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second - offset
    total = seconds * _NS + nanos
    if not -_LIMIT_NS <= total < _LIMIT_NS:
        return "the instant is out of range"
    return total


def _read_duration(s: str) -> int | str:
    """``PT<seconds>S``'s nanoseconds, or why it is not one (core's
    ``time::duration``)."""
    if not s.startswith("PT") or not s.endswith("S") or len(s) < 3:
        return "expected `PT<seconds>S`"
    body = s[2:-1]
    negative = body.startswith("-")
    if negative:
        body = body[1:]
    c = _Cursor(body)
    whole = c.run()
    plain = "expected `PT<seconds>S`, the seconds a plain decimal number"
    if not whole:
        return plain
    if len(whole) > 1 and whole[0] == "0":
        return "the seconds have a leading zero"
    nanos = 0
    if c.i < len(body):
        if body[c.i] != ".":
            return plain
        c.i += 1
        f = c.fraction()
        if isinstance(f, str):
            return f
        if c.i != len(body):
            return plain
        nanos = f
    if len(whole) > 30:
        return "the duration is out of range"
    magnitude = int(whole) * _NS + nanos
    if magnitude > _LIMIT_NS if negative else magnitude >= _LIMIT_NS:
        return "the duration is out of range"
    return -magnitude if negative else magnitude


def _seconds_text(ns: int) -> str:
    neg = ns < 0
    whole, frac = divmod(abs(ns), _NS)
    text = str(whole) + (("." + f"{frac:09d}".rstrip("0")) if frac else "")
    return ("-" if neg else "") + text


def instant_text(ns: int) -> str:
    """An Instant's canonical text."""
    days, rem = divmod(ns, _DAY_NS)
    y, mo, d = _civil_from_days(days)
    secs, frac = divmod(rem, _NS)
    h, mi, sec = secs // 3600, secs // 60 % 60, secs % 60
    year = f"{y:04d}" if 0 <= y <= 9999 else ("+" if y > 0 else "-") + f"{abs(y):04d}"
    fraction = ("." + f"{frac:09d}".rstrip("0")) if frac else ""
    return f"{year}-{mo:02d}-{d:02d}T{h:02d}:{mi:02d}:{sec:02d}{fraction}Z"


def duration_text(ns: int) -> str:
    """A Duration's canonical text."""
    return f"PT{_seconds_text(ns)}S"


# -- writing -----------------------------------------------------------------


def decimal_text(d: Decimal) -> str:
    """A finite Decimal's canonical text: plain, normalized."""
    if not d.is_finite():
        raise ValueError("a Decimal must be finite")
    return _number_text(*_digits(str(d)))


def _int_text(v: int, path: tuple[str | int, ...]) -> str:
    try:
        return str(v)
    except ValueError:
        # Past the interpreter's int_max_str_digits (4300, core's
        # max_int_digits): a text that decoding would refuse.
        _refuse(path, "an Int with more digits than the limit")


def _json_text(v: Any, path: tuple[str | int, ...], depth: int) -> str:
    if depth > DEFAULT_LIMITS.max_depth:
        _refuse(path, "nested too deep")
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, int):
        return _int_text(v, path)
    if isinstance(v, Decimal):
        if not v.is_finite():
            _refuse(path, "a JSON number must be finite")
        return decimal_text(v)
    if isinstance(v, str):
        return _string(v)
    if isinstance(v, list):
        return "[" + ",".join(_json_text(x, path + (i,), depth + 1) for i, x in enumerate(v)) + "]"
    if isinstance(v, dict):
        if not all(isinstance(k, str) for k in v):
            _refuse(path, "a JSON object's keys are text")
        return "{" + ",".join(_string(k) + ":" + _json_text(v[k], path + (k,), depth + 1)
                              for k in sorted(v)) + "}"
    _refuse(path, f"expected JSON, found a Python {type(v).__name__}")


class _Encoder:
    def __init__(self, env: Env) -> None:
        self.env = env

    def wrong(self, v: Any, ty: Type, path: tuple[str | int, ...]) -> NoReturn:
        _refuse(path, f"expected {written(ty)}, found a Python {type(v).__name__}")

    def value(self, v: Any, ty: Type, path: tuple[str | int, ...], depth: int) -> str:
        if depth > DEFAULT_LIMITS.max_depth:
            _refuse(path, "nested too deep")
        if isinstance(ty, Param):
            _refuse(path, f"the type parameter {ty.name} is not bound")
        if isinstance(ty, Prim):
            return self.prim(v, ty, path, depth)
        if isinstance(ty, ListT):
            if not isinstance(v, list):
                self.wrong(v, ty, path)
            return "[" + ",".join(self.value(x, ty.item, path + (i,), depth + 1) for i, x in enumerate(v)) + "]"
        if isinstance(ty, SetT):
            if not isinstance(v, FlowSet):
                self.wrong(v, ty, path)
            texts = sorted({self.value(x, ty.item, path + (i,), depth + 1).encode() for i, x in enumerate(v.items)})
            return "[" + ",".join(t.decode() for t in texts) + "]"
        if isinstance(ty, TupleT):
            if not isinstance(v, tuple) or len(v) != len(ty.items):
                self.wrong(v, ty, path)
            return "[" + ",".join(self.value(x, t, path + (i,), depth + 1) for i, (x, t) in enumerate(zip(v, ty.items))) + "]"
        if isinstance(ty, DictT):
            if ty.key == TEXT:
                if not isinstance(v, dict) or not all(isinstance(k, str) for k in v):
                    self.wrong(v, ty, path)
                return "{" + ",".join(_string(k) + ":" + self.value(v[k], ty.value, path + (k,), depth + 1) for k in sorted(v)) + "}"
            if not isinstance(v, FlowDict):
                self.wrong(v, ty, path)
            pairs: dict[bytes, str] = {}
            for i, kv in enumerate(v.items):
                if not isinstance(kv, tuple) or len(kv) != 2:
                    self.wrong(kv, ty, path + (i,))
                k = self.value(kv[0], ty.key, path + (i, 0), depth + 2)
                if k.encode() in pairs:
                    _refuse(path + (i,), "a dict holds each key once")
                pairs[k.encode()] = "[" + k + "," + self.value(kv[1], ty.value, path + (i, 1), depth + 2) + "]"
            return "[" + ",".join(pairs[k] for k in sorted(pairs)) + "]"
        if isinstance(ty, OptionT):
            if v is None:
                return '"None"'
            if not isinstance(v, Some):
                self.wrong(v, ty, path)
            return '{"Some":' + self.value(v.value, ty.inner, path + ("Some",), depth + 1) + "}"
        if isinstance(ty, ResultT):
            if isinstance(v, Ok):
                return '{"Ok":' + self.value(v.value, ty.ok, path + ("Ok",), depth + 1) + "}"
            if isinstance(v, Err):
                return '{"Err":' + self.value(v.value, ty.err, path + ("Err",), depth + 1) + "}"
            self.wrong(v, ty, path)
        return self.named(v, ty, path, depth)

    def prim(self, v: Any, ty: Prim, path: tuple[str | int, ...], depth: int) -> str:
        if ty == INT:
            if not isinstance(v, int) or isinstance(v, bool):
                self.wrong(v, ty, path)
            return _int_text(v, path)
        if ty == DECIMAL:
            if not isinstance(v, Decimal) or not v.is_finite():
                self.wrong(v, ty, path)
            return decimal_text(v)
        if ty == BOOL:
            if not isinstance(v, bool):
                self.wrong(v, ty, path)
            return "true" if v else "false"
        if ty == TEXT:
            if not isinstance(v, str):
                self.wrong(v, ty, path)
            try:
                v.encode("utf-8")
            except UnicodeEncodeError:
                _refuse(path, "a Text holding a lone surrogate")
            return _string(v)
        if ty == BYTES:
            if not isinstance(v, bytes):
                self.wrong(v, ty, path)
            return '"' + base64.b64encode(v).decode("ascii") + '"'
        if ty == INSTANT:
            if not isinstance(v, Instant) or not -_LIMIT_NS <= v.nanos < _LIMIT_NS:
                self.wrong(v, ty, path)
            return '"' + instant_text(v.nanos) + '"'
        if ty == DURATION:
            if not isinstance(v, Duration):
                self.wrong(v, ty, path)
            return '"' + duration_text(v.nanos) + '"'
        if ty == JSON:
            return _json_text(v, path, depth)
        if ty == HOST_TOKEN:
            if not isinstance(v, HostToken):
                self.wrong(v, ty, path)
            return _json_text(v.json, path, depth)
        _refuse(path, "Never has no values")

    def fields(self, v: Any, fields: tuple[tuple[str, Type], ...], ty: Type,
               path: tuple[str | int, ...], depth: int, scope: dict[str, Type]) -> str:
        if not isinstance(v, tuple) or [f[0] if isinstance(f, tuple) else None for f in v] != [n for n, _ in fields]:
            _refuse(path, f"expected the fields of {written(ty)} in declaration order")
        out: dict[str, str] = {}
        for (name, fty), (_, fv) in zip(fields, v):
            closed = _close(fty, scope)
            if isinstance(closed, OptionT):
                if fv is None:
                    continue
                if not isinstance(fv, Some):
                    self.wrong(fv, closed, path + (name,))
                out[name] = self.value(fv.value, closed.inner, path + (name,), depth + 1)
            else:
                out[name] = self.value(fv, closed, path + (name,), depth + 1)
        return "{" + ",".join(_string(k) + ":" + out[k] for k in sorted(out)) + "}"

    def named(self, v: Any, ty: Named, path: tuple[str | int, ...], depth: int) -> str:
        decl = self.env.get(ty.identity)
        if decl is None or len(decl.params) != len(ty.args):
            _refuse(path, f"the type {ty.identity} is not declared with {len(ty.args)} type arguments")
        scope = dict(zip(decl.params, ty.args))
        if isinstance(decl, Record):
            if not isinstance(v, RecordValue) or v.identity != decl.identity:
                self.wrong(v, ty, path)
            return self.fields(v.fields, decl.fields, ty, path, depth, scope)
        if not isinstance(v, Variant) or v.identity != decl.identity:
            self.wrong(v, ty, path)
        for c in decl.constructors:
            if c.name != v.constructor:
                continue
            if c.payload is None:
                return _string(c.name)
            p = path + (c.name,)
            if isinstance(c.payload, tuple):
                body = self.fields(v.payload, c.payload, ty, p, depth + 1, scope)
            else:
                body = self.value(v.payload, _close(c.payload, scope), p, depth + 1)
            return "{" + _string(c.name) + ":" + body + "}"
        _refuse(path, f"{written(ty)} has no constructor {v.constructor}")


def decode(text: bytes | str, ty: Type, env: Env, limits: Limits = DEFAULT_LIMITS,
           params: dict[str, Type] | None = None) -> Any:
    """The value ``text`` encodes at ``ty`` (named types in ``env``, type
    parameters bound by ``params``), or :class:`Refused`."""
    raw = _parse(text, limits)
    size = len(text) if isinstance(text, bytes) else len(text.encode("utf-8", "surrogatepass"))
    escape = _SURROGATE_ESCAPE_BYTES if isinstance(text, bytes) else _SURROGATE_ESCAPE
    if escape.search(text) and _lone_surrogate(raw):  # type: ignore[arg-type]
        _refuse((), "not JSON: a lone surrogate escape")
    return _Decoder(env, limits, limits.max_bytes - size).value(raw, ty, (), 0, dict(params or {}))


def encode(value: Any, ty: Type, env: Env) -> str:
    """The canonical text of ``value`` at ``ty``, or :class:`Refused` when
    it is not a value of that type."""
    return _Encoder(env).value(value, ty, (), 0)
