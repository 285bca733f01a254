// WebSocket clients nobody here wrote against `hale demo --hub`: Node's
// `ws` package (the credential as Authorization: Bearer) or Node's own
// WebSocket (`--experimental-websocket` on Node 20; a browser's API, which
// sets no header, so the credential rides ?access_token=). Each subscribes,
// reads the fill of an order placed over HTTP, is refused three ways, and
// reads `closed` when the demo stops. It asserts nothing: it prints what it
// saw as one JSON object for drivers/tests/hub_live.rs.
//
// usage: node [--experimental-websocket] hub_client.mjs ws|native HUB PUBLIC CONTROL
import { createRequire } from "node:module";
import net from "node:net";

const require = createRequire(new URL("../../../.peers/node/", import.meta.url));
const [mode, hub, publicAddr, control] = process.argv.slice(2);

// One connection: frames are queued as they arrive and taken in order.
function open(token) {
  let ws;
  if (mode === "ws") {
    const WebSocket = require("ws");
    const headers = token ? { Authorization: `Bearer ${token}` } : {};
    ws = new WebSocket(`ws://${hub}/`, { headers });
  } else {
    const query = token ? `?access_token=${encodeURIComponent(token)}` : "";
    ws = new globalThis.WebSocket(`ws://${hub}/${query}`);
  }
  const frames = [];
  const waiting = [];
  let closeCode = null;
  const push = (item) => (waiting.length ? waiting.shift()(item) : frames.push(item));
  const onMessage = (data) => push(JSON.parse(String(data)));
  const onClose = (code) => {
    closeCode = code;
    push({ closedConnection: code });
  };
  if (mode === "ws") {
    ws.on("message", onMessage);
    ws.on("close", onClose);
  } else {
    ws.addEventListener("message", (e) => onMessage(e.data));
    ws.addEventListener("close", (e) => onClose(e.code));
  }
  const opened = new Promise((resolve, reject) => {
    if (mode === "ws") {
      ws.on("open", resolve);
      ws.on("error", reject);
    } else {
      ws.addEventListener("open", resolve);
      ws.addEventListener("error", reject);
    }
  });
  const next = () =>
    frames.length
      ? Promise.resolve(frames.shift())
      : new Promise((resolve, reject) => {
          waiting.push(resolve);
          setTimeout(() => reject(new Error("no frame in 10 s")), 10000).unref();
        });
  const ask = async (frame) => {
    ws.send(JSON.stringify(frame));
    return next();
  };
  return { ws, opened, next, ask, code: () => closeCode };
}

async function place(qty, limit) {
  const r = await fetch(`http://${publicAddr}/call/Orders::place`, {
    method: "POST",
    headers: { Authorization: "Bearer t-alice" },
    body: JSON.stringify({ symbol: "ACME", qty, limit }),
  });
  return r.json();
}

function stop() {
  return new Promise((resolve, reject) => {
    const c = net.createConnection(control, () => c.write("stop\n"));
    c.on("data", () => {
      c.end();
      resolve();
    });
    c.on("error", reject);
  });
}

const out = { client: mode === "ws" ? `ws ${require("ws/package.json").version}` : `node ${process.version} WebSocket` };
const dave = open("t-dave");
const anonymous = open(null);
const bob = open("t-bob");
await Promise.all([dave.opened, anonymous.opened, bob.opened]);
out.subscribed = await dave.ask({ type: "subscribe", topic: "Fills" });
const receipt = await place(10, 12500);
out.first = { receipt, event: await dave.next() };
out.refusals = {
  unauthenticated: await anonymous.ask({ type: "subscribe", topic: "Fills" }),
  unauthorized: await bob.ask({ type: "subscribe", topic: "Fills" }),
  unknown_topic: await dave.ask({ type: "subscribe", topic: "Quotes" }),
};
await stop();
out.closing = [await dave.next(), await dave.next()];
console.log(JSON.stringify(out));
process.exit(0);
