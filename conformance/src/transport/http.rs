//! `http::Rpc` (§ The HTTP transport): one request to a connection,
//! HTTP/1.1.
//!
//! A record's `request` is `{"method", "path", "headers", "body"}` (a body
//! that is not JSON is `body_text`), and its `reply` `{"status", "headers",
//! "body"}`. The framing headers (`Content-Length`, `Connection`,
//! `Transfer-Encoding`) are never recorded: a runner writes them again.
//! Header names compare without regard to case (RFC 9110 § 5.1), `Host` is
//! the run's address and masked, and a reply is held to the headers the
//! expected reply names. MCP ([`super::mcp`]) takes this form whole.

use limen_core::hale::model::{Exposure as ModelExposure, Program, TransportKind};
use limen_core::hale::runtime::{ExposureSpec, PeerCredentials};
use limen_core::wire::http::HttpFront;
use limen_core::wire::http1::client::{read_response, write_request, Limits, Response};
use serde_json::{Map, Value};

use super::{authority, refusal_outcome, Endpoint, Form, FrontMaker};
use crate::jsonpath::{error, object, string, RecordError};
use crate::mask;

/// The HTTP transport. See the module documentation.
#[derive(Clone, Copy, Debug)]
pub struct Http;

/// Framing headers a request builder writes itself.
const FRAMING: [&str; 3] = ["content-length", "connection", "transfer-encoding"];

/// The body of a record's request or reply: `body` as compact JSON, or
/// `body_text` as written; empty when it has neither.
pub fn body_bytes(object: &Map<String, Value>) -> Vec<u8> {
    match (object.get("body"), object.get("body_text")) {
        (Some(v), _) => v.to_string().into_bytes(),
        (None, Some(Value::String(t))) => t.clone().into_bytes(),
        _ => Vec::new(),
    }
}

/// The HTTP/1.1 request of a record's request: its request line, `Host`
/// (`host` when the record names none and one is given), its headers in
/// the order written, `Content-Length` when it has a body, and
/// `Connection: close` (one request to a connection), written by
/// [`write_request`].
pub fn request(request: &Value, host: Option<&str>) -> Result<Vec<u8>, String> {
    let o = request.as_object().ok_or("an HTTP request is an object")?;
    let method = o
        .get("method")
        .and_then(Value::as_str)
        .ok_or("$.method: a string")?;
    let path = o
        .get("path")
        .and_then(Value::as_str)
        .ok_or("$.path: a string")?;
    let empty = Map::new();
    let headers = o
        .get("headers")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let mut list = Vec::new();
    let names_host = headers.keys().any(|k| k.eq_ignore_ascii_case("host"));
    if let (Some(host), false) = (host, names_host) {
        list.push(("Host", host));
    }
    for (name, value) in headers {
        if FRAMING.iter().any(|f| name.eq_ignore_ascii_case(f)) {
            continue;
        }
        list.push((name.as_str(), value.as_str().unwrap_or_default()));
    }
    let body = body_bytes(o);
    let sent = (!body.is_empty() || method == "POST").then_some(body.as_slice());
    write_request(method, path, &list, sent).map_err(|e| format!("$: {e}"))
}

/// The method a reply is read as the answer to: [`Form::read_reply`]
/// reads a server's bytes without their request, and limen's records send
/// `GET` and `POST`, which frame a response alike (only `HEAD` and
/// `CONNECT` differ, RFC 9112 § 6.3).
const METHOD: &str = "POST";

/// Reads an HTTP response from `raw` with the core's reader
/// ([`read_response`]): `Ok(None)` while it is not whole (its head, or
/// the body its framing names), unless `eof` says no more will come, when
/// a body without a length is what there is.
pub fn parse_response(raw: &[u8], eof: bool) -> Result<Option<Response>, String> {
    read_response(METHOD, raw, eof, LIMITS).map_err(|e| e.to_string())
}

/// The reader's bounds: the checker's own on a whole reply
/// ([`super::MAX_REPLY`]), which it holds before it reads, for the
/// head as for the body, so a head that never ends is what that bound
/// reports.
const LIMITS: Limits = Limits {
    max_head: super::MAX_REPLY,
    max_headers: 100,
    max_body: super::MAX_REPLY,
};

/// Framing headers a reply's record leaves out.
const REPLY_FRAMING: [&str; 2] = ["content-length", "connection"];

/// An HTTP response as a record's reply: `status`, the headers but the
/// framing ones, and `body` (or `body_text` when the body is not JSON).
pub fn reply_value(response: &Response) -> Value {
    let mut reply = Map::new();
    reply.insert("status".into(), response.status.into());
    let mut headers = Map::new();
    for (k, v) in &response.headers {
        if REPLY_FRAMING.iter().any(|f| k.eq_ignore_ascii_case(f)) {
            continue;
        }
        headers.insert(k.clone(), String::from_utf8_lossy(v).into_owned().into());
    }
    reply.insert("headers".into(), Value::Object(headers));
    if !response.body.is_empty() {
        match serde_json::from_slice::<Value>(&response.body) {
            Ok(v) => reply.insert("body".into(), v),
            Err(_) => reply.insert(
                "body_text".into(),
                String::from_utf8_lossy(&response.body).into_owned().into(),
            ),
        };
    }
    Value::Object(reply)
}

/// The reply the bytes a server wrote hold, in the HTTP form.
pub fn read_reply(raw: &[u8], eof: bool) -> Result<Option<Value>, String> {
    if raw.is_empty() {
        return Ok(None);
    }
    Ok(parse_response(raw, eof)?.map(|r| reply_value(&r)))
}

/// Checks a request in the HTTP form: a method, a path that starts with
/// `/`, headers whose values are strings, and one body at most.
pub fn check_request(v: &Value, path: &str) -> Result<(), RecordError> {
    let o = object(v, path)?;
    string(o.get("method"), &format!("{path}.method"))?;
    let target = string(o.get("path"), &format!("{path}.path"))?;
    if !target.starts_with('/') {
        return Err(error(&format!("{path}.path"), "a path starts with `/`"));
    }
    if let Some(h) = o.get("headers") {
        for (name, value) in object(h, &format!("{path}.headers"))? {
            if !value.is_string() {
                return Err(error(
                    &format!("{path}.headers.{name}"),
                    "a header's value is a string",
                ));
            }
        }
    }
    if o.contains_key("body") && o.contains_key("body_text") {
        return Err(error(path, "a body is `body` or `body_text`, not both"));
    }
    if let Some(t) = o.get("body_text") {
        string(Some(t), &format!("{path}.body_text"))?;
    }
    Ok(())
}

/// Header names lowercased; `Host` (an address) dropped.
fn headers(h: &Value, drop_host: bool) -> Value {
    let Some(o) = h.as_object() else {
        return h.clone();
    };
    let mut out = Map::new();
    for (k, v) in o {
        let k = k.to_ascii_lowercase();
        if drop_host && k == "host" {
            continue;
        }
        out.insert(k, v.clone());
    }
    Value::Object(out)
}

/// A request or reply in the HTTP form with its header names lowercased,
/// and `Host` dropped when `drop_host`.
pub fn with_headers(v: &Value, drop_host: bool) -> Value {
    let mut v = v.clone();
    if let Some(o) = v.as_object_mut() {
        if let Some(h) = o.get("headers").map(|h| headers(h, drop_host)) {
            o.insert("headers".into(), h);
        }
    }
    v
}

/// `got` held to the headers `expected` names: its other headers dropped.
/// Both are masked replies in the HTTP form.
pub fn restrict_headers(mut got: Value, expected: &Value) -> Value {
    let names: Vec<String> = expected
        .get("headers")
        .and_then(Value::as_object)
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default();
    if let Some(Value::Object(h)) = got.get_mut("headers") {
        h.retain(|k, _| names.contains(k));
    }
    got
}

/// The member `/call/<member>` names, with `%3A%3A` read as `::`.
pub fn member_of(request: &Value) -> Option<String> {
    let path = request.get("path")?.as_str()?;
    let path = path.split_once('?').map_or(path, |(p, _)| p);
    limen_core::wire::http::percent_decode(path.strip_prefix("/call/")?)
}

/// A `GET <path>` in the HTTP form, under `bearer`.
pub fn get(path: &str, bearer: Option<&str>) -> Value {
    let mut headers = Map::new();
    if let Some(t) = bearer {
        headers.insert("Authorization".into(), format!("Bearer {t}").into());
    }
    serde_json::json!({"method": "GET", "path": path, "headers": headers})
}

impl Form for Http {
    fn name(&self) -> &'static str {
        "http"
    }

    fn title(&self) -> &'static str {
        "HTTP"
    }

    fn listener(&self) -> TransportKind {
        TransportKind::Http
    }

    fn check_request(&self, request: &Value, path: &str) -> Result<(), RecordError> {
        check_request(request, path)
    }

    fn outcome_of(&self, reply: &Value) -> Option<(String, Option<String>)> {
        let status = reply.get("status")?.as_u64()?;
        let kind = reply
            .get("body")
            .and_then(|b| b.get("refusal"))
            .and_then(|r| r.get("kind"))
            .and_then(Value::as_str);
        match status {
            200 => Some(("result".into(), None)),
            422 => Some(("handler_error".into(), None)),
            _ => Some(refusal_outcome(kind)),
        }
    }

    fn member_of(&self, request: &Value, _spec: &ExposureSpec) -> Option<String> {
        member_of(request)
    }

    fn document<'a>(&self, reply: &'a Value) -> Option<&'a Value> {
        reply.get("body")
    }

    fn request_bytes(&self, request: &Value, host: Option<&str>) -> Result<Vec<u8>, String> {
        self::request(request, host)
    }

    fn read_reply(&self, raw: &[u8], eof: bool) -> Result<Option<Value>, String> {
        read_reply(raw, eof)
    }

    fn mask_request(&self, request: &Value) -> Value {
        with_headers(request, true)
    }

    /// Header names lowercased and a description's address masked.
    fn mask_reply(&self, reply: &Value, _peer: Option<PeerCredentials>) -> Value {
        let mut reply = with_headers(reply, false);
        if let Some(body) = reply.get_mut("body") {
            mask::document(body, None);
        }
        reply
    }

    fn held_to(&self, got: Value, expected: &Value) -> Value {
        restrict_headers(got, expected)
    }

    fn front_maker(
        &self,
        _program: &Program,
        _exposure: &ModelExposure,
        _spec: &ExposureSpec,
    ) -> Result<FrontMaker, String> {
        Ok(Box::new(|now, limits, _peer, c| {
            Box::new(HttpFront::new(now, limits.http, c))
        }))
    }

    fn endpoint(&self, text: &str) -> Option<Endpoint> {
        authority(text.strip_prefix("http://")?)
    }

    fn endpoint_form(&self) -> &'static str {
        "http://host:port"
    }

    fn speaks_to(&self, endpoint: &Endpoint) -> bool {
        matches!(endpoint, Endpoint::Http(_))
    }

    fn describe_request(&self, bearer: Option<&str>) -> Value {
        get("/.description", bearer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::compare_reply;
    use serde_json::json;

    #[test]
    fn an_http_request_is_built_from_its_record() {
        let r = json!({"method": "POST", "path": "/call/Orders::place",
            "headers": {"Authorization": "Bearer t-alice", "Content-Length": "99"},
            "body": {"qty": 10}});
        let bytes = request(&r, Some("h:1")).unwrap();
        assert_eq!(
            String::from_utf8(bytes).unwrap(),
            "POST /call/Orders::place HTTP/1.1\r\nHost: h:1\r\nAuthorization: Bearer t-alice\r\nContent-Length: 10\r\nConnection: close\r\n\r\n{\"qty\":10}"
        );
        let bad = json!({"method": "POST", "path": "/", "headers": {"X": "a\r\nB: c"}});
        assert!(request(&bad, None).is_err());
    }

    #[test]
    fn a_response_is_whole_at_its_length() {
        let raw = b"HTTP/1.1 409 Conflict\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";
        assert_eq!(parse_response(&raw[..raw.len() - 1], false), Ok(None));
        let r = parse_response(raw, false).unwrap().unwrap();
        assert_eq!(
            reply_value(&r),
            json!({"status": 409, "headers": {"Content-Type": "application/json"}, "body": {}})
        );
        assert!(parse_response(&raw[..raw.len() - 1], true).is_err());
    }

    #[test]
    fn outcomes_follow_the_http_column() {
        assert_eq!(
            Http.outcome_of(&json!({"status": 429, "body": {"refusal": {"kind": "full"}}})),
            Some(("refusal".into(), Some("full".into())))
        );
        assert_eq!(
            Http.outcome_of(&json!({"status": 500, "body": {"refusal": {"kind": "server"}}})),
            Some(("server_error".into(), None))
        );
        assert_eq!(
            member_of(&json!({"path": "/call/Orders%3A%3Aplace"})).as_deref(),
            Some("Orders::place")
        );
    }

    #[test]
    fn http_headers_are_held_to_the_names_expected_without_case() {
        let want =
            json!({"status": 200, "headers": {"Content-Type": "application/json"}, "body": {}});
        let got = json!({"status": 200, "headers": {"content-type": "application/json", "Cache-Control": "no-store"}, "body": {}});
        assert_eq!(compare_reply(&Http, &want, None, &got, None), None);
        let bad = json!({"status": 200, "headers": {"Content-Type": "text/plain"}, "body": {}});
        assert_eq!(
            compare_reply(&Http, &want, None, &bad, None).unwrap(),
            "$.headers.content-type: expected \"application/json\", got \"text/plain\""
        );
    }
}
