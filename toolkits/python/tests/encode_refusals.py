"""The writing direction is strict too: a Python value that is not of the
declared type is refused with its path. Run by
toolkit/tests/python_toolkit.rs; exits non-zero on the first surprise."""

from decimal import Decimal
from typing import Any

from limen_toolkit.codec import Refused, encode
from limen_toolkit.types import (
    BOOL, DECIMAL, DURATION, INSTANT, INT, JSON, NEVER, TEXT, DictT, ListT, OptionT, Type,
)
from limen_toolkit.values import Duration, Instant, Some


def refused(value: Any, ty: Type, path: str) -> None:
    try:
        text = encode(value, ty, {})
    except Refused as e:
        assert str(e).startswith(path + ":"), (str(e), path)
        return
    raise AssertionError(f"{value!r} written as {text}")


def main() -> None:
    refused(1.5, DECIMAL, "$")  # a float is never a Decimal
    refused(1, DECIMAL, "$")
    refused(True, INT, "$")
    refused(1.0, INT, "$")
    refused(Decimal("NaN"), DECIMAL, "$")
    refused("\ud800", TEXT, "$")
    refused([1, "x"], ListT(INT), "$[1]")
    refused({"a": 1, "b": 1.5}, DictT(TEXT, INT), "$.b")
    refused(3, OptionT(INT), "$")
    refused(Some(1.5), OptionT(DECIMAL), "$.Some")
    refused(1.5, JSON, "$")
    refused(1, NEVER, "$")
    refused(1, BOOL, "$")
    refused(10 ** 5000, INT, "$")
    assert encode(2 ** 64 + 1, INT, {}) == "18446744073709551617"
    assert encode(Decimal("-0.00"), DECIMAL, {}) == "0"
    assert encode(Decimal("1.2345678901234567890123456789012345678901E+3"), DECIMAL, {}) == (
        "1234.5678901234567890123456789012345678901"
    )
    assert encode({"b": [1, Decimal("1.50")], "a": None}, JSON, {}) == '{"a":null,"b":[1,1.5]}'
    assert encode(Instant(-1), INSTANT, {}) == '"1969-12-31T23:59:59.999999999Z"'
    assert encode(Duration(-1_500_000_000), DURATION, {}) == '"PT-1.5S"'
    print("ok")


if __name__ == "__main__":
    main()
