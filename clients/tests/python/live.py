"""The generated Python clients against `hale demo`, one scenario a run.

Usage: live.py SCENARIO, with the plan as JSON on stdin: {"modules": DIR
holding Public.py, Admin.py (the golden clients) and changed.py (the Public client of a changed
program), "public": "http://...", "admin": "unix:...", "hub": "ws://...",
"control": PATH}. Prints one JSON report: {"checks": {NAME: [ok, what was
seen]}}; clients/tests/python.rs asserts every expected check is there and
ok. Every wait has a deadline; nothing sleeps to synchronise.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
from typing import Any, Callable

plan = json.load(sys.stdin)
sys.path.insert(0, plan["modules"])

import Admin as admin  # noqa: E402
import changed  # noqa: E402
import Public as public  # noqa: E402

DEADLINE = 10.0
checks: dict[str, list[Any]] = {}


def check(name: str, ok: bool, seen: object) -> None:
    checks[name] = [bool(ok), repr(seen)]


def control(line: str) -> str:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(DEADLINE)
        s.connect(plan["control"])
        s.sendall(line.encode() + b"\n")
        got = b""
        while not got.endswith(b"\n"):
            chunk = s.recv(4096)
            if not chunk:
                break
            got += chunk
    return got.decode()


def background(f: Callable[[], object]) -> tuple[threading.Thread, list[object]]:
    out: list[object] = []

    def run() -> None:
        try:
            out.append(f())
        except Exception as e:  # the outcome, whatever it is
            out.append(e)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, out


def until(what: str, f: Callable[[], object], ok: Callable[[object], bool]) -> object:
    """Calls f until ok(its answer), or the deadline: the last answer."""
    end = time.monotonic() + DEADLINE
    while True:
        got = f()
        if ok(got) or time.monotonic() > end:
            return got


PLACE = public.PlaceOrder(symbol="ACME", qty=10, limit=12500)
P = plan["public"]


def refused(kind: str) -> Callable[[object], bool]:
    return lambda o: isinstance(o, public.Refusal) and o.kind == kind


def calls() -> None:
    got = public.orders_place(P, "t-alice", PLACE)
    check(
        "result",
        isinstance(got, public.Result)
        and isinstance(got.value, public.OrderReceipt)
        and got.value.notional == 125000,
        got,
    )
    order = got.value.order if isinstance(got, public.Result) else 0
    got2 = public.orders_cancel(P, "t-alice", public.CancelOrder(order=order))
    check("result_cancel", got2 == public.Result(public.Cancelled(order=order, was_open=True)), got2)
    got = public.orders_cancel(P, "t-alice", public.CancelOrder(order=999999))
    check(
        "handler_error",
        got == public.HandlerError(public.OrderError(code="unknown_order", reason="no order 999999")),
        got,
    )
    got = public.orders_place(P, "t-nobody", PLACE)
    check("unauthenticated", refused("unauthenticated")(got) and not isinstance(got, public.Result), got)
    got = public.orders_place(P, None, PLACE)
    check("no_bearer", refused("unauthenticated")(got), got)
    got = public.orders_cancel(P, "t-bob", public.CancelOrder(order=41))
    check(
        "unauthorized",
        isinstance(got, public.Refusal) and got.kind == "unauthorized" and got.requires == ("trader",),
        got,
    )
    got = public.orders_place(P, "t-alice", public.PlaceOrder(symbol="ACME", qty=10001, limit=1))
    check("server_error", got == public.ServerError(), got)
    # A client made against a changed program: refused, naming the digest
    # the exposure serves.
    got = changed.orders_place(P, "t-alice", changed.PlaceOrder(symbol="ACME", qty=1, limit=1))
    check(
        "digest_mismatch",
        isinstance(got, changed.Refusal)
        and got.kind == "digest_mismatch"
        and got.served == public.DIGEST
        and changed.DIGEST != public.DIGEST,
        got,
    )
    # The Unix socket: the caller is the kernel's, the id echoed.
    got = admin.orders_cancel(plan["admin"], None, admin.CancelOrder(order=999999), id="c-1")
    check("unix_handler_error", isinstance(got, admin.HandlerError) and got.error.code == "unknown_order", got)
    got = admin.orders_cancel(plan["admin"], None, admin.CancelOrder(order=41), id={"n": [1]})
    check("unix_result", isinstance(got, admin.Result) and got.value.order == 41, got)
    got = admin.ledger_rebalance(plan["admin"], None, admin.Rebalance(book=""), id=3)
    check("unix_server_error", got == admin.ServerError(), got)
    got = admin.ledger_rebalance(plan["admin"], None, admin.Rebalance(book="main"))
    check("unix_result_scalar_id", got == admin.Result(admin.Rebalanced(moved=1500)), got)
    # unavailable: the receiver drains.
    check("drain", control("drain orders") == "ok\n", "drain")
    # The control socket answers once the drain is asked for; a call may
    # still find the receiver serving until it has.
    got = until("draining", lambda: public.orders_place(P, "t-alice", PLACE), refused("unavailable"))
    check("unavailable", refused("unavailable")(got), got)
    check("resume", control("resume orders") == "ok\n", "resume")
    got = until("served again", lambda: public.orders_place(P, "t-alice", PLACE), lambda o: isinstance(o, public.Result))
    check("served_again", isinstance(got, public.Result), got)
    # A dead port and a missing socket: the fifth outcome, raised.
    dead = socket.socket()
    dead.bind(("127.0.0.1", 0))
    port = dead.getsockname()[1]
    dead.close()
    try:
        got = public.orders_place(f"http://127.0.0.1:{port}", "t-alice", PLACE)
        check("dead_port", False, got)
    except public.TransportError as e:
        check("dead_port", True, e)
    try:
        got = admin.orders_cancel("unix:/nonexistent/limen.sock", None, admin.CancelOrder(order=41))
        check("dead_socket", False, got)
    except admin.TransportError as e:
        check("dead_socket", True, e)


def hub_calls() -> None:
    # The demo runs with --hub-desk: Public is served over the hub too, and
    # a call to a ws:// endpoint is a call frame under the hub's sources.
    hub = plan["hub"]
    got = public.orders_place(hub, "t-alice", PLACE, id="c-1")
    check("hub_result", isinstance(got, public.Result) and got.value.notional == 125000, got)
    got = public.orders_place(hub, "t-bob", PLACE, id=7)
    check("hub_result_numeric_id", isinstance(got, public.Result), got)
    got = public.orders_place(hub, None, PLACE)
    check("hub_unauthenticated", refused("unauthenticated")(got), got)
    got = public.orders_cancel(hub, "t-alice", public.CancelOrder(order=41))
    check(
        "hub_unauthorized",
        isinstance(got, public.Refusal) and got.kind == "unauthorized" and got.requires == ("trader",),
        got,
    )
    got = public.orders_place(hub, "t-alice", public.PlaceOrder(symbol="ACME", qty=10001, limit=1))
    check("hub_server_error", got == public.ServerError(), got)
    got = changed.orders_place(hub, "t-alice", changed.PlaceOrder(symbol="ACME", qty=1, limit=1))
    check(
        "hub_digest_mismatch",
        isinstance(got, changed.Refusal) and got.kind == "digest_mismatch" and got.served == public.DIGEST,
        got,
    )


def one_held_one_full() -> tuple[threading.Thread, list[object]] | None:
    """Two calls at once against --bound 1 and a gated Orders: one is
    accepted and held at the gate, the other refused full. The held one,
    once the other has answered full."""
    calls = [background(lambda: public.orders_place(P, "t-alice", PLACE, timeout=DEADLINE * 3)) for _ in range(2)]
    end = time.monotonic() + DEADLINE
    while time.monotonic() < end:
        for i, (t, out) in enumerate(calls):
            t.join(0.05)
            if out:
                check("full", refused("full")(out[0]), out[0])
                return calls[1 - i]
    check("full", False, "neither call answered")
    return None


def full() -> None:
    check("gate", control("gate orders") == "ok\n", "gate")
    held = one_held_one_full()
    check("open", control("open orders") == "ok\n", "open")
    if held is not None:
        held[0].join(DEADLINE * 3)
        check("held_answered", bool(held[1]) and isinstance(held[1][0], public.Result), held[1])


def shutting_down() -> None:
    # One call executes (held at the gate); stop() then refuses what
    # arrives while it waits, and the executing one is answered.
    check("gate", control("gate orders") == "ok\n", "gate")
    held = one_held_one_full()
    check("stop", control("stop") == "ok\n", "stop")
    # The control socket answers `stop` before it acts: until it has, a
    # call still finds the bound held (full).
    got = until("stopping", lambda: public.orders_place(P, "t-alice", PLACE), refused("shutting_down"))
    check("shutting_down", refused("shutting_down")(got), got)
    control("open orders")
    if held is not None:
        held[0].join(DEADLINE * 3)
        check("executing_answered", bool(held[1]) and isinstance(held[1][0], public.Result), held[1])


def stream() -> None:
    hub = plan["hub"]
    sub = public.subscribe_fills(hub, "t-dave")
    check("admitted", sub.admitted and sub.end is None, sub.end)
    placed = [public.orders_place(P, "t-alice", PLACE) for _ in range(2)]
    orders = [p.value.order for p in placed if isinstance(p, public.Result)]
    events = [sub.next_for(DEADLINE) for _ in range(2)]
    want = [public.Event("Fills", i + 1, public.Fill(order=o, qty=10, price=12500)) for i, o in enumerate(orders)]
    check("events", events == want and len(want) == 2, events)
    check("quiet", sub.next_for(0.2) is None, "nothing more")
    # Not admitted: bob holds no operator; nobody is named by no token.
    bob = public.subscribe_fills(hub, "t-bob")
    first = next(iter(bob))
    check(
        "refusal_unauthorized",
        isinstance(first, public.Refusal) and first.kind == "unauthorized" and first.requires == ("operator",) and not bob.admitted,
        first,
    )
    check("refusal_ends", list(bob) == [], "no more")
    nobody = public.subscribe_fills(hub, None)
    first = next(iter(nobody))
    check("refusal_unauthenticated", isinstance(first, public.Refusal) and first.kind == "unauthenticated", first)
    # Expiry: a credential that expires in 1.5 s ends the subscription at
    # that instant, with no event to wake it.
    check("expire", control("expire t-dave 1500") == "ok\n", "expire")
    expiring = public.subscribe_fills(hub, "t-dave")
    got = expiring.next_for(DEADLINE)
    check("expired", isinstance(got, public.Expired), got)
    check("expire_reset", control("expire t-dave 0") == "ok\n", "expire 0")
    # Revocation: the grant taken away ends the first subscription.
    check("revoke", control("revoke dave operator") == "ok\n", "revoke")
    got = sub.next_for(DEADLINE)
    check("revoked", isinstance(got, public.Revoked), got)
    check("revoked_is_the_end", sub.next_for(0) == got and list(sub) == [], sub.end)
    check("grant", control("grant dave operator") == "ok\n", "grant")
    # Closed at stop.
    last = public.subscribe_fills(hub, "t-dave")
    check("stop", control("stop") == "ok\n", "stop")
    items = [last.next_for(DEADLINE)]
    check("closed", items == [public.Closed("shutting_down")] and list(last) == [], items)


def lost() -> None:
    # The test SIGKILLs the demo once this prints "subscribed".
    sub = public.subscribe_fills(plan["hub"], "t-dave")
    print("subscribed", flush=True)
    got = sub.next_for(DEADLINE)
    check("lost", isinstance(got, public.Lost), got)
    try:
        public.subscribe_fills(plan["hub"], "t-dave", timeout=2)
        check("dead_hub", False, "subscribed")
    except public.TransportError as e:
        check("dead_hub", True, e)


def gap() -> None:
    # The demo runs with --hub-desk and a large --bound: orders placed by
    # call frames on a second hub connection (fast, pipelined a thousand at
    # a time) publish a fill each to a subscriber that reads nothing until
    # they are all placed, and whose receive buffer is small; once the
    # socket buffers hold what they can, the hub sheds (drop_old), and the
    # subscriber sees the gap in seq. The buffers hold some 25,000 fills
    # here, so 60,000 leave a gap with room to spare.
    from websockets.sync.client import connect

    def small_buffer(address: tuple[str, int], timeout: float | None = None, *rest: Any) -> socket.socket:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)
        s.settimeout(timeout)
        s.connect(address)
        return s

    real = socket.create_connection
    socket.create_connection = small_buffer  # type: ignore[assignment]
    try:
        sub = public.subscribe_fills(plan["hub"], "t-dave")
    finally:
        socket.create_connection = real
    total, placed = 60000, 0
    call = json.dumps({"type": "call", "call": "Orders::place", "payload": PLACE.to_json()})
    with connect(plan["hub"], additional_headers={"Authorization": "Bearer t-alice"}) as caller:
        for _ in range(total // 1000):
            for _ in range(1000):
                caller.send(call)
            for _ in range(1000):
                placed += json.loads(caller.recv(timeout=DEADLINE)).get("ok") is True
    check("placed", placed == total, placed)
    seqs = []
    while True:
        item = sub.next_for(2.0)
        if not isinstance(item, public.Event):
            break
        seqs.append(item.seq)
    sub.close()
    gaps = [(a, b) for a, b in zip(seqs, seqs[1:]) if b != a + 1]
    check(
        "gap",
        seqs[:1] == [1] and seqs[-1:] == [total] and all(a < b for a, b in gaps) and len(gaps) >= 1,
        {"received": len(seqs), "gaps": gaps[:4]},
    )


{"calls": calls, "hub_calls": hub_calls, "full": full, "shutting_down": shutting_down, "stream": stream, "gap": gap, "lost": lost}[sys.argv[1]]()
print(json.dumps({"checks": checks}), flush=True)
