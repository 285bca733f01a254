/**
 * A hand-written Tool on the generic API (no generated code): serves the
 * project's fixture listing (its path the first argument) with the fixture
 * Tool's behaviour, written over generic values. The toolkit's own tests
 * (toolkit/tests/typescript_toolkit.rs) and its measurement
 * (benches/scripts/tool-vs-echo with FIXTURE=) run it; the generated
 * fixture is the generator's.
 *
 * `crash` also takes "print" (the handler writes to standard output, which
 * the loop refuses) and "later" (an answer on a promise, a tick later).
 */

import { closeSync, openSync, readFileSync } from "node:fs";

import { Context, Failed, Handler, Unknown, jsonText, serve, some } from "../src/index.js";
import type { JsonValue } from "../src/index.js";

const listing = readFileSync(process.argv[2] ?? "toolkit/tests/fixtures/listing.json", "utf8");
const id = (name: string): string => `example.com/limen-fixtures@0.3.0/echo.flow.${name}`;

type Tree = { label: string; children: Tree[]; parent: unknown };

function whenCancelled(cx: Context, path: string): Promise<never> {
  closeSync(openSync(path, "w"));
  return new Promise((_, reject) => {
    const timer = setTimeout(() => reject(new Unknown("never cancelled")), 30_000);
    const stop = (): void => {
      clearTimeout(timer);
      reject(new Unknown("stopped: the host cancelled the call"));
    };
    if (cx.signal.aborted) stop();
    else cx.signal.addEventListener("abort", stop, { once: true });
  });
}

const handlers: Record<string, Handler> = {
  [id("echo")]: (_cx, [text]) => text,
  [id("add")]: (_cx, [a, b]) => (a as bigint) + (b as bigint),
  [id("note")]: (_cx, [note]) => note,
  [id("reshape")]: (_cx, [shape]) => shape,
  [id("everything")]: (_cx, [all]) => all,
  [id("grow")]: (_cx, [tree]) => {
    const t = tree as Tree;
    return { ...t, children: [...t.children, { label: `${t.label}/leaf`, children: [], parent: null }] };
  },
  [id("identity")]: (cx, [value]) => {
    const schema = cx.expects as { [k: string]: JsonValue } | null;
    const s = schema?.["$schema"];
    return { items: [value], next: s === undefined ? null : some(jsonText(s)) };
  },
  [id("fail")]: (_cx, [reason]) => {
    throw new Failed({ $tag: "Refused", value: reason });
  },
  [id("crash")]: (cx, [how]) => {
    const h = how as string;
    if (h === "panic") throw new Error("asked to panic");
    if (h === "exit") process.exit(3);
    if (h === "print") {
      console.log("hello");
      return "printed";
    }
    if (h === "later") return new Promise((resolve) => setTimeout(() => resolve("later"), 10));
    if (h.startsWith("when cancelled")) return whenCancelled(cx, h.slice("when cancelled".length).trim());
    throw new Unknown(`asked to stop: ${h}`);
  },
};

serve(listing, handlers).catch((e: unknown) => {
  process.stderr.write(`echo: ${String(e)}\n`);
  process.exit(1);
});
