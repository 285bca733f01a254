#!/usr/bin/env python3
"""Lay out seed corpora for the fuzz targets.

    python3 fuzz/seeds.py SHARED OUT TARGET...

For each TARGET, OUT/TARGET/ receives the seeds committed in
fuzz/seeds/TARGET/ (our own files) and seeds made at run time from SHARED
(../shared: the reference fixtures and the third-party test data, which
are never copied into the repository). A missing SHARED only leaves the
committed seeds, with a note on stderr.

Each target reads its input its own way, so each gets its seeds in that
form: raw JSON for the tokenizer, a mode byte and a payload for the codec
and for decoding, request lines for the Unix machine, requests for the
HTTP/1.1 machine, `.hl` text for the parser.
"""

import hashlib
import json
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
MAX_SEED = 64 * 1024


def files(folder, suffix=""):
    if not os.path.isdir(folder):
        return []
    out = []
    for root, _, names in os.walk(folder):
        for name in sorted(names):
            if name.endswith(suffix):
                out.append(os.path.join(root, name))
    return sorted(out)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def compact(value):
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def pretty(value):
    return json.dumps(value, indent=2, ensure_ascii=False).encode()


def json_texts(shared):
    """Every small JSON text SHARED holds: JSONTestSuite, the RFC 8785
    inputs, the witness documents and wire records."""
    out = []
    data = os.path.join(shared, "data")
    out += files(os.path.join(data, "JSONTestSuite", "test_parsing"), ".json")
    out += files(os.path.join(data, "JSONTestSuite", "test_transform"), ".json")
    out += files(os.path.join(data, "json-canonicalization", "input"))
    out += files(os.path.join(shared, "hale-witness"), ".json")
    return [t for t in (read(p) for p in out) if len(t) <= MAX_SEED]


def wire_records(shared, transport):
    out = []
    for path in files(os.path.join(shared, "hale-witness", "wire", transport), ".json"):
        try:
            out.append(json.loads(read(path)))
        except ValueError:
            pass
    return out


def unix_lines(shared):
    requests = [r["request"] for r in wire_records(shared, "unix") if "request" in r]
    out = [compact(r) + b"\n" for r in requests]
    if requests:
        out.append(b"".join(compact(r) + b"\n" for r in requests))
        out.append(b"".join(json.dumps(r).encode() + b"\r\n\r\n" for r in requests))
        out.append(b'{"describe":true,"id":0}\n' + compact(requests[0])[:-3])
    return out


def http_requests(shared):
    out = []
    for record in wire_records(shared, "http"):
        r = record.get("request")
        if not isinstance(r, dict):
            continue
        body = b"" if r.get("body") is None else compact(r["body"])
        head = "{} {} HTTP/1.1\r\n".format(r.get("method", "POST"), r.get("path", "/"))
        for name, value in (r.get("headers") or {}).items():
            head += "{}: {}\r\n".format(name, value)
        if body or r.get("method") == "POST":
            head += "Content-Length: {}\r\n".format(len(body))
        out.append(head.encode() + b"\r\n" + body)
    return out


def payloads(shared):
    out = []
    for record in wire_records(shared, "http"):
        body = (record.get("request") or {}).get("body")
        if body is not None:
            out += [compact(body), pretty(body)]
    for record in wire_records(shared, "unix"):
        payload = (record.get("request") or {}).get("payload")
        if payload is not None:
            out += [compact(payload), pretty(payload)]
    return out


def http_response(reply):
    """An HTTP response for a record's reply, with its framing headers."""
    body = b"" if reply.get("body") is None else compact(reply["body"])
    head = "HTTP/1.1 {} X\r\n".format(reply.get("status", 200))
    for name, value in (reply.get("headers") or {}).items():
        head += "{}: {}\r\n".format(name, value)
    head += "Content-Length: {}\r\nConnection: close\r\n\r\n".format(len(body))
    return head.encode() + body


def conformance_seeds(shared):
    """Replies as a server writes them (mode 0) and record texts (mode 1),
    from the reference records and the project's corpus (ours, so read
    from the checkout)."""
    corpus = os.path.join(HERE, "..", "conformance", "corpus", "wire")
    paths = files(os.path.join(shared, "hale-witness", "wire"), ".json") + files(corpus, ".json")
    out = []
    for path in paths:
        text = read(path)
        out.append(b"\x01" + text)
        try:
            record = json.loads(text)
        except ValueError:
            continue
        reply = record.get("reply")
        if not isinstance(reply, dict):
            continue
        if record.get("transport") == "unix":
            out.append(b"\x00" + compact(reply) + b"\n")
        else:
            out.append(b"\x00" + http_response(reply))
    return [s for s in out if len(s) <= MAX_SEED]


def admin_requests():
    """`hale admin`'s routes as a browser asks them (the fuzz target
    splices the page's Host and cookie in after the request line)."""
    token = "5a" * 32
    return [
        ("GET /?token=%s HTTP/1.1\r\nHost: 127.0.0.1:7473\r\n\r\n" % token).encode(),
        b"GET /admin.js HTTP/1.1\r\nOrigin: http://127.0.0.1:7473\r\n\r\n",
        b"GET /api/stream?topic=Fills HTTP/1.1\r\nAccept: text/event-stream\r\n\r\n",
        b"POST /api/call HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: 74\r\n\r\n"
        b'{"member":"Orders::place","payload":{"qty":1},"digest":"fnv1a64:00000000"}',
        b"GET / HTTP/1.1\r\nHost: evil.test:7473\r\nCookie: a=1; hale-admin-7473=x\r\n\r\n",
    ]


def nats_streams():
    """What a server says to a client: the handshake, messages with and
    without a reply subject, pings, errors, an INFO mid-connection; each
    under the default options (mode 0) and the small ones (mode 1)."""
    info = b'INFO {"server_id":"NCX","version":"2.9.10","proto":1,"max_payload":1048576}\r\n'
    streams = [
        info + b"PONG\r\n",
        info + b"PING\r\n+OK\r\nPONG\r\nMSG a.b 1 5\r\nhello\r\nMSG a.z 2 inbox.1 0\r\n\r\n",
        info + b"PONG\r\nMSG c.d.e 3 2\r\n{}\r\n-ERR 'Invalid Subject'\r\nPING\r\n",
        info + b"PONG\r\nINFO {\"max_payload\":8,\"max_control_line\":32}\r\nMSG a.b 1 9\r\n",
        info + b"-ERR 'Authorization Violation'\r\n",
        info + b"PONG\r\nmsg a.b\t1  3\r\n\r\n\n\r\nHMSG a.b 1 0 0\r\n\r\n",
        b'INFO {"server_id":"S","max_payload":3}\r\nPONG\r\n',
        b"PING\r\n",
    ]
    return [m + s for s in streams for m in (b"\x00", b"\x01")]


def made(shared, target):
    """The seeds TARGET gets from SHARED."""
    texts = json_texts(shared)
    if target == "json_tokenizer":
        return texts
    if target == "hale_codec":
        return [b"\x01" + p for p in payloads(shared)] + [b"\x01" + t for t in texts[:200]]
    if target == "flow_decode":
        small = [t for t in texts if len(t) <= 4096]
        return [b"\x01" + t for t in small] + [b"\x04" + p for p in payloads(shared)]
    if target in ("flow_schema", "flow_signature"):
        witness = files(os.path.join(shared, "hale-witness"), ".json")
        return [b"\x00" + read(p) for p in witness if os.path.getsize(p) <= MAX_SEED]
    if target == "line_conn":
        return unix_lines(shared)
    if target == "http1_conn":
        return http_requests(shared)
    if target == "admin_page":
        return http_requests(shared) + admin_requests()
    if target == "hale_syntax":
        return [read(p) for p in files(os.path.join(shared, "hale-witness"), ".hl")]
    if target == "conformance_reply":
        return conformance_seeds(shared)
    if target == "nats_client":
        return nats_streams()
    if target == "http1_client":
        # The replies of the records as a server writes them, read as the
        # answer to a GET (mode 0) and under the small limits (mode 4).
        replies = [s[1:] for s in conformance_seeds(shared) if s[:1] == b"\x00"]
        return [m + r for r in replies if r.startswith(b"HTTP/") for m in (b"\x00", b"\x04")]
    return []


def generated(target):
    """Seeds made here, too large to keep as files: the slow client's inputs,
    which a machine fed byte by byte must read in linear time (each took
    seconds before the fixes fuzz/CAMPAIGNS.md records; -timeout catches a
    regression)."""
    if target == "line_conn":
        return [b"\n" * 65536, b"{}\n" * 20000, b" " * 60000 + b"\r\n"]
    if target == "http1_conn":
        return [
            b"\n" * 65536 + b"GET /.description HTTP/1.1\r\n\r\n",
            b"GET / HTTP/1.1\r\nX: " + b"a" * 65000 + b"\r\n\r\n",
            b"POST /call/A::b HTTP/1.1\r\n" + b"X: y\r\n" * 63 + b"Content-Length: 2\r\n\r\n{}",
        ]
    if target == "http1_client":
        # A head trickled a byte at a time, empty lines before it, and a
        # body of many chunks: each read in linear time.
        return [
            b"\x00HTTP/1.1 200 OK\r\nX: " + b"a" * 65000 + b"\r\nContent-Length: 2\r\n\r\n{}",
            b"\x00" + b"\r\n" * 30000 + b"HTTP/1.1 204 No Content\r\n\r\n",
            b"\x00HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
            + b"1\r\na\r\n" * 8000 + b"0\r\n\r\n",
        ]
    if target == "nats_client":
        # A MSG of 65,000 bytes, a long INFO, many short lines.
        info = b'INFO {"server_id":"S"}\r\nPONG\r\n'
        urls = ",".join('"10.0.%d.%d:4222"' % (i // 250, i % 250) for i in range(3000))[:60000]
        return [
            b"\x00" + info + b"MSG a.b 1 65000\r\n" + b"m" * 65000 + b"\r\n",
            b"\x00" + ('INFO {"connect_urls":[%s]}\r\n' % urls.rsplit(",", 1)[0]).encode(),
            b"\x00" + info + b"PING\r\n" * 10000,
        ]
    if target == "tool_conn":
        reply = '{{"jsonrpc":"2.0","method":"reply","params":{{"runId":"r","callId":"{}","outcome":{}}}}}\n'
        outcomes = ['{"Ok":{"n":1}}', '{"Ok":1}', '{"Failed":"no"}', '{"NotRun":"x"}',
                    '{"Unknown":"y"}', '{"Ok":{"n":1,"tags":["a"]}}']
        host = "".join(reply.format(i, o) for i, o in enumerate(outcomes))
        mcp = "".join(line + "\n" for line in [
            '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18",'
            '"capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}}',
            '{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"Echo","inputSchema":{}}],'
            '"nextCursor":"p2"}}',
            '{"jsonrpc":"2.0","id":3,"result":{"tools":[{"name":"Pick","inputSchema":{}}]}}',
            '{"jsonrpc":"2.0","id":"0","result":{"content":[{"type":"text","text":"{\\"n\\":1}"}]}}',
            '{"jsonrpc":"2.0","id":"1","result":{"content":[],"isError":true}}',
        ])
        return [b"\x00" + host.encode(), b"\x01" + mcp.encode()]
    if target == "tool_toolkit":
        call = ('{{"jsonrpc":"2.0","method":"call","params":{{"runId":"r","callId":"{}",'
                '"tool":"fuzz@1/f.flow.{}","args":{}}}}}\n')
        lines = [
            '{"jsonrpc":"2.0","id":1,"method":"describe"}\n',
            call.format(1, "Echo", '{"text":"x"}'),
            call.format(2, "Pick", '{"items":[1,2]}'),
            call.format(3, "Echo", '{"text":3}'),
            '{"jsonrpc":"2.0","method":"cancel","params":{"runId":"r","callId":"1"}}\n',
            '{"jsonrpc":"2.0","id":2,"method":"shutdown"}\n',
        ]
        return [l.encode() for l in lines] + ["".join(lines).encode()]
    if target == "mcp_http":
        bodies = [
            '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}',
            '{"jsonrpc":"2.0","id":2,"method":"tools/list"}',
            '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"A_open",'
            '"arguments":{"ok":1},"_meta":{"hale/digest":"fnv1a64:0000000000000001"}}}',
            '{"jsonrpc":"2.0","method":"notifications/initialized"}',
            '[{"jsonrpc":"2.0","id":1,"method":"ping"}]',
        ]
        return [("POST /mcp HTTP/1.1\r\nAuthorization: Bearer t-ann\r\n"
                 "Content-Length: {}\r\n\r\n{}").format(len(b), b).encode() for b in bodies]
    if target == "jsonrpc":
        return [l.encode() for l in [
            '{"jsonrpc":"2.0","id":1,"method":"describe"}',
            '{"jsonrpc":"2.0","method":"cancel","params":{"runId":"r","callId":"1"}}',
            '{"jsonrpc":"2.0","id":"a","result":{"x":[1]}}',
            '{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"m","data":[1]}}',
        ]]
    return []


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    shared, out, targets = argv[1], argv[2], argv[3:]
    if not os.path.isdir(shared):
        print("fuzz/seeds.py: {} is absent; committed seeds only".format(shared), file=sys.stderr)
    for target in targets:
        folder = os.path.join(out, target)
        os.makedirs(folder, exist_ok=True)
        n = 0
        for path in files(os.path.join(HERE, "seeds", target)):
            shutil.copy(path, os.path.join(folder, os.path.basename(path)))
            n += 1
        from_shared = made(shared, target) if os.path.isdir(shared) else []
        for seed in generated(target) + from_shared:
            name = hashlib.sha1(seed).hexdigest()
            with open(os.path.join(folder, name), "wb") as f:
                f.write(seed)
            n += 1
        print("{}: {} seeds".format(target, n))


if __name__ == "__main__":
    main(sys.argv)
