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
export type Some<T> = {
    some: T;
};
/** `Option<T>`: `null` is None. */
export type Option<T> = Some<T> | null;
/** `Result<T, E>`. */
export type Result<T, E> = {
    ok: T;
} | {
    err: E;
};
/** `Some(v)`. */
export declare function some<T>(value: T): Some<T>;
/**
 * `json.Value`: raw JSON with exact numbers: a `bigint` when whole, a
 * {@link Decimal} otherwise; an object is string-keyed (the decoder makes
 * it without a prototype, so no key is special).
 */
export type JsonValue = null | boolean | bigint | Decimal | string | JsonValue[] | {
    [key: string]: JsonValue;
};
/** A host token: the host's JSON, handed back unchanged. */
export declare class HostToken {
    /** The JSON the host chose. */
    readonly json: JsonValue;
    /** The token holding `json`. */
    constructor(json: JsonValue);
}
/** A `Set<T>`: its elements once each, in canonical order once decoded (the encoder sorts them, and refuses two equal ones). */
export declare class FlowSet<T> {
    /** The elements. */
    readonly items: T[];
    /** The set of `items`. */
    constructor(items: T[]);
}
/** A `Dict<K, V>` whose keys are not `Text`: its pairs, in canonical key order once decoded. */
export declare class FlowDict<K, V> {
    /** The pairs. */
    readonly items: [K, V][];
    /** The dict of `items`. */
    constructor(items: [K, V][]);
}
/**
 * An exact decimal number: `coefficient × 10^exponent`, always normalized
 * (no trailing zero in the coefficient; zero is `0 × 10^0`), so equal
 * values have equal fields and one canonical text (`1.50` and `1.5` are
 * one value, written `1.5`).
 */
export declare class Decimal {
    /** The signed coefficient, with no trailing zero digit. */
    readonly coefficient: bigint;
    /** The power of ten. */
    readonly exponent: number;
    /** `coefficient × 10^exponent`, normalized. */
    constructor(coefficient: bigint, exponent?: number);
    /**
     * The decimal a numeric text spells (`"1.50"`, `"-2e-3"`), exactly;
     * throws a `SyntaxError` on anything else (a `number` is never taken:
     * write its text, so the digits are the ones meant).
     */
    static parse(text: string): Decimal;
    /** The integer `n` as a decimal. */
    static fromBigInt(n: bigint): Decimal;
    /** Whether this is zero. */
    isZero(): boolean;
    /** Whether this equals `other` (exactly). */
    equals(other: Decimal): boolean;
    /** -1, 0 or 1 as this is less than, equal to or greater than `other`. */
    compare(other: Decimal): -1 | 0 | 1;
    /** `this + other`, exactly. */
    add(other: Decimal): Decimal;
    /** `this - other`, exactly. */
    sub(other: Decimal): Decimal;
    /** `this × other`, exactly. */
    mul(other: Decimal): Decimal;
    /** `-this`. */
    neg(): Decimal;
    /** The canonical text: plain notation, no exponent, no trailing zeros. */
    toString(): string;
    /** The canonical text, so `JSON.stringify` writes it as a string. */
    toJSON(): string;
}
/**
 * A number's canonical text from its sign, its significant digits (no
 * leading or trailing zero; `""` for zero) and its power of ten.
 */
export declare function numberText(neg: boolean, digits: string, exp: number): string;
/** An Instant's range: nanoseconds in [-2^127, 2^127), as core's model holds them. */
export declare const INSTANT_LIMIT_NS: bigint;
/**
 * A point on the UTC time line: nanoseconds since 1970-01-01T00:00:00Z on
 * the proleptic Gregorian calendar, without leap seconds.
 */
export declare class Instant {
    /** Nanoseconds since the epoch. */
    readonly nanos: bigint;
    /** The instant `nanos` after the epoch. */
    constructor(nanos: bigint);
    /** The instant of a JavaScript `Date` (millisecond precision). */
    static fromDate(date: Date): Instant;
    /** Whether this equals `other`. */
    equals(other: Instant): boolean;
    /** The canonical text (`2024-02-29T12:00:00.5Z`). */
    toString(): string;
    /** The canonical text. */
    toJSON(): string;
}
/** A signed length of time in nanoseconds. */
export declare class Duration {
    /** Nanoseconds. */
    readonly nanos: bigint;
    /** The duration of `nanos` nanoseconds. */
    constructor(nanos: bigint);
    /** `ms` milliseconds. */
    static fromMillis(ms: bigint | number): Duration;
    /** Whether this equals `other`. */
    equals(other: Duration): boolean;
    /** The canonical text (`PT90S`, `PT-0.25S`). */
    toString(): string;
    /** The canonical text. */
    toJSON(): string;
}
/** Days since 1970-01-01 of a proleptic Gregorian date. */
export declare function daysFromCivil(y: bigint, m: number, d: number): bigint;
/** An Instant's canonical text from its nanoseconds. */
export declare function instantText(ns: bigint): string;
/** A Duration's canonical text from its nanoseconds. */
export declare function durationText(ns: bigint): string;
