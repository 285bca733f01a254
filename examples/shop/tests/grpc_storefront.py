"""A gRPC client of the shop's storefront built with grpcio and the stubs
grpcio-tools generates from the exported Storefront.proto (`hale api
export --surface Storefront`): generates them into STUBS, calls each
(RPC, JSON request) given as argument pairs as TOKEN, and prints one JSON
line per call: {"code": the status's name, "response": the message as
JSON (or null), "details": the status's message}."""
import json
import sys

proto_dir, stubs, target, token = sys.argv[1:5]
calls = sys.argv[5:]

from grpc_tools import protoc  # noqa: E402

if protoc.main(["protoc", f"-I{proto_dir}", f"--python_out={stubs}", f"--grpc_python_out={stubs}", "Storefront.proto"]) != 0:
    sys.exit("protoc failed")
sys.path.insert(0, stubs)

import grpc  # noqa: E402
from google.protobuf import json_format  # noqa: E402

import Storefront_pb2  # noqa: E402
import Storefront_pb2_grpc  # noqa: E402

service = Storefront_pb2.DESCRIPTOR.services_by_name["Storefront"]
channel = grpc.insecure_channel(target)
stub = Storefront_pb2_grpc.StorefrontStub(channel)
for rpc, body in zip(calls[::2], calls[1::2]):
    method = service.methods_by_name[rpc]
    request = json_format.ParseDict(json.loads(body), getattr(Storefront_pb2, method.input_type.name)())
    try:
        response = getattr(stub, rpc)(request, metadata=[("authorization", f"Bearer {token}")], timeout=10)
        out = {"code": "OK", "response": json_format.MessageToDict(response, preserving_proto_field_name=True), "details": ""}
    except grpc.RpcError as e:
        out = {"code": e.code().name, "response": None, "details": e.details()}
    print(json.dumps(out), flush=True)
