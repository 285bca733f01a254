"""A plain UDP socket (Python's own) against `hale demo --udp-hub`: two
subscribers on one socket, an order placed over HTTP and its fill read by
each, each refusal, unsubscribe and a second subscribe under the freed id,
describe, and `closed` when the demo stops. Prints what it saw as one JSON
object for drivers/tests/hub_live.rs.

usage: udp_client.py HUB_ADDR PUBLIC_ADDR CONTROL_SOCKET
"""

import json
import socket
import sys
import urllib.request

hub_host, hub_port = sys.argv[1].rsplit(":", 1)
hub = (hub_host, int(hub_port))
public, control = sys.argv[2], sys.argv[3]

s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(10)


def send(datagram):
    s.sendto(json.dumps(datagram).encode(), hub)


def recv():
    data, _ = s.recvfrom(65535)
    return json.loads(data)


def ask(datagram):
    send(datagram)
    return recv()


def place(qty, limit):
    body = json.dumps({"symbol": "ACME", "qty": qty, "limit": limit}).encode()
    request = urllib.request.Request(
        f"http://{public}/call/Orders::place",
        data=body,
        headers={"Authorization": "Bearer t-alice"},
    )
    with urllib.request.urlopen(request, timeout=10) as r:
        return json.loads(r.read())


out = {}
out["subscribed"] = [
    ask({"type": "subscribe", "topic": "Fills", "id": "a", "token": "t-dave"}),
    ask({"type": "subscribe", "topic": "Fills", "id": 2, "token": "t-dave"}),
]
receipt = place(10, 12500)
events = sorted([recv(), recv()], key=lambda d: str(d["id"]))
out["first"] = {"receipt": receipt, "events": events}
out["refusals"] = {
    "unauthenticated": ask({"type": "subscribe", "topic": "Fills", "id": 3}),
    "unauthorized": ask({"type": "subscribe", "topic": "Fills", "id": 4, "token": "t-bob"}),
    "unknown_topic": ask({"type": "subscribe", "topic": "Quotes", "id": 5, "token": "t-dave"}),
    "no_id": ask({"type": "subscribe", "topic": "Fills", "token": "t-dave"}),
}
send({"type": "unsubscribe", "id": 2})
out["resubscribed"] = ask({"type": "subscribe", "topic": "Fills", "id": 2, "token": "t-dave"})
receipt = place(3, 9900)
events = sorted([recv(), recv()], key=lambda d: str(d["id"]))
out["second"] = {"receipt": receipt, "events": events}
out["description"] = ask({"type": "describe", "id": "d", "token": "t-dave"})

with socket.socket(socket.AF_UNIX) as c:
    c.connect(control)
    c.sendall(b"stop\n")
    c.recv(16)
out["closing"] = sorted([recv(), recv()], key=lambda d: str(d["id"]))
print(json.dumps(out))
