"""A customer watching the shop's orders with Python `websockets` (the
project's peer, not our client): subscribes to `Orders` as TOKEN, prints
each frame as one JSON line, and ends at the first frame that is not an
event or a subscription (`unauthorized`, `closed`), or after 20 s."""
import json
import sys

from websockets.sync.client import connect

url, token = sys.argv[1], sys.argv[2]
with connect(f"{url}/?access_token={token}", open_timeout=5) as ws:
    ws.send(json.dumps({"type": "subscribe", "topic": "Orders"}))
    while True:
        frame = json.loads(ws.recv(timeout=20))
        print(json.dumps(frame), flush=True)
        if frame.get("type") not in ("subscribed", "event"):
            break
