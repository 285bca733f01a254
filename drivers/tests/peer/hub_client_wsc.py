"""`websocket-client` (its synchronous WebSocket) against `hale demo
--hub`: subscribes with the credential as a header and by
?access_token=, reads the fill of an order placed over HTTP, is refused
unauthenticated and unauthorized, and reads `closed` then the close frame
when the demo stops. Prints what it saw as one JSON object for
drivers/tests/hub_live.rs.

usage: hub_client_wsc.py HUB_ADDR PUBLIC_ADDR CONTROL_SOCKET
"""

import json
import socket
import sys
import urllib.request

import websocket

hub, public, control = sys.argv[1:4]


def connect(token=None, query=None):
    header = [f"Authorization: Bearer {token}"] if token else []
    path = f"/?access_token={query}" if query else "/"
    return websocket.create_connection(f"ws://{hub}{path}", header=header, timeout=10)


def ask(conn, frame):
    conn.send(json.dumps(frame))
    return json.loads(conn.recv())


def subscribe(conn):
    return ask(conn, {"type": "subscribe", "topic": "Fills"})


def place(qty, limit):
    body = json.dumps({"symbol": "ACME", "qty": qty, "limit": limit}).encode()
    request = urllib.request.Request(
        f"http://{public}/call/Orders::place",
        data=body,
        headers={"Authorization": "Bearer t-alice"},
    )
    with urllib.request.urlopen(request, timeout=10) as r:
        return json.loads(r.read())


out = {"client": f"websocket-client {websocket.__version__}"}
dave = connect(token="t-dave")
by_query = connect(query="t-dave")
out["subscribed"] = [subscribe(dave), subscribe(by_query)]
receipt = place(4, 5000)
out["first"] = {"receipt": receipt, "events": [json.loads(dave.recv()), json.loads(by_query.recv())]}
out["refusals"] = {
    "unauthenticated": subscribe(connect()),
    "unauthorized": subscribe(connect(token="t-bob")),
}
with socket.socket(socket.AF_UNIX) as c:
    c.connect(control)
    c.sendall(b"stop\n")
    c.recv(16)
out["closed"] = json.loads(dave.recv())
opcode, data = dave.recv_data(control_frame=True)
out["close"] = [opcode, int.from_bytes(data[:2], "big") if data else None]
print(json.dumps(out))
