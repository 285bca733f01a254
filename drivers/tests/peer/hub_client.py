"""A WebSocket client nobody here wrote (Python `websockets`, its sync
client) against `hale demo --hub`: it reads the hub's description for
three callers, subscribes by header and by query, places an order over
HTTP and reads the fill, is refused each way a subscribe can be, and
reads `closed` when the demo stops. It asserts nothing: it prints what it
saw as one JSON object, which drivers/tests/hub_live.rs holds to § Streams.

usage: hub_client.py HUB_ADDR PUBLIC_ADDR CONTROL_SOCKET
"""

import contextlib
import json
import socket
import sys
import urllib.error
import urllib.request

from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

hub, public, control = sys.argv[1], sys.argv[2], sys.argv[3]
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

connections.close()
print(json.dumps(out))
