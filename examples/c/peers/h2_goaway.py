"""A raw HTTP/2 client (h2) for scripts/c-abi-test: one gRPC call held open
across the server's shutdown.

Usage: h2_goaway.py HOST PORT PID. Sends Orders::place as
application/grpc+json with alice's token on stream 1; once the call's
trailers are in, sends SIGINT to PID (the server) and reads on until the
server ends the connection. Prints one line: the call's grpc-status, the
GOAWAY's error code and its last stream id ("None" for what never came).
"""

import os
import signal
import socket
import sys

import h2.config
import h2.connection
import h2.events

host, port, pid = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
sock = socket.create_connection((host, port), timeout=10)
conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
conn.initiate_connection()
sock.sendall(conn.data_to_send())
msg = b'{"symbol":"ACME","qty":10,"limit":12500}'
conn.send_headers(
    1,
    [
        (":method", "POST"),
        (":scheme", "http"),
        (":authority", f"{host}:{port}"),
        (":path", "/Public/Orders__place"),
        ("content-type", "application/grpc+json"),
        ("te", "trailers"),
        ("authorization", "Bearer t-alice"),
    ],
)
conn.send_data(1, b"\0" + len(msg).to_bytes(4, "big") + msg, end_stream=True)
sock.sendall(conn.data_to_send())
status = goaway = None
while goaway is None:
    try:
        data = sock.recv(65536)
    except ConnectionResetError:
        break
    if not data:
        break
    for ev in conn.receive_data(data):
        if isinstance(ev, h2.events.TrailersReceived):
            status = dict(ev.headers).get(b"grpc-status", b"").decode()
            os.kill(pid, signal.SIGINT)
        elif isinstance(ev, h2.events.ConnectionTerminated):
            goaway = ev
    # Once SIGINT is sent the server may be gone: what this side still
    # has to say is a courtesy, and the GOAWAY is read either way.
    try:
        sock.sendall(conn.data_to_send())
    except (BrokenPipeError, ConnectionResetError):
        pass
print(status, goaway and goaway.error_code, goaway and goaway.last_stream_id)
