// The driver clients/tests/ts.rs runs the witness's TypeScript client
// through: one JSON command a line on stdin, one JSON answer a line on
// stdout, so the Rust test drives calls and subscriptions and the hub's
// control socket in whatever order a case needs.
//
//   {"op": "call", "tag": T, "endpoint": E, "member": M, "bearer": B, "payload": P}
//     -> {"tag": T, "outcome": <the outcome as the client answered it>}
//     or {"tag": T, "transport_error": <message>} when it threw TransportError
//     or {"tag": T, "thrown": <error>} when it threw anything else
//   {"op": "subscribe", "tag": T, "endpoint": E, "bearer": B}
//     -> {"tag": T, "item": <item>} for each item, as it comes
//   {"op": "stop", "tag": T}  -> ends that subscription (the loop breaks)
//
// It is compiled with the client under the flags the client is held to.

import * as client from "./Public.js";

// Node's process, as much of it as the driver uses (no @types/node: the
// client needs none, and neither does its test).
declare const process: {
    stdout: { write(text: string): boolean };
    stdin: { setEncoding(e: string): void; on(event: "data", f: (chunk: string) => void): void };
};

type Call = (endpoint: string, bearer: string | null, payload: unknown) => Promise<{ kind: string }>;

// The members, each through its typed function (the payload is the
// record's, which a typed caller would have built as the request).
const calls: { [member: string]: Call } = {
    "Orders::cancel": (e, b, p) => client.ordersCancel(e, b, p as client.CancelOrder),
    "Orders::place": (e, b, p) => client.ordersPlace(e, b, p as client.PlaceOrder),
};

const stops = new Map<string, AbortController>();

function say(answer: object): void {
    process.stdout.write(`${JSON.stringify(answer)}\n`);
}

async function call(tag: string, endpoint: string, member: string, bearer: string | null, payload: unknown): Promise<void> {
    const f = calls[member];
    if (f === undefined) throw new Error(`no member ${member}`);
    try {
        say({ tag, outcome: await f(endpoint, bearer, payload) });
    } catch (e) {
        if (e instanceof client.TransportError) say({ tag, transport_error: e.message });
        else say({ tag, thrown: String(e) });
    }
}

async function subscribe(tag: string, endpoint: string, bearer: string | null): Promise<void> {
    const stop = new AbortController();
    stops.set(tag, stop);
    for await (const item of client.subscribeFills({ endpoint, bearer, signal: stop.signal })) {
        say({ tag, item });
    }
    say({ tag, done: true });
}

interface Command {
    op: string;
    tag: string;
    endpoint: string;
    member: string;
    bearer: string | null;
    payload: unknown;
}

let pending = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk: string) => {
    pending += chunk;
    let at: number;
    while ((at = pending.indexOf("\n")) >= 0) {
        const c = JSON.parse(pending.slice(0, at)) as Command;
        pending = pending.slice(at + 1);
        const done = (e: unknown) => say({ tag: c.tag, error: String(e) });
        if (c.op === "call") call(c.tag, c.endpoint, c.member, c.bearer, c.payload).catch(done);
        else if (c.op === "subscribe") subscribe(c.tag, c.endpoint, c.bearer).catch(done);
        else if (c.op === "stop") stops.get(c.tag)?.abort();
    }
});
