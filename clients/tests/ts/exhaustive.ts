// A consumer that matches every outcome of every member of the witness's
// Public client, and every item of its stream, with `never` in each
// default: it compiles only while the unions are exactly these kinds.

import * as client from "./Public.js";

export function place(o: client.OrdersPlaceOutcome): string {
    switch (o.kind) {
        case "result":
            return `order ${o.value.order} for ${o.value.notional}`;
        case "refusal":
            return `${o.refusal.kind}: ${o.refusal.reason} ${o.refusal.served ?? ""}`;
        case "server_error":
            return "server error";
        default: {
            const unreachable: never = o;
            return unreachable;
        }
    }
}

export function cancel(o: client.OrdersCancelOutcome): string {
    switch (o.kind) {
        case "result":
            return `${o.value.order} was open: ${o.value.was_open}`;
        case "handler_error":
            return `${o.error.code}: ${o.error.reason}`;
        case "refusal":
            return `${o.refusal.kind}: ${(o.refusal.requires ?? []).join(",")}`;
        case "server_error":
            return "server error";
        default: {
            const unreachable: never = o;
            return unreachable;
        }
    }
}

export function item(i: client.FillsItem): string {
    switch (i.kind) {
        case "subscribed":
            return `subscribed to ${i.topic}`;
        case "event":
            return `#${i.seq} (${i.shed} shed): ${i.payload.qty} of ${i.payload.order} at ${i.payload.price}`;
        case "closed":
            return `closed: ${i.reason}`;
        case "expired":
        case "revoked":
            return i.kind;
        case "refusal":
            return i.refusal.kind;
        case "lost":
            return i.why;
        default: {
            const unreachable: never = i;
            return unreachable;
        }
    }
}
