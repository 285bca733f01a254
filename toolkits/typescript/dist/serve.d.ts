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
import { Limits } from "./codec.js";
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
export declare class Failed extends Error {
    name: string;
    /** The declared error's value. */
    readonly value: unknown;
    /** Failed with `value`. */
    constructor(value: unknown);
}
/** The call may or may not have happened: the reply is Unknown with `reason`. */
export declare class Unknown extends Error {
    name: string;
    /** Why. */
    readonly reason: string;
    /** Unknown for `reason`. */
    constructor(reason: string);
}
/** The call did not happen (say so only when nothing was done): the reply is NotRun with `reason`. */
export declare class NotRun extends Error {
    name: string;
    /** Why. */
    readonly reason: string;
    /** NotRun for `reason`. */
    constructor(reason: string);
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
export declare const CANCELLED_BEFORE = "cancelled before the Tool's code started";
/** The Unknown reason of a call whose code stopped with the cancel's own reason. */
export declare const CANCELLED_BY_HOST = "cancelled by the host";
/** What the author's code meets when it writes to standard output while serving. */
export declare const STDOUT_TAKEN = "standard output carries the Tool protocol while limen-toolkit serves: write to standard error instead (console.error, process.stderr.write)";
/** The listing's text without the whitespace between its tokens (strings kept byte for byte). */
export declare function compact(text: string): string;
/**
 * Serves the declarations of `listing` (the text `flow tools` lists) with
 * `handlers`, keyed by each Tool's identity
 * (`example.com/limen-fixtures@0.3.0/echo.flow.echo`), on standard input
 * and output. Resolves once standard input has ended and every call read
 * has been answered; rejects if the listing and the handlers disagree.
 */
export declare function serve(listing: string, handlers: Record<string, Handler>, options?: ServeOptions): Promise<void>;
