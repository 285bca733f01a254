"""A consumer matching a handler error of `Orders::place`, whose row
declares none: `mypy --strict --warn-unreachable` refuses it
(clients/tests/python.rs asserts the error is on the marked line)."""

from __future__ import annotations

import Public


def place(endpoint: str) -> str:
    outcome = Public.orders_place(
        endpoint, "t-alice", Public.PlaceOrder(symbol="ACME", qty=10, limit=12500)
    )
    match outcome:
        case Public.Result(value=receipt):
            return str(receipt.order)
        case Public.HandlerError(error=error):  # no handler error here
            return str(error)
        case _:
            return "other"
