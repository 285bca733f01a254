"""The witness's Ledger as an MCP server on stdio (the MCP Python SDK's
FastMCP): `rebalance` moves 1500 cent a call, and a book named "" is the
violation the witness's handler reports."""
from mcp.server.fastmcp import FastMCP

server = FastMCP("ledger")
moved = 0


@server.tool()
def rebalance(r: dict) -> dict:
    global moved
    if not r.get("book"):
        raise ValueError("books_balanced")
    moved += 1500
    return {"moved": 1500}


if __name__ == "__main__":
    server.run("stdio")
