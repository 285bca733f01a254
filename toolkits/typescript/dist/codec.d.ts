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
import { Raw } from "./json.js";
import { Env, Type } from "./types.js";
import { JsonValue } from "./values.js";
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
export declare const DEFAULT_LIMITS: Limits;
/** Type parameters bound to types. */
export type Scope = ReadonlyMap<string, Type>;
/**
 * Compares two strings by code point (UTF-16 compares a surrogate below
 * U+E000..U+FFFF; code points and UTF-8 bytes put it above), as the
 * canonical form orders keys.
 */
export declare function compareCodePoints(a: string, b: string): number;
/** Sign, significant digits (no leading or trailing zero; `""` for zero) and power of ten of a number token. */
export declare function digitsOf(tok: string): [boolean, string, number];
/** Whether `s` is Unicode scalar values only (no lone surrogate). */
export declare function wellFormed(s: string): boolean;
/** Parses `text` (a string, or UTF-8 bytes checked to be UTF-8) into raw JSON, within the limits. */
export declare function parse(text: string | Uint8Array, limits?: Limits): Raw;
/**
 * The value JSON already read ({@link parse}) encodes at `ty` (named types
 * in `env`, type parameters bound by `params`), or {@link Refused}.
 * `textBytes`, the length of the text it was read from, bounds the value's
 * canonical text as core bounds it: numbers written out may outgrow the
 * text only up to the limit's `maxBytes`.
 */
export declare function decodeRaw(raw: Raw, ty: Type, env: Env, limits?: Limits, params?: Scope, textBytes?: number): unknown;
/**
 * The value `text` encodes at `ty` (named types in `env`, type parameters
 * bound by `params`), or {@link Refused}.
 */
export declare function decode(text: string | Uint8Array, ty: Type, env: Env, limits?: Limits, params?: Scope): unknown;
/**
 * The canonical text of `value` at `ty` (type parameters bound by
 * `params`), or {@link Refused} when it is not a value of that type.
 */
export declare function encode(value: unknown, ty: Type, env: Env, params?: Scope): string;
/** The JSON of `value` as canonical text (`json.Value`). */
export declare function jsonText(value: JsonValue): string;
/** A JSON text read as {@link JsonValue} (exact numbers), or {@link Refused}. */
export declare function parseJsonValue(text: string | Uint8Array, limits?: Limits): JsonValue;
