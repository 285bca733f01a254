/**
 * Reads a listing on stdin and writes one line per Tool: the fingerprint
 * the toolkit computes from its signature. Then serves the listing (every
 * Tool answering its first argument) on an input that has already ended,
 * so the listing is read as `serve` reads it, and writes `served`. Driven
 * by toolkit/tests/typescript_toolkit.rs, which holds the fingerprints to
 * core's.
 */

import { EventEmitter } from "node:events";

import { CallInput, Handler, ReplyOutput, fingerprintOfSignature, serve } from "../src/index.js";

const input: Buffer[] = [];
process.stdin.on("data", (c: Buffer) => input.push(c));
process.stdin.on("end", () => {
  const listing = Buffer.concat(input).toString("utf8");
  const doc = JSON.parse(listing) as { tools: { tool: string; signature: unknown }[] };
  const lines = doc.tools.map((t) => fingerprintOfSignature(t.signature));
  const handlers: Record<string, Handler> = {};
  for (const t of doc.tools) handlers[t.tool] = (_cx, [v]) => v;
  class Ended extends EventEmitter implements CallInput {
    pause(): void {}
    resume(): void {}
  }
  const ended = new Ended();
  const output: ReplyOutput = {
    write: (_c: string, cb?: () => void) => {
      if (cb) cb();
      return true;
    },
    on: () => output,
  };
  const done = serve(listing, handlers, { stdin: ended, stdout: output });
  ended.emit("end");
  done.then(
    () => process.stdout.write(lines.map((l) => l + "\n").join("") + "served\n"),
    (e: unknown) => {
      process.stderr.write(`${String(e)}\n`);
      process.exit(1);
    },
  );
});
