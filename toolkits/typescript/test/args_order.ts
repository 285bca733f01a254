/**
 * Args read by a Tool's plan land in declaration order: the fixture's
 * `add` declared as (b, a) (its fingerprint computed again), called with
 * the args as a host writes them (by name: a, then b), and otherwise.
 * Writes the replies; toolkit/tests/typescript_toolkit.rs checks them.
 */

import { EventEmitter } from "node:events";
import { readFileSync } from "node:fs";

import { CallInput, Handler, fingerprintOfSignature, serve } from "../src/index.js";

type Entry = { tool: string; fingerprint: string; signature: { params: unknown[] } };
const doc = JSON.parse(readFileSync(process.argv[2] ?? "toolkit/tests/fixtures/listing.json", "utf8")) as { tools: Entry[] };
const add = doc.tools.find((t) => t.tool.endsWith(".add"));
if (add === undefined) throw new Error("the fixture listing has no add");
add.signature.params.reverse();
add.fingerprint = fingerprintOfSignature(add.signature);
const handlers: Record<string, Handler> = {};
for (const t of doc.tools) handlers[t.tool] = (_cx, [v]) => v;
handlers[add.tool] = (_cx, [b, a]) => (b as bigint) - (a as bigint);

class Input extends EventEmitter implements CallInput {
  pause(): void {}
  resume(): void {}
}
const input = new Input();
let out = "";
const done = serve(JSON.stringify(doc), handlers, {
  stdin: input,
  stdout: {
    write: (c: string, cb?: () => void) => {
      out += c;
      cb?.();
      return true;
    },
    on: () => undefined,
  },
});
const call = (id: string, args: string): string =>
  `{"jsonrpc":"2.0","method":"call","params":{"runId":"r","callId":"${id}","tool":"${add.tool}","args":${args}}}\n`;
input.emit("data", Buffer.from(call("plan", '{"a":1,"b":10}') + call("bad", '{"a":"x","b":"y"}') + call("other", '{"b":10,"a":1}')));
input.emit("end");
void done.then(() => process.stdout.write(out));
