"""Drives one member of a generated Python client and prints its outcome.

Usage: driver.py DIR MODULE ENDPOINT MEMBER BEARER PAYLOAD ID DIGEST, where
DIR holds MODULE.py, BEARER is "" for none, PAYLOAD and ID are JSON (ID
null for none) and DIGEST the one to send (the module's own unless the
record was made against another). Prints one JSON line: {"result": V},
{"handler_error": E}, {"refusal": {...}}, {"server_error": true} or
{"transport_error": WHY}.
"""

from __future__ import annotations

import importlib
import json
import sys
import typing

folder, module, endpoint, member, bearer, payload, id_, digest = sys.argv[1:]
sys.path.insert(0, folder)
client = importlib.import_module(module)
# A record made against another digest: the module sends what DIGEST holds.
client.DIGEST = digest
call = client.MEMBERS[member]
hints = typing.get_type_hints(call)
args: list[object] = [endpoint, bearer or None]
if "request" in hints:
    kind = hints["request"]
    value = json.loads(payload)
    args.append(kind.from_json(value) if hasattr(kind, "from_json") else value)


def plain(value: object) -> object:
    return value.to_json() if hasattr(value, "to_json") else value


try:
    outcome = call(*args, id=json.loads(id_), timeout=10.0)
except client.TransportError as e:
    print(json.dumps({"transport_error": str(e)}))
    sys.exit(0)
match outcome:
    case client.Result(value=v):
        print(json.dumps({"result": plain(v)}))
    case client.HandlerError(error=e):
        print(json.dumps({"handler_error": plain(e)}))
    case client.Refusal(kind=k, reason=r, requires=q, served=s):
        print(json.dumps({"refusal": {"kind": k, "reason": r, "requires": list(q), "served": s}}))
    case client.ServerError():
        print(json.dumps({"server_error": True}))
