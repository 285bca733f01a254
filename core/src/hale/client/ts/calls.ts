
// ---- The calls: POST /call/<member> over fetch (§ The HTTP transport's wire). ----

/** How a member's function calls. */
export interface CallOptions {
    /** Ends the wait: the call then throws TransportError (it may still have run). */
    readonly signal?: AbortSignal;
}

/** The handler returned `value` (200). A row with no response has `null`. */
export interface CallResult<T> {
    readonly kind: "result";
    readonly value: T;
}

/** The handler failed with its declared error `error` (422): only in the outcome of a row that declares one. */
export interface CallHandlerError<E> {
    readonly kind: "handler_error";
    readonly error: E;
}

/** The request was not accepted, or was accepted and did not run. */
export interface CallRefusal {
    readonly kind: "refusal";
    readonly refusal: Refusal;
}

/** The handler failed structurally (`ClosureViolation`, 500); the server says nothing more. */
export interface CallServerError {
    readonly kind: "server_error";
}

/** What a call's reply was, before it is read as an outcome. */
interface Reply$ {
    readonly status: number;
    readonly body: unknown;
}

/**
 * POSTs `request` as JSON to `member` at `endpoint`, with the bearer and the
 * surface digest. A fetch that fails, a body cut off and a body that is not
 * JSON are the fifth outcome.
 */
async function post$(
    endpoint: string,
    bearer: string | null,
    member: string,
    request: unknown,
    options: CallOptions | undefined,
): Promise<Reply$> {
    const url = `${base$(endpoint, "http://")}/call/${member}`;
    const headers: Record<string, string> = {
        "Content-Type": "application/json",
        "Hale-Surface-Digest": DIGEST,
    };
    if (bearer !== null) headers["Authorization"] = `Bearer ${bearer}`;
    const init: RequestInit = { method: "POST", headers, body: JSON.stringify(request) };
    if (options?.signal !== undefined) init.signal = options.signal;
    let response: Response;
    try {
        response = await fetch(url, init);
    } catch (cause) {
        throw new TransportError(`${member}: ${url} did not answer`, { cause });
    }
    let text: string;
    try {
        text = await response.text();
    } catch (cause) {
        throw new TransportError(`${member}: the reply was cut off`, { cause });
    }
    try {
        return { status: response.status, body: JSON.parse(text) as unknown };
    } catch (cause) {
        throw new TransportError(`${member}: the reply (status ${response.status}) is not JSON`, { cause });
    }
}

/**
 * The outcome `reply` is, held to § Outcomes' HTTP column: 200 the result
 * (`null` where the row has no response), 422 the handler error where the
 * row declares one, 500 with `{"kind": "server"}` the server error, a
 * refusal under its kind's status; anything else is outside the contract.
 */
function outcome$(
    member: string,
    reply: Reply$,
    declaresError: boolean,
    hasValue: boolean,
): CallResult<unknown> | CallHandlerError<unknown> | CallRefusal | CallServerError {
    const { status, body } = reply;
    if (status === 200) return { kind: "result", value: hasValue ? body : null };
    if (status === 422 && declaresError) return { kind: "handler_error", error: body };
    const refusal = refusal$(body);
    if (refusal === "server") {
        if (status === 500) return { kind: "server_error" };
    } else if (refusal !== null && STATUS$[refusal.kind] === status) {
        return { kind: "refusal", refusal };
    }
    throw new TransportError(`${member}: a reply outside the contract (status ${status})`);
}
