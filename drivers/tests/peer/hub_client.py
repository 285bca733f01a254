"""A WebSocket client nobody here wrote (Python `websockets`, its sync
client) against `hale demo --hub`: it reads the hub's description for
three callers, subscribes by header and by query, places an order over
HTTP and reads the fill, is refused each way a subscribe can be, and
reads `closed` when the demo stops. It asserts nothing: it prints what it
saw as one JSON object, which drivers/tests/hub_live.rs holds to § Streams.
The scenario `invalidate` instead has the demo's control socket give
dave's credential an expiry and revoke dave's grant, and reads the
`unauthorized` frames that follow. The scenario `calls` (against
`hale demo --hub … --hub-desk`) sends `call` frames on a subscriber's
connection and reads the `reply` frames and the events among them.

usage: hub_client.py tour|invalidate|calls HUB_ADDR PUBLIC_ADDR CONTROL_SOCKET
"""

import contextlib
import json
import socket
import sys
import time
import urllib.error
import urllib.request

from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

scenario, hub, public, control = sys.argv[1:5]
TIMEOUT = 10


def get_description(token):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    request = urllib.request.Request(f"http://{hub}/.description", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as r:
            return [r.status, json.loads(r.read())]
    except urllib.error.HTTPError as e:
        return [e.code, json.loads(e.read())]


def place(qty, limit):
    body = json.dumps({"symbol": "ACME", "qty": qty, "limit": limit}).encode()
    request = urllib.request.Request(
        f"http://{public}/call/Orders::place",
        data=body,
        headers={"Authorization": "Bearer t-alice", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=TIMEOUT) as r:
        return json.loads(r.read())


connections = contextlib.ExitStack()


def ws(token=None, query=None):
    headers = {"Authorization": f"Bearer {token}"} if token else None
    path = f"/?access_token={query}" if query else "/"
    uri = f"ws://{hub}{path}"
    return connections.enter_context(
        connect(uri, additional_headers=headers, open_timeout=TIMEOUT)
    )


def ask(conn, frame):
    conn.send(frame if isinstance(frame, str) else json.dumps(frame))
    return json.loads(conn.recv(timeout=TIMEOUT))


def subscribe(conn, topic="Fills"):
    return ask(conn, {"type": "subscribe", "topic": topic})


def control_line(line):
    with socket.socket(socket.AF_UNIX) as c:
        c.connect(control)
        c.sendall(line.encode() + b"\n")
        return c.recv(256).decode()


def tour():
    out = {
        "descriptions": {
            "dave": get_description("t-dave"),
            "bob": get_description("t-bob"),
            "nobody": get_description(None),
        }
    }

    dave = ws(token="t-dave")
    by_query = ws(query="t-dave")
    out["subscribed"] = [subscribe(dave), subscribe(by_query)]

    receipt = place(10, 12500)
    out["first"] = {
        "receipt": receipt,
        "events": [json.loads(dave.recv(timeout=TIMEOUT)), json.loads(by_query.recv(timeout=TIMEOUT))],
    }

    out["again"] = subscribe(dave)
    receipt = place(3, 9900)
    out["second"] = {"receipt": receipt, "events": [json.loads(dave.recv(timeout=TIMEOUT))]}
    by_query.close()

    anonymous = ws()
    bob = ws(token="t-bob")
    out["refusals"] = {
        "unauthenticated": subscribe(anonymous),
        "unauthorized": subscribe(bob),
        "unknown_topic": subscribe(dave, "Quotes"),
        "no_topic": ask(dave, {"type": "subscribe"}),
        "not_a_frame": ask(dave, "not json"),
    }

    # Stop the demo: the hub writes `closed`, then its close frame.
    with socket.socket(socket.AF_UNIX) as c:
        c.connect(control)
        c.sendall(b"stop\n")
        c.recv(16)
    closing = []
    try:
        while True:
            closing.append(json.loads(dave.recv(timeout=TIMEOUT)))
    except ConnectionClosed as e:
        out["close_code"] = e.rcvd.code if e.rcvd else None
    out["closing"] = closing

    return out


def invalidate():
    out = {}
    # An expiry 1 s away: the hub ends the subscription at the instant,
    # with no event to wake it. The clock starts before the expiry is
    # set, so the instant is at least 1 s after it however long the
    # connection below takes on a loaded machine.
    start = time.monotonic()
    out["controls"] = [control_line("expire t-dave 1000")]
    expiring = ws(token="t-dave")
    out["expiring"] = [subscribe(expiring), json.loads(expiring.recv(timeout=TIMEOUT))]
    out["expired_after_s"] = time.monotonic() - start
    out["spent"] = subscribe(expiring)
    out["controls"].append(control_line("expire t-dave 0"))
    dave = ws(token="t-dave")
    out["subscribed"] = subscribe(dave)
    receipt = place(10, 12500)
    out["before"] = {"receipt": receipt, "event": json.loads(dave.recv(timeout=TIMEOUT))}
    # A revision: dave loses operator, and the hub is told.
    out["controls"].append(control_line("revoke dave operator"))
    out["revoked"] = json.loads(dave.recv(timeout=TIMEOUT))
    place(10, 12500)
    try:
        out["after_revocation"] = json.loads(dave.recv(timeout=0.5))
    except TimeoutError:
        out["after_revocation"] = None
    out["again"] = subscribe(dave)
    return out


def recv(conn):
    return json.loads(conn.recv(timeout=TIMEOUT))


def calls():
    out = {}
    place_payload = {"symbol": "ACME", "qty": 10, "limit": 12500}
    dave = ws(token="t-dave")
    out["subscribed"] = subscribe(dave)
    # A call on the subscriber's connection: its fill is published while
    # it runs, so the event is written before the reply.
    dave.send(json.dumps({"type": "call", "id": "c1", "call": "Orders::place",
                          "payload": place_payload}))
    out["place"] = [recv(dave), recv(dave)]
    # The same Orders instance answers public over HTTP: the next order.
    out["http"] = place(3, 9900)
    out["http_event"] = recv(dave)
    # The id echoed raw (a number), the digest checked as the line's is.
    dave.send(json.dumps({"type": "call", "id": 7, "call": "Orders::place",
                          "payload": place_payload, "digest": "fnv1a64:0000000000000000"}))
    out["digest_mismatch"] = recv(dave)
    dave.send(json.dumps({"type": "call", "id": "c3", "call": "Orders::cancel",
                          "payload": {"order": 41}}))
    out["unauthorized"] = recv(dave)
    dave.send(json.dumps({"type": "call", "id": "c4", "call": "Orders::nope",
                          "payload": {}}))
    out["unknown_member"] = recv(dave)
    dave.send(json.dumps({"type": "call", "id": "c5", "call": "Orders::place",
                          "payload": {"symbol": "ACME"}}))
    out["missing_field"] = recv(dave)
    # A connection whose upgrade presented no credential: admitted as a
    # connection, its calls refused unauthenticated; a refused token too.
    nobody = ws()
    nobody.send(json.dumps({"type": "call", "id": "c6", "call": "Orders::place",
                            "payload": place_payload}))
    out["nobody"] = recv(nobody)
    stranger = ws(token="t-nobody")
    stranger.send(json.dumps({"type": "call", "id": "c7", "call": "Orders::place",
                              "payload": place_payload}))
    out["stranger"] = recv(stranger)
    # bob holds nothing under the hub's roles and needs nothing to place.
    bob = ws(query="t-bob")
    bob.send(json.dumps({"type": "call", "id": "c8", "call": "Orders::place",
                         "payload": place_payload}))
    out["bob"] = recv(bob)
    # The fill of bob's order reaches dave's subscription.
    out["bob_fill"] = recv(dave)
    # A call executing when the demo stops (its handler held at a gate)
    # is answered before the hub writes closed.
    out["controls"] = [control_line("gate orders")]
    dave.send(json.dumps({"type": "call", "id": "c9", "call": "Orders::place",
                          "payload": place_payload}))
    time.sleep(0.5)
    out["controls"].append(control_line("stop"))
    time.sleep(0.2)
    out["controls"].append(control_line("open orders"))
    out["closing"] = [recv(dave), recv(dave), recv(dave)]
    return out


out = {"tour": tour, "invalidate": invalidate, "calls": calls}[scenario]()
connections.close()
print(json.dumps(out))
