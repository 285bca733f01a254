"""A WebSocket client nobody here wrote (Python `websockets`, its sync
client) against a hub, for drivers/tests/hub_hardening.rs. It asserts
nothing: it prints what it saw as one JSON object.

`anonymous HUB`: upgrades with no credential, is refused a subscribe,
then waits (30 s at most) for the hub to end the connection, and reports
the close frame's code and reason and the seconds it took.

usage: hub_hardening.py anonymous HUB_ADDR
"""

import json
import sys
import time

from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

scenario, hub = sys.argv[1:3]


def anonymous():
    out = {}
    with connect(f"ws://{hub}/", open_timeout=10) as conn:
        start = time.monotonic()
        conn.send(json.dumps({"type": "subscribe", "topic": "Fills"}))
        out["refusal"] = json.loads(conn.recv(timeout=10))
        try:
            while True:
                frame = conn.recv(timeout=30)
                out.setdefault("more", []).append(frame)
        except ConnectionClosed as e:
            out["code"] = e.rcvd.code if e.rcvd else None
            out["reason"] = e.rcvd.reason if e.rcvd else None
        except TimeoutError:
            out["code"] = "still open after 30 s"
        out["after_s"] = time.monotonic() - start
    return out


print(json.dumps({"anonymous": anonymous}[scenario]()))
