//! What the page asks of the endpoint, each action one request to it
//! (§ The clients): read the description, make one call naming the digest
//! the page displays, subscribe to one stream. The endpoint's answers are
//! handed to the page as JSON that names the outcome as § Outcomes
//! distinguishes it, with the bytes the exposure wrote beside it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::super::hub_conn;
use super::super::wire::{self, Answered, Endpoint};
use super::super::{bearer_header, fetch, watch, Described};

/// How long a hub exchange waits for its answer.
const HUB_TIMEOUT: Duration = Duration::from_secs(30);

/// The endpoint the page drives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// A `unix::Rpc` socket or an `http::Rpc` listener.
    Exposure(Endpoint),
    /// A hub's listener (`ws://host:port`): its streams, and its members
    /// when it carries a surface (§ Rpcs on a hub).
    Hub(String),
}

/// The forms `hale admin` takes.
pub const FORMS: &str = "name unix:<path> (or a bare path), http://host:port or ws://host:port";

impl Target {
    /// Reads the endpoint `hale admin` was given.
    pub fn parse(text: &str) -> Result<Target, String> {
        if text.starts_with("ws://") {
            return watch::ws_authority(text)
                .map(Target::Hub)
                .map_err(|_| format!("`{text}` is not ws://host:port: {FORMS}"));
        }
        Endpoint::parse(text, true)
            .map(Target::Exposure)
            .map_err(|_| format!("`{text}` is not an endpoint hale admin drives: {FORMS}"))
    }

    /// The transport's name as the page shows it.
    pub fn transport(&self) -> &'static str {
        match self {
            Target::Exposure(Endpoint::Unix(_)) => "unix",
            Target::Exposure(Endpoint::Http(_)) => "http",
            Target::Hub(_) => "ws",
        }
    }
}

/// The endpoint with the caller's credential: what every action uses.
#[derive(Debug)]
pub struct Remote {
    /// Where.
    pub target: Target,
    /// The endpoint as the operator wrote it.
    pub written: String,
    /// The bearer (`--bearer`/`--token`), presented on every request.
    pub bearer: Option<String>,
    /// Numbers the requests' ids.
    next_id: AtomicU64,
}

/// A fetched document as the page reads it.
fn fetched(
    document: Option<Value>,
    refusal: Option<Value>,
    error: Option<String>,
    raw: &[u8],
) -> Value {
    json!({
        "document": document,
        "refusal": refusal,
        "error": error,
        "raw": String::from_utf8_lossy(raw),
    })
}

/// A call's outcome as the page reads it.
fn outcome(kind: &str, fields: Value, raw: &[u8], status: Option<u16>, started: Instant) -> Value {
    let mut v = json!({
        "outcome": kind,
        "status": status,
        "raw": String::from_utf8_lossy(raw),
        "elapsed_ms": started.elapsed().as_millis() as u64,
    });
    if let (Value::Object(out), Value::Object(more)) = (&mut v, fields) {
        out.extend(more);
    }
    v
}

fn no_answer(reason: String, started: Instant) -> Value {
    outcome("no_answer", json!({ "reason": reason }), b"", None, started)
}

/// The JSON value under `key` of a reply as the exposure wrote it.
fn member_value(reply: &[u8], key: &str) -> Value {
    wire::raw_member(reply, key)
        .and_then(|raw| serde_json::from_slice(raw).ok())
        .unwrap_or(Value::Null)
}

impl Remote {
    /// The remote `target`, written `written`, called as `bearer`.
    pub fn new(target: Target, written: String, bearer: Option<String>) -> Remote {
        Remote {
            target,
            written,
            bearer,
            next_id: AtomicU64::new(1),
        }
    }

    fn id(&self) -> String {
        format!(
            "hale-admin-{}-{}",
            std::process::id(),
            self.next_id.fetch_add(1, Ordering::Relaxed)
        )
    }

    /// `GET /api/description`'s answer: the description(s) read now.
    pub fn describe(&self) -> Value {
        let id = self.id();
        let (exposure, hub) = match &self.target {
            Target::Exposure(endpoint) => (
                Some(match fetch(endpoint, self.bearer.as_deref(), &id) {
                    Ok(Described::Document(raw)) => {
                        fetched(serde_json::from_slice(&raw).ok(), None, None, &raw)
                    }
                    Ok(Described::Refused(raw)) => {
                        fetched(None, Some(member_value(&raw, "refusal")), None, &raw)
                    }
                    Err(e) => fetched(None, None, Some(e), b""),
                }),
                None,
            ),
            Target::Hub(authority) => (
                self.hub_surface(authority, &id),
                Some(self.hub_streams(authority)),
            ),
        };
        json!({
            "endpoint": self.written,
            "transport": self.target.transport(),
            "exposure": exposure,
            "hub": hub,
        })
    }

    /// The surface a hub carries, read with a `call` frame asking
    /// `describe`; `None` when the hub carries none (it refuses the frame
    /// `malformed`).
    fn hub_surface(&self, authority: &str, id: &str) -> Option<Value> {
        let frame = json!({"type": "call", "describe": true, "id": id}).to_string();
        let reply =
            match hub_conn::exchange(authority, self.bearer.as_deref(), &frame, id, HUB_TIMEOUT) {
                Ok(r) => r,
                Err(e) => return Some(fetched(None, None, Some(e), b"")),
            };
        let Ok(v) = serde_json::from_slice::<Value>(&reply) else {
            return Some(fetched(
                None,
                None,
                Some("the hub's answer is not a frame".into()),
                &reply,
            ));
        };
        if v["type"] == "refusal" {
            // A refusal frame, not a reply: the hub takes no call frame.
            if v["refusal"]["kind"] == "malformed" {
                return None;
            }
            return Some(fetched(None, Some(v["refusal"].clone()), None, &reply));
        }
        match v.get("ok") {
            Some(Value::Bool(true)) => Some(fetched(
                Some(member_value(&reply, "value")),
                None,
                None,
                wire::raw_member(&reply, "value").unwrap_or(b""),
            )),
            _ if v.get("refusal").is_some() => {
                Some(fetched(None, Some(v["refusal"].clone()), None, &reply))
            }
            _ => Some(fetched(
                None,
                None,
                Some("the hub's answer is no outcome of the wire".into()),
                &reply,
            )),
        }
    }

    /// The hub exposure's own description (its streams): `GET
    /// /.description` at the hub's address.
    fn hub_streams(&self, authority: &str) -> Value {
        let headers = bearer_header(self.bearer.as_deref());
        match wire::http_exchange(authority, "GET", "/.description", &headers, b"") {
            Err(e) => fetched(
                None,
                None,
                Some(format!("ws://{authority} did not answer: {e}")),
                b"",
            ),
            Ok(reply) => {
                let v: Option<Value> = serde_json::from_slice(&reply.body).ok();
                match (reply.status, v) {
                    (200, Some(doc)) if doc.get("description").is_some() => {
                        fetched(Some(doc), None, None, &reply.body)
                    }
                    (_, Some(v)) if v.get("refusal").is_some() => {
                        fetched(None, Some(v["refusal"].clone()), None, &reply.body)
                    }
                    (s, _) => fetched(
                        None,
                        None,
                        Some(format!(
                            "ws://{authority} answered {s}, not a Hale description"
                        )),
                        &reply.body,
                    ),
                }
            }
        }
    }

    /// `POST /api/call`'s answer: one call of `member` with `payload`,
    /// naming `digest`, and its outcome.
    pub fn call(&self, member: &str, payload: &Value, digest: Option<&str>) -> Value {
        let started = Instant::now();
        let id = self.id();
        // One wire form for one payload: keys sorted, no whitespace.
        let payload = limen_core::flow::canonical_json_text(payload);
        match &self.target {
            Target::Exposure(Endpoint::Unix(path)) => {
                let line = wire::call_line(false, member, payload.as_bytes(), &id, digest);
                match wire::unix_exchange(path, &line) {
                    Ok(reply) => read_reply(&reply, &id, started),
                    Err(e) => no_answer(format!("{} did not answer: {e}", path.display()), started),
                }
            }
            Target::Hub(authority) => {
                let frame = wire::call_line(true, member, payload.as_bytes(), &id, digest);
                // The payload is canonical JSON text, so the frame is UTF-8.
                let frame = String::from_utf8_lossy(&frame);
                match hub_conn::exchange(
                    authority,
                    self.bearer.as_deref(),
                    &frame,
                    &id,
                    HUB_TIMEOUT,
                ) {
                    Ok(reply) => read_reply(&reply, &id, started),
                    Err(e) => no_answer(e, started),
                }
            }
            Target::Exposure(Endpoint::Http(authority)) => {
                let mut headers = bearer_header(self.bearer.as_deref());
                headers.push(("Content-Type", "application/json".to_owned()));
                if let Some(d) = digest {
                    headers.push(("Hale-Surface-Digest", d.to_owned()));
                }
                let path = format!("/call/{member}");
                let reply = match wire::http_exchange(
                    authority,
                    "POST",
                    &path,
                    &headers,
                    payload.as_bytes(),
                ) {
                    Ok(r) => r,
                    Err(e) => {
                        return no_answer(
                            format!("http://{authority} did not answer: {e}"),
                            started,
                        )
                    }
                };
                let Some(kind) = wire::http_outcome(reply.status, &reply.body) else {
                    return no_answer(
                        format!(
                            "http://{authority} answered {}, no outcome of the wire",
                            reply.status
                        ),
                        started,
                    );
                };
                let body: Value = serde_json::from_slice(&reply.body).unwrap_or(Value::Null);
                let fields = match kind {
                    Answered::Result => json!({ "value": body }),
                    Answered::HandlerError => json!({ "error": body }),
                    Answered::Refusal | Answered::ServerError => {
                        json!({ "refusal": body["refusal"] })
                    }
                };
                answered(kind, fields, &reply.body, Some(reply.status), started)
            }
        }
    }
}

/// An answered outcome as the page reads it, `fields` what it carries.
fn answered(
    kind: Answered,
    fields: Value,
    raw: &[u8],
    status: Option<u16>,
    started: Instant,
) -> Value {
    let name = match kind {
        Answered::Result => "result",
        Answered::HandlerError => "handler_error",
        Answered::Refusal => "refusal",
        Answered::ServerError => "server_error",
    };
    outcome(name, fields, raw, status, started)
}

/// A Unix reply line, or a hub's `reply` (or `refusal`) frame, as the page
/// reads its outcome.
fn read_reply(reply: &[u8], id: &str, started: Instant) -> Value {
    let Ok(v) = serde_json::from_slice::<Value>(reply) else {
        return no_answer("the reply is no outcome of the wire".into(), started);
    };
    // A hub that carries no surface refuses the frame itself.
    if v["type"] == "refusal" {
        return outcome(
            "refusal",
            json!({ "refusal": v["refusal"] }),
            reply,
            None,
            started,
        );
    }
    if v.get("id") != Some(&Value::String(id.to_owned())) {
        return no_answer("the reply answers another request".into(), started);
    }
    let Some(kind) = wire::line_outcome(&v) else {
        return no_answer("the reply is no outcome of the wire".into(), started);
    };
    let fields = match kind {
        Answered::Result => json!({ "value": member_value(reply, "value") }),
        Answered::HandlerError => json!({ "error": member_value(reply, "error") }),
        Answered::Refusal | Answered::ServerError => json!({ "refusal": v["refusal"] }),
    };
    answered(kind, fields, reply, None, started)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_are_the_three_forms() {
        assert_eq!(
            Target::parse("ws://127.0.0.1:9000"),
            Ok(Target::Hub("127.0.0.1:9000".into()))
        );
        assert_eq!(
            Target::parse("/tmp/a.sock"),
            Ok(Target::Exposure(Endpoint::Unix("/tmp/a.sock".into())))
        );
        assert_eq!(
            Target::parse("http://h:1"),
            Ok(Target::Exposure(Endpoint::Http("h:1".into())))
        );
        for bad in ["grpc://h:1", "mcp://h:1", "ws://h", "http://h", ""] {
            let e = Target::parse(bad).unwrap_err();
            assert!(e.contains("ws://host:port"), "{bad}: {e}");
        }
    }

    #[test]
    fn replies_are_read_as_their_outcome() {
        let t = Instant::now();
        let id = "c1";
        let cases = [
            (
                r#"{"request_id":1,"id":"c1","ok":true,"value":{"order":41},"caller":{}}"#,
                "result",
            ),
            (
                r#"{"request_id":1,"id":"c1","ok":false,"error":{"code":"x","reason":"y"},"caller":{}}"#,
                "handler_error",
            ),
            (
                r#"{"request_id":1,"id":"c1","ok":false,"refusal":{"kind":"full","reason":"r"}}"#,
                "refusal",
            ),
            (
                r#"{"request_id":1,"id":"c1","ok":false,"refusal":{"kind":"server"}}"#,
                "server_error",
            ),
            (
                r#"{"type":"refusal","topic":null,"refusal":{"kind":"malformed","reason":"r"}}"#,
                "refusal",
            ),
            (
                r#"{"request_id":1,"id":"c2","ok":true,"value":1}"#,
                "no_answer",
            ),
            ("not json", "no_answer"),
        ];
        for (reply, kind) in cases {
            let v = read_reply(reply.as_bytes(), id, t);
            assert_eq!(v["outcome"], kind, "{reply}");
        }
        let v = read_reply(cases[0].0.as_bytes(), id, t);
        assert_eq!(v["value"], json!({"order": 41}));
        assert_eq!(v["raw"], cases[0].0);
    }
}
