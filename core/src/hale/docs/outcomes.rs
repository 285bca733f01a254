//! Each transport's outcome encoding as a description states it (§ Outcomes,
//! § The MCP transport, § Streams: the ws frames, § Over datagrams), the
//! fixed texts of the notes, and a stream row's loss statement.

use serde_json::{json, Value};

/// The refusal kinds, in § Outcomes' order.
pub const REFUSAL_KINDS: [&str; 7] = [
    "malformed",
    "digest_mismatch",
    "unauthenticated",
    "unauthorized",
    "full",
    "shutting_down",
    "unavailable",
];

/// Each refusal kind's gRPC status, by the name § Outcomes' table gives it
/// (the kinds in [`REFUSAL_KINDS`]' order).
pub const GRPC_REFUSAL_STATUS: [(&str, &str); 7] = [
    ("malformed", "INVALID_ARGUMENT"),
    ("digest_mismatch", "FAILED_PRECONDITION"),
    ("unauthenticated", "UNAUTHENTICATED"),
    ("unauthorized", "PERMISSION_DENIED"),
    ("full", "RESOURCE_EXHAUSTED"),
    ("shutting_down", "UNAVAILABLE"),
    ("unavailable", "UNAVAILABLE"),
];

/// The refusal kinds of a hub's subscription frames (§ Streams).
pub const HUB_REFUSAL_KINDS: [&str; 4] = [
    "malformed",
    "unauthenticated",
    "unauthorized",
    "shutting_down",
];

/// The refusal kinds of a datagram hub's subscription frames: the ws
/// form's, and `full` for a subscribe past a cap of `udp::Limits` (a
/// choice of `docs/decisions.md`, "The datagram hub under attack").
pub const UDP_HUB_REFUSAL_KINDS: [&str; 5] = [
    "malformed",
    "unauthenticated",
    "unauthorized",
    "full",
    "shutting_down",
];

/// The note every surface document carries on authorization.
pub const NOTE_AUTHORIZATION: &str = "requires is checked against this exposure's role source at the serve site, before a request is queued: a boundary check, never a proof over the program's internal call paths";
/// The note on a request's lifecycle.
pub const NOTE_LIFECYCLE: &str = "a request accepted runs to completion: a timeout or a lost connection does not mean it did not run, and ending the wait never rolls it back";
/// The note a caller's description carries on discovery.
pub const NOTE_DISCOVERY: &str = "this document lists what this caller may use under this exposure's role source; the server still authorizes every request";
/// The note the inventory carries.
pub const NOTE_INVENTORY: &str = "every exposure with its listener, its sources and its receivers: a deployment inventory, never an authorization statement for any caller";
/// A hub description's note on authorization.
pub const HUB_AUTHORIZATION: &str = "requires is checked against this hub's role source when a subscription is admitted, and again at the credential's expiry and at every role-source revision: a boundary check, never a proof over the program's internal call paths";
/// A hub description's note on a subscription's lifecycle.
pub const HUB_LIFECYCLE: &str = "a subscription invalidated by expiry or revocation receives one unauthorized frame and loses what it had buffered; stop() sends closed, and a reconnect replays only what a stream's replay says";
/// A hub description's note on discovery.
pub const HUB_DISCOVERY: &str = "this document lists the streams this caller may subscribe to under this hub's role source; the hub still authorizes every subscription";

const NO_RESPONSE: &str = "the transport's own: the connection ends without a response";

/// The outcome encodings a description can state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// HTTP statuses and bodies.
    Http,
    /// Unix JSON lines (also the fixture transport's, and a surface's
    /// replies over a hub, which carry the Unix reply's fields).
    Unix,
    /// JSON-RPC results and error objects.
    Mcp,
    /// gRPC statuses, messages and details (§ gRPC, The reply is the
    /// contract's).
    Grpc,
    /// A ws hub's frames.
    Ws,
    /// A datagram hub's frames.
    Udp,
}

impl Encoding {
    /// The encoding's `outcomes` object.
    pub fn document(self) -> Value {
        match self {
            Encoding::Http => json!({
                "transport": "http",
                "result": { "status": 200, "body": "response" },
                "handler_error": { "status": 422, "body": "error" },
                "refusal": {
                    "body": "refusal",
                    "status": {
                        "malformed": 400, "digest_mismatch": 409, "unauthenticated": 401,
                        "unauthorized": 403, "full": 429, "shutting_down": 503, "unavailable": 503
                    }
                },
                "server_error": { "status": 500, "body": "refusal" },
                "transport_failure": NO_RESPONSE
            }),
            Encoding::Unix => json!({
                "transport": "unix",
                "result": { "ok": true, "field": "value" },
                "handler_error": { "ok": false, "field": "error" },
                "refusal": { "ok": false, "field": "refusal", "kinds": REFUSAL_KINDS },
                "server_error": { "ok": false, "field": "refusal", "kind": "server" },
                "transport_failure": "eof"
            }),
            Encoding::Mcp => json!({
                "transport": "mcp",
                "result": { "field": "result", "body": "response" },
                "handler_error": { "field": "error", "code": -32001, "data": "error" },
                "refusal": {
                    "field": "error",
                    "data": "refusal",
                    "code": {
                        "malformed": -32602, "digest_mismatch": -32003, "unauthenticated": -32004,
                        "unauthorized": -32005, "full": -32006, "shutting_down": -32007,
                        "unavailable": -32008
                    }
                },
                "server_error": { "field": "error", "code": -32603, "data": "refusal" },
                "transport_failure": NO_RESPONSE
            }),
            // The v1 format has no gRPC form: this one is written in the
            // HTTP form's shape, in § Outcomes' words: each status the
            // name the table's gRPC column gives it, and where the value
            // travels, `message` the response message, `details` the value
            // of the one Any of grpc-status-details-bin (docs/decisions.md,
            // The gRPC description's outcome form).
            Encoding::Grpc => json!({
                "transport": "grpc",
                "result": { "status": "OK", "message": "response" },
                "handler_error": { "status": "FAILED_PRECONDITION", "details": "error" },
                "refusal": {
                    "details": "refusal",
                    "status": Value::Object(
                        GRPC_REFUSAL_STATUS
                            .iter()
                            .map(|&(kind, status)| (kind.to_owned(), Value::from(status)))
                            .collect()
                    )
                },
                "server_error": { "status": "INTERNAL", "details": "refusal" },
                "transport_failure": "the transport's own: the stream is reset or the connection ends without a status"
            }),
            Encoding::Ws => json!({
                "transport": "ws",
                "subscribe": { "type": "subscribe", "fields": ["topic"] },
                "subscribed": { "type": "subscribed", "fields": ["topic"] },
                "refusal": { "type": "refusal", "fields": ["topic", "refusal"], "kinds": HUB_REFUSAL_KINDS },
                "event": { "type": "event", "fields": ["topic", "seq", "payload"] },
                "unauthorized": { "type": "unauthorized", "fields": ["topic", "reason"], "reasons": ["expired", "revoked"] },
                "closed": { "type": "closed", "fields": ["reason"], "reasons": ["shutting_down"] },
                "transport_failure": "the connection closes without a closed frame"
            }),
            Encoding::Udp => json!({
                "transport": "udp",
                "subscribe": { "type": "subscribe", "fields": ["topic", "id", "token"] },
                "subscribed": { "type": "subscribed", "fields": ["topic", "id"] },
                "refusal": { "type": "refusal", "fields": ["topic", "id", "refusal"], "kinds": UDP_HUB_REFUSAL_KINDS },
                "event": { "type": "event", "fields": ["topic", "id", "seq", "payload"] },
                "unauthorized": { "type": "unauthorized", "fields": ["topic", "id", "reason"], "reasons": ["expired", "revoked"] },
                "closed": { "type": "closed", "fields": ["id", "reason"], "reasons": ["shutting_down"] },
                "unsubscribe": { "type": "unsubscribe", "fields": ["id"] },
                "transport_failure": "datagrams may be lost or reordered; a gap in seq is a frame shed or lost"
            }),
        }
    }
}

/// A stream row's loss statement: the publish contract's delivery, what
/// its `on_full` sheds, and over datagrams what the network may lose.
pub fn loss(on_full: &str, datagrams: bool) -> String {
    let sheds = match on_full {
        "drop_new" => "drop_new sheds the frame being published",
        _ => "drop_old sheds the oldest undelivered frame",
    };
    let (order, gap) = if datagrams {
        (
            "at most once per admitted subscriber, in publish order as sent (a datagram may be lost or reordered by the network)",
            "so a gap in seq is the frames shed or lost",
        )
    } else {
        (
            "at most once per admitted subscriber, in publish order",
            "so a gap in seq is the frames shed",
        )
    };
    format!(
        "{order}; {sheds}, and seq counts every event offered to the subscription, {gap}; a subscription invalidated by expiry or revocation loses what it had buffered"
    )
}
