"""A WebSocket client nobody here wrote (Python `websockets`, its sync
client) for scripts/c-abi-test, against limen-witness-server --hub.

usage: ws_fills.py HUB_ADDR PUBLIC_ADDR PID

Subscribes to Fills as dave (an operator) by the Authorization header,
is refused as nobody and as bob (no operator), places an order over HTTP
as alice and reads the fill it publishes, then sends SIGINT to PID (the
server) and reads until the hub closes the connection. Asserts nothing:
prints what it saw as one JSON object, which the script holds to
§ Streams.
"""

import json
import os
import signal
import sys
import urllib.request

from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

hub, public, pid = sys.argv[1], sys.argv[2], int(sys.argv[3])
TIMEOUT = 20


def ws(token=None):
    headers = {"Authorization": f"Bearer {token}"} if token else None
    return connect(f"ws://{hub}/", additional_headers=headers, open_timeout=TIMEOUT)


def subscribe(conn, topic="Fills"):
    conn.send(json.dumps({"type": "subscribe", "topic": topic}))
    return json.loads(conn.recv(timeout=TIMEOUT))


def place(qty, limit):
    body = json.dumps({"symbol": "ACME", "qty": qty, "limit": limit}).encode()
    request = urllib.request.Request(
        f"http://{public}/call/Orders::place",
        data=body,
        headers={"Authorization": "Bearer t-alice", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=TIMEOUT) as r:
        return json.loads(r.read())


out = {}
with ws() as anonymous, ws("t-bob") as bob:
    out["refusals"] = [subscribe(anonymous), subscribe(bob)]
with ws("t-dave") as dave:
    out["subscribed"] = subscribe(dave)
    out["receipt"] = place(10, 12500)
    out["event"] = json.loads(dave.recv(timeout=TIMEOUT))
    os.kill(pid, signal.SIGINT)
    closing = []
    try:
        while True:
            closing.append(json.loads(dave.recv(timeout=TIMEOUT)))
    except ConnectionClosed as e:
        out["close_code"] = e.rcvd.code if e.rcvd else None
    out["closing"] = closing
print(json.dumps(out))
