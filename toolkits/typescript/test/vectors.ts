/**
 * Reads JSON lines `{"schema": S, "text": T}` on stdin and answers one line
 * each: `{"ok": canonical text}` (decoded at the schema's type, then written
 * again) or `{"refused": path, "reason": why}`. Driven by
 * toolkit/tests/typescript_toolkit.rs, which holds the answers to core's
 * (the same vectors as the Python toolkit's).
 */

import { Refused, decode, encode, pathText, typeFromSchema } from "../src/index.js";

const input: Buffer[] = [];
process.stdin.on("data", (c: Buffer) => input.push(c));
process.stdin.on("end", () => {
  const out: string[] = [];
  for (const line of Buffer.concat(input).toString("utf8").split("\n")) {
    if (line.trim() === "") continue;
    const c = JSON.parse(line) as { schema: unknown; text: string };
    const [ty, env] = typeFromSchema(c.schema);
    try {
      const value = decode(Buffer.from(c.text, "utf8"), ty, env);
      out.push(JSON.stringify({ ok: encode(value, ty, env) }));
    } catch (e) {
      if (!(e instanceof Refused)) throw e;
      out.push(JSON.stringify({ refused: pathText(e.path), reason: e.reason }));
    }
  }
  process.stdout.write(out.map((l) => l + "\n").join(""));
});
