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
            _refuse((), f"the text is longer than {limits.max_bytes} bytes")
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
        _refuse((), f"not JSON: {e.msg} at byte {len(text[: e.pos].encode())}")
    except RecursionError:
        _refuse((), "nested too deep")


def _digits(tok: str) -> tuple[bool, str, int]:
    """Sign, significant digits (no leading or trailing zeros; "" for zero)
    and power of ten, without building the number."""
    t = Decimal(tok).as_tuple()
    digits = "".join(map(str, t.digits)).lstrip("0")
    exp = int(t.exponent)
    stripped = digits.rstrip("0")
    exp += len(digits) - len(stripped)
    return bool(t.sign) and bool(stripped), stripped, exp


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


def _found(raw: Any) -> str:
    if isinstance(raw, _Num):
        return _number_text(*_digits(raw))
    if isinstance(raw, str):
        return _string(raw)
    if raw is None:
        return "null"
    if raw is True:
        return "true"
    if raw is False:
        return "false"
    return "an array" if isinstance(raw, list) and not isinstance(raw, _Obj) else "an object"


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


class _Decoder:
    def __init__(self, env: Env, limits: Limits) -> None:
        self.env = env
        self.limits = limits

    # -- checks every value is held to ------------------------------------

    def text(self, s: str, path: tuple[str | int, ...]) -> str:
        try:
            n = len(s.encode("utf-8"))
        except UnicodeEncodeError:
            _refuse(path, "not JSON: a lone surrogate escape")
        if n > self.limits.max_string_bytes:
            _refuse(path, f"a string longer than {self.limits.max_string_bytes} bytes")
        return s

    def members(self, raw: _Obj, path: tuple[str | int, ...]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in raw:
            self.text(k, path)
            if k in out:
                _refuse(path, f"the key {_string(k)} is given twice")
            out[k] = v
        return out

    def wellformed(self, raw: Any, path: tuple[str | int, ...], depth: int) -> None:
        """An ignored member: well-formed, within depth, no duplicate key."""
        if depth > self.limits.max_depth:
            _refuse(path, f"nested deeper than {self.limits.max_depth}")
        if isinstance(raw, _Obj):
            for v in self.members(raw, path).values():
                self.wellformed(v, path, depth + 1)
        elif isinstance(raw, list):
            for v in raw:
                self.wellformed(v, path, depth + 1)
        elif isinstance(raw, str) and not isinstance(raw, _Num):
            self.text(raw, path)

    def number(self, raw: Any, path: tuple[str | int, ...], want: str) -> tuple[bool, str, int]:
        if not isinstance(raw, _Num):
            _refuse(path, f"expected {want}, found {_found(raw)}")
        return _digits(raw)

    def decimal_parts(self, raw: Any, path: tuple[str | int, ...], want: str) -> tuple[bool, str, int]:
        neg, digits, exp = self.number(raw, path, want)
        lim = self.limits
        if len(digits) > lim.max_decimal_digits:
            _refuse(path, f"a number with more than {lim.max_decimal_digits} significant digits")
        if digits and abs(exp) > lim.max_decimal_exponent:
            _refuse(path, f"a number past 10^±{lim.max_decimal_exponent}")
        return neg, digits, exp

    # -- the declared type directs every step ----------------------------

    def value(self, raw: Any, ty: Type, path: tuple[str | int, ...], depth: int,
              scope: dict[str, Type]) -> Any:
        if depth > self.limits.max_depth:
            _refuse(path, f"nested deeper than {self.limits.max_depth}")
        if isinstance(ty, Param):
            bound = scope.get(ty.name)
            if bound is None:
                _refuse(path, f"the type parameter {ty.name} is not bound")
            return self.value(raw, bound, path, depth, {})
        if isinstance(ty, Prim):
            return self.prim(raw, ty, path, depth)
        if isinstance(ty, (ListT, SetT, TupleT)):
            items = self.array(raw, ty, path)
            if isinstance(ty, TupleT):
                if len(items) != len(ty.items):
                    _refuse(path, f"expected {written(ty)}, found an array of {len(items)}")
                return tuple(self.value(v, t, path + (i,), depth + 1, scope)
                             for i, (v, t) in enumerate(zip(items, ty.items)))
            vals = [self.value(v, ty.item, path + (i,), depth + 1, scope) for i, v in enumerate(items)]
            if isinstance(ty, ListT):
                return vals
            return FlowSet(self.ordered(vals, lambda v: self.canon(v, ty.item, scope), path, "a set holds each element once"))
        if isinstance(ty, DictT):
            return self.dictionary(raw, ty, path, depth, scope)
        if isinstance(ty, OptionT):
            if raw == "None" and not isinstance(raw, _Num):
                return None
            tag, v = self.tagged(raw, ty, ("Some",), path)
            return Some(self.value(v, ty.inner, path + (tag,), depth + 1, scope))
        if isinstance(ty, ResultT):
            tag, v = self.tagged(raw, ty, ("Ok", "Err"), path)
            if tag == "Ok":
                return Ok(self.value(v, ty.ok, path + (tag,), depth + 1, scope))
            return Err(self.value(v, ty.err, path + (tag,), depth + 1, scope))
        return self.named(raw, ty, path, depth, scope)

    def array(self, raw: Any, ty: Type, path: tuple[str | int, ...]) -> list[Any]:
        if not isinstance(raw, list) or isinstance(raw, _Obj):
            _refuse(path, f"expected {written(ty)}, found {_found(raw)}")
        if len(raw) > self.limits.max_collection_len:
            _refuse(path + (self.limits.max_collection_len,), "past the collection length limit")
        return raw

    def ordered(self, vals: list[Any], key: Callable[[Any], str], path: tuple[str | int, ...],
                why: str) -> tuple[Any, ...]:
        seen: dict[bytes, int] = {}
        keyed = []
        for i, v in enumerate(vals):
            k = key(v).encode("utf-8")
            if k in seen:
                _refuse(path + (i,), f"{why}; this one equals [{seen[k]}]")
            seen[k] = i
            keyed.append((k, v))
        keyed.sort(key=lambda kv: kv[0])
        return tuple(v for _, v in keyed)

    def canon(self, v: Any, ty: Type, scope: dict[str, Type]) -> str:
        return _Encoder(self.env).value(v, _close(ty, scope), (), 0)

    def tagged(self, raw: Any, ty: Type, tags: tuple[str, ...],
               path: tuple[str | int, ...]) -> tuple[str, Any]:
        if not isinstance(raw, _Obj) or len(raw) != 1 or raw[0][0] not in tags:
            _refuse(path, f"expected {written(ty)}, found {_found(raw)}")
        return raw[0]

    def prim(self, raw: Any, ty: Prim, path: tuple[str | int, ...], depth: int) -> Any:
        want = written(ty)
        if ty is INT or ty == INT:
            neg, digits, exp = self.number(raw, path, "Int")
            if exp < 0:
                _refuse(path, f"expected Int, found {_found(raw)}, which is not whole")
            if digits and len(digits) + exp > self.limits.max_int_digits:
                _refuse(path, f"an Int with more than {self.limits.max_int_digits} digits")
            n = int((digits or "0") + "0" * exp)
            return -n if neg else n
        if ty == DECIMAL:
            neg, digits, exp = self.decimal_parts(raw, path, "Decimal")
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
        if not isinstance(raw, str) or isinstance(raw, _Num):
            _refuse(path, f"expected {want}, found {_found(raw)}")
        s = self.text(raw, path)
        if ty == TEXT:
            return s
        if ty == BYTES:
            try:
                b = base64.b64decode(s, validate=True)
            except ValueError:
                _refuse(path, "expected Bytes, found text that is not base64")
            if base64.b64encode(b).decode("ascii") != s:
                _refuse(path, "expected Bytes, found base64 that is not canonical")
            return b
        if ty == INSTANT:
            return Instant(_read_instant(s, path))
        return Duration(_read_duration(s, path))

    def json(self, raw: Any, path: tuple[str | int, ...], depth: int) -> JsonValue:
        if depth > self.limits.max_depth:
            _refuse(path, f"nested deeper than {self.limits.max_depth}")
        if isinstance(raw, _Num):
            neg, digits, exp = self.decimal_parts(raw, path, "a number")
            if exp >= 0 and len(digits) + exp <= self.limits.max_int_digits:
                n = int((digits or "0") + "0" * exp)
                return -n if neg else n
            return Decimal(_number_text(neg, digits, exp))
        if isinstance(raw, str):
            return self.text(raw, path)
        if isinstance(raw, _Obj):
            return {k: self.json(v, path + (k,), depth + 1) for k, v in self.members(raw, path).items()}
        if isinstance(raw, list):
            self.array(raw, JSON, path)
            return [self.json(v, path + (i,), depth + 1) for i, v in enumerate(raw)]
        if raw is None or isinstance(raw, bool):
            return raw
        _refuse(path, f"not JSON: {raw!r}")

    def dictionary(self, raw: Any, ty: DictT, path: tuple[str | int, ...], depth: int,
             scope: dict[str, Type]) -> Any:
        key = _close(ty.key, scope)
        if key == TEXT:
            if not isinstance(raw, _Obj):
                _refuse(path, f"expected {written(ty)}, found {_found(raw)}")
            if len(raw) > self.limits.max_collection_len:
                _refuse(path, "past the collection length limit")
            m = self.members(raw, path)
            return {k: self.value(m[k], ty.value, path + (k,), depth + 1, scope) for k in sorted(m)}
        pairs = []
        for i, p in enumerate(self.array(raw, ty, path)):
            if not isinstance(p, list) or isinstance(p, _Obj) or len(p) != 2:
                _refuse(path + (i,), f"expected a [key, value] pair, found {_found(p)}")
            k = self.value(p[0], ty.key, path + (i, 0), depth + 2, scope)
            v = self.value(p[1], ty.value, path + (i, 1), depth + 2, scope)
            pairs.append((k, v))
        return FlowDict(self.ordered(pairs, lambda kv: self.canon(kv[0], key, {}), path,
                                     "a dict holds each key once"))

    def fields(self, raw: Any, fields: tuple[tuple[str, Type], ...], want: str,
               path: tuple[str | int, ...], depth: int, scope: dict[str, Type]) -> tuple[tuple[str, Any], ...]:
        if not isinstance(raw, _Obj):
            _refuse(path, f"expected {want}, found {_found(raw)}")
        m = self.members(raw, path)
        # Members in the text's order, as core reads them, so the first
        # failure is the same one; missing fields after.
        types = {name: _close(fty, scope) for name, fty in fields}
        got: dict[str, Any] = {}
        for k, v in m.items():
            closed = types.get(k)
            if closed is None:
                # Core skips an ignored member without a path of its own.
                self.wellformed(v, path, depth + 1)
            elif isinstance(closed, OptionT):
                got[k] = Some(self.value(v, closed.inner, path + (k,), depth + 1, {}))
            else:
                got[k] = self.value(v, closed, path + (k,), depth + 1, {})
        out: list[tuple[str, Any]] = []
        for name, closed in types.items():
            if name in got:
                out.append((name, got[name]))
            elif isinstance(closed, OptionT):
                out.append((name, None))
            else:
                _refuse(path, f"missing required field {_string(name)}")
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
            return RecordValue(decl.identity, self.fields(raw, decl.fields, written(ty), path, depth, inner))
        assert isinstance(decl, Enum)
        names = ", ".join(c.name for c in decl.constructors)
        if isinstance(raw, str) and not isinstance(raw, _Num):
            for c in decl.constructors:
                if c.name == raw and c.payload is None:
                    return Variant(decl.identity, c.name)
            _refuse(path, f"expected {written(ty)} (one of {names}), found {_found(raw)}")
        if not isinstance(raw, _Obj) or len(raw) != 1:
            _refuse(path, f"expected {written(ty)} (one of {names}), found {_found(raw)}")
        tag, v = raw[0]
        for c in decl.constructors:
            if c.name == tag and c.payload is not None:
                if isinstance(c.payload, tuple):
                    return Variant(decl.identity, tag, self.fields(v, c.payload, tag, path + (tag,), depth + 1, inner), True)
                return Variant(decl.identity, tag, self.value(v, c.payload, path + (tag,), depth + 1, inner))
        _refuse(path, f"expected {written(ty)} (one of {names}), found {_found(raw)}")


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
_INSTANT = re.compile(
    r"([+-][0-9]{4,}|[0-9]{4})-([0-9]{2})-([0-9]{2})[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})"
    r"(\.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-9]{2})\Z"
)
_DURATION = re.compile(r"PT(-?)(0|[1-9][0-9]*)(\.[0-9]+)?S\Z")


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


def _fraction_ns(frac: str | None, path: tuple[str | int, ...], what: str) -> int:
    if not frac:
        return 0
    digits = frac[1:]
    if len(digits) > 9 and digits[9:].strip("0"):
        _refuse(path, f"{what} finer than a nanosecond")
    return int(digits[:9].ljust(9, "0"))


def _read_instant(s: str, path: tuple[str | int, ...]) -> int:
    m = _INSTANT.match(s)
    bad = f"expected Instant, found {_string(s)}"
    if not m:
        _refuse(path, bad)
    ys, mo, d, h, mi, sec = m.group(1), *(int(m.group(i)) for i in range(2, 7))
    y = int(ys)
    if ys[0] in "+-" and (0 <= y <= 9999 or (len(ys) > 5 and ys[1] == "0") or ys == "-0000"):
        _refuse(path, bad)
    leap = y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)
    dim = [31, 29 if leap else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
    if not (1 <= mo <= 12 and 1 <= d <= dim[mo - 1] and h < 24 and mi < 60 and sec < 60):
        _refuse(path, bad)
    off = m.group(8)
    offset = 0
    if off not in ("Z", "z"):
        oh, om = int(off[1:3]), int(off[4:6])
        if oh > 23 or om > 59:
            _refuse(path, bad)
        offset = (oh * 60 + om) * 60 * (-1 if off[0] == "-" else 1)
    secs = _days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + sec - offset
    ns = secs * _NS + _fraction_ns(m.group(7), path, "an Instant")
    if not -_LIMIT_NS <= ns < _LIMIT_NS:
        _refuse(path, "an Instant past the model's range")
    return ns


def _read_duration(s: str, path: tuple[str | int, ...]) -> int:
    m = _DURATION.match(s)
    if not m:
        _refuse(path, f"expected Duration, found {_string(s)}")
    ns = int(m.group(2)) * _NS + _fraction_ns(m.group(3), path, "a Duration")
    return -ns if m.group(1) else ns


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
    return _Decoder(env, limits).value(raw, ty, (), 0, dict(params or {}))


def encode(value: Any, ty: Type, env: Env) -> str:
    """The canonical text of ``value`` at ``ty``, or :class:`Refused` when
    it is not a value of that type."""
    return _Encoder(env).value(value, ty, (), 0)
