"""An MCP client built with the official Python SDK, either line: mcp 1.x
(ClientSession over streamablehttp_client / stdio_client) or mcp 2.x
(Client, which probes server/discover before falling back on initialize).

A peer of limen's MCP transport and bridge (drivers/tests/mcp_live.rs).
It reads a plan on stdin:

    {"transport": "http", "url": …, "token": …, "calls": [{"label", "name", "arguments", "meta"?}]}
    {"transport": "stdio", "command": [...], "calls": [...]}

connects, lists the tools, makes each call, and prints one JSON report:

    {"sdk": "mcp 1.30.0", "server": {"name", "version"}, "protocol": …,
     "tools": [...], "calls": {label: {"result": {...}} | {"error": {"code", "message", "data"}}},
     "methods": [...] (mcp 2.x over HTTP: the methods it POSTed, in order)}

or {"connect_error": "…"} when the connection is refused.
"""

import asyncio
import json
import sys
from importlib.metadata import version

import mcp

SDK = "mcp " + version("mcp")
TWO = SDK.startswith("mcp 2.")

if TWO:
    import httpx2
    from mcp.client.client import Client
    from mcp.client.stdio import StdioServerParameters
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.exceptions import MCPError as Error
else:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from mcp.client.streamable_http import streamablehttp_client
    from mcp.shared.exceptions import McpError as Error


def dump(model):
    return model.model_dump(by_alias=True, mode="json", exclude_none=True)


async def calls(plan, call_tool):
    out = {}
    for c in plan["calls"]:
        kwargs = {}
        if c.get("meta"):
            kwargs["meta"] = c["meta"]
        try:
            result = await call_tool(c["name"], c["arguments"], **kwargs)
            out[c["label"]] = {"result": dump(result)}
        except Error as e:
            err = e.error
            out[c["label"]] = {
                "error": {"code": err.code, "message": err.message, "data": err.data}
            }
    return out


async def run_one(plan):
    if TWO:
        # The methods the client POSTs, in order, to show its probe.
        methods = []

        async def note(request):
            try:
                methods.append(json.loads(request.content)["method"])
            except Exception:  # noqa: BLE001 - a GET, a response, no body
                pass

        if plan["transport"] == "http":
            http = httpx2.AsyncClient(
                headers={"Authorization": f"Bearer {plan['token']}"},
                timeout=30,
                event_hooks={"request": [note]},
            )
            server = streamable_http_client(plan["url"], http_client=http)
        else:
            cmd = plan["command"]
            server = StdioServerParameters(command=cmd[0], args=cmd[1:])
        async with Client(server, raise_exceptions=True) as client:
            report = {
                "sdk": SDK,
                "server": dump(client.server_info),
                "protocol": client.protocol_version,
            }
            tools = await client.list_tools()
            report["tools"] = [dump(t) for t in tools.tools]
            report["calls"] = await calls(plan, client.call_tool)
            if plan["transport"] == "http":
                report["methods"] = methods
            return report

    async def with_session(read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            report = {
                "sdk": SDK,
                "server": dump(init.serverInfo),
                "protocol": init.protocolVersion,
            }
            tools = await session.list_tools()
            report["tools"] = [dump(t) for t in tools.tools]
            report["calls"] = await calls(plan, session.call_tool)
            return report

    if plan["transport"] == "http":
        headers = {"Authorization": f"Bearer {plan['token']}"}
        async with streamablehttp_client(plan["url"], headers=headers) as (read, write, _):
            return await with_session(read, write)
    cmd = plan["command"]
    params = StdioServerParameters(command=cmd[0], args=cmd[1:])
    async with stdio_client(params) as (read, write):
        return await with_session(read, write)


async def main():
    plan = json.load(sys.stdin)
    try:
        report = await asyncio.wait_for(run_one(plan), 60)
    except Exception as e:  # noqa: BLE001 - the report names what failed
        # A refused connection surfaces as the SDK's own error, often
        # wrapped in a task group's exception group.
        leaves = []

        def walk(x):
            subs = getattr(x, "exceptions", None)
            if subs:
                for s in subs:
                    walk(s)
            else:
                leaves.append(f"{type(x).__name__}: {x}")

        walk(e)
        report = {"sdk": SDK, "connect_error": "; ".join(leaves)}
    print(json.dumps(report))


asyncio.run(main())
