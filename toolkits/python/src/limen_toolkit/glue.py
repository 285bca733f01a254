"""The few run-time helpers the module ``flow toolkit python`` generates
calls, so each generated module holds only what is its own.

The generated conversions turn the generic values of
:mod:`limen_toolkit.values` (what :mod:`limen_toolkit.codec` decodes and
encodes) into the generated dataclasses and back. A generic value handed
to them is one the codec made at the declared type, so a mismatch here is
a programming error, raised as :class:`TypeError` naming what was expected.
"""

from __future__ import annotations

from typing import Any, NoReturn

from .values import RecordValue, Variant


def record_fields(value: Any, identity: str) -> dict[str, Any]:
    """The fields of the generic record ``value`` of the declaration
    ``identity``, by Flow name."""
    if not isinstance(value, RecordValue) or value.identity != identity:
        raise TypeError(f"expected a record value of {identity}, found {value!r}")
    return dict(value.fields)


def variant(value: Any, identity: str) -> tuple[str, Any]:
    """The constructor and payload of the generic enum value ``value`` of
    the declaration ``identity``."""
    if not isinstance(value, Variant) or value.identity != identity:
        raise TypeError(f"expected an enum value of {identity}, found {value!r}")
    return value.constructor, value.payload


def fields(payload: Any) -> dict[str, Any]:
    """A constructor's named fields (pairs in declaration order), by Flow
    name."""
    return dict(payload)


def no_constructor(identity: str, constructor: str) -> NoReturn:
    """An enum value whose constructor the declaration does not have."""
    raise TypeError(f"{identity} has no constructor {constructor!r}")


def not_of(name: str, value: object) -> NoReturn:
    """A value handed to a generated ``…_to_value`` that is none of the
    type's classes."""
    raise TypeError(f"expected a value of {name}, found a Python {type(value).__name__}")


def uninhabited(name: str) -> NoReturn:
    """A value of a type with no values (an enum without constructors)."""
    raise TypeError(f"{name} has no values")
