/**
 * Type-directed, strict decoding and canonical writing (§ Value encoding,
 * § The canonical form, § Decoding), under the same rules as limen's core
 * and worded as core words them: a port of the Python toolkit's `codec.py`.
 *
 * {@link decode} reads a JSON text at a declared type: no coercion, no
 * default, no repair, no guessed constructor; a failure is {@link Refused}
 * with the JSON path of the offending value and the reason. {@link encode}
 * writes a value's canonical text, refusing a value that is not of the type.
 */

import { isUtf8 } from "node:buffer";

import { Path, Raw, RawNum, RawObj, Refused, readRaw, stringText } from "./json.js";
import { Env, Fields, Type, close, written } from "./types.js";
import {
  Decimal,
  Duration,
  FlowDict,
  FlowSet,
  HostToken,
  INSTANT_LIMIT_NS,
  Instant,
  JsonValue,
  daysFromCivil,
  durationText,
  instantText,
  numberText,
} from "./values.js";

/** The decoding limits; the defaults are core's `Limits::default()`. */
export interface Limits {
  /** The longest text, in bytes. */
  readonly maxBytes: number;
  /** The deepest nesting. */
  readonly maxDepth: number;
  /** The most digits of an Int. */
  readonly maxIntDigits: number;
  /** The most significant digits of a Decimal. */
  readonly maxDecimalDigits: number;
  /** The largest power of ten of a Decimal, either way. */
  readonly maxDecimalExponent: number;
  /** The longest string, in UTF-8 bytes. */
  readonly maxStringBytes: number;
  /** The most elements of a collection. */
  readonly maxCollectionLen: number;
}

/** Core's `Limits::default()`. */
export const DEFAULT_LIMITS: Limits = Object.freeze({
  maxBytes: 16 << 20,
  maxDepth: 128,
  maxIntDigits: 4300,
  maxDecimalDigits: 4300,
  maxDecimalExponent: 1000,
  maxStringBytes: 1 << 20,
  maxCollectionLen: 1 << 20,
});

/** Type parameters bound to types. */
export type Scope = ReadonlyMap<string, Type>;
const NO_SCOPE: Scope = new Map();

/**
 * Compares two strings by code point (UTF-16 compares a surrogate below
 * U+E000..U+FFFF; code points and UTF-8 bytes put it above), as the
 * canonical form orders keys.
 */
export function compareCodePoints(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    let x = a.charCodeAt(i);
    let y = b.charCodeAt(i);
    if (x === y) continue;
    if (x >= 0xd800 && y >= 0xd800) {
      x = x >= 0xe000 ? x - 0x800 : x + 0x2000;
      y = y >= 0xe000 ? y - 0x800 : y + 0x2000;
    }
    return x - y;
  }
  return a.length - b.length;
}

/** Sign, significant digits (no leading or trailing zero; `""` for zero) and power of ten of a number token. */
export function digitsOf(tok: string): [boolean, string, number] {
  let i = 0;
  const neg = tok.charCodeAt(0) === 0x2d;
  if (neg) i = 1;
  let e = tok.length;
  for (let k = i; k < tok.length; k++) {
    const c = tok.charCodeAt(k);
    if (c === 0x65 || c === 0x45) {
      e = k;
      break;
    }
  }
  const mant = tok.slice(i, e);
  const dot = mant.indexOf(".");
  const intPart = dot < 0 ? mant : mant.slice(0, dot);
  const frac = dot < 0 ? "" : mant.slice(dot + 1);
  let exp = 0;
  if (e < tok.length) {
    const t = tok.slice(e + 1);
    // An exponent past any limit stays past it: clamp, never overflow.
    exp = t.replace(/^[+-]?0*/, "").length > 15 ? (t[0] === "-" ? -1e15 : 1e15) : Number(t);
  }
  let digits = (intPart + frac).replace(/^0+/, "");
  exp -= frac.length;
  const stripped = digits.replace(/0+$/, "");
  exp += digits.length - stripped.length;
  digits = stripped;
  return [neg && digits.length > 0, digits, digits.length === 0 ? 0 : exp];
}

function found(raw: Raw): string {
  if (raw instanceof RawNum) return numberText(...digitsOf(raw.text));
  if (typeof raw === "string") return stringText(raw);
  if (raw === null) return "null";
  if (raw === true) return "true";
  if (raw === false) return "false";
  return Array.isArray(raw) ? "an array" : "an object";
}

const SHORT_INT = /^-?[0-9]{1,15}$/;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

function hasLoneSurrogate(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0xd800 || c > 0xdfff) continue;
    if (c <= 0xdbff) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        i++;
        continue;
      }
    }
    return true;
  }
  return false;
}

const SURROGATE = /[\ud800-\udfff]/;

/** Whether `s` is Unicode scalar values only (no lone surrogate). */
export function wellFormed(s: string): boolean {
  return !SURROGATE.test(s) || !hasLoneSurrogate(s);
}

class Decoder {
  readonly path: Path = [];
  constructor(
    readonly env: Env,
    readonly limits: Limits,
  ) {}

  refuse(reason: string): never {
    throw new Refused(this.path, reason);
  }

  // -- checks every value is held to --------------------------------------

  text(s: string): string {
    if (s.length * 3 > this.limits.maxStringBytes && Buffer.byteLength(s, "utf8") > this.limits.maxStringBytes) {
      this.refuse(`a string longer than ${this.limits.maxStringBytes} bytes`);
    }
    return s;
  }

  /** An object's members by key, refusing a key given twice. */
  members(raw: RawObj): Map<string, Raw> {
    const out = new Map<string, Raw>();
    const { keys, values } = raw;
    for (let i = 0; i < keys.length; i++) {
      const k = keys[i];
      this.text(k);
      if (out.has(k)) this.refuse(`the key ${stringText(k)} is given twice`);
      out.set(k, values[i]);
    }
    return out;
  }

  /** An ignored member: within depth, no duplicate key. */
  wellformed(raw: Raw, depth: number): void {
    if (depth > this.limits.maxDepth) this.refuse(`nested deeper than ${this.limits.maxDepth}`);
    if (raw instanceof RawObj) {
      for (const v of this.members(raw).values()) this.wellformed(v, depth + 1);
    } else if (Array.isArray(raw)) {
      for (const v of raw) this.wellformed(v, depth + 1);
    } else if (typeof raw === "string") {
      this.text(raw);
    }
  }

  number(raw: Raw, want: string): [boolean, string, number] {
    if (!(raw instanceof RawNum)) this.refuse(`expected ${want}, found ${found(raw)}`);
    return digitsOf(raw.text);
  }

  decimalParts(raw: Raw, want: string): [boolean, string, number] {
    const parts = this.number(raw, want);
    const [, digits, exp] = parts;
    const lim = this.limits;
    if (digits.length > lim.maxDecimalDigits) {
      this.refuse(`a number with more than ${lim.maxDecimalDigits} significant digits`);
    }
    if (digits.length > 0 && Math.abs(exp) > lim.maxDecimalExponent) {
      this.refuse(`a number past 10^±${lim.maxDecimalExponent}`);
    }
    return parts;
  }

  // -- the declared type directs every step -------------------------------

  value(raw: Raw, ty: Type, depth: number, scope: Scope): unknown {
    if (depth > this.limits.maxDepth) this.refuse(`nested deeper than ${this.limits.maxDepth}`);
    const path = this.path;
    switch (ty.k) {
      case "param": {
        const bound = scope.get(ty.name);
        if (bound === undefined) this.refuse(`the type parameter ${ty.name} is not bound`);
        return this.value(raw, bound, depth, NO_SCOPE);
      }
      case "prim":
        return this.prim(raw, ty, depth);
      case "list": {
        const items = this.array(raw, ty);
        const out = new Array<unknown>(items.length);
        for (let i = 0; i < items.length; i++) {
          path.push(i);
          out[i] = this.value(items[i], ty.item, depth + 1, scope);
          path.pop();
        }
        return out;
      }
      case "set": {
        const items = this.array(raw, ty);
        const vals: unknown[] = [];
        for (let i = 0; i < items.length; i++) {
          path.push(i);
          vals.push(this.value(items[i], ty.item, depth + 1, scope));
          path.pop();
        }
        const item = close(ty.item, scope);
        return new FlowSet(this.ordered(vals, (v) => this.canon(v, item), "a set holds each element once"));
      }
      case "tuple": {
        const items = this.array(raw, ty);
        if (items.length !== ty.items.length) {
          this.refuse(`expected ${written(ty)}, found an array of ${items.length}`);
        }
        const out = new Array<unknown>(items.length);
        for (let i = 0; i < items.length; i++) {
          path.push(i);
          out[i] = this.value(items[i], ty.items[i], depth + 1, scope);
          path.pop();
        }
        return out;
      }
      case "dict":
        return this.dictionary(raw, ty, depth, scope);
      case "option": {
        if (raw === "None") return null;
        const [tag, v] = this.tagged(raw, ty, ["Some"]);
        path.push(tag);
        const inner = this.value(v, ty.inner, depth + 1, scope);
        path.pop();
        return { some: inner };
      }
      case "result": {
        const [tag, v] = this.tagged(raw, ty, ["Ok", "Err"]);
        path.push(tag);
        const out = tag === "Ok" ? { ok: this.value(v, ty.ok, depth + 1, scope) } : { err: this.value(v, ty.err, depth + 1, scope) };
        path.pop();
        return out;
      }
      case "named":
        return this.named(raw, ty, depth, scope);
    }
  }

  array(raw: Raw, ty: Type): Raw[] {
    if (!Array.isArray(raw)) this.refuse(`expected ${written(ty)}, found ${found(raw)}`);
    if (raw.length > this.limits.maxCollectionLen) {
      this.path.push(this.limits.maxCollectionLen);
      this.refuse("past the collection length limit");
    }
    return raw;
  }

  /** `vals` in canonical order of `key`, refusing two with one key (at the second's index). */
  ordered<T>(vals: T[], key: (v: T) => string, why: string): T[] {
    const seen = new Map<string, number>();
    const keyed: [string, T][] = [];
    for (let i = 0; i < vals.length; i++) {
      const k = key(vals[i]);
      const j = seen.get(k);
      if (j !== undefined) {
        this.path.push(i);
        this.refuse(`${why}; this one equals [${j}]`);
      }
      seen.set(k, i);
      keyed.push([k, vals[i]]);
    }
    keyed.sort((a, b) => compareCodePoints(a[0], b[0]));
    return keyed.map((kv) => kv[1]);
  }

  canon(v: unknown, ty: Type): string {
    return new Encoder(this.env).value(v, ty, 0);
  }

  tagged(raw: Raw, ty: Type, tags: readonly string[]): [string, Raw] {
    if (!(raw instanceof RawObj) || raw.keys.length !== 1 || !tags.includes(raw.keys[0])) {
      this.refuse(`expected ${written(ty)}, found ${found(raw)}`);
    }
    return [raw.keys[0], raw.values[0]];
  }

  prim(raw: Raw, ty: Type & { k: "prim" }, depth: number): unknown {
    switch (ty.name) {
      case "Int": {
        if (raw instanceof RawNum && SHORT_INT.test(raw.text)) return BigInt(raw.text);
        const [neg, digits, exp] = this.number(raw, "Int");
        if (exp < 0) this.refuse(`expected Int, found ${found(raw)}, which is not whole`);
        if (digits.length > 0 && digits.length + exp > this.limits.maxIntDigits) {
          this.refuse(`an Int with more than ${this.limits.maxIntDigits} digits`);
        }
        const n = BigInt((digits || "0") + "0".repeat(exp));
        return neg ? -n : n;
      }
      case "Decimal": {
        const [neg, digits, exp] = this.decimalParts(raw, "Decimal");
        const c = digits ? BigInt(digits) : 0n;
        return new Decimal(neg ? -c : c, exp);
      }
      case "Bool":
        if (raw === true || raw === false) return raw;
        return this.refuse(`expected Bool, found ${found(raw)}`);
      case "json.Value":
        return this.json(raw, depth);
      case "host token":
        return new HostToken(this.json(raw, depth));
      case "Never":
        return this.refuse(`Never has no values, found ${found(raw)}`);
    }
    if (typeof raw !== "string") this.refuse(`expected ${written(ty)}, found ${found(raw)}`);
    const s = this.text(raw);
    switch (ty.name) {
      case "Text":
        return s;
      case "Bytes": {
        if (s.length % 4 !== 0 || !BASE64.test(s)) this.refuse("expected Bytes, found text that is not base64");
        const b = Buffer.from(s, "base64");
        if (b.toString("base64") !== s) this.refuse("expected Bytes, found base64 that is not canonical");
        return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
      }
      case "Instant":
        return new Instant(readInstant(s, this));
      default:
        return new Duration(readDuration(s, this));
    }
  }

  json(raw: Raw, depth: number): JsonValue {
    if (depth > this.limits.maxDepth) this.refuse(`nested deeper than ${this.limits.maxDepth}`);
    if (raw instanceof RawNum) {
      if (SHORT_INT.test(raw.text)) return BigInt(raw.text);
      const [neg, digits, exp] = this.decimalParts(raw, "a number");
      if (exp >= 0 && digits.length + exp <= this.limits.maxIntDigits) {
        const n = BigInt((digits || "0") + "0".repeat(exp));
        return neg ? -n : n;
      }
      const c = BigInt(digits);
      return new Decimal(neg ? -c : c, exp);
    }
    if (typeof raw === "string") return this.text(raw);
    if (raw instanceof RawObj) {
      const out: { [key: string]: JsonValue } = Object.create(null) as { [key: string]: JsonValue };
      for (const [k, v] of this.members(raw)) {
        this.path.push(k);
        out[k] = this.json(v, depth + 1);
        this.path.pop();
      }
      return out;
    }
    if (Array.isArray(raw)) {
      this.array(raw, { k: "prim", name: "json.Value" });
      const out: JsonValue[] = new Array<JsonValue>(raw.length);
      for (let i = 0; i < raw.length; i++) {
        this.path.push(i);
        out[i] = this.json(raw[i], depth + 1);
        this.path.pop();
      }
      return out;
    }
    return raw;
  }

  dictionary(raw: Raw, ty: Type & { k: "dict" }, depth: number, scope: Scope): unknown {
    const key = close(ty.key, scope);
    const path = this.path;
    if (key.k === "prim" && key.name === "Text") {
      if (!(raw instanceof RawObj)) this.refuse(`expected ${written(ty)}, found ${found(raw)}`);
      if (raw.keys.length > this.limits.maxCollectionLen) this.refuse("past the collection length limit");
      const m = this.members(raw);
      const out = new Map<string, unknown>();
      for (const k of [...m.keys()].sort(compareCodePoints)) {
        path.push(k);
        out.set(k, this.value(m.get(k) as Raw, ty.value, depth + 1, scope));
        path.pop();
      }
      return out;
    }
    const items = this.array(raw, ty);
    const pairs: [unknown, unknown][] = [];
    for (let i = 0; i < items.length; i++) {
      const p = items[i];
      path.push(i);
      if (!Array.isArray(p) || p.length !== 2) this.refuse(`expected a [key, value] pair, found ${found(p)}`);
      path.push(0);
      const k = this.value(p[0], ty.key, depth + 2, scope);
      path.pop();
      path.push(1);
      const v = this.value(p[1], ty.value, depth + 2, scope);
      path.pop();
      path.pop();
      pairs.push([k, v]);
    }
    return new FlowDict(this.ordered(pairs, (kv) => this.canon(kv[0], key), "a dict holds each key once"));
  }

  /** A record's (or a constructor's) fields into `out`, by their Flow names. */
  fields(raw: Raw, fields: Fields, want: string, depth: number, scope: Scope, out: { [key: string]: unknown }): void {
    if (!(raw instanceof RawObj)) this.refuse(`expected ${want}, found ${found(raw)}`);
    const m = this.members(raw);
    const types = new Map<string, Type>();
    for (const [name, fty] of fields) types.set(name, close(fty, scope));
    // Members in the text's order, as core reads them, so the first
    // failure is the same one; missing fields after.
    const got = new Map<string, unknown>();
    for (const [k, v] of m) {
      const closed = types.get(k);
      if (closed === undefined) {
        // Core skips an ignored member without a path of its own.
        this.wellformed(v, depth + 1);
        continue;
      }
      this.path.push(k);
      got.set(k, closed.k === "option" ? { some: this.value(v, closed.inner, depth + 1, NO_SCOPE) } : this.value(v, closed, depth + 1, NO_SCOPE));
      this.path.pop();
    }
    for (const [name, closed] of types) {
      if (got.has(name)) out[name] = got.get(name);
      else if (closed.k === "option") out[name] = null;
      else this.refuse(`missing required field ${stringText(name)}`);
    }
  }

  named(raw: Raw, ty: Type & { k: "named" }, depth: number, scope: Scope): unknown {
    const decl = this.env.get(ty.identity);
    if (decl === undefined) this.refuse(`the type ${ty.identity} is not declared`);
    const args = ty.args.map((a) => close(a, scope));
    if (args.length !== decl.params.length) {
      this.refuse(`the type ${ty.identity} takes ${decl.params.length} type arguments, given ${args.length}`);
    }
    const inner: Scope = new Map(decl.params.map((p, i) => [p, args[i]]));
    if (decl.k === "record") {
      const out: { [key: string]: unknown } = {};
      this.fields(raw, decl.fields, written(ty), depth, inner, out);
      return out;
    }
    const bad = (): never =>
      this.refuse(`expected ${written(ty)} (one of ${decl.constructors.map((c) => c.name).join(", ")}), found ${found(raw)}`);
    if (typeof raw === "string") {
      for (const c of decl.constructors) {
        if (c.name === raw && c.payload === null) return { $tag: c.name };
      }
      return bad();
    }
    if (!(raw instanceof RawObj) || raw.keys.length !== 1) return bad();
    const tag = raw.keys[0];
    const v = raw.values[0];
    for (const c of decl.constructors) {
      if (c.name !== tag || c.payload === null) continue;
      this.path.push(tag);
      const out: { [key: string]: unknown } = { $tag: tag };
      if ("fields" in c.payload) {
        this.fields(v, c.payload.fields, tag, depth + 1, inner, out);
      } else {
        out["value"] = this.value(v, c.payload.value, depth + 1, inner);
      }
      this.path.pop();
      return out;
    }
    return bad();
  }
}

// -- time -----------------------------------------------------------------------

const NS = 1_000_000_000n;
const INSTANT_RE =
  /^([+-][0-9]{4,}|[0-9]{4})-([0-9]{2})-([0-9]{2})[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})(\.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-9]{2})$/;
const DURATION_RE = /^PT(-?)(0|[1-9][0-9]*)(\.[0-9]+)?S$/;

function fractionNs(frac: string | undefined, at: Decoder, what: string): bigint {
  if (!frac) return 0n;
  const digits = frac.slice(1);
  if (digits.length > 9 && /[1-9]/.test(digits.slice(9))) at.refuse(`${what} finer than a nanosecond`);
  return BigInt(digits.slice(0, 9).padEnd(9, "0"));
}

function readInstant(s: string, at: Decoder): bigint {
  const m = INSTANT_RE.exec(s);
  const bad = `expected Instant, found ${stringText(s)}`;
  if (m === null) return at.refuse(bad);
  const ys = m[1];
  const y = BigInt(ys);
  const [mo, d, h, mi, sec] = [2, 3, 4, 5, 6].map((i) => Number(m[i]));
  if ((ys[0] === "+" || ys[0] === "-") && ((y >= 0n && y <= 9999n) || (ys.length > 5 && ys[1] === "0") || ys === "-0000")) {
    at.refuse(bad);
  }
  const leap = y % 4n === 0n && (y % 100n !== 0n || y % 400n === 0n);
  const dim = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
  if (!(mo >= 1 && mo <= 12 && d >= 1 && d <= dim[mo - 1] && h < 24 && mi < 60 && sec < 60)) at.refuse(bad);
  const off = m[8];
  let offset = 0n;
  if (off !== "Z" && off !== "z") {
    const oh = Number(off.slice(1, 3));
    const om = Number(off.slice(4, 6));
    if (oh > 23 || om > 59) at.refuse(bad);
    offset = BigInt((oh * 60 + om) * 60 * (off[0] === "-" ? -1 : 1));
  }
  const secs = daysFromCivil(y, mo, d) * 86_400n + BigInt(h * 3600 + mi * 60 + sec) - offset;
  const ns = secs * NS + fractionNs(m[7], at, "an Instant");
  if (ns < -INSTANT_LIMIT_NS || ns >= INSTANT_LIMIT_NS) at.refuse("an Instant past the model's range");
  return ns;
}

function readDuration(s: string, at: Decoder): bigint {
  const m = DURATION_RE.exec(s);
  if (m === null) return at.refuse(`expected Duration, found ${stringText(s)}`);
  const ns = BigInt(m[2]) * NS + fractionNs(m[3], at, "a Duration");
  return m[1] ? -ns : ns;
}

// -- writing --------------------------------------------------------------------

function kindOf(v: unknown): string {
  if (v === null) return "null";
  if (v === undefined) return "undefined";
  if (typeof v !== "object") return `a JavaScript ${typeof v}`;
  if (Array.isArray(v)) return "a JavaScript array";
  const proto = Object.getPrototypeOf(v) as { constructor?: { name?: string } } | null;
  const name = proto?.constructor?.name;
  return name && name !== "Object" ? `a JavaScript ${name}` : "a JavaScript object";
}

function isPlainObject(v: unknown): v is { [key: string]: unknown } {
  if (typeof v !== "object" || v === null || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v) as unknown;
  return proto === null || proto === Object.prototype;
}

const hasOwn = (o: object, k: string): boolean => Object.prototype.hasOwnProperty.call(o, k);

class Encoder {
  readonly path: Path = [];
  constructor(readonly env: Env) {}

  refuse(reason: string): never {
    throw new Refused(this.path, reason);
  }

  wrong(v: unknown, ty: Type): never {
    return this.refuse(`expected ${written(ty)}, found ${kindOf(v)}`);
  }

  int(v: bigint): string {
    const t = v.toString();
    if (t.length > DEFAULT_LIMITS.maxIntDigits + 1 && t.replace("-", "").length > DEFAULT_LIMITS.maxIntDigits) {
      this.refuse(`an Int with more than ${DEFAULT_LIMITS.maxIntDigits} digits`);
    }
    return t;
  }

  string(v: string): string {
    if (!wellFormed(v)) this.refuse("a Text holding a lone surrogate");
    return stringText(v);
  }

  json(v: unknown, depth: number): string {
    if (depth > DEFAULT_LIMITS.maxDepth) this.refuse("nested too deep");
    if (v === null) return "null";
    if (v === true) return "true";
    if (v === false) return "false";
    if (typeof v === "bigint") return this.int(v);
    if (typeof v === "string") return this.string(v);
    if (v instanceof Decimal) return v.toString();
    if (Array.isArray(v)) {
      const parts: string[] = [];
      for (let i = 0; i < v.length; i++) {
        this.path.push(i);
        parts.push(this.json(v[i], depth + 1));
        this.path.pop();
      }
      return "[" + parts.join(",") + "]";
    }
    if (isPlainObject(v)) {
      const keys = Object.keys(v).sort(compareCodePoints);
      const parts: string[] = [];
      for (const k of keys) {
        this.path.push(k);
        parts.push(this.string(k) + ":" + this.json(v[k], depth + 1));
        this.path.pop();
      }
      return "{" + parts.join(",") + "}";
    }
    return this.refuse(`expected JSON, found ${kindOf(v)}`);
  }

  value(v: unknown, ty: Type, depth: number): string {
    if (depth > DEFAULT_LIMITS.maxDepth) this.refuse("nested too deep");
    const path = this.path;
    switch (ty.k) {
      case "param":
        return this.refuse(`the type parameter ${ty.name} is not bound`);
      case "prim":
        return this.prim(v, ty, depth);
      case "list": {
        if (!Array.isArray(v)) this.wrong(v, ty);
        let out = "[";
        for (let i = 0; i < v.length; i++) {
          path.push(i);
          out += (i ? "," : "") + this.value(v[i], ty.item, depth + 1);
          path.pop();
        }
        return out + "]";
      }
      case "set": {
        if (!(v instanceof FlowSet) || !Array.isArray(v.items)) this.wrong(v, ty);
        const items: unknown[] = v.items;
        path.push("items");
        const texts: string[] = [];
        for (let i = 0; i < items.length; i++) {
          path.push(i);
          texts.push(this.value(items[i], ty.item, depth + 1));
          path.pop();
        }
        const sorted = this.sortedOnce(texts, "a set holds each element once");
        path.pop();
        return "[" + sorted.join(",") + "]";
      }
      case "tuple": {
        if (!Array.isArray(v) || v.length !== ty.items.length) this.wrong(v, ty);
        const parts: string[] = [];
        for (let i = 0; i < v.length; i++) {
          path.push(i);
          parts.push(this.value(v[i], ty.items[i], depth + 1));
          path.pop();
        }
        return "[" + parts.join(",") + "]";
      }
      case "dict":
        return this.dict(v, ty, depth);
      case "option": {
        if (v === null) return '"None"';
        if (!isPlainObject(v) || !hasOwn(v, "some")) this.wrong(v, ty);
        path.push("some");
        const inner = this.value(v["some"], ty.inner, depth + 1);
        path.pop();
        return '{"Some":' + inner + "}";
      }
      case "result": {
        if (isPlainObject(v)) {
          const ok = hasOwn(v, "ok");
          if (ok !== hasOwn(v, "err")) {
            const tag = ok ? "ok" : "err";
            path.push(tag);
            const inner = this.value(v[tag], ok ? ty.ok : ty.err, depth + 1);
            path.pop();
            return (ok ? '{"Ok":' : '{"Err":') + inner + "}";
          }
        }
        return this.wrong(v, ty);
      }
      case "named":
        return this.named(v, ty, depth);
    }
  }

  /** Texts sorted by code point, refusing two equal ones (at the later one's index). */
  sortedOnce(texts: string[], why: string): string[] {
    const seen = new Map<string, number>();
    for (let i = 0; i < texts.length; i++) {
      const j = seen.get(texts[i]);
      if (j !== undefined) {
        this.path.push(i);
        this.refuse(`${why}; this one equals [${j}]`);
      }
      seen.set(texts[i], i);
    }
    return texts.slice().sort(compareCodePoints);
  }

  dict(v: unknown, ty: Type & { k: "dict" }, depth: number): string {
    const path = this.path;
    if (ty.key.k === "prim" && ty.key.name === "Text") {
      if (!(v instanceof Map)) return this.wrong(v, ty);
      const keys = [...(v as Map<unknown, unknown>).keys()];
      for (const k of keys) if (typeof k !== "string") this.wrong(v, ty);
      const parts: string[] = [];
      for (const k of (keys as string[]).sort(compareCodePoints)) {
        path.push(k);
        parts.push(this.string(k) + ":" + this.value(v.get(k), ty.value, depth + 1));
        path.pop();
      }
      return "{" + parts.join(",") + "}";
    }
    if (!(v instanceof FlowDict) || !Array.isArray(v.items)) return this.wrong(v, ty);
    const items: unknown[] = v.items;
    const pairs = new Map<string, string>();
    path.push("items");
    for (let i = 0; i < items.length; i++) {
      const kv = items[i];
      path.push(i);
      if (!Array.isArray(kv) || kv.length !== 2) this.refuse(`expected a [key, value] pair, found ${kindOf(kv)}`);
      path.push(0);
      const k = this.value(kv[0], ty.key, depth + 2);
      path.pop();
      if (pairs.has(k)) this.refuse("a dict holds each key once");
      path.push(1);
      pairs.set(k, "[" + k + "," + this.value(kv[1], ty.value, depth + 2) + "]");
      path.pop();
      path.pop();
    }
    path.pop();
    const keys = [...pairs.keys()].sort(compareCodePoints);
    return "[" + keys.map((k) => pairs.get(k)).join(",") + "]";
  }

  prim(v: unknown, ty: Type & { k: "prim" }, depth: number): string {
    switch (ty.name) {
      case "Int":
        if (typeof v !== "bigint") this.wrong(v, ty);
        return this.int(v);
      case "Decimal":
        if (!(v instanceof Decimal)) this.wrong(v, ty);
        return v.toString();
      case "Bool":
        if (typeof v !== "boolean") this.wrong(v, ty);
        return v ? "true" : "false";
      case "Text":
        if (typeof v !== "string") this.wrong(v, ty);
        return this.string(v);
      case "Bytes":
        if (!(v instanceof Uint8Array)) this.wrong(v, ty);
        return '"' + Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString("base64") + '"';
      case "Instant":
        if (!(v instanceof Instant) || typeof v.nanos !== "bigint" || v.nanos < -INSTANT_LIMIT_NS || v.nanos >= INSTANT_LIMIT_NS) {
          this.wrong(v, ty);
        }
        return '"' + instantText(v.nanos) + '"';
      case "Duration":
        if (!(v instanceof Duration) || typeof v.nanos !== "bigint") this.wrong(v, ty);
        return '"' + durationText(v.nanos) + '"';
      case "json.Value":
        return this.json(v, depth);
      case "host token":
        if (!(v instanceof HostToken)) this.wrong(v, ty);
        this.path.push("json");
        try {
          return this.json(v.json, depth);
        } finally {
          this.path.pop();
        }
      case "Never":
        return this.refuse("Never has no values");
    }
  }

  /** A record's (or a constructor's) fields, read from `v`'s properties by Flow name. */
  fields(v: { [key: string]: unknown }, fields: Fields, scope: Scope, depth: number): string {
    const out: [string, string][] = [];
    for (const [name, fty] of fields) {
      const closed = close(fty, scope);
      const fv = v[name];
      this.path.push(name);
      if (closed.k === "option") {
        if (fv !== null) {
          if (!isPlainObject(fv) || !hasOwn(fv, "some")) this.wrong(fv, closed);
          this.path.push("some");
          out.push([name, this.value(fv["some"], closed.inner, depth + 1)]);
          this.path.pop();
        }
      } else {
        if (fv === undefined && !hasOwn(v, name)) this.refuse(`missing required field ${stringText(name)}`);
        out.push([name, this.value(fv, closed, depth + 1)]);
      }
      this.path.pop();
    }
    out.sort((a, b) => compareCodePoints(a[0], b[0]));
    return "{" + out.map(([k, t]) => stringText(k) + ":" + t).join(",") + "}";
  }

  named(v: unknown, ty: Type & { k: "named" }, depth: number): string {
    const decl = this.env.get(ty.identity);
    if (decl === undefined || decl.params.length !== ty.args.length) {
      return this.refuse(`the type ${ty.identity} is not declared with ${ty.args.length} type arguments`);
    }
    const scope: Scope = new Map(decl.params.map((p, i) => [p, ty.args[i]]));
    if (typeof v !== "object" || v === null || Array.isArray(v)) return this.wrong(v, ty);
    const obj = v as { [key: string]: unknown };
    if (decl.k === "record") {
      return this.fields(obj, decl.fields, scope, depth);
    }
    const tag = obj["$tag"];
    for (const c of decl.constructors) {
      if (c.name !== tag) continue;
      if (c.payload === null) return stringText(c.name);
      this.path.push(c.name);
      let body: string;
      if ("fields" in c.payload) {
        body = this.fields(obj, c.payload.fields, scope, depth + 1);
      } else {
        this.path.push("value");
        body = this.value(obj["value"], close(c.payload.value, scope), depth + 1);
        this.path.pop();
      }
      this.path.pop();
      return "{" + stringText(c.name) + ":" + body + "}";
    }
    return this.refuse(
      typeof tag === "string" ? `${written(ty)} has no constructor ${tag}` : `expected ${written(ty)}, found ${kindOf(v)} without a $tag`,
    );
  }
}

/** Parses `text` (a string, or UTF-8 bytes checked to be UTF-8) into raw JSON, within the limits. */
export function parse(text: string | Uint8Array, limits: Limits = DEFAULT_LIMITS): Raw {
  if (typeof text !== "string") {
    if (text.byteLength > limits.maxBytes) throw new Refused([], `the text is longer than ${limits.maxBytes} bytes`);
    if (!isUtf8(text)) throw new Refused([], "not UTF-8");
    text = Buffer.from(text.buffer, text.byteOffset, text.byteLength).toString("utf8");
  } else if (text.length > limits.maxBytes && Buffer.byteLength(text, "utf8") > limits.maxBytes) {
    throw new Refused([], `the text is longer than ${limits.maxBytes} bytes`);
  }
  return readRaw(text);
}

/**
 * The value JSON already read ({@link parse}) encodes at `ty` (named types
 * in `env`, type parameters bound by `params`), or {@link Refused}.
 */
export function decodeRaw(raw: Raw, ty: Type, env: Env, limits: Limits = DEFAULT_LIMITS, params: Scope = NO_SCOPE): unknown {
  // The commonest arguments, a short Text or Int, take no decoder.
  if (ty.k === "prim") {
    if (ty.name === "Text" && typeof raw === "string" && raw.length * 3 <= limits.maxStringBytes) return raw;
    if (ty.name === "Int" && raw instanceof RawNum && SHORT_INT.test(raw.text)) return BigInt(raw.text);
  }
  return new Decoder(env, limits).value(raw, ty, 0, params);
}

/**
 * The value `text` encodes at `ty` (named types in `env`, type parameters
 * bound by `params`), or {@link Refused}.
 */
export function decode(text: string | Uint8Array, ty: Type, env: Env, limits: Limits = DEFAULT_LIMITS, params: Scope = NO_SCOPE): unknown {
  return decodeRaw(parse(text, limits), ty, env, limits, params);
}

/**
 * The canonical text of `value` at `ty` (type parameters bound by
 * `params`), or {@link Refused} when it is not a value of that type.
 */
export function encode(value: unknown, ty: Type, env: Env, params: Scope = NO_SCOPE): string {
  // The commonest answers, a Text or an Int, take no encoder.
  if (ty.k === "prim") {
    if (ty.name === "Text" && typeof value === "string" && !SURROGATE.test(value)) return stringText(value);
    if (ty.name === "Int" && typeof value === "bigint" && value < 1_000_000_000_000_000n && value > -1_000_000_000_000_000n) {
      return value.toString();
    }
  }
  return new Encoder(env).value(value, close(ty, params), 0);
}

/** The JSON of `value` as canonical text (`json.Value`). */
export function jsonText(value: JsonValue): string {
  return new Encoder(new Map()).json(value, 0);
}

/** A JSON text read as {@link JsonValue} (exact numbers), or {@link Refused}. */
export function parseJsonValue(text: string | Uint8Array, limits: Limits = DEFAULT_LIMITS): JsonValue {
  return decode(text, { k: "prim", name: "json.Value" }, new Map(), limits) as JsonValue;
}

