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
import { Constructor, Env, Fields, Type, close, written } from "./types.js";
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

/** A found value's text, as core shows it: shortened to 40 characters with `…`. */
function shorten(s: string): string {
  if (s.length <= 40) return s;
  const cut = [...s.slice(0, 80)];
  return cut.length <= 40 ? s : cut.slice(0, 40).join("") + "…";
}

/** How a refusal shows the value it found, in core's words: a number as written, a string quoted, both shortened. */
function found(raw: Raw): string {
  if (raw instanceof RawNum) return shorten(raw.text);
  if (typeof raw === "string") return stringText(shorten(raw));
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
/** What a Text's canonical text escapes, or refuses: one pass says a string is written as itself. */
const TEXT_SPECIAL = /["\\\u0000-\u001f\ud800-\udfff]/;

/** Whether `s` is Unicode scalar values only (no lone surrogate). */
export function wellFormed(s: string): boolean {
  return !SURROGATE.test(s) || !hasLoneSurrogate(s);
}

/** What a record's (or a constructor's) fields need at every value, made once per declaration. */
interface Layout {
  /** Each field's index by name. */
  readonly index: Map<string, number>;
  /** The fields' indices in code-point order of their names: the canonical text's order. */
  readonly sorted: readonly number[];
  /** Each field's name as canonical text, with its `:`. */
  readonly keys: readonly string[];
}

const LAYOUTS = new WeakMap<Fields, Layout>();

function layout(fields: Fields): Layout {
  let l = LAYOUTS.get(fields);
  if (l === undefined) {
    const sorted = fields.map((_, i) => i).sort((a, b) => compareCodePoints(fields[a][0], fields[b][0]));
    l = { index: new Map(fields.map((f, i) => [f[0], i])), sorted, keys: fields.map((f) => stringText(f[0]) + ":") };
    LAYOUTS.set(fields, l);
  }
  return l;
}

/** The scope a declared type's parameters are bound in: none made for a declaration without parameters. */
function scopeOf(params: readonly string[], args: readonly Type[]): Scope {
  return params.length === 0 ? NO_SCOPE : new Map(params.map((p, i) => [p, args[i]]));
}

/** `ty (what)`, as core's mismatches name the expected shape. */
function shape(ty: Type, what: string): string {
  return `${written(ty)} (${what})`;
}

const HUGE = 100_000_000_000_000;
const OPTION_SHAPE = '"None" or {"Some": …}';
const RESULT_SHAPE = '{"Ok": …} or {"Err": …}';
const ENUM_SHAPE = "a constructor name or an object of one member";

/**
 * Decodes raw JSON at a type in core's order and core's words: members
 * and elements in the text's order, so the first failure is the one core
 * finds, at the same path, with the same reason.
 */
class Decoder {
  readonly path: Path = [];
  constructor(
    readonly env: Env,
    readonly limits: Limits,
    /** How far the value's canonical text may still outgrow the text read (core's budget: the limit less the text's length). */
    private budget: number,
  ) {}

  /** Counts how much longer a number's canonical text is than its token, within the budget (core's `grow`). */
  grow(neg: boolean, digits: string, exp: number, token: string): void {
    let written: number;
    if (digits.length === 0) written = 1;
    else if (exp >= 0) written = digits.length + exp;
    else written = digits.length > -exp ? digits.length + 1 : -exp + 2;
    if (neg) written += 1;
    const more = written - token.length;
    if (more <= 0) return;
    if (more > this.budget) {
      this.refuse(`written out, the value's canonical text would pass the limit of ${this.limits.maxBytes} bytes`);
    }
    this.budget -= more;
  }

  refuse(reason: string): never {
    throw new Refused(this.path, reason);
  }

  /** At `key` of the current path: `f`'s result. */
  at<T>(key: string | number, f: () => T): T {
    this.path.push(key);
    const v = f();
    this.path.pop();
    return v;
  }

  // -- checks every value is held to --------------------------------------

  text(s: string): string {
    if (s.length * 3 > this.limits.maxStringBytes) {
      const n = Buffer.byteLength(s, "utf8");
      if (n > this.limits.maxStringBytes) this.refuse(`the string is ${n} bytes, past the limit of ${this.limits.maxStringBytes}`);
    }
    return s;
  }

  tooLong(at: string | number): never {
    this.path.push(at);
    return this.refuse(`past the limit of ${this.limits.maxCollectionLen} elements in one array or object`);
  }

  tooDeep(): never {
    return this.refuse(`arrays and objects nest deeper than the limit of ${this.limits.maxDepth}`);
  }

  /** An ignored member's value: read, and held only to the depth limit (core skips it). */
  skip(raw: Raw, depth: number): void {
    if (depth > this.limits.maxDepth) this.tooDeep();
    if (raw instanceof RawObj) {
      for (const v of raw.values) this.skip(v, depth + 1);
    } else if (Array.isArray(raw)) {
      for (const v of raw) this.skip(v, depth + 1);
    }
  }

  /** A number token's parts, or a mismatch with `want`. */
  number(raw: Raw, want: string): [boolean, string, number] {
    if (!(raw instanceof RawNum)) this.refuse(`expected ${want}, found ${found(raw)}`);
    return digitsOf(raw.text);
  }

  /** A Decimal's parts within the limits (core's `decimal`). */
  decimalParts(raw: RawNum): [boolean, string, number] {
    const parts = digitsOf(raw.text);
    const [, digits, exp] = parts;
    if (digits.length === 0) return parts;
    const lim = this.limits;
    if (digits.length > lim.maxDecimalDigits) {
      this.refuse(`the number has ${digits.length} significant digits, past the limit of ${lim.maxDecimalDigits}`);
    }
    if (Math.abs(exp) > lim.maxDecimalExponent) {
      const size = Math.abs(exp) >= HUGE ? "is over 10^14 in size" : `is ${exp}`;
      this.refuse(`the number's exponent ${size}, past the limit of ±${lim.maxDecimalExponent}`);
    }
    return parts;
  }

  // -- the declared type directs every step -------------------------------

  value(raw: Raw, ty: Type, depth: number, scope: Scope): unknown {
    if (depth > this.limits.maxDepth) this.tooDeep();
    switch (ty.k) {
      case "param": {
        const bound = scope.get(ty.name);
        if (bound === undefined) this.refuse(`the type parameter ${ty.name} is not bound`);
        return this.value(raw, bound, depth, NO_SCOPE);
      }
      case "prim":
        return this.prim(raw, ty, depth);
      case "list":
        return this.list(raw, ty, ty.item, depth, scope);
      case "set": {
        const vals = this.list(raw, ty, ty.item, depth, scope);
        const item = close(ty.item, scope);
        return new FlowSet(this.ordered(vals, (v) => this.canon(v, item), (j) => `a set holds each element once; this one equals [${j}]`));
      }
      case "tuple": {
        // The elements given are decoded first, then the length is judged.
        const what = shape(ty, `an array of ${ty.items.length}`);
        if (!Array.isArray(raw)) this.refuse(`expected ${what}, found ${found(raw)}`);
        const n = Math.min(raw.length, ty.items.length);
        const out = new Array<unknown>(n);
        for (let i = 0; i < n; i++) out[i] = this.at(i, () => this.value(raw[i], ty.items[i], depth + 1, scope));
        if (raw.length < ty.items.length) this.refuse(`expected ${what}, found an array of ${raw.length}`);
        if (raw.length > ty.items.length) this.refuse(`expected ${what}, found a longer array`);
        return out;
      }
      case "dict":
        return this.dictionary(raw, ty, depth, scope);
      case "option": {
        if (raw === "None") return null;
        const [tag, v] = this.tagged(raw, ty, OPTION_SHAPE, ["Some"]);
        const inner = this.at(tag, () => this.value(v, ty.inner, depth + 1, scope));
        this.closeTagged(raw as RawObj, ty, OPTION_SHAPE);
        return { some: inner };
      }
      case "result": {
        const [tag, v] = this.tagged(raw, ty, RESULT_SHAPE, ["Ok", "Err"]);
        const inner = this.at(tag, () => this.value(v, tag === "Ok" ? ty.ok : ty.err, depth + 1, scope));
        this.closeTagged(raw as RawObj, ty, RESULT_SHAPE);
        return tag === "Ok" ? { ok: inner } : { err: inner };
      }
      case "named":
        return this.named(raw, ty, depth, scope);
    }
  }

  /** A list's elements, decoded in order, within the collection limit. */
  list(raw: Raw, ty: Type, item: Type, depth: number, scope: Scope): unknown[] {
    if (!Array.isArray(raw)) this.refuse(`expected ${shape(ty, "an array")}, found ${found(raw)}`);
    const out = new Array<unknown>(raw.length);
    for (let i = 0; i < raw.length; i++) {
      if (i >= this.limits.maxCollectionLen) this.tooLong(i);
      out[i] = this.at(i, () => this.value(raw[i], item, depth + 1, scope));
    }
    return out;
  }

  /**
   * `vals` in canonical order of `key`; two with one key are refused as
   * core refuses them: the first equal pair in that order (ties by index),
   * at the later one's index.
   */
  ordered<T>(vals: T[], key: (v: T) => string, why: (earlier: number) => string): T[] {
    const keyed: [string, number, T][] = vals.map((v, i) => [key(v), i, v]);
    // Array.prototype.sort is stable: equal keys stay in index order.
    keyed.sort((a, b) => compareCodePoints(a[0], b[0]));
    for (let k = 1; k < keyed.length; k++) {
      if (keyed[k][0] === keyed[k - 1][0]) {
        this.path.push(keyed[k][1]);
        this.refuse(why(keyed[k - 1][1]));
      }
    }
    return keyed.map((kv) => kv[2]);
  }

  canon(v: unknown, ty: Type): string {
    return new Encoder(this.env).value(v, ty, 0);
  }

  /** The one member of a tagged object (checked to be one of `tags`); the rest is judged by {@link closeTagged} after its value. */
  tagged(raw: Raw, ty: Type, what: string, tags: readonly string[]): [string, Raw] {
    if (!(raw instanceof RawObj)) this.refuse(`expected ${shape(ty, what)}, found ${found(raw)}`);
    if (raw.keys.length === 0) this.refuse(`expected ${shape(ty, what)}, found an empty object`);
    const k = raw.keys[0];
    if (!tags.includes(k)) this.refuse(`expected ${shape(ty, what)}, found an object with key ${stringText(shorten(k))}`);
    return [k, raw.values[0]];
  }

  closeTagged(raw: RawObj, ty: Type, what: string): void {
    if (raw.keys.length > 1) this.refuse(`expected ${shape(ty, what)}, found a second member ${stringText(shorten(raw.keys[1]))}`);
  }

  prim(raw: Raw, ty: Type & { k: "prim" }, depth: number): unknown {
    switch (ty.name) {
      case "Int": {
        if (raw instanceof RawNum && SHORT_INT.test(raw.text)) return BigInt(raw.text);
        const [neg, digits, exp] = this.number(raw, "Int");
        if (digits.length === 0) return 0n;
        if (exp < 0) this.refuse(`expected Int, found ${found(raw)}, which is not whole`);
        if (digits.length + exp > this.limits.maxIntDigits) {
          const n = exp >= HUGE ? "over 10^14" : String(digits.length + exp);
          this.refuse(`the Int has ${n} digits, past the limit of ${this.limits.maxIntDigits}`);
        }
        this.grow(neg, digits, exp, (raw as RawNum).text);
        const n = BigInt(digits + "0".repeat(exp));
        return neg ? -n : n;
      }
      case "Decimal": {
        if (!(raw instanceof RawNum)) this.refuse(`expected Decimal, found ${found(raw)}`);
        const [neg, digits, exp] = this.decimalParts(raw);
        this.grow(neg, digits, exp, raw.text);
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
      case "Text":
        if (typeof raw !== "string") this.refuse(`expected Text, found ${found(raw)}`);
        return this.text(raw);
      case "Bytes": {
        if (typeof raw !== "string") this.refuse(`expected ${shape(ty, "a base64 string")}, found ${found(raw)}`);
        const s = this.text(raw);
        const b = Buffer.from(s, "base64");
        if (s.length % 4 !== 0 || !BASE64.test(s) || b.toString("base64") !== s) {
          this.refuse(`expected Bytes, found ${stringText(shorten(s))}, which is not canonical base64 (standard alphabet, padded)`);
        }
        return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
      }
      case "Instant": {
        if (typeof raw !== "string") this.refuse(`expected ${shape(ty, "an RFC 3339 date-time string")}, found ${found(raw)}`);
        const s = this.text(raw);
        const got = readInstant(s);
        if (typeof got === "string") this.refuse(`expected Instant, found ${stringText(shorten(s))}: ${got}`);
        return new Instant(got);
      }
      case "Duration": {
        if (typeof raw !== "string") this.refuse(`expected ${shape(ty, 'a "PT<seconds>S" string')}, found ${found(raw)}`);
        const s = this.text(raw);
        const got = readDuration(s);
        if (typeof got === "string") this.refuse(`expected Duration, found ${stringText(shorten(s))}: ${got}`);
        return new Duration(got);
      }
    }
  }

  /** `json.Value`: exact numbers (a `bigint` when whole and within the Int limit), objects without a prototype. */
  json(raw: Raw, depth: number): JsonValue {
    if (depth > this.limits.maxDepth) this.tooDeep();
    if (raw instanceof RawNum) {
      if (SHORT_INT.test(raw.text)) return BigInt(raw.text);
      const [neg, digits, exp] = this.decimalParts(raw);
      this.grow(neg, digits, exp, raw.text);
      if (exp >= 0 && digits.length + exp <= this.limits.maxIntDigits) {
        const n = BigInt((digits || "0") + "0".repeat(exp));
        return neg ? -n : n;
      }
      const c = BigInt(digits);
      return new Decimal(neg ? -c : c, exp);
    }
    if (typeof raw === "string") return this.text(raw);
    if (raw instanceof RawObj) {
      const out = Object.create(null) as { [key: string]: JsonValue };
      const { keys, values } = raw;
      let dup: string | null = null;
      for (let i = 0; i < keys.length; i++) {
        const k = keys[i];
        const v = this.at(k, () => {
          this.text(k);
          if (i >= this.limits.maxCollectionLen) this.refuse(`past the limit of ${this.limits.maxCollectionLen} elements in one array or object`);
          return this.json(values[i], depth + 1);
        });
        if (dup === null && Object.prototype.hasOwnProperty.call(out, k)) dup = k;
        out[k] = v;
      }
      // Core judges a key given twice once the object is read.
      if (dup !== null) this.refuse(`the key ${stringText(shorten(dup))} is given twice`);
      return out;
    }
    if (Array.isArray(raw)) {
      const out: JsonValue[] = new Array<JsonValue>(raw.length);
      for (let i = 0; i < raw.length; i++) {
        if (i >= this.limits.maxCollectionLen) this.tooLong(i);
        out[i] = this.at(i, () => this.json(raw[i], depth + 1));
      }
      return out;
    }
    return raw;
  }

  dictionary(raw: Raw, ty: Type & { k: "dict" }, depth: number, scope: Scope): unknown {
    const key = close(ty.key, scope);
    const path = this.path;
    if (key.k === "prim" && key.name === "Text") {
      // Members decoded as they come; a key given twice refused after.
      if (!(raw instanceof RawObj)) this.refuse(`expected ${shape(ty, "an object")}, found ${found(raw)}`);
      const entries: [string, unknown][] = [];
      for (let i = 0; i < raw.keys.length; i++) {
        const k = raw.keys[i];
        path.push(k);
        this.text(k);
        if (i >= this.limits.maxCollectionLen) this.refuse(`past the limit of ${this.limits.maxCollectionLen} elements in one array or object`);
        entries.push([k, this.value(raw.values[i], ty.value, depth + 1, scope)]);
        path.pop();
      }
      entries.sort((a, b) => compareCodePoints(a[0], b[0]));
      for (let i = 1; i < entries.length; i++) {
        if (entries[i][0] === entries[i - 1][0]) this.refuse(`the key ${stringText(shorten(entries[i][0]))} is given twice`);
      }
      return new Map(entries);
    }
    if (!Array.isArray(raw)) this.refuse(`expected ${shape(ty, "an array of [key, value] pairs")}, found ${found(raw)}`);
    const pairs: [unknown, unknown][] = [];
    const pair = "a [key, value] pair";
    for (let i = 0; i < raw.length; i++) {
      if (i >= this.limits.maxCollectionLen) this.tooLong(i);
      const p = raw[i];
      path.push(i);
      if (!Array.isArray(p)) this.refuse(`expected ${pair}, found ${found(p)}`);
      if (p.length < 1) this.refuse(`expected ${pair}, found a shorter array`);
      const k = this.at(0, () => this.value(p[0], ty.key, depth + 2, scope));
      if (p.length < 2) this.refuse(`expected ${pair}, found a shorter array`);
      const v = this.at(1, () => this.value(p[1], ty.value, depth + 2, scope));
      if (p.length > 2) this.refuse(`expected ${pair}, found a longer array`);
      path.pop();
      pairs.push([k, v]);
    }
    return new FlowDict(
      this.ordered(pairs, (kv) => this.canon(kv[0], key), (j) => `a dict holds each key once; this key equals the key of [${j}]`),
    );
  }

  /**
   * A record's (or a constructor's) fields into `out`, by their Flow
   * names, as core reads them: members in the text's order, a field given
   * twice refused when its second comes, ignored members skipped (a key
   * among them given twice refused too), missing fields after.
   */
  fields(raw: Raw, fields: Fields, what: () => string, depth: number, scope: Scope, out: { [key: string]: unknown }): void {
    if (!(raw instanceof RawObj)) this.refuse(`expected ${what()}, found ${found(raw)}`);
    const { index, sorted } = layout(fields);
    // A decoded value is never `undefined`: an empty slot is a field not given.
    const got = new Array<unknown>(fields.length);
    let ignored: Set<string> | null = null;
    const { keys, values } = raw;
    const path = this.path;
    for (let i = 0; i < keys.length; i++) {
      const k = keys[i];
      path.push(k);
      this.text(k);
      path.pop();
      if (i >= this.limits.maxCollectionLen) this.tooLong(k);
      // Hosts write members in the canonical order of names: the i-th member
      // is most often the i-th field in that order, found without hashing.
      const hint = sorted[i];
      const f = hint !== undefined && fields[hint][0] === k ? hint : index.get(k);
      if (f === undefined) {
        ignored ??= new Set();
        if (ignored.has(k)) this.refuse(`the key ${stringText(shorten(k))} is given twice`);
        ignored.add(k);
        path.push(k);
        this.skip(values[i], depth + 1);
        path.pop();
        continue;
      }
      if (got[f] !== undefined) this.refuse(`the key ${stringText(shorten(k))} is given twice`);
      const closed = close(fields[f][1], scope);
      path.push(k);
      got[f] = closed.k === "option" ? { some: this.value(values[i], closed.inner, depth + 1, NO_SCOPE) } : this.value(values[i], closed, depth + 1, NO_SCOPE);
      path.pop();
    }
    for (let f = 0; f < fields.length; f++) {
      const name = fields[f][0];
      if (got[f] !== undefined) out[name] = got[f];
      else if (close(fields[f][1], scope).k === "option") out[name] = null;
      else this.refuse(`missing required field ${stringText(shorten(name))}`);
    }
  }

  named(raw: Raw, ty: Type & { k: "named" }, depth: number, scope: Scope): unknown {
    const decl = this.env.get(ty.identity);
    if (decl === undefined) this.refuse(`the type ${ty.identity} is not declared`);
    const args = ty.args.map((a) => close(a, scope));
    if (args.length !== decl.params.length) {
      this.refuse(`the type ${ty.identity} takes ${decl.params.length} type arguments, given ${args.length}`);
    }
    const inner = scopeOf(decl.params, args);
    if (decl.k === "record") {
      const out: { [key: string]: unknown } = {};
      this.fields(raw, decl.fields, () => shape(ty, "an object"), depth, inner, out);
      return out;
    }
    const find = (name: string): Constructor =>
      decl.constructors.find((c) => c.name === name) ??
      this.refuse(`${written(ty)} has no constructor ${stringText(shorten(name))}; it has ${decl.constructors.map((c) => c.name).join(", ")}`);
    if (typeof raw === "string") {
      const c = find(raw);
      if (c.payload !== null) this.refuse(`constructor ${stringText(c.name)} carries a payload: expected {${stringText(c.name)}: …}`);
      return { $tag: c.name };
    }
    if (!(raw instanceof RawObj)) this.refuse(`expected ${shape(ty, ENUM_SHAPE)}, found ${found(raw)}`);
    if (raw.keys.length === 0) this.refuse(`expected ${shape(ty, ENUM_SHAPE)}, found an empty object`);
    const tag = raw.keys[0];
    const v = raw.values[0];
    const c = find(tag);
    if (c.payload === null) this.refuse(`constructor ${stringText(c.name)} carries no payload: expected ${stringText(c.name)}`);
    const out: { [key: string]: unknown } = { $tag: tag };
    const payload = c.payload;
    this.at(tag, () => {
      if ("fields" in payload) {
        this.fields(v, payload.fields, () => `an object of the fields of ${stringText(c.name)}`, depth + 1, inner, out);
      } else {
        out["value"] = this.value(v, payload.value, depth + 1, inner);
      }
    });
    this.closeTagged(raw, ty, ENUM_SHAPE);
    return out;
  }
}

// -- time (core's readers, in core's words) ---------------------------------------

const NS = 1_000_000_000n;

/** A cursor over a time's spelling; each read returns why it failed as a string. */
class Cursor {
  i = 0;
  constructor(readonly s: string) {}

  peek(): number {
    return this.s.charCodeAt(this.i);
  }

  digits(n: number, what: string): number | string {
    let v = 0;
    for (let k = 0; k < n; k++) {
      const c = this.s.charCodeAt(this.i + k);
      if (!(c >= 0x30 && c <= 0x39)) return `expected ${n} digits of ${what}`;
      v = v * 10 + (c - 0x30);
    }
    this.i += n;
    return v;
  }

  expect(c: string, what: string): string | null {
    if (this.s[this.i] !== c) return `expected ${what}`;
    this.i++;
    return null;
  }

  /** Up to nine fraction digits as nanoseconds; later digits must be 0. */
  fraction(): bigint | string {
    const start = this.i;
    while (this.peek() >= 0x30 && this.peek() <= 0x39) this.i++;
    const digits = this.s.slice(start, this.i);
    if (digits.length === 0) return "expected digits after `.`";
    if (/[1-9]/.test(digits.slice(9))) return "it is finer than a nanosecond";
    return BigInt(digits.slice(0, 9).padEnd(9, "0"));
  }
}

const isLeap = (y: bigint): boolean => y % 4n === 0n && (y % 100n !== 0n || y % 400n === 0n);
const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** An RFC 3339 date-time's nanoseconds since the epoch, or why it is not one (core's `time::instant`). */
function readInstant(s: string): bigint | string {
  const c = new Cursor(s);
  const sign = s[0] === "+" || s[0] === "-" ? s[0] : null;
  if (sign !== null) c.i++;
  const yearStart = c.i;
  while (c.peek() >= 0x30 && c.peek() <= 0x39) c.i++;
  const yearDigits = s.slice(yearStart, c.i);
  let year: bigint;
  if (sign === null) {
    if (yearDigits.length !== 4) return "expected a four-digit year";
    year = BigInt(yearDigits);
  } else {
    if (yearDigits.length < 4 || (yearDigits.length > 4 && yearDigits[0] === "0")) {
      return "a signed year has at least four digits and no extra leading zero";
    }
    if (yearDigits.length > 30) return "the year is out of range";
    const v = BigInt(yearDigits);
    if (v >= 0n && v <= 9999n && !(sign === "-" && v > 0n)) return "a year within 0000..9999 is written without a sign";
    year = sign === "-" ? -v : v;
  }
  const fail = (x: unknown): x is string => typeof x === "string";
  let e: string | null = c.expect("-", "`-` after the year");
  if (e !== null) return e;
  const month = c.digits(2, "the month");
  if (fail(month)) return month;
  if ((e = c.expect("-", "`-` after the month")) !== null) return e;
  const day = c.digits(2, "the day");
  if (fail(day)) return day;
  if (month < 1 || month > 12) return `month ${String(month).padStart(2, "0")} does not exist`;
  const dim = month === 2 && isLeap(year) ? 29 : DAYS_IN_MONTH[month - 1];
  if (day < 1 || day > dim) return `day ${String(day).padStart(2, "0")} does not exist in that month`;
  if (s[c.i] !== "T" && s[c.i] !== "t") return "expected `T` after the date";
  c.i++;
  const hour = c.digits(2, "the hour");
  if (fail(hour)) return hour;
  if ((e = c.expect(":", "`:` after the hour")) !== null) return e;
  const minute = c.digits(2, "the minute");
  if (fail(minute)) return minute;
  if ((e = c.expect(":", "`:` after the minute")) !== null) return e;
  const second = c.digits(2, "the second");
  if (fail(second)) return second;
  if (hour > 23 || minute > 59) return "the time of day does not exist";
  if (second === 60) return "a leap second does not exist on a time line without leap seconds";
  if (second > 59) return "the time of day does not exist";
  let nanos = 0n;
  if (s[c.i] === ".") {
    c.i++;
    const f = c.fraction();
    if (fail(f)) return f;
    nanos = f;
  }
  let offset = 0;
  const o = s[c.i];
  if (o === "Z" || o === "z") {
    c.i++;
  } else if (o === "+" || o === "-") {
    c.i++;
    const h = c.digits(2, "the offset's hours");
    if (fail(h)) return h;
    if ((e = c.expect(":", "`:` in the offset")) !== null) return e;
    const m = c.digits(2, "the offset's minutes");
    if (fail(m)) return m;
    if (h > 23 || m > 59) return "the offset does not exist";
    offset = (h * 3600 + m * 60) * (o === "-" ? -1 : 1);
  } else {
    return "expected `Z` or an offset such as `+01:00`";
  }
  if (c.i !== s.length) return "unexpected text after the offset";
  const seconds = daysFromCivil(year, month, day) * 86_400n + BigInt(hour * 3600 + minute * 60 + second - offset);
  const total = seconds * NS + nanos;
  if (total < -INSTANT_LIMIT_NS || total >= INSTANT_LIMIT_NS) return "the instant is out of range";
  return total;
}

/** `PT<seconds>S`'s nanoseconds, or why it is not one (core's `time::duration`). */
function readDuration(s: string): bigint | string {
  if (!s.startsWith("PT") || !s.endsWith("S") || s.length < 3) return "expected `PT<seconds>S`";
  let body = s.slice(2, -1);
  const negative = body[0] === "-";
  if (negative) body = body.slice(1);
  let w = 0;
  while (w < body.length && body.charCodeAt(w) >= 0x30 && body.charCodeAt(w) <= 0x39) w++;
  const whole = body.slice(0, w);
  const plain = "expected `PT<seconds>S`, the seconds a plain decimal number";
  if (whole.length === 0) return plain;
  if (whole.length > 1 && whole[0] === "0") return "the seconds have a leading zero";
  let nanos = 0n;
  if (w < body.length) {
    if (body[w] !== ".") return plain;
    const c = new Cursor(body);
    c.i = w + 1;
    const f = c.fraction();
    if (typeof f === "string") return f;
    if (c.i !== body.length) return plain;
    nanos = f;
  }
  if (whole.length > 30) return "the duration is out of range";
  const magnitude = BigInt(whole) * NS + nanos;
  if (negative ? magnitude > INSTANT_LIMIT_NS : magnitude >= INSTANT_LIMIT_NS) return "the duration is out of range";
  return negative ? -magnitude : magnitude;
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
    const { sorted, keys } = layout(fields);
    const texts = new Array<string | null>(fields.length);
    const path = this.path;
    // Judged in declaration order (the first wrong field is the first
    // declared), written in the canonical order of names.
    for (let f = 0; f < fields.length; f++) {
      const name = fields[f][0];
      const closed = close(fields[f][1], scope);
      const fv = v[name];
      path.push(name);
      if (closed.k === "option") {
        if (fv === null) {
          texts[f] = null;
        } else {
          if (!isPlainObject(fv) || !hasOwn(fv, "some")) this.wrong(fv, closed);
          path.push("some");
          texts[f] = this.value(fv["some"], closed.inner, depth + 1);
          path.pop();
        }
      } else {
        if (fv === undefined && !hasOwn(v, name)) this.refuse(`missing required field ${stringText(name)}`);
        texts[f] = this.value(fv, closed, depth + 1);
      }
      path.pop();
    }
    let out = "{";
    for (const f of sorted) {
      const t = texts[f];
      if (t === null) continue;
      out += (out.length > 1 ? "," : "") + keys[f] + t;
    }
    return out + "}";
  }

  named(v: unknown, ty: Type & { k: "named" }, depth: number): string {
    const decl = this.env.get(ty.identity);
    if (decl === undefined || decl.params.length !== ty.args.length) {
      return this.refuse(`the type ${ty.identity} is not declared with ${ty.args.length} type arguments`);
    }
    const scope = scopeOf(decl.params, ty.args);
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
 * `textBytes`, the length of the text it was read from, bounds the value's
 * canonical text as core bounds it: numbers written out may outgrow the
 * text only up to the limit's `maxBytes`.
 */
export function decodeRaw(
  raw: Raw,
  ty: Type,
  env: Env,
  limits: Limits = DEFAULT_LIMITS,
  params: Scope = NO_SCOPE,
  textBytes: number = 0,
): unknown {
  // The commonest arguments, a short Text or Int, take no decoder.
  if (ty.k === "prim") {
    if (ty.name === "Text" && typeof raw === "string" && raw.length * 3 <= limits.maxStringBytes) return raw;
    if (ty.name === "Int" && raw instanceof RawNum && SHORT_INT.test(raw.text)) return BigInt(raw.text);
  }
  return new Decoder(env, limits, limits.maxBytes - textBytes).value(raw, ty, 0, params);
}

/**
 * The value `text` encodes at `ty` (named types in `env`, type parameters
 * bound by `params`), or {@link Refused}.
 */
export function decode(text: string | Uint8Array, ty: Type, env: Env, limits: Limits = DEFAULT_LIMITS, params: Scope = NO_SCOPE): unknown {
  const bytes = typeof text === "string" ? Buffer.byteLength(text, "utf8") : text.byteLength;
  return decodeRaw(parse(text, limits), ty, env, limits, params, bytes);
}

/**
 * The canonical text of `value` at `ty` (type parameters bound by
 * `params`), or {@link Refused} when it is not a value of that type.
 */
export function encode(value: unknown, ty: Type, env: Env, params: Scope = NO_SCOPE): string {
  // The commonest answers, a Text or an Int, take no encoder.
  if (ty.k === "prim") {
    if (ty.name === "Text" && typeof value === "string" && !TEXT_SPECIAL.test(value)) return '"' + value + '"';
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

