"""The data-type category, as the listing's schemas write it.

A :data:`Type` is what a value is decoded at and written from. Named types
(records and enums) are declared once in an :class:`Env` and referred to by
identity, so recursive types are finite. :func:`type_from_schema` reads the
schemas ``flow tools`` lists (core's ``schema_of``), keyword for keyword.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Union


@dataclass(frozen=True)
class Prim:
    """A scalar: ``Int``, ``Decimal``, ``Text``, ``Bool``, ``Bytes``,
    ``Instant``, ``Duration``, ``json.Value``, a host token or ``Never``."""

    name: str


INT = Prim("Int")
DECIMAL = Prim("Decimal")
TEXT = Prim("Text")
BOOL = Prim("Bool")
BYTES = Prim("Bytes")
INSTANT = Prim("Instant")
DURATION = Prim("Duration")
JSON = Prim("json.Value")
HOST_TOKEN = Prim("host token")
NEVER = Prim("Never")


@dataclass(frozen=True)
class ListT:
    """``List<T>``."""

    item: Type


@dataclass(frozen=True)
class SetT:
    """``Set<T>``."""

    item: Type


@dataclass(frozen=True)
class TupleT:
    """A tuple of fixed length."""

    items: tuple[Type, ...]


@dataclass(frozen=True)
class DictT:
    """``Dict<K, V>``."""

    key: Type
    value: Type


@dataclass(frozen=True)
class OptionT:
    """``Option<T>``."""

    inner: Type


@dataclass(frozen=True)
class ResultT:
    """``Result<T, E>``."""

    ok: Type
    err: Type


@dataclass(frozen=True)
class Named:
    """A declared record or enum, with its type arguments."""

    identity: str
    args: tuple[Type, ...] = ()


@dataclass(frozen=True)
class Param:
    """A generic type parameter, by name."""

    name: str


Type = Union[Prim, ListT, SetT, TupleT, DictT, OptionT, ResultT, Named, Param]

Fields = tuple[tuple[str, Type], ...]


@dataclass(frozen=True)
class Record:
    """A record declaration: its fields in declaration order."""

    identity: str
    params: tuple[str, ...]
    fields: Fields


@dataclass(frozen=True)
class Constructor:
    """One constructor: no payload (``None``), one value, or named fields."""

    name: str
    payload: Type | Fields | None


@dataclass(frozen=True)
class Enum:
    """An enum declaration: its constructors in declaration order."""

    identity: str
    params: tuple[str, ...]
    constructors: tuple[Constructor, ...]


Decl = Union[Record, Enum]
Env = dict[str, Decl]


class SchemaError(ValueError):
    """A schema that is not one the listing's generator writes."""


_DEF_PREFIX = "#/$defs/"


def _unref(ref: str) -> str:
    if not ref.startswith(_DEF_PREFIX):
        raise SchemaError(f"a $ref outside $defs: {ref!r}")
    return ref[len(_DEF_PREFIX):].replace("~1", "/").replace("~0", "~")


def _tagged(schema: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    props = schema.get("properties")
    if (
        schema.get("type") != "object"
        or not isinstance(props, dict)
        or len(props) != 1
        or schema.get("additionalProperties") is not False
    ):
        raise SchemaError(f"not a tagged branch: {schema!r}")
    ((name, payload),) = props.items()
    if schema.get("required") != [name] or not isinstance(payload, dict):
        raise SchemaError(f"not a tagged branch: {schema!r}")
    return name, payload


def read_type(schema: Any) -> Type:
    """The type a schema written where a type is used describes."""
    if not isinstance(schema, dict):
        raise SchemaError(f"a schema must be an object: {schema!r}")
    s = {k: v for k, v in schema.items() if k not in ("$schema", "$defs", "description")}
    if not s:
        return JSON
    if "$ref" in s:
        args = tuple(read_type(a) for a in s.get("$args", []))
        return Named(_unref(s["$ref"]), args)
    if "$param" in s:
        return Param(str(s["$param"]))
    if s.get("$hostToken") is True:
        return HOST_TOKEN
    if s.get("not") == {}:
        return NEVER
    if "oneOf" in s:
        branches = s["oneOf"]
        if branches and branches[0] == {"const": "None"} and len(branches) == 2:
            name, inner = _tagged(branches[1])
            if name == "Some":
                return OptionT(read_type(inner))
        if len(branches) == 2:
            ok, okp = _tagged(branches[0])
            err, errp = _tagged(branches[1])
            if (ok, err) == ("Ok", "Err"):
                return ResultT(read_type(okp), read_type(errp))
        raise SchemaError(f"an inline oneOf that is neither Option nor Result: {schema!r}")
    t = s.get("type")
    if t == "integer":
        return INT
    if t == "number":
        return DECIMAL
    if t == "boolean":
        return BOOL
    if t == "string":
        fmt = s.get("format")
        if s.get("contentEncoding") == "base64":
            return BYTES
        if fmt == "date-time":
            return INSTANT
        if fmt == "duration":
            return DURATION
        return TEXT
    if t == "object":
        return DictT(TEXT, read_type(s["additionalProperties"]))
    if t == "array" or t == ["object", "array"]:
        if s.get("$dict") is True:
            pair = s["items"]["prefixItems"]
            return DictT(read_type(pair[0]), read_type(pair[1]))
        if s.get("items") is False:
            return TupleT(tuple(read_type(i) for i in s.get("prefixItems", [])))
        item = read_type(s["items"])
        return SetT(item) if s.get("uniqueItems") is True else ListT(item)
    raise SchemaError(f"a schema the listing's generator does not write: {schema!r}")


def _fields(s: dict[str, Any]) -> Fields:
    required = set(s.get("required", [])) | set(s.get("$required", []))
    out: list[tuple[str, Type]] = []
    for name, sub in s.get("properties", {}).items():
        ty = read_type(sub)
        out.append((name, ty if name in required else OptionT(ty)))
    return tuple(out)


def read_decl(identity: str, s: dict[str, Any]) -> Decl:
    """A ``$defs`` entry: a record's object or an enum's ``oneOf``."""
    params = tuple(str(p) for p in s.get("$generic", []))
    if s.get("not") == {}:
        return Enum(identity, params, ())
    if "oneOf" in s:
        cons: list[Constructor] = []
        for b in s["oneOf"]:
            if "const" in b:
                cons.append(Constructor(str(b["const"]), None))
                continue
            name, payload = _tagged(b)
            if payload.get("type") == "object" and "properties" in payload:
                cons.append(Constructor(name, _fields(payload)))
            else:
                cons.append(Constructor(name, read_type(payload)))
        return Enum(identity, params, tuple(cons))
    if s.get("type") == "object":
        return Record(identity, params, _fields(s))
    raise SchemaError(f"a declaration the generator does not write: {identity}")


def type_from_schema(schema: dict[str, Any]) -> tuple[Type, Env]:
    """The type a root schema describes, and the declarations under its
    ``$defs``."""
    env: Env = {k: read_decl(k, v) for k, v in schema.get("$defs", {}).items()}
    return read_type(schema), env


def written(ty: Type) -> str:
    """The type as Flow writes it in a message (core's words)."""
    if isinstance(ty, Prim):
        return "a host token" if ty.name == "host token" else ty.name
    if isinstance(ty, ListT):
        return f"List<{written(ty.item)}>"
    if isinstance(ty, SetT):
        return f"Set<{written(ty.item)}>"
    if isinstance(ty, TupleT):
        return "(" + ", ".join(written(t) for t in ty.items) + ")"
    if isinstance(ty, DictT):
        return f"Dict<{written(ty.key)}, {written(ty.value)}>"
    if isinstance(ty, OptionT):
        return f"Option<{written(ty.inner)}>"
    if isinstance(ty, ResultT):
        return f"Result<{written(ty.ok)}, {written(ty.err)}>"
    if isinstance(ty, Named):
        name = ty.identity.rsplit(".", 1)[-1]
        if ty.args:
            return name + "<" + ", ".join(written(a) for a in ty.args) + ">"
        return name
    return ty.name
