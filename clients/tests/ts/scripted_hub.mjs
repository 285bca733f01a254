// A hub that writes what it is told: for the frames a real hub does not
// write on demand (a gap in seq without a stalled reader, frames outside
// the contract). clients/tests/ts.rs runs it with the path of Node's `ws`
// package (a peer under .peers/node) as its one argument.
//
// It prints its port, then for each connection one JSON line: the
// request's path and query, and the first frame the client sent. The
// credential (`?access_token=`) names the script the connection gets:
// SCRIPTS[token], frames written in order after the subscribe, then the
// end: "close" (a close frame), "cut" (the socket destroyed, no close
// frame) or "hold" (nothing more).

const { WebSocketServer } = await import(process.argv[2]);

const event = (seq, n) => ({ type: "event", topic: "Fills", seq, payload: { order: n, qty: 1, price: 2 } });
const subscribed = { type: "subscribed", topic: "Fills" };
const closed = { type: "closed", reason: "shutting_down" };

const SCRIPTS = {
    // seq 2 and 3 were shed: the gap shows at seq 4.
    "gap": [[subscribed, event(1, 41), event(4, 44), event(5, 45), closed], "close"],
    // A reply and another topic's event share the connection: not this
    // subscription's.
    "shared": [[subscribed, { type: "reply", request_id: 1, id: "c1", ok: true, value: {} },
        { type: "event", topic: "Other", seq: 9, payload: {} }, event(1, 41), closed], "close"],
    // The connection ends with no closed frame.
    "cut": [[subscribed, event(1, 41)], "cut"],
    // Admitted, then nothing: the consumer ends it.
    "quiet": [[subscribed], "hold"],
    // Frames outside the contract.
    "reason": [[subscribed, { type: "unauthorized", topic: "Fills", reason: "bored" }], "hold"],
    "backwards": [[subscribed, event(2, 42), event(2, 42)], "hold"],
    "text": [[subscribed, "not json"], "hold"],
    "type": [[subscribed, { type: "gossip", topic: "Fills" }], "hold"],
};

const wss = new WebSocketServer({ host: "127.0.0.1", port: 0 });
wss.on("listening", () => console.log(JSON.stringify({ port: wss.address().port })));
wss.on("connection", (ws, req) => {
    const url = new URL(req.url, "ws://hub");
    const token = url.searchParams.get("access_token");
    ws.once("message", (data) => {
        console.log(JSON.stringify({ url: req.url, token, first: JSON.parse(String(data)) }));
        const [frames, end] = SCRIPTS[token] ?? [[{ type: "refusal", topic: "Fills",
            refusal: { kind: "unauthenticated", reason: "no such token" } }], "hold"];
        for (const f of frames) ws.send(typeof f === "string" ? f : JSON.stringify(f));
        if (end === "close") ws.close();
        if (end === "cut") ws.terminate();
    });
});
