// An MCP client built with the official TypeScript SDK
// (@modelcontextprotocol/sdk, its Client), over StreamableHTTPClientTransport
// (which sends a GET for an event stream once initialized, and must get a
// quiet 405) or StdioClientTransport.
//
// A peer of limen's MCP transport and bridge (drivers/tests/mcp_live.rs),
// taking the plan and printing the report drivers/tests/peer/mcp_client.py
// does. The SDK is the one scripts/install-peers puts in <repo>/.peers/node.
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const require = createRequire(new URL("../../../.peers/node/", import.meta.url));
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StreamableHTTPClientTransport } = require("@modelcontextprotocol/sdk/client/streamableHttp.js");
const { StdioClientTransport } = require("@modelcontextprotocol/sdk/client/stdio.js");
const pkg = new URL("../../../.peers/node/node_modules/@modelcontextprotocol/sdk/package.json", import.meta.url);
const sdk = "@modelcontextprotocol/sdk " + JSON.parse(readFileSync(fileURLToPath(pkg), "utf8")).version;

// Every HTTP exchange the transport makes: its method and status.
const exchanges = [];
const recording = async (url, init) => {
  const response = await fetch(url, init);
  exchanges.push({ method: init?.method ?? "GET", status: response.status });
  return response;
};

const plan = JSON.parse(readFileSync(0, "utf8"));
const transport =
  plan.transport === "http"
    ? new StreamableHTTPClientTransport(new URL(plan.url), {
        requestInit: { headers: { Authorization: `Bearer ${plan.token}` } },
        fetch: recording,
      })
    : new StdioClientTransport({ command: plan.command[0], args: plan.command.slice(1), stderr: "ignore" });
const client = new Client({ name: "limen-peer", version: "1.0.0" });
// Errors the transport reports outside any request (a failed GET stream).
const transportErrors = [];
client.onerror = (e) => transportErrors.push(String(e));

let report;
try {
  await client.connect(transport);
  report = {
    sdk,
    server: client.getServerVersion(),
    protocol: transport.protocolVersion ?? null,
    tools: (await client.listTools()).tools,
    calls: {},
  };
  for (const c of plan.calls) {
    const params = { name: c.name, arguments: c.arguments };
    if (c.meta) params._meta = c.meta;
    try {
      report.calls[c.label] = { result: await client.callTool(params) };
    } catch (e) {
      report.calls[c.label] = { error: { code: e.code, message: e.message, data: e.data ?? null } };
    }
  }
  // Give the transport's GET a moment to be answered before closing.
  await new Promise((r) => setTimeout(r, 200));
  report.transport_errors = transportErrors;
  report.exchanges = exchanges;
} catch (e) {
  report = { sdk, connect_error: `${e.name}: ${e.message}`, code: e.code ?? null };
}
await client.close().catch(() => {});
console.log(JSON.stringify(report));
process.exit(0);
