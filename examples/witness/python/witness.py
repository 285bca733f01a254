"""The witness program's receivers, in Python: what limen-witness
(witness/src/lib.rs) does for ``hale demo``, written again for handlers.py.

``Orders`` numbers orders from its ``next`` (41 unless the instance's
literal says otherwise: ``partner_orders`` starts at 9001), violates its
position limit above a quantity of 10000 (and where the notional does not
fit 64 bits, as the Rust's ``checked_mul``), publishes each order's fill,
and fails ``unknown_order`` on a cancel outside the placed range;
``Ledger.rebalance`` moves 1500 cent and violates on an empty book.

The state of an instance starts from the program's param literal, read
from the program's text by :class:`Program`: only the two forms the
witness writes (``NAME: Locus = Locus { field: 9001 };`` in the main
locus's params, ``field: Int = 41;`` in a locus's), which is all the Rust
reads of it too (``int_param``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Callable, Optional

I64_MIN, I64_MAX = -(2**63), 2**63 - 1


def i64(n: int) -> int:
    """An Int as the Rust handler reads it (``as_i64().unwrap_or(0)``): one
    that does not fit 64 bits is 0."""
    return n if I64_MIN <= n <= I64_MAX else 0


class Violated(Exception):
    """The body's ``violate``: the locus's closure is broken; the caller
    answers it as the row's declared ``ClosureViolation``."""


@dataclass
class UnknownOrder(Exception):
    """``fail OrderError { code: "unknown_order", … }``."""

    order: int

    @property
    def code(self) -> str:
        return "unknown_order"

    @property
    def reason(self) -> str:
        return f"no order {self.order}"


# ---- the program's literals ------------------------------------------------


def _strip_comments(text: str) -> str:
    """The text without its ``//`` comments (none of the witness's strings
    holds ``//``)."""
    return re.sub(r"//[^\n]*", "", text)


def _block(text: str, header: str) -> Optional[str]:
    """The body of the first block whose header matches ``header`` (a
    regular expression ending before its ``{``), braces balanced."""
    m = re.search(header + r"\s*\{", text)
    if m is None:
        return None
    depth, start = 1, m.end()
    for i in range(start, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return text[start:i]
    return None


class Program:
    """What the handlers read of a Hale program's text: an instance's
    locus and literal, a locus's param defaults and its closure."""

    def __init__(self, text: str) -> None:
        self.text = _strip_comments(text)

    def _params(self, locus_header: str) -> str:
        body = _block(self.text, locus_header) or ""
        return _block(body, r"\bparams") or ""

    def instance(self, name: str) -> Optional[tuple[str, dict[str, int]]]:
        """The locus the main locus's param ``name`` holds, and the integer
        fields of its literal (``Orders { next: 9001 }``)."""
        params = self._params(r"\bmain\s+locus\s+\w+")
        m = re.search(
            rf"(?:^|[;{{\s]){re.escape(name)}\s*:\s*(\w+)\s*=\s*(\w+)\s*\{{([^}}]*)\}}",
            params,
        )
        if m is None:
            return None
        fields = {
            f.group(1): int(f.group(2).replace("_", ""))
            for f in re.finditer(r"(\w+)\s*:\s*(-?[0-9][0-9_]*)\b", m.group(3))
        }
        return m.group(1), fields

    def default(self, locus: str, name: str) -> Optional[int]:
        """The default of the locus's param ``name`` (``next: Int = 41;``)."""
        params = self._params(rf"\blocus\s+{re.escape(locus)}\b")
        m = re.search(rf"\b{re.escape(name)}\s*:\s*\w+\s*=\s*(-?[0-9][0-9_]*)\s*;", params)
        return int(m.group(1).replace("_", "")) if m else None

    def closure(self, locus: str) -> str:
        """The name of the locus's first closure, which its violations
        name."""
        body = _block(self.text, rf"\blocus\s+{re.escape(locus)}\b") or ""
        m = re.search(r"\bclosure\s+(\w+)", body)
        return m.group(1) if m else ""

    def int_param(self, instance: str, name: str) -> int:
        """The instance's Int param ``name``: its literal's field, else the
        locus's default, else 0 (the Rust's ``int_param``)."""
        found = self.instance(instance)
        if found is None:
            return 0
        locus, fields = found
        if name in fields:
            return fields[name]
        d = self.default(locus, name)
        return 0 if d is None else d


# ---- the receivers ---------------------------------------------------------

FILLS_KEPT = 64
"""How many of its latest fills an Orders instance keeps, as the Rust's
``FILLS_KEPT`` (the ``Fills`` binding's ``bound: 64``)."""


@dataclass
class Fill:
    """A fill, as ``Orders.place`` publishes it."""

    order: int
    qty: int
    price: int

    def to_json(self) -> str:
        """By the ``Fills`` topic's JSON codec (the Rust's ``Fill::to_json``)."""
        return json.dumps(
            {"order": self.order, "qty": self.qty, "price": self.price},
            separators=(",", ":"),
        )


@dataclass
class Orders:
    """One ``Orders`` instance."""

    next: int = 41
    open: int = 0
    calls: int = 0
    fills: list[Fill] = field(default_factory=list)
    published: int = 0
    sinks: list[Callable[[Fill], None]] = field(default_factory=list)

    def place(self, qty: int, limit: int) -> tuple[int, int]:
        """``Orders::place``: the order's id and its notional."""
        self.calls += 1
        qty, limit = i64(qty), i64(limit)
        if qty > 10_000:
            raise Violated()
        notional = limit * qty
        if not I64_MIN <= notional <= I64_MAX:
            raise Violated()
        order = self.next
        self.next += 1
        self.open += 1
        fill = Fill(order=order, qty=qty, price=limit)
        for sink in self.sinks:
            sink(fill)
        if len(self.fills) == FILLS_KEPT:
            self.fills.pop(0)
        self.fills.append(fill)
        self.published += 1
        return order, notional

    def cancel(self, order: int) -> int:
        """``Orders::cancel``: the order cancelled."""
        self.calls += 1
        n = i64(order)
        if n < 41 or n >= self.next:
            raise UnknownOrder(n)
        self.open -= 1
        return n


@dataclass
class Ledger:
    """One ``Ledger`` instance."""

    moved: int = 0
    calls: int = 0

    def rebalance(self, book: str) -> int:
        """``Ledger::rebalance``: the cent moved."""
        self.calls += 1
        if not book:
            raise Violated()
        self.moved += 1500
        return 1500
