"""Attacks on the gRPC transport, as raw HTTP/2 frames (issue 26), each
bounded in count and time, each followed by a good call that must still be
answered. Reads a plan {"scenario", "target", ...} on stdin, prints one JSON
report. The server's answers are read with hpack's decoder (h2's own)."""

import json
import select
import socket
import sys
import time

import hpack

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, RST_STREAM, SETTINGS, PING, GOAWAY, WINDOW_UPDATE, CONTINUATION = (
    0, 1, 3, 4, 6, 7, 8, 9)
END_STREAM, ACK, END_HEADERS = 1, 1, 4


def frame(kind, flags, stream, payload=b""):
    return (len(payload).to_bytes(3, "big") + bytes([kind, flags])
            + stream.to_bytes(4, "big") + payload)


def hint(out, prefix_bits, first, n):
    top = (1 << prefix_bits) - 1
    if n < top:
        out.append(first | n)
        return
    out.append(first | top)
    n -= top
    while n >= 128:
        out.append((n % 128) | 0x80)
        n //= 128
    out.append(n)


def literal(fields):
    """Literal fields without indexing, new names, no Huffman: the
    server's decoder table is left as the bomb made it."""
    out = bytearray()
    for name, value in fields:
        out.append(0)
        hint(out, 7, 0, len(name))
        out += name
        hint(out, 7, 0, len(value))
        out += value
    return bytes(out)


def call_fields(target, path=b"/Public/Orders__place"):
    return [(b":method", b"POST"), (b":scheme", b"http"), (b":path", path),
            (b":authority", target.encode()), (b"te", b"trailers"),
            (b"content-type", b"application/grpc+json"),
            (b"authorization", b"Bearer t-alice")]


def message(body):
    return b"\0" + len(body).to_bytes(4, "big") + body


GOOD = message(json.dumps({"symbol": "ACME", "qty": 1, "limit": 1}).encode())


class Conn:
    """One raw connection: frames out as given, frames in decoded."""

    def __init__(self, target, preface=True):
        host, port = target.rsplit(":", 1)
        self.target = target
        self.sock = socket.create_connection((host, int(port)), timeout=20)
        # Small frames go out at once, not behind Nagle's wait for an ACK.
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""
        self.dec = hpack.Decoder()
        self.dec.max_header_list_size = 1 << 30
        self.block = {}
        self.window = 65535
        self.streams = {}  # stream -> {"status", "ended", "reset"}
        self.goaway = None
        self.closed = False
        # The server's SETTINGS are acknowledged once ours are sent.
        self.ack = preface
        if preface:
            self.sock.sendall(PREFACE + frame(SETTINGS, 0, 0))

    def send(self, data):
        try:
            self.sock.sendall(data)
            return True
        except OSError:
            self.closed = True
            return False

    def read_frame(self):
        while len(self.buf) < 9 or len(self.buf) < 9 + int.from_bytes(self.buf[:3], "big"):
            try:
                chunk = self.sock.recv(65536)
            except (socket.timeout, OSError):
                chunk = b""
            if not chunk:
                self.closed = True
                return None
            self.buf += chunk
        n = int.from_bytes(self.buf[:3], "big")
        f = (self.buf[3], self.buf[4], int.from_bytes(self.buf[5:9], "big") & 0x7FFFFFFF,
             self.buf[9:9 + n])
        self.buf = self.buf[9 + n:]
        self.note(*f)
        return f

    def note(self, kind, flags, stream, payload):
        s = self.streams.setdefault(stream, {"status": None, "ended": False, "reset": None})
        if kind == SETTINGS and not flags & ACK and self.ack:
            self.send(frame(SETTINGS, ACK, 0))
        elif kind == WINDOW_UPDATE and stream == 0:
            self.window += int.from_bytes(payload, "big")
        elif kind == GOAWAY:
            self.goaway = int.from_bytes(payload[4:8], "big")
        elif kind == RST_STREAM:
            s["reset"] = int.from_bytes(payload, "big")
        elif kind in (HEADERS, CONTINUATION):
            self.block[stream] = self.block.get(stream, b"") + payload
            if flags & END_HEADERS:
                for name, value in self.dec.decode(self.block.pop(stream), raw=True):
                    if name == b"grpc-status":
                        s["status"] = int(value)
        if kind in (HEADERS, DATA) and flags & END_STREAM:
            s["ended"] = True

    def until(self, done, limit=20.0):
        start = time.monotonic()
        while not done() and not self.closed and time.monotonic() - start < limit:
            self.read_frame()
        return done()

    def data(self, stream, body, end=False):
        """DATA within the connection's window, read for more as needed."""
        at = 0
        while at < len(body) or (end and at == 0 and not body):
            n = min(16384, len(body) - at, self.window)
            if n == 0 and body:
                if self.read_frame() is None:
                    return False
                continue
            last = end and at + n == len(body)
            if not self.send(frame(DATA, END_STREAM if last else 0, stream, body[at:at + n])):
                return False
            self.window -= n
            at += n
            if not body:
                break
        return True

    def call(self, stream, body=GOOD):
        self.send(frame(HEADERS, END_HEADERS, stream, literal(call_fields(self.target))))
        self.data(stream, body, end=True)
        self.until(lambda: self.streams.get(stream, {}).get("ended"))
        return self.streams.get(stream, {}).get("status")


def good_call(target):
    c = Conn(target)
    status = c.call(1)
    c.sock.close()
    return status


def bomb_block(target, refs):
    """A call's head, one 4000-byte field indexed, `refs` one-byte
    references to it (index 62): each decodes to 4033 bytes."""
    block = bytearray(literal(call_fields(target)[:6]))
    block += b"\x40\x01x"
    hint(block, 7, 0, 4000)
    block += b"a" * 4000
    block += b"\xbe" * refs
    return bytes(block)


def bomb(target, end_headers):
    c = Conn(target)
    c.until(lambda: 0 in c.streams)
    # HEADERS and 7 CONTINUATION frames of 16 KB (nghttp2 takes 8).
    block = bomb_block(target, 8 * 16384 - 4200)
    pieces = [block[i:i + 16384] for i in range(0, len(block), 16384)]
    for i, piece in enumerate(pieces):
        last = i == len(pieces) - 1
        flags = END_HEADERS if last and end_headers else 0
        c.send(frame(HEADERS if i == 0 else CONTINUATION, flags, 1, piece))
    report = {"sent": len(block), "decoded": (len(block) - 4200) * 4033}
    if end_headers:
        c.until(lambda: c.streams.get(1, {}).get("reset") is not None, 10)
        report.update(status=c.streams.get(1, {}).get("status"),
                      reset=c.streams.get(1, {}).get("reset"))
        # The connection goes on: a good call on it.
        report["same_connection"] = c.call(3)
    else:
        # Left open: a good call beside it, on another connection.
        report["beside"] = good_call(target)
    report["good"] = good_call(target)
    c.sock.close()
    return report


def bombs(target, seconds):
    """HPACK bombs one after another on new streams of one connection,
    for `seconds` at most or until the server sends GOAWAY or closes."""
    c = Conn(target)
    c.until(lambda: 0 in c.streams)
    block = bomb_block(target, 12000)
    sent = 0
    start = time.monotonic()
    c.sock.settimeout(0.2)
    while c.goaway is None and not c.closed and time.monotonic() - start < seconds:
        if not c.send(frame(HEADERS, END_HEADERS, 2 * sent + 1, block)):
            break
        sent += 1
        try:
            c.buf += c.sock.recv(65536)
        except OSError:
            pass
        while len(c.buf) >= 9 and len(c.buf) >= 9 + int.from_bytes(c.buf[:3], "big"):
            n = int.from_bytes(c.buf[:3], "big")
            if c.buf[3] == GOAWAY:
                c.goaway = int.from_bytes(c.buf[9 + 4:9 + 8], "big")
            c.buf = c.buf[9 + n:]
    c.sock.close()
    return {"bombs": sent, "goaway": c.goaway, "seconds": round(time.monotonic() - start, 2),
            "good": good_call(target)}


def partial(target, streams, size):
    """`streams` calls each `size` bytes into a message of 1 MiB, never
    finished, on one connection."""
    c = Conn(target)
    c.until(lambda: 0 in c.streams)
    body = message(b" " * ((1 << 20) - 1))[:size]
    for i in range(streams):
        stream = 2 * i + 1
        c.send(frame(HEADERS, END_HEADERS, stream, literal(call_fields(target))))
        if not c.data(stream, body):
            break
    # Every refusal sent by now is read before the good call's answer.
    good = 2 * streams + 1
    status = c.call(good)
    refused = sorted(s for s, v in c.streams.items() if s and s != good and v["ended"])
    statuses = sorted({c.streams[s]["status"] for s in refused})
    report = {"refused": len(refused), "statuses": statuses, "same_connection": status,
              "good": good_call(target), "closed": c.closed}
    c.sock.close()
    return report


def flood(target, frames, seconds=20.0):
    """WINDOW_UPDATE(+1) on the connection, `frames` of them at most, for
    `seconds` at most, until the server sends GOAWAY or closes. Once all
    are sent it still reads, up to `seconds`: on a loaded machine the
    whole flood fits the socket buffers before the server has read it,
    and its GOAWAY comes after the last write."""
    c = Conn(target)
    c.until(lambda: 0 in c.streams)
    batch = frame(WINDOW_UPDATE, 0, 0, (1).to_bytes(4, "big")) * 1000
    sent = 0  # bytes written, whole frames or not
    out = b""
    c.sock.setblocking(False)
    start = time.monotonic()
    while (c.goaway is None and not c.closed
           and time.monotonic() - start < seconds):
        if sent < frames * 13:
            if not out:
                out = batch
            try:
                n = c.sock.send(out)
                out = out[n:]
                sent += n
            except BlockingIOError:
                pass
            except OSError:
                c.closed = True
        else:
            # All sent: wait for the answer rather than spin on recv.
            select.select([c.sock], [], [], 0.05)
        try:
            chunk = c.sock.recv(65536)
            if not chunk:
                c.closed = True
            c.buf += chunk
        except BlockingIOError:
            pass
        except OSError:
            c.closed = True
        while len(c.buf) >= 9 and len(c.buf) >= 9 + int.from_bytes(c.buf[:3], "big"):
            n = int.from_bytes(c.buf[:3], "big")
            if c.buf[3] == GOAWAY:
                c.goaway = int.from_bytes(c.buf[9 + 4:9 + 8], "big")
            c.buf = c.buf[9 + n:]
    c.sock.close()
    return {"sent_frames": sent // 13, "goaway": c.goaway, "closed": c.closed,
            "seconds": round(time.monotonic() - start, 2), "good": good_call(target)}


def after_answer(target):
    c = Conn(target)
    c.until(lambda: 0 in c.streams)
    c.send(frame(HEADERS, END_HEADERS, 1, literal(call_fields(target))))
    c.send(frame(DATA, 0, 1, b"\0\xff\xff\xff\xff"))
    c.until(lambda: c.streams.get(1, {}).get("reset") is not None, 10)
    s = c.streams.get(1, {})
    report = {"status": s.get("status"), "ended": s.get("ended"), "reset": s.get("reset")}
    report["same_connection"] = c.call(3)
    c.sock.close()
    return report


def server_first(target):
    """Sends nothing: the server's SETTINGS come first."""
    c = Conn(target, preface=False)
    c.sock.settimeout(10)
    f = c.read_frame()
    c.sock.close()
    return {"first": None if f is None else [f[0], f[1], f[2]]}


def preface_deadline(target, limit):
    """The magic alone, never SETTINGS: the server closes."""
    c = Conn(target, preface=False)
    c.send(PREFACE)
    start = time.monotonic()
    c.sock.settimeout(limit)
    eof = False
    try:
        while c.sock.recv(65536):
            pass
        eof = True
    except OSError:
        pass
    return {"closed": eof, "after_s": round(time.monotonic() - start, 1)}


def main():
    plan = json.load(sys.stdin)
    target, scenario = plan["target"], plan["scenario"]
    if scenario == "bomb":
        report = bomb(target, plan["end_headers"])
    elif scenario == "bombs":
        report = bombs(target, plan.get("seconds", 5.0))
    elif scenario == "partial":
        report = partial(target, plan["streams"], plan["size"])
    elif scenario == "flood":
        report = flood(target, plan["frames"], plan.get("seconds", 20.0))
    elif scenario == "after_answer":
        report = after_answer(target)
    elif scenario == "server_first":
        report = server_first(target)
    elif scenario == "preface_deadline":
        report = preface_deadline(target, plan["limit"])
    else:
        raise SystemExit(f"no scenario {scenario}")
    print(json.dumps(report))


if __name__ == "__main__":
    main()
