"""A Tool over the fixture listing whose generic handlers do what the
fixture Tool never does, for toolkit/tests/python_serve.rs: print to
stdout, write to file descriptor 1, suspend for a while, return a value of
the wrong type, raise NotRun, let the host's cancel escape, run as a plain
(not ``async``) function. ``python serve_cases.py [MAX_LINE] [lazy]
[--listing PATH]`` (by default the fixture listing).

``echo(text)`` acts on its text:

- ``print``: ``print()`` to stdout (refused), ``fd``: writes to fd 1 (which
  points at stderr while serving) and answers ``"fd"``;
- ``sleep N``: awaits N milliseconds, then answers its text;
- ``wrong``: returns an ``int``; ``not run``: raises NotRun;
- ``hang``: awaits half a minute, letting a cancel escape;
- ``timeout``: enters ``asyncio.timeout()`` before any await (which needs
  the call's task: served with ``lazy``, as ``eager=False``);
- anything else: answers its text.

``add`` is a plain function; ``fail`` raises Failed with a value that is
not an ``EchoError``; every other Tool answers its first argument.
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(_HERE, "..", "src"))

from limen_toolkit.serve import (  # noqa: E402
    Context, Failed, Handler, NotRun, ToolkitLimits, serve,
)

LISTING = os.path.join(_HERE, "..", "..", "..", "toolkit", "tests", "fixtures", "listing.json")
TOOL = "example.com/limen-fixtures@0.3.0/echo.flow."


async def echo(cx: Context, args: list[Any]) -> Any:
    text = args[0]
    if text == "print":
        print("hello")
        return "printed"
    if text == "fd":
        os.write(1, b"garbage on fd 1\n")
        return "fd"
    if text.startswith("sleep "):
        await asyncio.sleep(int(text[6:]) / 1000)
        return text
    if text == "wrong":
        return 5
    if text == "not run":
        raise NotRun("nothing done")
    if text == "hang":
        await asyncio.sleep(30)
    if text == "timeout":
        async with asyncio.timeout(5):
            await asyncio.sleep(0)
    return text


def add(cx: Context, args: list[Any]) -> Any:
    return args[0] + args[1]


async def fail(cx: Context, args: list[Any]) -> Any:
    raise Failed("not an EchoError")


async def same(cx: Context, args: list[Any]) -> Any:
    return args[0]


def main() -> None:
    args = sys.argv[1:]
    path = LISTING
    if "--listing" in args:
        at = args.index("--listing")
        path = args[at + 1]
        del args[at:at + 2]
    with open(path, encoding="utf-8") as f:
        listing = f.read()
    names = ["echo", "add", "note", "reshape", "fail", "crash", "identity", "grow", "everything"]
    handlers: dict[str, Handler] = {TOOL + n: same for n in names}
    handlers[TOOL + "echo"] = echo
    handlers[TOOL + "add"] = add
    handlers[TOOL + "fail"] = fail
    limits = ToolkitLimits(max_line=int(args[0])) if args and args[0].isdigit() else ToolkitLimits()
    serve(listing, handlers, limits=limits, eager="lazy" not in args)


if __name__ == "__main__":
    main()
