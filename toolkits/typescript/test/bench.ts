/**
 * The serve loop's own cost, without pipes: N echo calls fed in 64 KiB
 * reads to `serve` through an in-memory input, replies counted and
 * dropped. `node build/test/bench.js LISTING [N [TOOL ARGS]]` prints calls
 * per second (TOOL a fixture Tool's name, `echo` by default, ARGS its args
 * object's JSON text).
 * A profile of this (node --cpu-prof) shows the loop alone.
 */

import { readFileSync } from "node:fs";
import { EventEmitter } from "node:events";

import { CallInput, Handler, ReplyOutput, serve } from "../src/index.js";

const listing = readFileSync(process.argv[2] ?? "toolkit/tests/fixtures/listing.json", "utf8");
const n = Number(process.argv[3] ?? 1_000_000);
const tool = process.argv[4] ?? "echo";
const args = process.argv[5] ?? '{"text":"the quick brown fox jumps over the lazy dog"}';
const line = (i: number): string =>
  `{"jsonrpc":"2.0","method":"call","params":{"runId":"run-1","callId":"${i}","tool":"example.com/limen-fixtures@0.3.0/echo.flow.${tool}","args":${args}}}\n`;
const chunks: Buffer[] = [];
let text = "";
for (let i = 0; i < n; i++) {
  text += line(i);
  if (text.length > 65536 - 256) {
    chunks.push(Buffer.from(text));
    text = "";
  }
}
chunks.push(Buffer.from(text));

class Input extends EventEmitter implements CallInput {
  pause(): void {}
  resume(): void {}
}
let bytes = 0;
const output: ReplyOutput = {
  write(chunk: string, cb?: (e?: Error | null) => void): boolean {
    bytes += chunk.length;
    if (cb) setImmediate(cb);
    return true;
  },
  on(): unknown {
    return this;
  },
};
const input = new Input();
const start = process.hrtime.bigint();
// Every Tool answers its first argument: only echo is called.
const handlers: Record<string, Handler> = {};
for (const t of (JSON.parse(listing) as { tools: { tool: string }[] }).tools) handlers[t.tool] = (_cx, [v]) => v;
const done = serve(listing, handlers, { stdin: input, stdout: output });
for (const c of chunks) input.emit("data", c);
input.emit("end");
void done.then(() => {
  const s = Number(process.hrtime.bigint() - start) / 1e9;
  process.stderr.write(`${Math.round(n / s)} calls/s (${n} calls in ${s.toFixed(3)} s, ${bytes} bytes out)\n`);
});
