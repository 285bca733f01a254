"""A gRPC client peer for drivers/tests/grpc_peer.rs.

Reads a plan (JSON) on stdin and prints one report line (JSON). Two
clients nobody here wrote:

- grpcio, with stubs grpcio-tools generated from our exported Public.proto
  (application/grpc). Its status details are read with grpcio-status's
  rpc_status.from_call, which refuses details whose code or message
  differ from the call's status.
- h2, a raw HTTP/2 client, for what a stub cannot send: application/grpc+json,
  another method, path or content type, a body that is not one message.
  Its details are held to the same rule here.

Plan: {"target": "host:port", "stubs": DIR, "calls": [CALL, ...]}
CALL: {"client": "grpcio" | "h2", "rpc": "Orders__place",
       "path": "/Public/Orders__place" (h2; default from rpc),
       "method": "POST" (h2), "content_type": "application/grpc+json" (h2),
       "metadata": [[name, value], ...],
       "body": {...} (the request message's fields, or the JSON payload),
       "raw": "<base64 of the whole HTTP/2 body>" (h2; instead of body),
       "raw_response": true (h2: the response message as base64, undecoded)}
Report: {"calls": [RESULT, ...]}

Or a plan {"target", "stubs", "scenario": "streams", "streams": N}: N
streams opened (headers only) on one connection once the server's SETTINGS
are in; the resets the server sends, then stream 1's call completed and
its status. Or "scenario": "protocol_error": a DATA frame on stream 0;
the GOAWAY's error code.
RESULT: {"code": int, "message": str, "response": {...} | null,
         "detail": {"code", "message", "type_url", "value"} | null,
         "content_type": str | null, "trailers_only": bool | null}
"""

import base64
import json
import socket
import sys
import urllib.parse


def fields_of(msg):
    """A message's fields as a dict, scalars as Python values (int64 as int)."""
    out = {}
    for desc, value in msg.ListFields():
        # protobuf 6 says is_repeated; older releases only had label.
        repeated = getattr(desc, "is_repeated", None)
        if repeated is None:
            repeated = desc.label == desc.LABEL_REPEATED
        if repeated:
            out[desc.name] = list(value)
        elif desc.message_type is not None:
            out[desc.name] = fields_of(value)
        else:
            out[desc.name] = value
    return out


class Proto:
    def __init__(self, stubs):
        sys.path.insert(0, stubs)
        import Public_pb2  # noqa: E402
        import Public_pb2_grpc  # noqa: E402

        self.pb = Public_pb2
        self.grpc = Public_pb2_grpc
        self.service = Public_pb2.DESCRIPTOR.services_by_name["Public"]

    def request(self, rpc, body):
        cls = getattr(self.pb, self.service.methods_by_name[rpc].input_type.name)
        return cls(**(body or {}))

    def decode(self, type_url, value):
        name = type_url.rsplit("/", 1)[-1]
        cls = getattr(self.pb, name)
        msg = cls()
        msg.ParseFromString(value)
        return fields_of(msg)


def detail_of(status, proto, codec):
    if status is None:
        return None
    if len(status.details) != 1:
        raise AssertionError("one Any detail, got %d" % len(status.details))
    any_ = status.details[0]
    if codec == "json":
        value = json.loads(any_.value)
    else:
        value = proto.decode(any_.type_url, any_.value)
    return {
        "code": status.code,
        "message": status.message,
        "type_url": any_.type_url,
        "value": value,
    }


def grpcio_call(target, proto, call):
    import grpc
    from grpc_status import rpc_status

    with grpc.insecure_channel(target) as channel:
        stub = proto.grpc.PublicStub(channel)
        method = getattr(stub, call["rpc"])
        metadata = [tuple(m) for m in call.get("metadata", [])]
        try:
            response = method(proto.request(call["rpc"], call.get("body")), metadata=metadata)
            return {
                "code": 0,
                "message": "",
                "response": fields_of(response),
                "detail": None,
                "content_type": None,
                "trailers_only": None,
            }
        except grpc.RpcError as e:
            # Raises when the details' code or message differ from the
            # status's.
            status = rpc_status.from_call(e)
            return {
                "code": e.code().value[0],
                "message": e.details(),
                "response": None,
                "detail": detail_of(status, proto, "proto"),
                "content_type": None,
                "trailers_only": None,
            }


def h2_call(target, proto, call):
    import h2.config
    import h2.connection
    import h2.events
    from google.rpc import status_pb2

    host, port = target.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=10)
    conn = h2.connection.H2Connection(
        config=h2.config.H2Configuration(client_side=True, header_encoding=None)
    )
    conn.initiate_connection()
    content_type = call.get("content_type", "application/grpc+json")
    path = call.get("path") or "/Public/" + call["rpc"]
    headers = [
        (":method", call.get("method", "POST")),
        (":scheme", "http"),
        (":path", path),
        (":authority", target),
        ("te", "trailers"),
    ]
    if content_type is not None:
        headers.append(("content-type", content_type))
    headers += [tuple(m) for m in call.get("metadata", [])]
    if "raw" in call:
        body = base64.b64decode(call["raw"])
    else:
        if content_type and "json" in content_type:
            message = json.dumps(call.get("body")).encode()
        else:
            message = proto.request(call["rpc"], call.get("body")).SerializeToString()
        body = b"\0" + len(message).to_bytes(4, "big") + message
    stream = conn.get_next_available_stream_id()
    conn.send_headers(stream, headers, end_stream=False)
    conn.send_data(stream, body, end_stream=True)
    sock.sendall(conn.data_to_send())
    blocks, data, ended, reset = [], b"", False, None
    while not ended and reset is None:
        chunk = sock.recv(65536)
        if not chunk:
            break
        for event in conn.receive_data(chunk):
            if isinstance(event, (h2.events.ResponseReceived, h2.events.TrailersReceived)):
                blocks.append([(k.decode(), v.decode()) for k, v in event.headers])
            elif isinstance(event, h2.events.DataReceived):
                data += event.data
                conn.acknowledge_received_data(event.flow_controlled_length, stream)
            elif isinstance(event, h2.events.StreamEnded):
                ended = True
            elif isinstance(event, h2.events.StreamReset):
                reset = event.error_code
        sock.sendall(conn.data_to_send())
    sock.close()
    if reset is not None:
        return {"reset": int(reset)}
    fields = dict(kv for block in blocks for kv in block)
    code = int(fields["grpc-status"])
    message = urllib.parse.unquote(fields.get("grpc-message", ""))
    status = None
    if "grpc-status-details-bin" in fields:
        raw = fields["grpc-status-details-bin"]
        status = status_pb2.Status()
        status.ParseFromString(base64.b64decode(raw + "=" * (-len(raw) % 4)))
        # What rpc_status.from_call holds a status to.
        if status.code != code or status.message != message:
            raise AssertionError(
                "details say %r %r, the status %r %r" % (status.code, status.message, code, message)
            )
    codec = "json" if fields.get("content-type", "").endswith("+json") else "proto"
    response = None
    if code == 0:
        assert data[0] == 0 and int.from_bytes(data[1:5], "big") == len(data) - 5, data
        message_bytes = data[5:]
        if call.get("raw_response"):
            response = base64.b64encode(message_bytes).decode()
        elif codec == "json":
            response = json.loads(message_bytes)
        else:
            cls = getattr(
                proto.pb, proto.service.methods_by_name[call["rpc"]].output_type.name
            )
            msg = cls()
            msg.ParseFromString(message_bytes)
            response = fields_of(msg)
    return {
        "code": code,
        "message": message,
        "response": response,
        "detail": detail_of(status, proto, codec),
        "content_type": fields.get("content-type"),
        "trailers_only": len(blocks) == 1,
    }


def connect(target):
    import h2.config
    import h2.connection

    host, port = target.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=10)
    conn = h2.connection.H2Connection(
        config=h2.config.H2Configuration(client_side=True, header_encoding=None)
    )
    conn.initiate_connection()
    sock.sendall(conn.data_to_send())
    return sock, conn


def pump(sock, conn, until):
    """Reads events until until(event) is true for one; returns them all."""
    seen = []
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return seen
        for event in conn.receive_data(chunk):
            seen.append(event)
            if until(event):
                sock.sendall(conn.data_to_send())
                return seen
        sock.sendall(conn.data_to_send())


def streams_scenario(target, n):
    import h2.events

    sock, conn = connect(target)
    pump(sock, conn, lambda e: isinstance(e, h2.events.RemoteSettingsChanged))
    advertised = conn.remote_settings.max_concurrent_streams
    headers = [
        (":method", "POST"),
        (":scheme", "http"),
        (":path", "/Public/Orders__place"),
        (":authority", target),
        ("te", "trailers"),
        ("content-type", "application/grpc+json"),
        ("authorization", "Bearer t-alice"),
    ]
    ids = []
    for _ in range(n):
        stream = conn.get_next_available_stream_id()
        conn.send_headers(stream, headers, end_stream=False)
        ids.append(stream)
    sock.sendall(conn.data_to_send())
    resets = []
    events = pump(sock, conn, lambda e: isinstance(e, (h2.events.StreamReset, h2.events.ConnectionTerminated)))
    for e in events:
        if isinstance(e, h2.events.StreamReset):
            resets.append([e.stream_id, int(e.error_code)])
        if isinstance(e, h2.events.ConnectionTerminated):
            return {"advertised": advertised, "resets": resets, "goaway": int(e.error_code)}
    # The connection goes on: the first stream's call completes.
    message = json.dumps({"symbol": "ACME", "qty": 1, "limit": 1}).encode()
    conn.send_data(ids[0], b"\0" + len(message).to_bytes(4, "big") + message, end_stream=True)
    sock.sendall(conn.data_to_send())
    status = None
    for e in pump(sock, conn, lambda e: isinstance(e, h2.events.StreamEnded) and e.stream_id == ids[0]):
        if isinstance(e, h2.events.TrailersReceived) and e.stream_id == ids[0]:
            status = int(dict(e.headers)[b"grpc-status"])
    sock.close()
    return {"advertised": advertised, "resets": resets, "goaway": None, "first": status, "last": ids[-1]}


def protocol_error_scenario(target):
    import h2.events

    sock, conn = connect(target)
    pump(sock, conn, lambda e: isinstance(e, h2.events.RemoteSettingsChanged))
    # DATA on stream 0: a connection error (RFC 9113 section 6.1).
    sock.sendall(b"\0\0\1\0\0\0\0\0\0x")
    events = pump(sock, conn, lambda e: isinstance(e, h2.events.ConnectionTerminated))
    goaway = [int(e.error_code) for e in events if isinstance(e, h2.events.ConnectionTerminated)]
    closed = sock.recv(65536) == b""
    sock.close()
    return {"goaway": goaway[0] if goaway else None, "closed": closed}


def main():
    plan = json.load(sys.stdin)
    if plan.get("scenario") == "streams":
        print(json.dumps(streams_scenario(plan["target"], plan["streams"])))
        return
    if plan.get("scenario") == "protocol_error":
        print(json.dumps(protocol_error_scenario(plan["target"])))
        return
    proto = Proto(plan["stubs"])
    results = []
    for call in plan["calls"]:
        if call.get("client", "grpcio") == "grpcio":
            results.append(grpcio_call(plan["target"], proto, call))
        else:
            results.append(h2_call(plan["target"], proto, call))
    print(json.dumps({"calls": results}))


if __name__ == "__main__":
    main()
