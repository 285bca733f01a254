// A consumer that matches a handler error of `Orders::place`, whose row
// declares none (`fallible(ClosureViolation)` is the server error): it must
// NOT compile, since the outcome has no such variant to match.

import * as client from "./Public.js";

export function place(o: client.OrdersPlaceOutcome): string {
    switch (o.kind) {
        case "handler_error":
            return "cannot happen";
        default:
            return o.kind;
    }
}
