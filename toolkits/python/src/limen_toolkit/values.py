"""Flow values as Python values, for a value decoded at a type the listing
names.

``Int`` is ``int`` of any size, ``Decimal`` is ``decimal.Decimal`` (never a
float), ``Text`` ``str``, ``Bool`` ``bool``, ``Bytes`` ``bytes``; ``Instant``
and ``Duration`` are exact to the nanosecond. ``List`` is a ``list``, ``Set``
a :class:`FlowSet` (its elements in canonical order), ``Dict<Text, V>`` a
``dict``, any other ``Dict`` a :class:`FlowDict` of pairs, a tuple a
``tuple``. ``Option`` is ``None`` or :class:`Some`, ``Result`` :class:`Ok` or
:class:`Err`, a record a :class:`RecordValue`, an enum a :class:`Variant`
(a tagged union: the constructor's name and its payload). ``json.Value`` is
the JSON itself (``None``, ``bool``, ``int``, ``Decimal``, ``str``, ``list``,
``dict``); a host token a :class:`HostToken` holding the host's JSON.
``Never`` has no values.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Generic, TypeVar, Union

T = TypeVar("T")
E = TypeVar("E")
K = TypeVar("K")
V = TypeVar("V")

JsonValue = Union[None, bool, int, Decimal, str, list["JsonValue"], dict[str, "JsonValue"]]
"""``json.Value``: raw JSON with exact numbers (``int`` when whole)."""


@dataclass(frozen=True)
class Instant:
    """A point on the UTC time line: nanoseconds since 1970-01-01T00:00:00Z
    on the proleptic Gregorian calendar, without leap seconds."""

    nanos: int


@dataclass(frozen=True)
class Duration:
    """A signed length of time in nanoseconds."""

    nanos: int


@dataclass(frozen=True)
class Some(Generic[T]):
    """``Some(v)``: kept apart from ``None`` so ``Option<Option<T>>`` keeps
    its two Nones apart."""

    value: T


@dataclass(frozen=True)
class Ok(Generic[T]):
    """``Ok(v)``."""

    value: T


@dataclass(frozen=True)
class Err(Generic[E]):
    """``Err(e)``."""

    value: E


@dataclass(frozen=True)
class HostToken:
    """A host token: the host's JSON, handed back unchanged."""

    json: JsonValue


@dataclass(frozen=True)
class FlowSet(Generic[T]):
    """A ``Set<T>``: its elements once each, in canonical order. Generic so
    generated code can say what the elements are (``FlowSet[int]``)."""

    items: tuple[T, ...]


@dataclass(frozen=True)
class FlowDict(Generic[K, V]):
    """A ``Dict<K, V>`` whose keys are not ``Text``: its pairs, in
    canonical key order (``FlowDict[int, str]`` in generated code)."""

    items: tuple[tuple[K, V], ...]


@dataclass(frozen=True)
class RecordValue:
    """A record: its fields in declaration order (an Option field ``None``
    or :class:`Some`)."""

    identity: str
    fields: tuple[tuple[str, Any], ...]


@dataclass(frozen=True)
class Variant:
    """An enum value: the constructor, and its payload (``None`` for none, a
    value, or named fields as a tuple of pairs when ``fields`` is true)."""

    identity: str
    constructor: str
    payload: Any = None
    fields: bool = False
