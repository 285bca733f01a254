/**
 * Flow values as TypeScript values: one representation, which the codec
 * makes and reads and generated interfaces describe (no conversion layer).
 *
 * `Int` is `bigint`; `Decimal` is this module's exact {@link Decimal}
 * (never a `number`); `Text` `string`, `Bool` `boolean`, `Bytes`
 * `Uint8Array`; `Instant` and `Duration` hold `nanos: bigint`. `List<T>` is
 * `T[]`, `Set<T>` a {@link FlowSet}, `Dict<Text, V>` a `Map<string, V>`, any
 * other `Dict` a {@link FlowDict}, a tuple a TS tuple. `Option<T>` is
 * {@link Some}`<T> | null`, `Result<T, E>` `{ ok: T } | { err: E }`. A record
 * is a plain object, one property per field by its Flow name; an enum a
 * plain object tagged by `$tag` (a positional payload under `value`, named
 * fields beside the tag). `json.Value` is {@link JsonValue}; a host token a
 * {@link HostToken}. `Never` has no values.
 */

/** `Some(v)`: kept apart from `null` (None) so `Option<Option<T>>` keeps its two Nones apart. */
export type Some<T> = { some: T };

/** `Option<T>`: `null` is None. */
export type Option<T> = Some<T> | null;

/** `Result<T, E>`. */
export type Result<T, E> = { ok: T } | { err: E };

/** `Some(v)`. */
export function some<T>(value: T): Some<T> {
  return { some: value };
}

/**
 * `json.Value`: raw JSON with exact numbers: a `bigint` when whole, a
 * {@link Decimal} otherwise; an object is string-keyed (the decoder makes
 * it without a prototype, so no key is special).
 */
export type JsonValue =
  | null
  | boolean
  | bigint
  | Decimal
  | string
  | JsonValue[]
  | { [key: string]: JsonValue };

/** A host token: the host's JSON, handed back unchanged. */
export class HostToken {
  /** The JSON the host chose. */
  readonly json: JsonValue;
  /** The token holding `json`. */
  constructor(json: JsonValue) {
    this.json = json;
  }
}

/** A `Set<T>`: its elements once each, in canonical order once decoded (the encoder sorts them, and refuses two equal ones). */
export class FlowSet<T> {
  /** The elements. */
  readonly items: T[];
  /** The set of `items`. */
  constructor(items: T[]) {
    this.items = items;
  }
}

/** A `Dict<K, V>` whose keys are not `Text`: its pairs, in canonical key order once decoded. */
export class FlowDict<K, V> {
  /** The pairs. */
  readonly items: [K, V][];
  /** The dict of `items`. */
  constructor(items: [K, V][]) {
    this.items = items;
  }
}

// -- Decimal -----------------------------------------------------------------

const DECIMAL_TEXT = /^(-?)([0-9]+)(?:\.([0-9]+))?(?:[eE]([+-]?[0-9]+))?$/;

/**
 * An exact decimal number: `coefficient × 10^exponent`, always normalized
 * (no trailing zero in the coefficient; zero is `0 × 10^0`), so equal
 * values have equal fields and one canonical text (`1.50` and `1.5` are
 * one value, written `1.5`).
 */
export class Decimal {
  /** The signed coefficient, with no trailing zero digit. */
  readonly coefficient: bigint;
  /** The power of ten. */
  readonly exponent: number;

  /** `coefficient × 10^exponent`, normalized. */
  constructor(coefficient: bigint, exponent: number = 0) {
    if (!Number.isSafeInteger(exponent)) {
      throw new RangeError(`a Decimal's exponent must be a safe integer, given ${exponent}`);
    }
    if (coefficient === 0n) {
      exponent = 0;
    } else {
      while (coefficient % 10n === 0n) {
        coefficient /= 10n;
        exponent += 1;
      }
    }
    this.coefficient = coefficient;
    this.exponent = exponent;
  }

  /**
   * The decimal a numeric text spells (`"1.50"`, `"-2e-3"`), exactly;
   * throws a `SyntaxError` on anything else (a `number` is never taken:
   * write its text, so the digits are the ones meant).
   */
  static parse(text: string): Decimal {
    const m = DECIMAL_TEXT.exec(text);
    if (m === null) {
      throw new SyntaxError(`not a decimal number: ${JSON.stringify(text)}`);
    }
    const frac = m[3] ?? "";
    const exp = m[4] === undefined ? 0 : Number(m[4]);
    const coefficient = BigInt(m[2] + frac);
    return new Decimal(m[1] === "-" ? -coefficient : coefficient, exp - frac.length);
  }

  /** The integer `n` as a decimal. */
  static fromBigInt(n: bigint): Decimal {
    return new Decimal(n, 0);
  }

  /** Whether this is zero. */
  isZero(): boolean {
    return this.coefficient === 0n;
  }

  /** Whether this equals `other` (exactly). */
  equals(other: Decimal): boolean {
    return this.coefficient === other.coefficient && this.exponent === other.exponent;
  }

  /** -1, 0 or 1 as this is less than, equal to or greater than `other`. */
  compare(other: Decimal): -1 | 0 | 1 {
    const [a, b] = align(this, other);
    return a < b ? -1 : a > b ? 1 : 0;
  }

  /** `this + other`, exactly. */
  add(other: Decimal): Decimal {
    const [a, b, e] = align(this, other);
    return new Decimal(a + b, e);
  }

  /** `this - other`, exactly. */
  sub(other: Decimal): Decimal {
    const [a, b, e] = align(this, other);
    return new Decimal(a - b, e);
  }

  /** `this × other`, exactly. */
  mul(other: Decimal): Decimal {
    return new Decimal(this.coefficient * other.coefficient, this.exponent + other.exponent);
  }

  /** `-this`. */
  neg(): Decimal {
    return new Decimal(-this.coefficient, this.exponent);
  }

  /** The canonical text: plain notation, no exponent, no trailing zeros. */
  toString(): string {
    const neg = this.coefficient < 0n;
    const digits = (neg ? -this.coefficient : this.coefficient).toString();
    return numberText(neg, this.coefficient === 0n ? "" : digits, this.exponent);
  }

  /** The canonical text, so `JSON.stringify` writes it as a string. */
  toJSON(): string {
    return this.toString();
  }
}

function align(a: Decimal, b: Decimal): [bigint, bigint, number] {
  const e = Math.min(a.exponent, b.exponent);
  return [
    a.coefficient * 10n ** BigInt(a.exponent - e),
    b.coefficient * 10n ** BigInt(b.exponent - e),
    e,
  ];
}

/**
 * A number's canonical text from its sign, its significant digits (no
 * leading or trailing zero; `""` for zero) and its power of ten.
 */
export function numberText(neg: boolean, digits: string, exp: number): string {
  if (digits.length === 0) {
    return "0";
  }
  const sign = neg ? "-" : "";
  if (exp >= 0) {
    return sign + digits + "0".repeat(exp);
  }
  const point = digits.length + exp;
  if (point > 0) {
    return sign + digits.slice(0, point) + "." + digits.slice(point);
  }
  return sign + "0." + "0".repeat(-point) + digits;
}

// -- Instant and Duration ----------------------------------------------------

const NS = 1_000_000_000n;
const DAY_NS = 86_400n * NS;
/** An Instant's range: nanoseconds in [-2^127, 2^127), as core's model holds them. */
export const INSTANT_LIMIT_NS = 1n << 127n;

/**
 * A point on the UTC time line: nanoseconds since 1970-01-01T00:00:00Z on
 * the proleptic Gregorian calendar, without leap seconds.
 */
export class Instant {
  /** Nanoseconds since the epoch. */
  readonly nanos: bigint;
  /** The instant `nanos` after the epoch. */
  constructor(nanos: bigint) {
    this.nanos = nanos;
  }

  /** The instant of a JavaScript `Date` (millisecond precision). */
  static fromDate(date: Date): Instant {
    return new Instant(BigInt(date.getTime()) * 1_000_000n);
  }

  /** Whether this equals `other`. */
  equals(other: Instant): boolean {
    return this.nanos === other.nanos;
  }

  /** The canonical text (`2024-02-29T12:00:00.5Z`). */
  toString(): string {
    return instantText(this.nanos);
  }

  /** The canonical text. */
  toJSON(): string {
    return this.toString();
  }
}

/** A signed length of time in nanoseconds. */
export class Duration {
  /** Nanoseconds. */
  readonly nanos: bigint;
  /** The duration of `nanos` nanoseconds. */
  constructor(nanos: bigint) {
    this.nanos = nanos;
  }

  /** `ms` milliseconds. */
  static fromMillis(ms: bigint | number): Duration {
    return new Duration(BigInt(ms) * 1_000_000n);
  }

  /** Whether this equals `other`. */
  equals(other: Duration): boolean {
    return this.nanos === other.nanos;
  }

  /** The canonical text (`PT90S`, `PT-0.25S`). */
  toString(): string {
    return durationText(this.nanos);
  }

  /** The canonical text. */
  toJSON(): string {
    return this.toString();
  }
}

function floorDiv(a: bigint, b: bigint): [bigint, bigint] {
  let q = a / b;
  let r = a % b;
  if (r < 0n) {
    q -= 1n;
    r += b;
  }
  return [q, r];
}

/** Days since 1970-01-01 of a proleptic Gregorian date. */
export function daysFromCivil(y: bigint, m: number, d: number): bigint {
  if (m <= 2) {
    y -= 1n;
  }
  const [era, yoe] = floorDiv(y, 400n);
  const doy = BigInt(Math.floor((153 * (m + (m > 2 ? -3 : 9)) + 2) / 5) + d - 1);
  const doe = yoe * 365n + yoe / 4n - yoe / 100n + doy;
  return era * 146097n + doe - 719468n;
}

function civilFromDays(z: bigint): [bigint, number, number] {
  z += 719468n;
  const [era, doe] = floorDiv(z, 146097n);
  const yoe = (doe - doe / 1460n + doe / 36524n - doe / 146096n) / 365n;
  const doy = doe - (365n * yoe + yoe / 4n - yoe / 100n);
  const mp = (5n * doy + 2n) / 153n;
  const d = Number(doy - (153n * mp + 2n) / 5n + 1n);
  const m = Number(mp < 10n ? mp + 3n : mp - 9n);
  return [yoe + era * 400n + (m <= 2 ? 1n : 0n), m, d];
}

function pad(n: bigint | number, width: number): string {
  return n.toString().padStart(width, "0");
}

function fraction(ns: bigint): string {
  return ns === 0n ? "" : "." + pad(ns, 9).replace(/0+$/, "");
}

/** An Instant's canonical text from its nanoseconds. */
export function instantText(ns: bigint): string {
  const [days, rem] = floorDiv(ns, DAY_NS);
  const [y, mo, d] = civilFromDays(days);
  const secs = rem / NS;
  const frac = rem % NS;
  const h = secs / 3600n;
  const mi = (secs / 60n) % 60n;
  const sec = secs % 60n;
  const year =
    y >= 0n && y <= 9999n ? pad(y, 4) : (y > 0n ? "+" : "-") + pad(y < 0n ? -y : y, 4);
  return `${year}-${pad(mo, 2)}-${pad(d, 2)}T${pad(h, 2)}:${pad(mi, 2)}:${pad(sec, 2)}${fraction(frac)}Z`;
}

/** A Duration's canonical text from its nanoseconds. */
export function durationText(ns: bigint): string {
  const neg = ns < 0n;
  const abs = neg ? -ns : ns;
  return `PT${neg ? "-" : ""}${abs / NS}${fraction(abs % NS)}S`;
}
