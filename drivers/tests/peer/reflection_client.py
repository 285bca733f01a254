"""A server reflection peer for drivers/tests/grpc_reflection.rs.

Reads a plan (JSON) on stdin and prints one report line (JSON). The
clients are other people's:

- "v1": stubs grpcio-tools generated from Debian's grpc-proto
  grpc/reflection/v1/reflection.proto (in the plan's "v1_stubs"), one
  ServerReflectionInfo stream carrying "requests"; "lockstep" sends each
  request only once the previous one is answered (as grpcurl does),
  otherwise all are sent at once, before any answer.
- "v1alpha_db": grpcio-reflection's stock ProtoReflectionDescriptorDatabase
  (v1alpha) under a protobuf DescriptorPool: the services, the Public file,
  a method resolved and called with messages built from what reflection
  returned.
- "grpcurl": what grpcurl does: list the services over v1, falling back to
  v1alpha when v1 is UNIMPLEMENTED; the file of the service; a call whose
  request is JSON turned into the reflected message, and its response back
  into JSON.
- "h2": a raw HTTP/2 client, for what a stub cannot show: the frames. The
  plan's "messages" (base64 of ServerReflectionRequest messages) are sent
  each split across two DATA frames, the next only once the previous is
  answered; then the client ends its side ("tail": raw bytes sent before
  it), or with "hold" waits for the server to end the call; "pause" waits
  that many seconds before each message after the first. Reports the
  response's frames.

Every mode takes "token" (the bearer; none when null) and reports
"code" (the call's final status) and "message".
"""

import base64
import json
import queue
import socket
import sys
import time

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool, json_format
from google.protobuf import message_factory


def metadata(plan):
    token = plan.get("token")
    return [("authorization", f"Bearer {token}")] if token else []


def request_of(pb2, r):
    kind, value = r["kind"], r.get("value", "")
    if kind == "file_containing_extension":
        return pb2.ServerReflectionRequest(
            host="localhost",
            file_containing_extension=pb2.ExtensionRequest(
                containing_type=value, extension_number=r.get("number", 1)
            ),
        )
    return pb2.ServerReflectionRequest(host="localhost", **{kind: value})


def response_of(resp):
    kind = resp.WhichOneof("message_response")
    out = {
        "kind": kind,
        "valid_host": resp.valid_host,
        "original": resp.original_request.WhichOneof("message_request"),
    }
    if kind == "file_descriptor_response":
        files = list(resp.file_descriptor_response.file_descriptor_proto)
        out["files"] = [base64.b64encode(f).decode() for f in files]
        out["names"] = [descriptor_pb2.FileDescriptorProto.FromString(f).name for f in files]
    elif kind == "list_services_response":
        out["services"] = [s.name for s in resp.list_services_response.service]
    elif kind == "error_response":
        out["error_code"] = resp.error_response.error_code
        out["error_message"] = resp.error_response.error_message
    return out


def run_v1(plan):
    sys.path.insert(0, plan["v1_stubs"])
    import reflection_v1.reflection_pb2 as pb2
    import reflection_v1.reflection_pb2_grpc as pb2_grpc

    requests = [request_of(pb2, r) for r in plan["requests"]]
    answered = queue.Queue()

    def feed():
        for i, r in enumerate(requests):
            if plan.get("lockstep") and i > 0:
                answered.get(timeout=10)
            yield r
        if plan.get("lockstep"):
            answered.get(timeout=10)

    out = {"responses": []}
    with grpc.insecure_channel(plan["target"]) as channel:
        stub = pb2_grpc.ServerReflectionStub(channel)
        call = stub.ServerReflectionInfo(feed(), metadata=metadata(plan), timeout=20)
        try:
            for resp in call:
                out["responses"].append(response_of(resp))
                answered.put(True)
            out["code"] = call.code().value[0]
            out["message"] = call.details()
        except grpc.RpcError as e:
            out["code"] = e.code().value[0]
            out["message"] = e.details()
    return out


class Bearer(grpc.StreamStreamClientInterceptor):
    """Adds the bearer to every stream the descriptor database opens."""

    def __init__(self, md):
        self.md = md

    def intercept_stream_stream(self, continuation, details, request_iterator):
        details = details._replace(metadata=list(details.metadata or []) + self.md)
        return continuation(details, request_iterator)



def call_reflected(channel, pool, plan, service, method, body):
    """Calls `service/method` with messages built from the reflected
    descriptors (what grpcurl does): `body` as JSON in, JSON out."""
    svc = pool.FindServiceByName(service)
    m = svc.FindMethodByName(method)
    req_cls = message_factory.GetMessageClass(m.input_type)
    resp_cls = message_factory.GetMessageClass(m.output_type)
    req = json_format.ParseDict(body, req_cls())
    rpc = channel.unary_unary(
        f"/{svc.full_name}/{m.name}",
        request_serializer=lambda x: x.SerializeToString(),
        response_deserializer=resp_cls.FromString,
    )
    resp = rpc(req, metadata=metadata(plan), timeout=10)
    return json_format.MessageToDict(resp, preserving_proto_field_name=True)


def run_v1alpha_db(plan):
    from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (
        ProtoReflectionDescriptorDatabase,
    )

    out = {}
    with grpc.insecure_channel(plan["target"]) as raw:
        channel = grpc.intercept_channel(raw, Bearer(metadata(plan)))
        db = ProtoReflectionDescriptorDatabase(channel)
        try:
            out["services"] = list(db.get_services())
            pool = descriptor_pool.DescriptorPool(db)
            f = pool.FindFileByName("Public.proto")
            out["file"] = f.name
            out["messages"] = sorted(f.message_types_by_name)
            m = pool.FindMethodByName("Public.Orders__place")
            out["method"] = {
                "input": m.input_type.full_name,
                "output": m.output_type.full_name,
                "input_fields": [x.name for x in m.input_type.fields],
            }
            doc = pool.FindMessageTypeByName("hale.api.DescriptionDocument")
            out["description_fields"] = [x.name for x in doc.fields]
            out["describe"] = call_reflected(
                raw, pool, plan, "hale.api.Description", "Describe", {}
            )
            out["result"] = call_reflected(
                raw, pool, plan, "Public", "Orders__place", plan["body"]
            )
            out["code"] = 0
        except grpc.RpcError as e:
            out["code"] = e.code().value[0]
            out["message"] = e.details()
        except KeyError as e:
            out["missing"] = str(e)
    return out


def reflect_once(channel, plan, pb2, pb2_grpc, request):
    stub = pb2_grpc.ServerReflectionStub(channel)
    call = stub.ServerReflectionInfo(iter([request]), metadata=metadata(plan), timeout=10)
    return list(call)


def run_grpcurl(plan):
    out = {}
    sys.path.insert(0, plan["v1_stubs"])
    import reflection_v1.reflection_pb2 as v1
    import reflection_v1.reflection_pb2_grpc as v1_grpc
    import grpc_reflection.v1alpha.reflection_pb2 as v1alpha
    import grpc_reflection.v1alpha.reflection_pb2_grpc as v1alpha_grpc

    versions = [("v1", v1, v1_grpc), ("v1alpha", v1alpha, v1alpha_grpc)]
    if plan.get("skip_v1"):
        versions = versions[1:]
    with grpc.insecure_channel(plan["target"]) as channel:
        for name, pb2, pb2_grpc in versions:
            try:
                got = reflect_once(channel, plan, pb2, pb2_grpc, pb2.ServerReflectionRequest(list_services=""))
            except grpc.RpcError as e:
                if e.code() == grpc.StatusCode.UNIMPLEMENTED:
                    out.setdefault("fell_back_from", []).append(name)
                    continue
                out["code"] = e.code().value[0]
                out["message"] = e.details()
                return out
            out["version"] = name
            out["services"] = [s.name for s in got[0].list_services_response.service]
            pool = descriptor_pool.DescriptorPool()
            for symbol in plan["symbols"]:
                got = reflect_once(
                    channel, plan, pb2, pb2_grpc,
                    pb2.ServerReflectionRequest(file_containing_symbol=symbol),
                )
                for raw in got[0].file_descriptor_response.file_descriptor_proto:
                    fdp = descriptor_pb2.FileDescriptorProto.FromString(raw)
                    try:
                        pool.Add(fdp)
                    except TypeError:
                        pass  # already added: the same file for two symbols
            out["result"] = call_reflected(
                channel, pool, plan, "Public", "Orders__place", plan["body"]
            )
            out["code"] = 0
            return out
    out["code"] = 12
    return out


def run_h2(plan):
    import h2.config
    import h2.connection
    import h2.events

    host, port = plan["target"].rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=10)
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    conn.initiate_connection()
    sock.sendall(conn.data_to_send())
    sid = conn.get_next_available_stream_id()
    headers = [
        (":method", "POST"),
        (":scheme", "http"),
        (":path", plan.get("path", "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo")),
        (":authority", plan["target"]),
        ("content-type", plan.get("content_type", "application/grpc")),
        ("te", "trailers"),
    ] + metadata(plan)
    conn.send_headers(sid, headers)
    sock.sendall(conn.data_to_send())
    frames = []
    state = {"ended": False}

    def pump(until):
        while not until():
            data = sock.recv(65536)
            if not data:
                state["ended"] = True
                return
            for ev in conn.receive_data(data):
                if isinstance(ev, h2.events.ResponseReceived):
                    frames.append({"headers": {k.decode(): v.decode() for k, v in ev.headers},
                                   "end_stream": ev.stream_ended is not None})
                elif isinstance(ev, h2.events.DataReceived):
                    frames.append({"data": base64.b64encode(ev.data).decode()})
                    conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
                elif isinstance(ev, h2.events.TrailersReceived):
                    frames.append({"trailers": {k.decode(): v.decode() for k, v in ev.headers}})
                elif isinstance(ev, h2.events.StreamEnded):
                    state["ended"] = True
                elif isinstance(ev, h2.events.StreamReset):
                    frames.append({"reset": ev.error_code})
                    state["ended"] = True
            sock.sendall(conn.data_to_send())

    def data_frames():
        return sum(1 for f in frames if "data" in f)

    for i, m in enumerate(plan["messages"]):
        if i > 0 and plan.get("pause"):
            # Time for the test to change the server between messages.
            time.sleep(plan["pause"])
        msg = base64.b64decode(m)
        framed = b"\0" + len(msg).to_bytes(4, "big") + msg
        cut = plan.get("cut", len(framed) // 2)
        for part in (framed[:cut], framed[cut:]):
            conn.send_data(sid, part)
            sock.sendall(conn.data_to_send())
        if plan.get("wait", True):
            pump(lambda: state["ended"] or data_frames() > i)
        if state["ended"]:
            break
    if not state["ended"] and plan.get("hold"):
        # The client keeps its side open: the server ends the call.
        pump(lambda: state["ended"])
    if not state["ended"]:
        if plan.get("tail"):
            conn.send_data(sid, base64.b64decode(plan["tail"]))
        conn.end_stream(sid)
        sock.sendall(conn.data_to_send())
        pump(lambda: state["ended"])
    sock.close()
    return {"frames": frames}


def main():
    plan = json.loads(sys.stdin.read())
    mode = plan["mode"]
    report = {
        "v1": run_v1,
        "v1alpha_db": run_v1alpha_db,
        "grpcurl": run_grpcurl,
        "h2": run_h2,
    }[mode](plan)
    print(json.dumps(report))


if __name__ == "__main__":
    main()
