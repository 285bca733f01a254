/**
 * A small strict JSON reader that keeps numbers exact, and the canonical
 * writing of a string.
 *
 * `JSON.parse` rounds a number to a double, so a value at its declared type
 * could not be exact: {@link readRaw} keeps each number as the text it was
 * spelled with ({@link RawNum}) until the type says what it is, and each
 * object as its members in order ({@link RawObj}), duplicates kept so the
 * decoder can refuse them where they are. RFC 8259 and nothing more: no
 * comments, no trailing commas, no byte order mark, no lone surrogate
 * escape (a Text is Unicode scalar values).
 */
/** A JSON path's steps: a member's key or an element's index. */
export type Path = (string | number)[];
/** A JSON path as core writes it: `$`, `.key`, `["key"]`, `[i]`. */
export declare function pathText(path: readonly (string | number)[]): string;
/** A value refused at its declared type: where (a JSON path), and why, worded as core words it. */
export declare class Refused extends Error {
    name: string;
    /** The JSON path of the offending value. */
    readonly path: Path;
    /** What is wrong there. */
    readonly reason: string;
    /** A refusal at `path` (copied) for `reason`. */
    constructor(path: readonly (string | number)[], reason: string);
}
/** A number token, kept as spelled. */
export declare class RawNum {
    /** The token's text. */
    readonly text: string;
    /** The token `text`. */
    constructor(text: string);
}
/** An object's members in the text's order (duplicates kept). */
export declare class RawObj {
    /** The keys. */
    readonly keys: string[];
    /** The values, one per key. */
    readonly values: Raw[];
}
/** JSON as read: strings, numbers as {@link RawNum}, literals, arrays, {@link RawObj}. */
export type Raw = string | RawNum | boolean | null | Raw[] | RawObj;
/**
 * A string's canonical text: escapes only `"`, `\` and U+0000 to U+001F
 * (`\b \f \n \r \t` where one exists, `\u00XX` otherwise).
 */
export declare function stringText(s: string): string;
/**
 * Reads one JSON text (the whole of `text`, whitespace around it allowed),
 * or throws {@link Refused} at `$` with a reason that starts `not JSON`.
 */
export declare function readRaw(text: string): Raw;
/** The reader's state over one text; {@link readRaw} and the serve loop's line reader use it. */
export declare class Reader {
    readonly s: string;
    /** The position. */
    i: number;
    /** A reader of `s`. */
    constructor(s: string);
    /** Refuses at `$`: not JSON. */
    fail(what: string): never;
    /** Skips whitespace. */
    ws(): void;
    /** One value at nesting `depth`. */
    value(depth: number): Raw;
    private word;
    /** A number token, checked against JSON's grammar. */
    number(): RawNum;
    /** A string (the reader at its opening quote). */
    string(): string;
    private hex4;
    /** An array (the reader at its `[`). */
    array(depth: number): Raw[];
    /** An object (the reader at its `{`). */
    object(depth: number): RawObj;
}
