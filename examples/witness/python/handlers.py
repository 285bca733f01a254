"""``python3 handlers.py --instance NAME [--program FILE]``: the witness
program's handlers as a Flow Tool process written in Python with
limen-toolkit, for ``hale serve`` to run as a receiver instance's handler
(``serve.toml``); what ``witness-tool`` (examples/witness/src/main.rs) is
in Rust.

It serves the Tools of the instance's locus as ``hale api tools`` lists
them (``listings/Orders.json``, ``listings/Ledger.json``), through the
modules ``flow toolkit python`` generated from those listings
(``orders_tools.py``, ``ledger_tools.py``): each call arrives as the
generated dataclasses and is answered by the witness's behaviour
(``witness.py``, what limen-witness does for ``hale demo``), so a served
program behaves as the demo does: the same state, the same violations,
the same errors.

One process is one instance: ``orders``, ``partner_orders`` or
``ledger``, its state built from the program's param literal
(``partner_orders`` starts at order 9001). The program is the project's
own copy of the witness's declarations (conformance/programs/desk.hl, the
one witness-tool builds in) unless ``--program`` names another.

A violation is the declared error of a ``fallible(ClosureViolation)`` row:
a ``ClosureViolation`` naming the locus and its closure. Each fill is
published on ``Fills`` through the server's control socket when the
server gave one (``hale serve --control``: ``HALE_CONTROL``).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import ledger_tools
import orders_tools
from limen_toolkit.publish import CONTROL_VAR, publish
from limen_toolkit.serve import Context, Failed
from witness import Fill, Ledger, Orders, Program, UnknownOrder, Violated

DESK = Path(__file__).resolve().parent / "../../../conformance/programs/desk.hl"
"""The project's own copy of the witness's declarations."""


def publish_fill(fill: Fill) -> None:
    """``Fills <- Fill { … }``: one ``publish`` line on the control socket.
    A refusal is the server's business to log, not the order's: the order
    stands, as it does in Rust (witness-tool)."""
    try:
        publish("Fills", fill.to_json())
    except (OSError, ValueError) as e:
        print(f"handlers.py: publish: {e}", file=sys.stderr)


class OrdersTools:
    """An ``Orders`` instance's Tools (``orders_tools.Tools``)."""

    def __init__(self, state: Orders, closure: str) -> None:
        self.state = state
        self.violation = orders_tools.ClosureViolation(locus="Orders", closure=closure, diff=0)

    async def place(self, cx: Context, o: orders_tools.PlaceOrder) -> orders_tools.OrderReceipt:
        # The publish inside is a blocking round trip on a local socket:
        # the receiver is serial (hale serve sends it one call at a time),
        # so nothing else waits on this loop meanwhile.
        try:
            order, notional = self.state.place(o.qty, o.limit)
        except Violated:
            raise Failed(self.violation) from None
        return orders_tools.OrderReceipt(order=order, notional=notional)

    async def cancel(
        self, cx: Context, c: orders_tools.CancelOrder, ctx: orders_tools.Context
    ) -> orders_tools.Cancelled:
        try:
            order = self.state.cancel(c.order)
        except UnknownOrder as e:
            raise Failed(orders_tools.OrderError(code=e.code, reason=e.reason)) from None
        return orders_tools.Cancelled(order=order, was_open=True)


class LedgerTools:
    """A ``Ledger`` instance's Tools (``ledger_tools.Tools``)."""

    def __init__(self, state: Ledger, closure: str) -> None:
        self.state = state
        self.violation = ledger_tools.ClosureViolation(locus="Ledger", closure=closure, diff=0)

    async def rebalance(self, cx: Context, r: ledger_tools.Rebalance) -> ledger_tools.Rebalanced:
        try:
            moved = self.state.rebalance(r.book)
        except Violated:
            raise Failed(self.violation) from None
        return ledger_tools.Rebalanced(moved=moved)


def main() -> None:
    """Reads the arguments and the program, and serves the instance."""
    parser = argparse.ArgumentParser(
        prog="handlers.py", description="The witness's handlers as a Flow Tool process."
    )
    parser.add_argument("--instance", required=True, help="orders, partner_orders or ledger")
    parser.add_argument("--program", default=str(DESK), help="the Hale program (its params)")
    args = parser.parse_args()
    try:
        program = Program(Path(args.program).read_text())
    except OSError as e:
        print(f"handlers.py: {args.program}: {e}", file=sys.stderr)
        sys.exit(5)
    found = program.instance(args.instance)
    if found is None:
        print(f"handlers.py: the witness has no receiver instance `{args.instance}`", file=sys.stderr)
        sys.exit(5)
    locus, _ = found
    closure = program.closure(locus)
    if locus == "Orders":
        orders = Orders(next=program.int_param(args.instance, "next"))
        if os.environ.get(CONTROL_VAR) is not None:
            orders.sinks.append(publish_fill)
        orders_tools.serve(OrdersTools(orders, closure))
    elif locus == "Ledger":
        ledger = Ledger(moved=program.int_param(args.instance, "moved"))
        ledger_tools.serve(LedgerTools(ledger, closure))
    else:
        print(f"handlers.py: `{args.instance}` is a {locus}, which has no handlers here", file=sys.stderr)
        sys.exit(5)


if __name__ == "__main__":
    main()
