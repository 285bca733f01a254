"""Reads JSON lines ``{"schema": S, "text": T}`` on stdin and answers one
line each: ``{"ok": canonical text}`` (decoded at the schema's type, then
written again) or ``{"refused": path, "reason": why}``. Driven by
toolkit/tests/python_toolkit.rs, which holds the answers to core's."""

import json
import sys

from limen_toolkit.codec import Refused, decode, encode, path_text
from limen_toolkit.types import type_from_schema


def main() -> None:
    for line in sys.stdin:
        case = json.loads(line)
        ty, env = type_from_schema(case["schema"])
        try:
            value = decode(case["text"].encode("utf-8", "surrogatepass"), ty, env)
            answer = {"ok": encode(value, ty, env)}
        except Refused as e:
            answer = {"refused": path_text(e.path), "reason": e.reason.encode("utf-8", "backslashreplace").decode()}
        sys.stdout.write(json.dumps(answer) + "\n")


if __name__ == "__main__":
    main()
