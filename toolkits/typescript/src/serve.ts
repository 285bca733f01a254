/**
 * The serve loop: the implementation's side of the Tool protocol over
 * standard input and output (§ Tool protocol, § Toolkits), as core's
 * `ToolkitConn` and the Rust toolkit's `serve.rs` behave, worded as they
 * word it.
 *
 * - describe is answered from the listing's text as given: its declarations
 *   and fingerprints byte for byte (the text without the whitespace between
 *   its tokens).
 * - A call's args are decoded at the declared types (a type parameter's
 *   values as `json.Value`); args that do not decode, or a tool not served,
 *   are answered NotRun in core's words, and the author's code never runs.
 * - Calls run concurrently: a handler that returns a promise leaves the loop
 *   free to read and start more. One that returns at once is answered at
 *   once, with no promise made for it.
 * - The four outcomes: a value is Ok; a thrown {@link Failed} is Failed; a
 *   thrown {@link NotRun} or {@link Unknown} says so; anything else thrown
 *   is Unknown ("the Tool's code threw Error: …").
 * - A cancel aborts the call's `signal`; a call cancelled before its code
 *   started is NotRun and never runs; a handler that rejects with the
 *   signal's reason is Unknown "cancelled by the host".
 * - Standard output is the protocol's: while serving, `process.stdout.write`
 *   and `console.log` (and its siblings that write there) throw an error that
 *   says to write to standard error.
 */

import { isUtf8 } from "node:buffer";

import { DEFAULT_LIMITS, Limits, Scope, compareCodePoints, decodeRaw, encode } from "./codec.js";
import { Raw, RawNum, RawObj, Reader, Refused, readRaw, stringText } from "./json.js";
import { fingerprintOfSignature } from "./fingerprint.js";
import { Env, JSON_VALUE, Type, close, typeFromSchema } from "./types.js";
import { JsonValue } from "./values.js";

/** One call, as the author's code sees it beside its arguments. */
export interface Context {
  /** The host's run id. With {@link Context.callId}, the call's correlation key; a call sent again after a crash has the same key. */
  readonly runId: string;
  /** The call's history id. */
  readonly callId: string;
  /** For a generic Tool, the schema of the success type the caller expects (a type parameter's values are JSON of that shape); else `null`. */
  readonly expects: JsonValue | null;
  /** Aborted when the host cancels the call. A cancel proves nothing: the call is still answered with what its code returns or throws. */
  readonly signal: AbortSignal;
}

/** The declared error: the reply is Failed with `value` (a value of the declared error type). */
export class Failed extends Error {
  override name = "Failed";
  /** The declared error's value. */
  readonly value: unknown;
  /** Failed with `value`. */
  constructor(value: unknown) {
    super("the Tool's declared error");
    this.value = value;
  }
}

/** The call may or may not have happened: the reply is Unknown with `reason`. */
export class Unknown extends Error {
  override name = "Unknown";
  /** Why. */
  readonly reason: string;
  /** Unknown for `reason`. */
  constructor(reason: string) {
    super(reason);
    this.reason = reason;
  }
}

/** The call did not happen (say so only when nothing was done): the reply is NotRun with `reason`. */
export class NotRun extends Error {
  override name = "NotRun";
  /** Why. */
  readonly reason: string;
  /** NotRun for `reason`. */
  constructor(reason: string) {
    super(reason);
    this.reason = reason;
  }
}

/** The author's code for one Tool: generic args in (one per parameter, in declaration order), the success value out, or one of the throwables. */
export type Handler = (cx: Context, args: unknown[]) => unknown | Promise<unknown>;

/**
 * Where calls come from: what the loop uses of a Node `Readable` (declared
 * here so the package's types need no `@types/node`).
 */
export interface CallInput {
  /** `"data"` (a `Uint8Array` or string chunk), `"end"`, `"error"`. */
  on(event: string, listener: (...args: any[]) => void): unknown;
  /** Stops `"data"` while the output drains. */
  pause(): unknown;
  /** Starts `"data"` again. */
  resume(): unknown;
}

/** Where replies go: what the loop uses of a Node `Writable`. */
export interface ReplyOutput {
  /** Writes `chunk`; `false` asks the writer to wait for `"drain"`. */
  write(chunk: string, callback?: (error?: Error | null) => void): boolean;
  /** `"drain"`, `"error"`. */
  on(event: string, listener: (...args: any[]) => void): unknown;
}

/** How {@link serve} runs. */
export interface ServeOptions {
  /** Where calls come from (default `process.stdin`). */
  stdin?: CallInput;
  /** Where replies go (default `process.stdout`, which the author's code may then not write to). */
  stdout?: ReplyOutput;
  /** The decoding limits of every argument (default core's). */
  limits?: Limits;
  /** The longest line read, in bytes without its newline (default the limits' `maxBytes`). */
  maxLine?: number;
}

/** The NotRun reason of a call cancelled before its code started (the Rust toolkit's words). */
export const CANCELLED_BEFORE = "cancelled before the Tool's code started";
/** The Unknown reason of a call whose code stopped with the cancel's own reason. */
export const CANCELLED_BY_HOST = "cancelled by the host";

/** What the author's code meets when it writes to standard output while serving. */
export const STDOUT_TAKEN =
  "standard output carries the Tool protocol while limen-toolkit serves: write to standard error instead (console.error, process.stderr.write)";

// -- the declarations served ---------------------------------------------------

interface Param {
  readonly name: string;
  readonly ty: Type;
  readonly env: Env;
}

interface Served {
  readonly identity: string;
  readonly params: readonly Param[];
  readonly ok: Type;
  readonly okEnv: Env;
  readonly err: Type;
  readonly errEnv: Env;
  /** The type parameters, each bound to `json.Value`. */
  readonly scope: Scope;
  readonly handler: Handler;
  /** What a call as hosts write it holds from the end of its call id to its args: `","tool":"<identity>","args":`. */
  readonly fastPart: string;
  /** How a host's args object spells each parameter, in the order it writes them (by name): `{"a":`, `,"b":` (the closing `}` after). */
  readonly argsPlan: readonly string[];
  /** The parameter (its index in `params`) of each entry of `argsPlan`. */
  readonly argsOrder: readonly number[];
}

type Obj = { [key: string]: unknown };
const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);

/** The listing's text without the whitespace between its tokens (strings kept byte for byte). */
export function compact(text: string): string {
  let out = "";
  let from = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) {
      inString = true;
    } else if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) {
      out += text.slice(from, i);
      from = i + 1;
    }
  }
  return out + text.slice(from);
}

function readListing(listing: string, handlers: Record<string, Handler>): Served[] {
  const doc: unknown = JSON.parse(listing);
  if (!isObj(doc) || !Array.isArray(doc["tools"]) || typeof doc["data"] !== "string") {
    throw new Error('the listing: a listing is {"data", "tools"}');
  }
  if (doc["data"].split(".")[0] !== "1") {
    throw new Error(`the listing: data version ${doc["data"]} has another major than ours, 1.0`);
  }
  const served = doc["tools"].map((entry: unknown, i: number): Served => {
    const at = `the listing's $.tools[${i}]`;
    if (!isObj(entry) || typeof entry["tool"] !== "string" || !isObj(entry["signature"])) {
      throw new Error(`${at}: an entry is {"tool", "fingerprint", "signature"}`);
    }
    const identity = entry["tool"];
    const sig = entry["signature"];
    // Each listed fingerprint must be its signature's, as core's
    // `Listing::parse` requires: describe answers with it byte for byte.
    let computed: string;
    try {
      computed = fingerprintOfSignature(sig);
    } catch (e) {
      throw new Error(`${at}.signature: ${e instanceof Error ? e.message : String(e)}`);
    }
    if (entry["fingerprint"] !== computed) {
      throw new Error(`${at}.fingerprint: the listed fingerprint ${String(entry["fingerprint"])} is not the signature's, ${computed}`);
    }
    const handler = handlers[identity];
    if (typeof handler !== "function" || !Object.prototype.hasOwnProperty.call(handlers, identity)) {
      throw new Error(`no handler for the Tool \`${identity}\` the listing declares`);
    }
    const generic = Array.isArray(sig["generic"]) ? sig["generic"].map(String) : [];
    const scope: Scope = new Map(generic.map((g) => [g, JSON_VALUE]));
    const params = (Array.isArray(sig["params"]) ? sig["params"] : []).map((p: unknown): Param => {
      if (!Array.isArray(p) || p.length !== 2 || typeof p[0] !== "string") {
        throw new Error(`${at}.signature.params: a parameter is [name, schema]`);
      }
      const [ty, env] = typeFromSchema(p[1]);
      return { name: p[0], ty: close(ty, scope), env };
    });
    const [ok, okEnv] = typeFromSchema(sig["ok"]);
    const [err, errEnv] = typeFromSchema(sig["err"]);
    const fastPart = CALL_TO_TOOL + identity + TOOL_TO_ARGS;
    // Core's host writes args in code-point order of their names, so that
    // is the order the plan expects (a parameter name is an identifier:
    // no escape in its text).
    const argsOrder = params.map((_, i) => i).sort((a, b) => compareCodePoints(params[a].name, params[b].name));
    const argsPlan = argsOrder.map((i, k) => (k === 0 ? "{" : ",") + stringText(params[i].name) + ":");
    return {
      identity,
      params,
      ok: close(ok, scope),
      okEnv,
      err: close(err, scope),
      errEnv,
      scope,
      handler,
      fastPart,
      argsPlan,
      argsOrder,
    };
  });
  for (const name of Object.keys(handlers)) {
    if (!served.some((s) => s.identity === name)) {
      throw new Error(`a handler for \`${name}\`, which the listing does not declare`);
    }
  }
  return served;
}

// -- one call --------------------------------------------------------------------

const enum State {
  /** Read, its code not started. */
  Queued,
  /** Its code runs (it returned a promise). */
  Running,
  /** Answered. */
  Done,
}

/** A call's context and state; its signal is made only when read or cancelled, so a call that never looks pays nothing for it. */
class Call implements Context {
  state = State.Queued;
  cancelled = false;
  /** Its code returned a promise: it is in the open calls until answered. */
  waiting = false;
  private controller: AbortController | null = null;
  constructor(
    readonly runId: string,
    readonly callId: string,
    readonly expects: JsonValue | null,
    readonly tool: Served,
    readonly args: unknown[],
    /** The run id and call id as JSON texts, for the reply. */
    readonly runText: string,
    readonly callText: string,
  ) {}

  get signal(): AbortSignal {
    if (this.controller === null) {
      this.controller = new AbortController();
      if (this.cancelled) this.controller.abort(cancelReason());
    }
    return this.controller.signal;
  }

  cancel(): void {
    if (this.cancelled) return;
    this.cancelled = true;
    this.controller?.abort(cancelReason());
  }

  /** Whether `e` is the reason this call's signal was aborted with. */
  isCancelReason(e: unknown): boolean {
    return this.cancelled && this.controller !== null && this.controller.signal.reason === e;
  }
}

function cancelReason(): Error {
  const e = new Error("the host cancelled the call");
  e.name = "AbortError";
  return e;
}

/**
 * The calls read and not answered, by run id then call id: two lookups of
 * strings as read, where one key made of both would be a new string to
 * build and hash for every call.
 */
class OpenCalls {
  private readonly runs = new Map<string, Map<string, Call>>();
  size = 0;

  get(run: string, call: string): Call | undefined {
    return this.runs.get(run)?.get(call);
  }

  add(c: Call): void {
    let calls = this.runs.get(c.runId);
    if (calls === undefined) {
      calls = new Map();
      this.runs.set(c.runId, calls);
    }
    calls.set(c.callId, c);
    this.size++;
  }

  delete(c: Call): void {
    const calls = this.runs.get(c.runId);
    if (calls !== undefined && calls.delete(c.callId)) {
      this.size--;
      if (calls.size === 0) this.runs.delete(c.runId);
    }
  }
}

/** Where a string with no escape ending at its closing quote ends, from `at` (just inside its opening quote); -1 if it has an escape or a control character, or never ends. */
function plainStringEnd(s: string, at: number): number {
  for (let i = at; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x22) return i;
    if (c === 0x5c || c < 0x20) return -1;
  }
  return -1;
}

/** How a call as hosts write it opens, up to its run id's text. */
const CALL_OPENING = '{"jsonrpc":"2.0","method":"call","params":{"runId":"';
/** What such a call holds between its run id's text and its call id's. */
const RUN_TO_CALL = '","callId":"';
/** ... between its call id's text and its tool's. */
const CALL_TO_TOOL = '","tool":"';
/** ... between its tool's text and its args. */
const TOOL_TO_ARGS = '","args":';

/** The `outcome` member of a reply line from what the handler threw. */
function thrownOutcome(call: Call, e: unknown): string {
  if (e instanceof Failed) {
    try {
      return '{"Failed":' + encode(e.value, call.tool.err, call.tool.errEnv) + "}";
    } catch (r) {
      return unknownOutcome(`the Tool's code failed with a value that is not its declared error: ${describe(r)}`);
    }
  }
  if (e instanceof NotRun) return '{"NotRun":' + stringText(String(e.reason)) + "}";
  if (e instanceof Unknown) return unknownOutcome(String(e.reason));
  if (call.isCancelReason(e)) return unknownOutcome(CANCELLED_BY_HOST);
  return unknownOutcome(`the Tool's code threw ${describe(e)}`);
}

function describe(e: unknown): string {
  if (e instanceof Refused) return e.message;
  if (e instanceof Error) return `${e.name}: ${e.message}`;
  try {
    return `a ${typeof e}: ${String(e)}`;
  } catch {
    return `a ${typeof e}`;
  }
}

function unknownOutcome(reason: string): string {
  return '{"Unknown":' + stringText(wellFormedText(reason)) + "}";
}

function wellFormedText(s: string): string {
  // A reason is Text: a lone surrogate in an error message becomes U+FFFD.
  return s.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, "\ufffd");
}

function okOutcome(call: Call, value: unknown): string {
  try {
    return '{"Ok":' + encode(value, call.tool.ok, call.tool.okEnv) + "}";
  } catch (r) {
    return unknownOutcome(`the Tool's code returned a value that is not its declared success type: ${describe(r)}`);
  }
}

function isThenable(v: unknown): v is PromiseLike<unknown> {
  return (typeof v === "object" || typeof v === "function") && v !== null && typeof (v as { then?: unknown }).then === "function";
}

// -- reading messages ----------------------------------------------------------

function rawString(raw: Raw | undefined): string | null {
  return typeof raw === "string" ? raw : null;
}

/** The member `name` of an object, or `undefined`. */
function member(obj: RawObj, name: string): Raw | undefined {
  const i = obj.keys.indexOf(name);
  return i < 0 ? undefined : obj.values[i];
}

/** An id as written back: its JSON text. */
function idText(raw: Raw | undefined): string {
  if (raw instanceof RawNum) return raw.text;
  if (typeof raw === "string") return stringText(raw);
  return "null";
}

/** A call line that is not JSON: its run id and call id if a scan finds them, so it can be answered NotRun (core's `oversize::scan`, simplified). */
function scanIds(line: string): [string, string] | null {
  if (!/"method"\s*:\s*"call"/.test(line)) return null;
  const run = /"runId"\s*:\s*"((?:[^"\\]|\\.)*)"/.exec(line);
  const call = /"callId"\s*:\s*"((?:[^"\\]|\\.)*)"/.exec(line);
  if (run === null || call === null) return null;
  try {
    return [JSON.parse(`"${run[1]}"`) as string, JSON.parse(`"${call[1]}"`) as string];
  } catch {
    return null;
  }
}

/** Decodes a call's args (core's `decode_args`, in its words). */
function decodeArgs(tool: Served, raw: Raw, limits: Limits, textBytes: number): unknown[] {
  if (!(raw instanceof RawObj)) throw new ArgsRefused("`args` is not an object");
  const { keys, values } = raw;
  const params = tool.params;
  const out = new Array<unknown>(params.length);
  // Most calls give each parameter once, in declaration order.
  if (keys.length === params.length) {
    let i = 0;
    for (; i < params.length; i++) {
      if (keys[i] !== params[i].name) break;
    }
    if (i === params.length) {
      for (i = 0; i < params.length; i++) {
        out[i] = decodeArg(params[i], values[i], limits, tool.scope, textBytes);
      }
      return out;
    }
  }
  for (let i = 0; i < keys.length; i++) {
    if (keys.indexOf(keys[i]) !== i) throw new ArgsRefused(`\`args\` gives the member \`${keys[i]}\` twice`);
  }
  const given = new Array<boolean>(params.length).fill(false);
  for (let j = 0; j < keys.length; j++) {
    const i = params.findIndex((p) => p.name === keys[j]);
    if (i < 0) throw new ArgsRefused(`the Tool has no parameter \`${keys[j]}\``);
    out[i] = decodeArg(params[i], values[j], limits, tool.scope, textBytes);
    given[i] = true;
  }
  const missing = given.indexOf(false);
  if (missing >= 0) throw new ArgsRefused(`the parameter \`${params[missing].name}\` has no argument`);
  return out;
}

/** Args read by the Tool's plan (in the plan's order): decoded in that order, as `decodeArgs` decodes them, into declaration order. */
function decodeInOrder(tool: Served, raws: Raw[], limits: Limits, textBytes: number): unknown[] {
  const params = tool.params;
  const order = tool.argsOrder;
  const out = new Array<unknown>(params.length);
  for (let k = 0; k < order.length; k++) {
    const i = order[k];
    out[i] = decodeArg(params[i], raws[k], limits, tool.scope, textBytes);
  }
  return out;
}

/**
 * The args object at `at` read as `plan` spells it (`{"a":`, `,"b":`,
 * then `}`): each value's raw JSON in declaration order, the reader after
 * the object; `null` when the text is spelled otherwise.
 */
function readInOrder(reader: Reader, text: string, at: number, plan: readonly string[]): Raw[] | null {
  if (plan.length === 0) {
    if (text.charCodeAt(at) !== 0x7b || text.charCodeAt(at + 1) !== 0x7d) return null;
    reader.i = at + 2;
    return [];
  }
  const out = new Array<Raw>(plan.length);
  let j = at;
  for (let k = 0; k < plan.length; k++) {
    const p = plan[k];
    if (text.slice(j, j + p.length) !== p) return null;
    reader.i = j + p.length;
    out[k] = reader.value(3);
    j = reader.i;
  }
  if (text.charCodeAt(j) !== 0x7d) return null;
  reader.i = j + 1;
  return out;
}

function decodeArg(p: Param, raw: Raw, limits: Limits, scope: Scope, textBytes: number): unknown {
  try {
    return decodeRaw(raw, p.ty, p.env, limits, scope, textBytes);
  } catch (e) {
    if (e instanceof Refused) throw new ArgsRefused(`the argument \`${p.name}\` does not decode: ${e.message}`);
    throw e;
  }
}

class ArgsRefused extends Error {}

// -- the loop ---------------------------------------------------------------------

/**
 * How many lines of a read are answered before their replies are written
 * (the Rust toolkit's `PIECE_LINES`, sized for Node): writing half of a
 * 256-call window's replies while the other half is answered lets the host
 * read and send more meanwhile. A read answered whole kept the host idle
 * while this process worked: 0.76–0.86M calls/s through `peer-pipe-driver`
 * at 256 in flight against 1.03–1.20M with pieces of 96 to 192 lines.
 */
const PIECE_LINES = 128;

/** How much of a line past the limit is kept to find the call it names (its ids come first in a host's call). */
const OVERSIZE_HEAD = 4096;

const REPLY_HEAD = '{"jsonrpc":"2.0","method":"reply","params":{"runId":';

function log(why: string): void {
  process.stderr.write(`limen-toolkit: ${why}\n`);
}

/**
 * Serves the declarations of `listing` (the text `flow tools` lists) with
 * `handlers`, keyed by each Tool's identity
 * (`example.com/limen-fixtures@0.3.0/echo.flow.echo`), on standard input
 * and output. Resolves once standard input has ended and every call read
 * has been answered; rejects if the listing and the handlers disagree.
 */
export function serve(listing: string, handlers: Record<string, Handler>, options: ServeOptions = {}): Promise<void> {
  let tools: Served[];
  try {
    tools = readListing(listing, handlers);
  } catch (e) {
    return Promise.reject(e instanceof Error ? e : new Error(String(e)));
  }
  return new Promise<void>((resolve, reject) => {
    new Loop(listing, tools, options, resolve, reject).start();
  });
}

class Loop {
  private readonly byIdentity = new Map<string, Served>();
  private readonly describeResult: string;
  private readonly limits: Limits;
  private readonly maxLine: number;
  private readonly stdin: CallInput;
  private readonly stdout: ReplyOutput;
  private readonly write: (chunk: string) => boolean;
  private restoreStdout: (() => void) | null = null;
  /**
   * Calls whose code runs on a promise, by key. A call answered at once is
   * never put here: until it runs it is in {@link Loop.batch}, where a
   * cancel finds it by a scan (a cancel is rare; a call must not pay for
   * a map), and it is answered before the next piece is read.
   */
  private readonly open = new OpenCalls();
  /** Bytes of an unfinished line, carried to the next read. */
  private pending: Buffer[] = [];
  private pendingLength = 0;
  /** Skipping the rest of a line past the limit: how long it is so far, and its head. */
  private skipping = false;
  private skipped = 0;
  private skippedHead = "";
  /** Replies and responses not yet written. */
  private out = "";
  private flushScheduled = false;
  private ended = false;
  private finished = false;
  /** The last call's run id (and as JSON text) and Tool, which the next call most often shares. */
  private lastRun = "";
  private lastRunText = '""';
  /** The opening of a call of the last run id, up to its call id's text. */
  private lastOpening = CALL_OPENING + RUN_TO_CALL;
  private lastTool: Served | null = null;
  /**
   * The length of the line being read, which bounds its args' canonical
   * text as core bounds a text's (core takes the args' own length: the
   * envelope's ~150 bytes make this a little stricter, never laxer, for
   * ASCII).
   */
  private lineLength = 0;
  /** The reader of the read's text. */
  private reader = new Reader("");
  /** The calls of the piece of lines being read, run once the piece's cancels are known. */
  private batch: Call[] = [];

  constructor(
    listing: string,
    tools: Served[],
    options: ServeOptions,
    private readonly resolve: () => void,
    private readonly reject: (e: Error) => void,
  ) {
    for (const t of tools) this.byIdentity.set(t.identity, t);
    this.describeResult = compact(listing);
    this.limits = options.limits ?? DEFAULT_LIMITS;
    this.maxLine = options.maxLine ?? this.limits.maxBytes;
    this.stdin = options.stdin ?? process.stdin;
    this.stdout = options.stdout ?? process.stdout;
    const stdout = this.stdout;
    // Kept before the author's writes are refused: only the loop writes here.
    const write = stdout.write as (this: ReplyOutput, chunk: string) => boolean;
    this.write = (chunk: string) => write.call(stdout, chunk);
    if ((stdout as unknown) === process.stdout) this.takeStdout();
  }

  /** Keeps standard output for the protocol: the author's writes to it throw. */
  private takeStdout(): void {
    const stdout = process.stdout;
    const own = Object.prototype.hasOwnProperty.call(stdout, "write");
    const before = stdout.write;
    const refuse = (): never => {
      throw new Error(STDOUT_TAKEN);
    };
    stdout.write = refuse as typeof stdout.write;
    const methods = ["log", "info", "debug", "dir", "dirxml", "table"] as const;
    const saved = methods.map((m) => console[m]);
    for (const m of methods) console[m] = refuse;
    this.restoreStdout = () => {
      if (own) stdout.write = before;
      else delete (stdout as { write?: unknown }).write;
      methods.forEach((m, i) => (console[m] = saved[i] as typeof console.log));
    };
  }

  start(): void {
    const stdin = this.stdin;
    stdin.on("data", (chunk: Uint8Array | string) => {
      try {
        this.onData(
          typeof chunk === "string"
            ? Buffer.from(chunk, "utf8")
            : Buffer.isBuffer(chunk)
              ? chunk
              : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength),
        );
      } catch (e) {
        this.fail(e);
      }
    });
    stdin.on("end", () => {
      try {
        this.onEnd();
      } catch (e) {
        this.fail(e);
      }
    });
    stdin.on("error", (e: Error) => this.fail(e));
    this.stdout.on("error", (e: Error) => this.fail(e));
    this.stdout.on("drain", () => this.stdin.resume());
  }

  private fail(e: unknown): void {
    if (this.finished) return;
    this.finished = true;
    this.restoreStdout?.();
    this.reject(e instanceof Error ? e : new Error(String(e)));
  }

  private onData(chunk: Buffer): void {
    let start = 0;
    const last = chunk.lastIndexOf(10);
    if (last < 0) {
      this.carry(chunk);
      return;
    }
    // The unfinished line before this read, finished by its first newline.
    if (this.pendingLength > 0 || this.skipping) {
      const nl = chunk.indexOf(10);
      this.carry(chunk.subarray(0, nl));
      const line = Buffer.concat(this.pending, this.pendingLength);
      const skipped = this.skipping;
      this.pending = [];
      this.pendingLength = 0;
      this.skipping = false;
      if (skipped) this.oversized(this.skippedHead, this.skipped);
      else this.lineBytes(line);
      start = nl + 1;
    }
    const whole = chunk.subarray(start, last + 1);
    // Decoding replaces bytes that are not UTF-8 with U+FFFD: a text
    // without one was UTF-8 (and a text of ASCII, held one byte a
    // character, is searched for it at once); one with it is checked.
    const text = whole.toString("utf8");
    if (text.indexOf("\ufffd") < 0 || isUtf8(whole)) {
      this.lines(text);
    } else {
      let from = 0;
      for (;;) {
        const nl = whole.indexOf(10, from);
        if (nl < 0) break;
        this.lineBytes(whole.subarray(from, nl));
        from = nl + 1;
      }
    }
    this.carry(chunk.subarray(last + 1));
    this.runBatch();
  }

  /** Keeps bytes of an unfinished line, or skips a line past the limit. */
  private carry(bytes: Buffer): void {
    if (bytes.length === 0) return;
    if (this.skipping) {
      this.skipped += bytes.length;
      return;
    }
    if (this.pendingLength + bytes.length > this.maxLine) {
      // Its head is kept, to name the call it may be.
      this.skippedHead = Buffer.concat([...this.pending, bytes]).subarray(0, OVERSIZE_HEAD).toString("latin1");
      this.skipped = this.pendingLength + bytes.length;
      this.pending = [];
      this.pendingLength = 0;
      this.skipping = true;
      return;
    }
    this.pending.push(Buffer.from(bytes));
    this.pendingLength += bytes.length;
  }

  private lineBytes(line: Buffer): void {
    if (line.length > this.maxLine) {
      this.oversized(line.subarray(0, OVERSIZE_HEAD).toString("latin1"), line.length);
      return;
    }
    if (!isUtf8(line)) {
      this.notJson(line.toString("latin1"), "not UTF-8");
      return;
    }
    this.line(line.toString("utf8"));
  }

  /** The lines of a read's text, each ending in a newline. */
  private lines(text: string): void {
    const maxLine = this.maxLine;
    let from = 0;
    let n = 0;
    for (;;) {
      const nl = text.indexOf("\n", from);
      if (nl < 0) return;
      if (++n === PIECE_LINES) {
        n = 0;
        this.runBatch();
      }
      if (nl - from > maxLine / 3 && Buffer.byteLength(text.slice(from, nl), "utf8") > maxLine) {
        this.oversized(text.slice(from, from + OVERSIZE_HEAD), Buffer.byteLength(text.slice(from, nl), "utf8"));
      } else if (!this.fastCall(text, from, nl)) {
        // Nearly every line is a call as hosts write it; the rest are read whole.
        this.line(text.slice(from, nl));
      }
      from = nl + 1;
    }
  }

  /**
   * A line past the limit, `len` bytes, of which `head` is the start: a
   * call whose ids the head names is NotRun in core's words, anything else
   * is dropped (core's `ToolkitConn`).
   */
  private oversized(head: string, len: number): void {
    const ids = scanIds(head);
    if (ids === null) {
      log(`a line of ${len} bytes: dropped`);
      return;
    }
    this.notRun(ids[0], ids[1], `the call is ${len} bytes, over the implementation's limit of ${this.maxLine} bytes`);
  }

  private line(line: string): void {
    if (this.fastCall(line, 0, line.length)) return;
    let raw: Raw;
    try {
      raw = readRaw(line);
    } catch (e) {
      if (/^[ \t\r\n]*$/.test(line)) return;
      this.notJson(line, e instanceof Refused ? e.reason : String(e));
      return;
    }
    if (!(raw instanceof RawObj)) {
      this.error("null", -32600, "a message is an object");
      return;
    }
    const id = member(raw, "id");
    const version = member(raw, "jsonrpc");
    const method = member(raw, "method");
    if (version !== "2.0") {
      this.error(idText(id), -32600, 'a message has "jsonrpc": "2.0"');
      return;
    }
    if (typeof method !== "string") {
      if (method === undefined && (member(raw, "result") !== undefined || member(raw, "error") !== undefined)) {
        log("a response, which the protocol does not send here: dropped");
      } else {
        this.error(idText(id), -32600, "a message's `method` is a string");
      }
      return;
    }
    const params = member(raw, "params");
    if (id !== undefined) {
      if (method === "describe") {
        this.out += '{"jsonrpc":"2.0","id":' + idText(id) + ',"result":' + this.describeResult + "}\n";
      } else {
        this.error(idText(id), -32601, `no method \`${method}\``);
      }
      return;
    }
    if (method === "call") this.call(params ?? null);
    else if (method === "cancel") this.cancel(params ?? null);
    else log(`a notification \`${method}\`, which the protocol does not send here: dropped`);
  }

  /** Whether a call with this key is running on a promise (a second one is then ignored). */
  private isOpen(run: string, call: string): boolean {
    return this.open.size > 0 && this.open.get(run, call) !== undefined;
  }

  private error(id: string, code: number, message: string): void {
    this.out += '{"jsonrpc":"2.0","id":' + id + ',"error":{"code":' + code + ',"message":' + stringText(message) + "}}\n";
  }

  private notJson(line: string, why: string): void {
    const ids = scanIds(line);
    if (ids !== null) {
      this.notRun(ids[0], ids[1], `the call is not a JSON-RPC 2.0 message: ${why}`);
    } else {
      this.error("null", -32700, why);
    }
  }

  private notRun(run: string, call: string, why: string): void {
    if (this.isOpen(run, call)) {
      log(`a second call with ${run}/${call} while it is open: ignored`);
      return;
    }
    this.reply(stringText(run), stringText(call), '{"NotRun":' + stringText(why) + "}");
  }

  /** Queues a reply: the run id and call id as JSON texts. */
  private reply(runText: string, callText: string, outcome: string): void {
    this.out += REPLY_HEAD + runText + ',"callId":' + callText + ',"outcome":' + outcome + "}}\n";
  }

  private call(params: Raw): void {
    if (!(params instanceof RawObj)) {
      log("the call's params is not an object: dropped");
      return;
    }
    const run = rawString(member(params, "runId"));
    const callId = rawString(member(params, "callId"));
    if (run === null || callId === null) {
      log("the call names no call: dropped");
      return;
    }
    if (this.isOpen(run, callId)) {
      log(`a second call with ${run}/${callId} while it is open: ignored`);
      return;
    }
    const toolRaw = member(params, "tool");
    if (typeof toolRaw !== "string") {
      this.notRun(run, callId, toolRaw === undefined ? "the call has no `tool`" : "the call's `tool` is not a string");
      return;
    }
    const argsRaw = member(params, "args");
    if (argsRaw === undefined) {
      this.notRun(run, callId, "the call has no `args`");
      return;
    }
    this.take(run, callId, stringText(run), stringText(callId), toolRaw, argsRaw, member(params, "expects"));
  }

  /**
   * A call read exactly as hosts write it (core's `write_call`: the
   * envelope first, then run id, call id, tool and args, strings with no
   * escape), taken without building its envelope; `false` sends the line
   * down the general path, which judges it.
   */
  private fastCall(text: string, from: number, end: number): boolean {
    this.lineLength = end - from;
    // Fixed parts are compared as slices: V8 compares two strings at
    // memcmp speed, where `startsWith` at an offset goes char by char.
    // The run id and the tool are most often the last call's: the same
    // string, whose hash is already known, and one comparison from the
    // line's start to its call id.
    let run = this.lastRun;
    let runEnd = from + this.lastOpening.length;
    if (text.slice(from, runEnd) !== this.lastOpening) {
      const i = from + CALL_OPENING.length;
      if (text.slice(from, i) !== CALL_OPENING) return false;
      const q = plainStringEnd(text, i);
      if (q < 0 || q >= end) return false;
      run = text.slice(i, q);
      this.lastRun = run;
      this.lastRunText = '"' + run + '"';
      this.lastOpening = CALL_OPENING + run + RUN_TO_CALL;
      runEnd = q + RUN_TO_CALL.length;
      if (text.slice(q, runEnd) !== RUN_TO_CALL) return false;
    }
    let i = runEnd;
    const callEnd = plainStringEnd(text, i);
    if (callEnd < 0 || callEnd >= end) return false;
    const callId = text.slice(i, callEnd);
    i = callEnd;
    let tool = this.lastTool;
    if (tool === null || text.slice(i, i + tool.fastPart.length) !== tool.fastPart) {
      if (text.slice(i, i + CALL_TO_TOOL.length) !== CALL_TO_TOOL) return false;
      i += CALL_TO_TOOL.length;
      const toolEnd = plainStringEnd(text, i);
      if (toolEnd < 0 || toolEnd >= end) return false;
      tool = this.byIdentity.get(text.slice(i, toolEnd)) ?? null;
      // A tool not served: the general path answers it.
      if (tool === null) return false;
      this.lastTool = tool;
      i = toolEnd;
      if (text.slice(i, i + TOOL_TO_ARGS.length) !== TOOL_TO_ARGS) return false;
      i += TOOL_TO_ARGS.length;
    } else {
      i += tool.fastPart.length;
    }
    const reader = this.reader.s === text ? this.reader : (this.reader = new Reader(text));
    // The args as hosts write them, each parameter once in declaration
    // order, are read member by member with no object built; anything else
    // is read whole and judged by `decodeArgs`.
    let inOrder: Raw[] | null = null;
    try {
      inOrder = readInOrder(reader, text, i, tool.argsPlan);
      if (inOrder === null) {
        reader.i = i;
        reader.value(2);
      }
    } catch {
      return false;
    }
    if (reader.i !== end - 2 || text.charCodeAt(end - 2) !== 0x7d || text.charCodeAt(end - 1) !== 0x7d) return false;
    if (this.isOpen(run, callId)) {
      log(`a second call with ${run}/${callId} while it is open: ignored`);
      return true;
    }
    let args: Raw | Raw[];
    if (inOrder !== null) {
      args = inOrder;
    } else {
      reader.i = i;
      args = reader.value(2);
    }
    this.take(run, callId, this.lastRunText, '"' + callId + '"', tool.identity, args, undefined, tool);
    return true;
  }

  /** A call that names its tool and args: NotRun if it names no Tool served or its args do not decode, else queued to run. */
  private take(
    run: string,
    callId: string,
    runText: string,
    callText: string,
    toolRaw: string,
    argsRaw: Raw | Raw[],
    expectsRaw: Raw | undefined,
    served?: Served,
  ): void {
    const tool = served ?? this.byIdentity.get(toolRaw);
    if (tool === undefined) {
      this.notRun(run, callId, `this implementation serves no Tool \`${toolRaw}\``);
      return;
    }
    let args: unknown[];
    try {
      // An array: the args' values already in declaration order.
      args =
        Array.isArray(argsRaw) && served !== undefined
          ? decodeInOrder(tool, argsRaw, this.limits, this.lineLength)
          : decodeArgs(tool, argsRaw as Raw, this.limits, this.lineLength);
    } catch (e) {
      if (!(e instanceof ArgsRefused)) throw e;
      this.notRun(run, callId, `the args do not decode: ${e.message}`);
      return;
    }
    let expects: JsonValue | null = null;
    if (expectsRaw !== undefined) {
      try {
        expects = decodeRaw(expectsRaw, JSON_VALUE, new Map(), this.limits) as JsonValue;
      } catch (e) {
        this.notRun(run, callId, `the call's \`expects\` is not JSON: ${e instanceof Error ? e.message : String(e)}`);
        return;
      }
    }
    this.batch.push(new Call(run, callId, expects, tool, args, runText, callText));
  }

  private cancel(params: Raw): void {
    if (!(params instanceof RawObj)) {
      log("the cancel's params is not an object: ignored");
      return;
    }
    const run = rawString(member(params, "runId"));
    const callId = rawString(member(params, "callId"));
    if (run === null || callId === null) {
      log("the cancel names no call: ignored");
      return;
    }
    const c = this.open.get(run, callId) ?? this.batch.find((b) => b.runId === run && b.callId === callId);
    if (c === undefined) {
      log(`a cancel for ${run}/${callId}, which is not open: ignored`);
      return;
    }
    c.cancel();
  }

  /** Runs the calls of a piece of a read (a cancel in the same piece having reached them first), then writes what they answered. */
  private runBatch(): void {
    const batch = this.batch;
    this.batch = [];
    for (const c of batch) {
      // A second call with the key of one still running (started earlier
      // in this read): core's rule, checked here.
      if (this.open.size > 0 && this.open.get(c.runId, c.callId) !== undefined) {
        log(`a second call with ${c.runId}/${c.callId} while it is open: ignored`);
        continue;
      }
      if (c.cancelled) {
        this.finish(c, '{"NotRun":' + stringText(CANCELLED_BEFORE) + "}");
        continue;
      }
      let result: unknown;
      c.state = State.Running;
      try {
        result = c.tool.handler(c, c.args);
      } catch (e) {
        this.finish(c, thrownOutcome(c, e));
        continue;
      }
      if (isThenable(result)) {
        c.waiting = true;
        this.open.add(c);
        result.then(
          (v) => this.settled(c, okOutcome(c, v)),
          (e: unknown) => this.settled(c, thrownOutcome(c, e)),
        );
      } else {
        this.finish(c, okOutcome(c, result));
      }
    }
    this.flush();
  }

  private finish(c: Call, outcome: string): void {
    if (c.state === State.Done) return;
    c.state = State.Done;
    if (c.waiting) this.open.delete(c);
    this.reply(c.runText, c.callText, outcome);
  }

  /** A call that ran on a promise is answered: written with the others answered in the same turn. */
  private settled(c: Call, outcome: string): void {
    this.finish(c, outcome);
    this.scheduleFlush();
  }

  /** Writes what is answered once this turn of the event loop has read all it can. */
  private scheduleFlush(): void {
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(() => {
        this.flushScheduled = false;
        this.flush();
      });
    }
  }

  private flush(): void {
    if (this.out.length > 0) {
      const out = this.out;
      this.out = "";
      if (!this.write(out)) this.stdin.pause();
    }
    this.maybeDone();
  }

  private onEnd(): void {
    this.ended = true;
    if (this.pendingLength > 0) {
      log(`a last line of ${this.pendingLength} bytes with no newline at the end of input: dropped`);
      this.pending = [];
      this.pendingLength = 0;
    }
    this.runBatch();
  }

  private maybeDone(): void {
    if (!this.ended || this.finished || this.open.size > 0 || this.out.length > 0) return;
    this.finished = true;
    this.restoreStdout?.();
    // Resolved once what was written has reached the pipe.
    this.stdout.write("", () => this.resolve());
  }
}
