"""A consumer of the witness's generated clients that switches exhaustively
on every member's outcome and every stream item: `mypy --strict
--warn-unreachable` accepts it (clients/tests/python.rs)."""

from __future__ import annotations

from typing import assert_never

import Admin
import Public


def place(endpoint: str) -> str:
    outcome = Public.orders_place(
        endpoint, "t-alice", Public.PlaceOrder(symbol="ACME", qty=10, limit=12500)
    )
    match outcome:
        case Public.Result(value=receipt):
            return f"order {receipt.order} for {receipt.notional} cent"
        case Public.Refusal(kind=kind, reason=reason):
            return f"refused {kind}: {reason}"
        case Public.ServerError():
            return "the server failed"
        case _:
            assert_never(outcome)


def cancel(endpoint: str) -> str:
    outcome = Public.orders_cancel(endpoint, "t-alice", Public.CancelOrder(order=41))
    match outcome:
        case Public.Result(value=cancelled):
            return f"cancelled {cancelled.order}, open: {cancelled.was_open}"
        case Public.HandlerError(error=error):
            return f"{error.code}: {error.reason}"
        case Public.Refusal(kind="unauthorized", requires=roles):
            return "needs " + ", ".join(roles)
        case Public.Refusal(kind=kind, served=served):
            return f"refused {kind} (served {served})"
        case Public.ServerError():
            return "the server failed"
        case _:
            assert_never(outcome)


def rebalance(path: str) -> int:
    try:
        outcome = Admin.ledger_rebalance(f"unix:{path}", None, Admin.Rebalance(book="main"), id=1)
    except Admin.TransportError:
        return -1
    match outcome:
        case Admin.Result(value=v):
            return v.moved
        case Admin.Refusal() | Admin.ServerError():
            return 0
        case _:
            assert_never(outcome)


def watch(endpoint: str) -> list[int]:
    seqs: list[int] = []
    with Public.subscribe_fills(endpoint, "t-dave") as sub:
        for item in sub:
            match item:
                case Public.Event(seq=seq, payload=fill):
                    seqs.append(seq + fill.qty * 0)
                case Public.Expired() | Public.Revoked() | Public.Closed() | Public.Lost():
                    break
                case Public.Refusal(kind=kind):
                    raise RuntimeError(kind)
                case _:
                    assert_never(item)
    return seqs
