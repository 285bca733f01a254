//! A hub record's form (`wire/ws`, `wire/udp`; the format is
//! [`crate::hub`]'s documentation): which records are hub records, the
//! check that a hub record's request and sequence are well formed and its
//! outcome is what its frames say, and the description a describe's reply
//! carries.
//!
//! Below [`crate::record`], which reads a hub record through it, and apart
//! from the hubs' replay ([`crate::hub`]), which reads records: the record
//! format needs no replay.

use serde_json::Value;

use crate::jsonpath::{error, RecordError};

/// Whether records of `transport` are hub records.
pub fn is_hub(transport: &str) -> bool {
    matches!(transport, "ws" | "udp")
}

/// The member the sequence of a hub record sits under: `frames` over
/// WebSocket, `datagrams` over udp.
fn sequence_key(transport: &str) -> &'static str {
    if transport == "udp" {
        "datagrams"
    } else {
        "frames"
    }
}

/// Checks a hub record's request and sequence, and that its outcome is
/// what its frames say; returns the sequence.
pub fn check(
    transport: &str,
    record: &serde_json::Map<String, Value>,
    outcome: &str,
    kind: Option<&str>,
) -> Result<Value, RecordError> {
    let request = record
        .get("request")
        .ok_or_else(|| error("$.request", "missing"))?;
    if transport == "ws" && request.get("method").is_some() {
        return check_describe(record, outcome, kind);
    }
    if transport == "ws" {
        let path_ok = request.get("path").is_some_and(Value::is_string);
        if !path_ok {
            return Err(error("$.request.path", "the upgrade's path, a string"));
        }
        if request.get("headers").is_some_and(|h| !h.is_object()) {
            return Err(error("$.request.headers", "an object of the headers sent"));
        }
    } else if !request.is_object() {
        return Err(error(
            "$.request",
            "the subscriber's first datagram, an object",
        ));
    }
    let key = sequence_key(transport);
    let at = format!("$.{key}");
    let seq = record
        .get(key)
        .and_then(Value::as_array)
        .ok_or_else(|| error(&at, "the sequence of the exchange, an array"))?;
    let body = if transport == "udp" {
        "datagram"
    } else {
        "frame"
    };
    let mut said: Option<(String, Option<String>)> = None;
    for (i, e) in seq.iter().enumerate() {
        let here = format!("{at}[{i}]");
        let from = e.get("from").and_then(Value::as_str);
        let ok = match from {
            Some("client") => {
                e.get(body).is_some()
                    || e.get("stall").is_some_and(Value::is_boolean) && transport == "ws"
            }
            Some("server") => match (e.get(body), e.get("close")) {
                (Some(f), None) => {
                    if let Some(o) = frame_outcome(f) {
                        said = Some(o);
                    }
                    true
                }
                (None, Some(c)) => transport == "ws" && c.is_u64(),
                _ => false,
            },
            Some("program") => ["place", "revoke", "expire", "stop"]
                .iter()
                .any(|k| e.get(*k).is_some()),
            Some("clock") => e.get("wait_ms").is_some_and(Value::is_u64),
            _ => false,
        };
        if !ok {
            return Err(error(
                &here,
                format!("an element is client or server `{body}`, program place|revoke|expire|stop, or clock wait_ms"),
            ));
        }
    }
    let said = said.unwrap_or(("result".into(), None));
    if said.0 != outcome || said.1.as_deref() != kind {
        return Err(error(
            &at,
            format!(
                "its frames say {}{}, the record says {outcome}{}",
                said.0,
                said.1.map(|k| format!(" ({k})")).unwrap_or_default(),
                kind.map(|k| format!(" ({k})")).unwrap_or_default()
            ),
        ));
    }
    Ok(Value::Array(seq.clone()))
}

/// A describe on the hub's listener (`GET /.description`, before any
/// upgrade): the HTTP form, `request` `{"method", "path", "headers"}` and
/// `reply` `{"status", "body"}`; 200 is a result, else the body's refusal.
fn check_describe(
    record: &serde_json::Map<String, Value>,
    outcome: &str,
    kind: Option<&str>,
) -> Result<Value, RecordError> {
    let reply = record
        .get("reply")
        .filter(|r| r.is_object())
        .ok_or_else(|| error("$.reply", "a describe's reply, {\"status\", \"body\"}"))?;
    let status = reply["status"]
        .as_u64()
        .ok_or_else(|| error("$.reply.status", "an HTTP status"))?;
    let said = if status == 200 {
        ("result".to_owned(), None)
    } else {
        let k = reply["body"]["refusal"]["kind"].as_str().map(str::to_owned);
        ("refusal".to_owned(), k)
    };
    if said.0 != outcome || said.1.as_deref() != kind {
        return Err(error(
            "$.reply",
            format!("the reply encodes {}, the record says {outcome}", said.0),
        ));
    }
    Ok(reply.clone())
}

/// The description a hub record's reply carries (a describe's body).
pub fn document(reply: &Value) -> Option<&Value> {
    reply.get("body").filter(|b| b.get("description").is_some())
}

/// The outcome a frame the hub wrote encodes, when it encodes one.
fn frame_outcome(f: &Value) -> Option<(String, Option<String>)> {
    let refusal = |kind: &Value| match kind.as_str() {
        Some("server") => ("server_error".to_owned(), None),
        k => ("refusal".to_owned(), k.map(str::to_owned)),
    };
    match f.get("type")?.as_str()? {
        "refusal" => Some(refusal(&f["refusal"]["kind"])),
        "unauthorized" => Some(("refusal".into(), Some("unauthorized".into()))),
        "reply" => Some(match (&f["ok"], f.get("refusal"), f.get("error")) {
            (Value::Bool(true), _, _) => ("result".into(), None),
            (_, Some(r), _) => refusal(&r["kind"]),
            (_, None, Some(_)) => ("handler_error".into(), None),
            _ => return None,
        }),
        // `closed` ends the connection, as a close frame does: it says
        // nothing of the exchange before it.
        "subscribed" | "event" | "description" => Some(("result".into(), None)),
        _ => None,
    }
}
