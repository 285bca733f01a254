
// ---- The streams: one WebSocket per subscription (§ Streams, the ws frames). ----

/** Where and as whom a subscription connects. */
export interface SubscribeOptions {
    /** The hub's listener, `ws://host:port`. */
    readonly endpoint: string;
    /**
     * The bearer token, presented at the upgrade as `?access_token=`; null
     * presents none (the hub then refuses the subscribe `unauthenticated`).
     */
    readonly bearer: string | null;
    /** Ends the subscription: the socket is closed and the iteration ends with no further item. */
    readonly signal?: AbortSignal;
}

/** The hub admitted the subscription (its `subscribed` frame): events follow. */
export interface Subscribed {
    readonly kind: "subscribed";
    readonly topic: string;
}

/** One event of the stream. */
export interface StreamEvent<P> {
    readonly kind: "event";
    /** The subscription's seq: 1 for the first event offered to it, one more per event. */
    readonly seq: number;
    /** The events shed since the previous one this subscription received: the gap in seq. */
    readonly shed: number;
    /** The event, by the row's codec. */
    readonly payload: P;
}

/** The hub stopped (its `closed` frame); the connection then closed. */
export interface StreamClosed {
    readonly kind: "closed";
    /** The hub's reason (`shutting_down`). */
    readonly reason: string;
}

/** The credential expired (an `unauthorized` frame, reason `expired`); what was buffered is dropped. */
export interface StreamExpired {
    readonly kind: "expired";
}

/** The row's requires no longer hold (an `unauthorized` frame, reason `revoked`). */
export interface StreamRevoked {
    readonly kind: "revoked";
}

/** The subscribe was not admitted (a `refusal` frame). */
export interface StreamRefused {
    readonly kind: "refusal";
    readonly refusal: Refusal;
}

/**
 * The connection never opened, or ended with no `closed` frame (the hub
 * died, or a program ended without stop()), or the hub wrote a frame
 * outside the contract: the transport failure of a stream.
 */
export interface StreamLost {
    readonly kind: "lost";
    /** What was seen, for a person. */
    readonly why: string;
}

/** How a subscription ends: its last item, exactly one per subscription. */
export type StreamEnd = StreamClosed | StreamExpired | StreamRevoked | StreamRefused | StreamLost;

/** What a subscription yields: `subscribed`, then events, then one end. */
export type StreamItem<P> = Subscribed | StreamEvent<P> | StreamEnd;

/** Whether `item` ends the subscription. */
function ends$(item: StreamItem<unknown>): item is StreamEnd {
    return item.kind !== "subscribed" && item.kind !== "event";
}

/**
 * What one hub frame is to the subscription to `topic`: an item, null for a
 * frame it does not concern (a reply, another topic's frame), or a lost end
 * for a frame outside the contract. `last` is the seq of the last event.
 */
function frame$(data: unknown, topic: string, last: number): StreamItem<unknown> | null {
    const lost = (why: string): StreamLost => ({ kind: "lost", why: `the hub broke the protocol: ${why}` });
    if (typeof data !== "string") return lost("a frame that is not text");
    let frame: unknown;
    try {
        frame = JSON.parse(data);
    } catch {
        return lost("a frame that is not JSON");
    }
    if (typeof frame !== "object" || frame === null) return lost("a frame that is not an object");
    const f = frame as { type?: unknown; topic?: unknown; seq?: unknown; payload?: unknown; reason?: unknown };
    if (f.type === "closed") {
        return { kind: "closed", reason: typeof f.reason === "string" ? f.reason : "" };
    }
    if (f.type === "reply" || (f.topic !== topic && f.topic !== null)) return null;
    switch (f.type) {
        case "subscribed":
            return { kind: "subscribed", topic };
        case "event":
            if (typeof f.seq !== "number" || !Number.isInteger(f.seq) || f.seq <= last) {
                return lost(`an event whose seq (${String(f.seq)}) does not follow ${last}`);
            }
            return { kind: "event", seq: f.seq, shed: f.seq - last - 1, payload: f.payload };
        case "unauthorized":
            if (f.reason === "expired") return { kind: "expired" };
            if (f.reason === "revoked") return { kind: "revoked" };
            return lost(`an unauthorized frame whose reason is ${JSON.stringify(f.reason)}`);
        case "refusal": {
            const refusal = refusal$(frame);
            if (refusal === null || refusal === "server") return lost("a refusal frame outside the contract");
            return { kind: "refusal", refusal };
        }
        default:
            return lost(`a frame of type ${JSON.stringify(f.type)}`);
    }
}

/**
 * Subscribes to `topic` at `opts.endpoint` on a connection of its own: the
 * socket opens at the first `next()`, sends the subscribe frame when it is
 * open, and yields each frame as an item until one ends it. Breaking out of
 * the loop (or `return()`) closes the socket.
 */
async function* subscribe$(
    opts: SubscribeOptions,
    topic: string,
): AsyncGenerator<StreamItem<unknown>, void, undefined> {
    let url = `${base$(opts.endpoint, "ws://")}/`;
    if (opts.bearer !== null) url += `?access_token=${encodeURIComponent(opts.bearer)}`;
    const queue: StreamItem<unknown>[] = [];
    let wake: (() => void) | null = null;
    let ended = false;
    let last = 0;
    const push = (item: StreamItem<unknown>): void => {
        if (ended) return;
        ended = ends$(item);
        if (item.kind === "event") last = item.seq;
        queue.push(item);
        wake?.();
        wake = null;
    };
    const signal = opts.signal;
    if (signal?.aborted) return;
    let socket: WebSocket;
    try {
        socket = new WebSocket(url);
    } catch (cause) {
        yield { kind: "lost", why: `cannot open ${url}: ${String(cause)}` };
        return;
    }
    const abort = (): void => {
        wake?.();
        wake = null;
    };
    signal?.addEventListener("abort", abort);
    socket.onopen = () => socket.send(JSON.stringify({ type: "subscribe", topic }));
    socket.onmessage = (m: MessageEvent) => {
        const item = frame$(m.data, topic, last);
        if (item !== null) push(item);
    };
    socket.onclose = (c: CloseEvent) => {
        push({ kind: "lost", why: `the connection ended with no closed frame (code ${c.code})` });
    };
    // Node 20's WebSocket reports a connection that never opened by an
    // error event and no close event.
    socket.onerror = () => {
        push({ kind: "lost", why: `the connection to ${url} failed` });
    };
    try {
        for (;;) {
            if (signal?.aborted) return;
            const item = queue.shift();
            if (item === undefined) {
                await new Promise<void>((resolve) => {
                    wake = resolve;
                });
                continue;
            }
            yield item;
            if (ends$(item)) return;
        }
    } finally {
        signal?.removeEventListener("abort", abort);
        socket.onopen = null;
        socket.onmessage = null;
        socket.onclose = null;
        socket.onerror = null;
        if (socket.readyState === WebSocket.CONNECTING || socket.readyState === WebSocket.OPEN) socket.close();
    }
}
