"""A WebSocket client nobody here wrote (Python `websockets`, its sync
client) for scripts/c-abi-test, against limen-ws-echo.

usage: ws_echo.py WS_URL

Sends a text message (with characters of several UTF-8 lengths), a
binary one and one of 20000 bytes (a 16-bit length), reads each echo,
then closes with 1000 and reads the code the server's close frame
answers with. Prints what it saw as one JSON object.
"""

import json
import sys

from websockets.sync.client import connect

url = sys.argv[1]
out = {}
with connect(url, open_timeout=20) as ws:
    ws.send("héllo, 日本 🦀")
    out["text"] = ws.recv(timeout=20)
    ws.send(bytes(range(7)))
    out["binary"] = list(ws.recv(timeout=20))
    ws.send("x" * 20000)
    out["long"] = len(ws.recv(timeout=20))
    ws.close(1000, "done")
    out["close_code"] = ws.close_code
print(json.dumps(out, ensure_ascii=False))
