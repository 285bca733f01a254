"""The witness served from Python through limen's C ABI, on asyncio.

    python3 -m limen.witness_server --public ADDR --admin-socket PATH
                                    [--program FILE] [--operator NAME]

Serves the witness program's exposure ``public`` over HTTP/1.1 at ADDR
(host:port, port 0 for any) and ``admin`` over Unix lines at PATH, each
connection a ``Front`` and each exposure an ``Exposure``, the handlers in
Python with the behaviour ``hale demo`` has (drivers/src/demo/witness.rs):
Orders numbers orders from 41, violates above a quantity of 10000 and fails
``unknown_order`` outside the placed range; Ledger::rebalance moves 1500
cent and violates on an empty book. Tokens name alice, bob, carol and dave
by ``t-<name>``; alice is public's trader; the user running the server is
admin's operator (or ``--operator``). Prints ``<identity> <endpoint>`` per
exposure and serves until SIGINT or SIGTERM.
"""

import argparse
import asyncio
import json
import os
import signal
import socket
import struct
import sys
import time

import limen

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))


class Witness:
    """The Orders and Ledger instances the exposures share."""

    def __init__(self):
        self.next = 41
        self.open = 0
        self.moved = 0

    def call(self, member, payload):
        p = json.loads(payload) if payload else {}
        p = p if isinstance(p, dict) else {}

        def integer(key):
            v = p.get(key)
            return v if isinstance(v, int) and not isinstance(v, bool) and -(2**63) <= v < 2**63 else 0

        if member == "Orders::place":
            qty, limit = integer("qty"), integer("limit")
            notional = qty * limit
            if qty > 10000 or not -(2**63) <= notional < 2**63:
                print("witness_server: self.orders violated a closure; on_failure ran", file=sys.stderr)
                return limen.VIOLATED, b""
            order = self.next
            self.next += 1
            self.open += 1
            return limen.RETURNED, json.dumps({"order": order, "notional": notional}, separators=(",", ":")).encode()
        if member == "Orders::cancel":
            n = integer("order")
            if n < 41 or n >= self.next:
                body = {"code": "unknown_order", "reason": f"no order {n}"}
                return limen.FAILED, json.dumps(body, separators=(",", ":")).encode()
            self.open -= 1
            return limen.RETURNED, json.dumps({"order": n, "was_open": True}, separators=(",", ":")).encode()
        if member == "Ledger::rebalance":
            book = p.get("book")
            if not isinstance(book, str) or not book:
                print("witness_server: self.ledger violated a closure; on_failure ran", file=sys.stderr)
                return limen.VIOLATED, b""
            self.moved += 1500
            return limen.RETURNED, b'{"moved":1500}'
        return limen.PROCESS_EXITS, b""


def now():
    return time.monotonic_ns()


class Server:
    """One event loop's owner of the exposures and their connections."""

    def __init__(self, loop, witness):
        self.loop = loop
        self.witness = witness
        self.conns = {}
        self.next_correlation = 1
        self.dirty = set()
        self.timers = {}

    def pump(self, exposure):
        while True:
            ev = exposure.poll_event()
            kind = ev["kind"]
            if kind == "none":
                return
            if kind == "deliver":
                conn = self.conns.get(ev["correlation"])
                if conn is not None:
                    conn.front.deliver(exposure, now())
                    self.dirty.add(conn)
            elif kind == "dispatch":
                how, body = self.witness.call(ev["member"], ev["payload"])
                exposure.complete(ev["request_id"], how, body)
            elif kind == "ask":
                exposure.receiver_born(ev["receiver"], 1)
            elif kind == "close":
                conn = self.conns.get(ev["correlation"])
                if conn is not None:
                    conn.front.abort()
                    self.dirty.add(conn)

    def settle(self):
        while self.dirty:
            conn = self.dirty.pop()
            conn.service()

    def protocol(self, exposure, unix):
        server = self

        class Conn(asyncio.Protocol):
            def connection_made(self, transport):
                self.transport = transport
                self.correlation = server.next_correlation
                server.next_correlation += 1
                self.exposure = exposure
                self.timer = None
                if unix:
                    sock = transport.get_extra_info("socket")
                    try:
                        raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
                        pid, uid, gid = struct.unpack("3i", raw)
                    except OSError:
                        pid = uid = gid = -1
                    self.front = limen.Front.unix(now(), uid, gid, pid, self.correlation)
                else:
                    self.front = limen.Front.http(now(), self.correlation)
                server.conns[self.correlation] = self
                server.dirty.add(self)
                server.settle()

            def data_received(self, data):
                if self.front._h is None:
                    return
                self.front.handle_data(now(), data)
                server.dirty.add(self)
                server.settle()

            def eof_received(self):
                if self.front._h is not None:
                    self.front.handle_eof(now())
                    server.dirty.add(self)
                    server.settle()
                return True

            def connection_lost(self, exc):
                if self.front._h is not None:
                    self.front.handle_eof(now())
                    server.dirty.add(self)
                    server.settle()
                    self.finish()

            def on_timer(self):
                self.timer = None
                if self.front._h is not None:
                    self.front.handle_timeout(now())
                    server.dirty.add(self)
                    server.settle()

            def service(self):
                front = self.front
                if front._h is None:
                    return
                while True:
                    k = front.poll_event()
                    if k == limen.FRONT_NONE:
                        break
                    if k == limen.FRONT_REQUEST:
                        front.submit(self.exposure, now(), time.time_ns())
                        server.pump(self.exposure)
                    elif k == limen.FRONT_LOST:
                        self.exposure.connection_lost(self.correlation)
                        server.pump(self.exposure)
                    elif k == limen.FRONT_CLOSED:
                        out = front.pending_output()
                        if out:
                            self.transport.write(out)
                        self.transport.close()
                        self.finish()
                        return
                out = front.pending_output()
                if out:
                    # asyncio takes all of it: it is consumed as written.
                    self.transport.write(out)
                    front.consume_output(now(), len(out))
                    server.dirty.add(self)
                    return
                if front.is_closed:
                    self.transport.close()
                    self.finish()
                    return
                if self.timer is not None:
                    self.timer.cancel()
                    self.timer = None
                deadline = front.poll_timeout()
                if deadline is not None:
                    delay = max(0.0, (deadline - now()) / 1e9)
                    self.timer = server.loop.call_later(delay, self.on_timer)

            def finish(self):
                if self.timer is not None:
                    self.timer.cancel()
                    self.timer = None
                server.conns.pop(self.correlation, None)
                server.dirty.discard(self)
                self.front.close()

        return Conn


async def main(argv=None):
    ap = argparse.ArgumentParser(prog="limen.witness_server")
    ap.add_argument("--public", required=True)
    ap.add_argument("--admin-socket", required=True)
    ap.add_argument("--program", default=os.path.join(ROOT, "conformance", "programs", "desk.hl"))
    ap.add_argument("--operator", default=f"uid:{os.getuid()}")
    args = ap.parse_args(argv)
    program = open(args.program, "rb").read()
    loop = asyncio.get_running_loop()
    server = Server(loop, Witness())
    host, port = args.public.rsplit(":", 1)
    tokens = {f"t-{n}": n for n in ("alice", "bob", "carol", "dave")}

    public_box = {}
    http = await loop.create_server(lambda: public_box["make"](), host, int(port))
    bound = "%s:%d" % http.sockets[0].getsockname()[:2]
    public = limen.Exposure(program, "public", tokens, [("alice", "trader")], "no such token", bound)
    public_box["make"] = server.protocol(public, unix=False)

    if os.path.exists(args.admin_socket):
        os.unlink(args.admin_socket)
    admin = limen.Exposure(program, "admin", {}, [(args.operator, "operator")], None, args.admin_socket)
    unix = await loop.create_unix_server(server.protocol(admin, unix=True), args.admin_socket)

    print(f"limen.witness_server {limen.version()}: serving {args.program} through the C ABI")
    print(f"  {public.identity} http://{bound}")
    print(f"  {admin.identity} unix:{args.admin_socket}", flush=True)

    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    http.close()
    unix.close()
    for conn in list(server.conns.values()):
        conn.transport.abort()
        conn.finish()
    public.close()
    admin.close()
    try:
        os.unlink(args.admin_socket)
    except OSError:
        pass


if __name__ == "__main__":
    asyncio.run(main())
