
// ---- What the calls and the streams share. ----

/** The HTTP status of each refusal kind (§ Outcomes): a reply is held to it. */
const STATUS$: { readonly [K in RefusalKind]: number } = {
    malformed: 400,
    digest_mismatch: 409,
    unauthenticated: 401,
    unauthorized: 403,
    full: 429,
    shutting_down: 503,
    unavailable: 503,
};

/**
 * The refusal object `value` carries under `refusal`: a `Refusal`, the
 * string `server` for the server error's `{"kind": "server"}`, or null when
 * it carries none the contract lists.
 */
function refusal$(value: unknown): Refusal | "server" | null {
    if (typeof value !== "object" || value === null) return null;
    const r: unknown = (value as { refusal?: unknown }).refusal;
    if (typeof r !== "object" || r === null) return null;
    const { kind, reason, requires, served } = r as {
        kind?: unknown;
        reason?: unknown;
        requires?: unknown;
        served?: unknown;
    };
    if (kind === "server") return "server";
    if (typeof kind !== "string" || !Object.hasOwn(STATUS$, kind)) return null;
    if (typeof reason !== "string") return null;
    const refusal: { kind: RefusalKind; reason: string; requires?: string[]; served?: string } = {
        kind: kind as RefusalKind,
        reason,
    };
    if (requires !== undefined) {
        if (!Array.isArray(requires) || !requires.every((x) => typeof x === "string")) return null;
        refusal.requires = requires as string[];
    }
    if (served !== undefined) {
        if (typeof served !== "string") return null;
        refusal.served = served;
    }
    return refusal;
}

/**
 * `endpoint` without its trailing slashes, when it is `scheme`'s: anything
 * else (a `unix:` socket, which fetch cannot speak; TLS, which this client
 * does not) is the caller's mistake, a TypeError, and no outcome.
 */
function base$(endpoint: string, scheme: "http://" | "ws://"): string {
    if (!endpoint.startsWith(scheme)) {
        throw new TypeError(`this client speaks ${scheme} here, not ${JSON.stringify(endpoint)}`);
    }
    return endpoint.replace(/\/+$/, "");
}
