// ---- What every outcome is made of: the same text in every client. ----

/**
 * The fifth outcome: a connection that never answered (refused, reset, cut
 * off before a whole reply), or a reply outside the contract (a status or a
 * body § Outcomes does not list). It is never a refusal: a call that was
 * accepted runs to completion whatever becomes of the caller's wait, so a
 * TransportError does not say the call did not run. The underlying error,
 * when there is one, is its `cause`.
 */
export class TransportError extends Error {
    /** `TransportError`, for a handler that reads `name`. */
    override readonly name = "TransportError";

    /** An error saying `message`, caused by `cause` when one is given. */
    constructor(message: string, options?: { cause?: unknown }) {
        super(message, options);
    }
}

/**
 * Why a request or a subscription was not accepted, or was accepted and did
 * not run (§ Outcomes, the refusal kinds). A hub's refusal of a subscribe is
 * one of `unauthenticated`, `unauthorized`, `malformed` and `shutting_down`.
 */
export type RefusalKind =
    | "malformed"
    | "digest_mismatch"
    | "unauthenticated"
    | "unauthorized"
    | "full"
    | "shutting_down"
    | "unavailable";

/** A refusal object, as the server wrote it. */
export interface Refusal {
    /** What refused it. */
    readonly kind: RefusalKind;
    /** The server's reason, in its words. */
    readonly reason: string;
    /** On `unauthorized`: the roles the row requires. */
    readonly requires?: readonly string[];
    /** On `digest_mismatch`: the digest the server serves. */
    readonly served?: string;
}
