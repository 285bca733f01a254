#!/usr/bin/env python3
"""Bytes a gRPC server holds per open HTTP/2 stream.

Usage: h2-hold.py PID HOST:PORT [STREAMS] [PER_CONNECTION]

Opens STREAMS // PER_CONNECTION h2c connections to the server (process PID),
completes each one's preface and SETTINGS exchange, and reads the server's
VmRSS; then opens PER_CONNECTION streams on each, every one a request to
/Public/Orders__place whose HEADERS come without END_STREAM (the request
body never follows), so the server must hold each stream open and
unanswered; and reads VmRSS again. (VmRSS after - VmRSS before) / STREAMS
is the figure: what the process really holds for a stream, whatever its
allocator, the connections' own cost taken out. The frames the server
sent back are counted: a RST_STREAM or a response would mean a stream was
not held, and the figure would be wrong (printed, and the exit status 1).

Hand-made frames (HPACK literals, no Huffman) and only the standard
library, so that the probe is the same for every server.
"""
import socket
import struct
import sys
import time


def rss_kib(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise SystemExit("no VmRSS")


def frame(kind, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload


def literal(name, value):
    # Literal header field without indexing, new name, no Huffman; every
    # string here is shorter than 127 bytes.
    return b"\x00" + bytes([len(name)]) + name + bytes([len(value)]) + value


def main():
    pid, addr = sys.argv[1], sys.argv[2]
    streams = int(sys.argv[3]) if len(sys.argv) > 3 else 10000
    per = int(sys.argv[4]) if len(sys.argv) > 4 else 100
    host, port = addr.rsplit(":", 1)
    block = b"".join(
        literal(n.encode(), v.encode())
        for n, v in [
            (":method", "POST"),
            (":scheme", "http"),
            (":path", "/Public/Orders__place"),
            (":authority", addr),
            ("content-type", "application/grpc"),
            ("te", "trailers"),
            ("authorization", "Bearer t-alice"),
            ("hale-surface-digest", "fnv1a64:a8930d6e7998e986"),
        ]
    )
    before_conns = rss_kib(pid)
    conns = []
    for _ in range(streams // per):
        s = socket.create_connection((host, int(port)))
        s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(4, 0, 0))
        s.settimeout(5)
        if not s.recv(65536):
            raise SystemExit("the server closed a connection at its preface")
        # The server's SETTINGS came (it is sent first): acknowledge it.
        s.sendall(frame(4, 1, 0))
        conns.append(s)
    time.sleep(1.0)
    before = rss_kib(pid)
    for s in conns:
        s.sendall(b"".join(frame(1, 0x4, 2 * i + 1, block) for i in range(per)))
    time.sleep(2.0)
    after = rss_kib(pid)
    # What came back: a response (HEADERS) or a reset means a stream was
    # not held.
    kinds = {}
    for s in conns:
        s.setblocking(False)
        data = b""
        try:
            while True:
                chunk = s.recv(1 << 20)
                if not chunk:
                    break
                data += chunk
        except BlockingIOError:
            pass
        at = 0
        while at + 9 <= len(data):
            length = int.from_bytes(data[at : at + 3], "big")
            kinds[data[at + 3]] = kinds.get(data[at + 3], 0) + 1
            at += 9 + length
    names = {0: "DATA", 1: "HEADERS", 3: "RST_STREAM", 4: "SETTINGS", 6: "PING", 7: "GOAWAY", 8: "WINDOW_UPDATE"}
    seen = ", ".join(f"{names.get(k, k)}={v}" for k, v in sorted(kinds.items()))
    held = streams // per * per
    per_stream = (after - before) * 1024 / held
    per_conn = (before - before_conns) * 1024 / len(conns)
    print(
        f"held {held} streams on {len(conns)} connections: VmRSS {before_conns} KiB "
        f"-> {before} KiB (connections, {per_conn:.0f} B each) -> {after} KiB (streams); "
        f"{per_stream:.0f} B per open stream; frames back: {seen or 'none'}"
    )
    for s in conns:
        s.close()
    bad = kinds.get(1, 0) + kinds.get(3, 0) + kinds.get(7, 0)
    sys.exit(1 if bad else 0)


main()
