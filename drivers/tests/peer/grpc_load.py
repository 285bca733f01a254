"""A gRPC load peer for drivers/tests/cluster_balancer.rs: grpcio, with stubs
grpcio-tools generated from our exported Public.proto, calling
Orders__place through a balancer until told to stop.

Plan (JSON on stdin): {"target": "host:port", "stubs": DIR, "workers": N,
"stop_file": PATH, "marker_file": PATH}. Each worker holds one channel and
calls one call after another until stop_file exists. For every call it
prints one JSON line as the call ends (flushed, so the test follows the
load as it goes):

  {"code": int, "kind": str | null, "node": str | null, "after": bool,
   "order": int | null}

- code: the gRPC status (0, or what the call ended with);
- kind: the refusal kind of the details' HaleRefusal (read with
  grpcio-status's rpc_status.from_call), null when there are none;
- node: the x-hale-node metadata the balancer set (initial or trailing);
- after: marker_file existed when the call began;
- order: the receipt's order id on success.

Last, {"done": true, "calls": total}.
"""

import json
import os
import sys
import threading

import grpc
from grpc_status import rpc_status

PRINT = threading.Lock()


def emit(line):
    with PRINT:
        sys.stdout.write(json.dumps(line) + "\n")
        sys.stdout.flush()


def node_of(*metadata):
    for md in metadata:
        for key, value in md or ():
            if key == "x-hale-node":
                return value
    return None


def worker(plan, pb, pb_grpc, counts, i):
    channel = grpc.insecure_channel(plan["target"])
    stub = pb_grpc.PublicStub(channel)
    service = pb.DESCRIPTOR.services_by_name["Public"]
    input_type = getattr(pb, service.methods_by_name["Orders__place"].input_type.name)
    message = input_type(symbol="ACME", qty=10, limit=12500)
    metadata = [("authorization", "Bearer t-alice")]
    n = 0
    while not os.path.exists(plan["stop_file"]):
        after = os.path.exists(plan["marker_file"])
        try:
            response, call = stub.Orders__place.with_call(message, metadata=metadata, timeout=30)
            emit(
                {
                    "code": 0,
                    "kind": None,
                    "node": node_of(call.initial_metadata(), call.trailing_metadata()),
                    "after": after,
                    "order": response.order,
                }
            )
        except grpc.RpcError as e:
            kind = None
            try:
                status = rpc_status.from_call(e)
            except Exception as err:  # details whose code or message differ
                status = None
                kind = "bad_details: %s" % err
            if status is not None and len(status.details) == 1:
                refusal = pb.HaleRefusal()
                refusal.ParseFromString(status.details[0].value)
                kind = refusal.kind
            emit(
                {
                    "code": e.code().value[0],
                    "kind": kind,
                    "node": node_of(e.initial_metadata(), e.trailing_metadata()),
                    "after": after,
                    "order": None,
                    "message": e.details(),
                }
            )
        n += 1
    channel.close()
    counts[i] = n


def main():
    plan = json.load(sys.stdin)
    sys.path.insert(0, plan["stubs"])
    import Public_pb2  # noqa: E402
    import Public_pb2_grpc  # noqa: E402

    counts = [0] * plan["workers"]
    threads = [
        threading.Thread(target=worker, args=(plan, Public_pb2, Public_pb2_grpc, counts, i))
        for i in range(plan["workers"])
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    emit({"done": True, "calls": sum(counts)})


if __name__ == "__main__":
    main()
