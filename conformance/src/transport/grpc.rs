//! `grpc::Rpc` (§ gRPC): unary calls over HTTP/2, prior knowledge, one
//! call to a connection (stream 1).
//!
//! A record's `request` is `{"path", "headers", "message"}`: the `:path`
//! (`/Public/Orders__place`), the header fields the client sends after
//! `:method`, `:scheme`, `:path` and `:authority` (names lowercase, as
//! HTTP/2 writes them), and the one length-prefixed message — `message`
//! the JSON of a `+json` call, `message_base64` the bytes of a protobuf one,
//! or `body_base64` the DATA exactly as sent, prefix included, for a body
//! that is not one message; none of the three sends no DATA. Its `reply`
//! is `{"headers", "message" | "message_base64", "trailers", "details"}`: the
//! response's header block (`:status` included), the message read out of
//! its DATA, the trailer block, and `grpc-status-details-bin` decoded
//! (`{"code", "message", "type_url", "value" | "value_base64"}`) beside the
//! header that carries it. A trailers-only response has no `trailers`;
//! a stream the server reset is `{"reset": <code>}`.
//!
//! Bytes are HTTP/2 as `limen-nghttp2`'s client session writes and reads
//! them: a request is the client's connection preface, its SETTINGS and
//! the call's HEADERS and DATA; a reply is what a fresh client session,
//! having sent a call on stream 1, reads of the server's bytes. nghttp2's
//! HPACK is deterministic, so a record's request is the same bytes every
//! run. A reply is held to the header and trailer names the expected one
//! states (as over HTTP), so a record implied from an HTTP one, which
//! cannot state the base64 of its details, is held to the decoded details
//! instead.

use base64::Engine as _;
use limen_core::hale::docs::ExposureDescriber;
use limen_core::hale::model::{Exposure as ModelExposure, Program, TransportKind};
use limen_core::hale::runtime::{Describer, ExposureSpec, PeerCredentials};
use limen_core::wire::grpc::{
    frame_message, percent_encode, route, status, Framing, Route, JSON_HANDLER_ERROR, JSON_REFUSAL,
};
use limen_grpc::{GrpcFront, GrpcLimits};
use limen_nghttp2::{Field, H2Event, Limits, Session};
use serde_json::{json, Map, Value};
use std::sync::Arc;

use super::{authority, refusal_outcome, Endpoint, Exchange, Form, FrontMaker};
use crate::jsonpath::{error, object, string, RecordError};
use crate::mask;

/// The gRPC transport. See the module documentation.
#[derive(Clone, Copy, Debug)]
pub struct Grpc;

/// The content type a record implied from an HTTP one is sent under: the
/// recorded JSON bodies are the messages as they are (§ Outcomes).
pub const JSON: &str = "application/grpc+json";

/// The path of the description service's one rpc.
pub const DESCRIBE: &str = "/hale.api.Description/Describe";

/// The pseudo-headers a request's record leaves to the runner.
const PSEUDO: [&str; 4] = [":method", ":scheme", ":path", ":authority"];

/// The request's header fields in the order nghttp2 sends them.
fn request_fields(request: &Value, host: Option<&str>) -> Result<Vec<Field>, String> {
    let o = request.as_object().ok_or("a gRPC request is an object")?;
    let path = o
        .get("path")
        .and_then(Value::as_str)
        .ok_or("$.path: a string")?;
    let mut fields = vec![
        (b":method".to_vec(), b"POST".to_vec()),
        (b":scheme".to_vec(), b"http".to_vec()),
        (b":path".to_vec(), path.as_bytes().to_vec()),
        (
            b":authority".to_vec(),
            host.unwrap_or("localhost").as_bytes().to_vec(),
        ),
    ];
    if let Some(h) = o.get("headers").and_then(Value::as_object) {
        for (name, value) in h {
            let name = name.to_ascii_lowercase();
            if PSEUDO.contains(&name.as_str()) {
                continue;
            }
            let value = value
                .as_str()
                .ok_or(format!("$.headers.{name}: a string"))?;
            fields.push((name.into_bytes(), value.as_bytes().to_vec()));
        }
    }
    Ok(fields)
}

/// The DATA a request sends: its message, prefixed, or its body as
/// written; `None` for a request with neither.
fn request_body(request: &Value) -> Result<Option<Vec<u8>>, String> {
    let o = request.as_object().ok_or("a gRPC request is an object")?;
    if let Some(m) = o.get("message") {
        return Ok(Some(frame_message(m.to_string().as_bytes())));
    }
    if let Some(h) = o.get("message_base64") {
        let bytes =
            from_base64(h.as_str().unwrap_or_default()).ok_or("$.message_base64: base64")?;
        return Ok(Some(frame_message(&bytes)));
    }
    if let Some(h) = o.get("body_base64") {
        return Ok(Some(
            from_base64(h.as_str().unwrap_or_default()).ok_or("$.body_base64: base64")?,
        ));
    }
    Ok(None)
}

/// The bytes a client sends for a record's request: preface, SETTINGS,
/// HEADERS and DATA of stream 1, as nghttp2's client writes them.
pub fn request(request: &Value, host: Option<&str>) -> Result<Vec<u8>, String> {
    let fields = request_fields(request, host)?;
    let body = request_body(request)?;
    let mut client = Session::client(Limits::default()).map_err(|e| e.to_string())?;
    let borrowed: Vec<(&[u8], &[u8])> = fields
        .iter()
        .map(|(n, v)| (n.as_slice(), v.as_slice()))
        .collect();
    client.request(&borrowed, body).map_err(|e| e.to_string())?;
    client.flush().map_err(|e| e.to_string())?;
    let out = client.pending_output().to_vec();
    Ok(out)
}

/// What a client reads of stream 1 in the server's bytes.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Response {
    /// The response's header block.
    pub headers: Vec<(String, String)>,
    /// Its DATA, prefix included.
    pub data: Vec<u8>,
    /// Its trailer block (empty for trailers-only).
    pub trailers: Vec<(String, String)>,
    /// The stream ended (END_STREAM read).
    pub ended: bool,
    /// The server reset it, with this code.
    pub reset: Option<u32>,
}

fn text_fields(fields: Vec<Field>) -> Vec<(String, String)> {
    fields
        .into_iter()
        .map(|(n, v)| {
            (
                String::from_utf8_lossy(&n).into_owned(),
                String::from_utf8_lossy(&v).into_owned(),
            )
        })
        .collect()
}

/// Reads the server's bytes as a client that sent a call on stream 1:
/// what it answered there. A server's bytes that are not HTTP/2 are an
/// error.
pub fn read_response(raw: &[u8]) -> Result<Response, String> {
    let mut client = Session::client(Limits::default()).map_err(|e| e.to_string())?;
    // The call the server's bytes answer: any call opens stream 1 as
    // the record's did (the server's HPACK table is its own, so what the
    // client wrote does not change how its answer reads).
    let call: [(&[u8], &[u8]); 4] = [
        (b":method", b"POST"),
        (b":scheme", b"http"),
        (b":path", b"/"),
        (b":authority", b"localhost"),
    ];
    client.request(&call, None).map_err(|e| e.to_string())?;
    client.flush().map_err(|e| e.to_string())?;
    let n = client.queued().len();
    client.consume_output(0, n);
    let read = client.handle_data(0, raw);
    let mut r = Response::default();
    // What stream 1 says up to its end, and nothing after: a reply once
    // whole does not change as more bytes arrive, even bytes nghttp2
    // refuses (the connection's error is not the call's).
    while let Some(event) = client.poll_event() {
        if r.ended || r.reset.is_some() {
            break;
        }
        match event {
            H2Event::Headers {
                stream: 1,
                fields,
                end_stream,
            } => {
                r.headers = text_fields(fields);
                r.ended |= end_stream;
            }
            H2Event::Data { stream: 1, bytes } => r.data.extend(bytes),
            H2Event::Trailers { stream: 1, fields } => r.trailers = text_fields(fields),
            H2Event::EndStream { stream: 1 } => r.ended = true,
            H2Event::Reset { stream: 1, code } => r.reset = Some(code),
            _ => {}
        }
    }
    if let (Err(e), false) = (read, r.ended || r.reset.is_some()) {
        return Err(format!(
            "the server's bytes are not HTTP/2 a client reads: {e}"
        ));
    }
    Ok(r)
}

/// The response as a record's reply.
pub fn reply_value(r: &Response) -> Value {
    if let Some(code) = r.reset {
        return json!({ "reset": code });
    }
    let fields = |f: &[(String, String)]| -> Value {
        Value::Object(
            f.iter()
                .map(|(n, v)| (n.clone(), Value::String(v.clone())))
                .collect(),
        )
    };
    let mut reply = Map::new();
    reply.insert("headers".into(), fields(&r.headers));
    if !r.data.is_empty() {
        match message_of(&r.data) {
            Some(m) => match serde_json::from_slice::<Value>(m) {
                Ok(v) if json_codec(&r.headers) => reply.insert("message".into(), v),
                _ => reply.insert("message_base64".into(), base64(m).into()),
            },
            None => reply.insert("body_base64".into(), base64(&r.data).into()),
        };
    }
    if !r.trailers.is_empty() {
        reply.insert("trailers".into(), fields(&r.trailers));
    }
    let bin = r
        .headers
        .iter()
        .chain(&r.trailers)
        .find(|(n, _)| n == "grpc-status-details-bin");
    if let Some((_, b64)) = bin {
        reply.insert("details".into(), details(b64));
    }
    Value::Object(reply)
}

/// Whether the response is under `application/grpc+json`.
fn json_codec(headers: &[(String, String)]) -> bool {
    headers
        .iter()
        .any(|(n, v)| n == "content-type" && v.starts_with("application/grpc+json"))
}

/// The one message of a body: its five-byte prefix says so exactly.
fn message_of(data: &[u8]) -> Option<&[u8]> {
    let len = u32::from_be_bytes(data.get(1..5)?.try_into().ok()?) as usize;
    (data[0] == 0 && data.len() == 5 + len).then(|| &data[5..])
}

/// `grpc-status-details-bin` decoded: a `google.rpc.Status` (code,
/// message, one `Any`), its value as JSON where the type is one of
/// hale's JSON types and as base64 otherwise; or why it does not decode.
pub fn details(b64: &str) -> Value {
    let Some(bytes) = from_base64(b64) else {
        return json!({ "undecodable": "not base64" });
    };
    let decoded = (|| {
        let mut out = Map::new();
        let mut any = None;
        for (field, value) in fields(&bytes)? {
            match (field, value) {
                (1, Wire::Varint(c)) => {
                    out.insert("code".into(), c.into());
                }
                (2, Wire::Bytes(m)) => {
                    out.insert("message".into(), String::from_utf8(m.to_vec()).ok()?.into());
                }
                (3, Wire::Bytes(a)) if any.is_none() => any = Some(a),
                (3, Wire::Bytes(_)) => return None,
                _ => {}
            }
        }
        if let Some(a) = any {
            let mut type_url = String::new();
            let mut value: &[u8] = &[];
            for (field, v) in fields(a)? {
                match (field, v) {
                    (1, Wire::Bytes(t)) => type_url = String::from_utf8(t.to_vec()).ok()?,
                    (2, Wire::Bytes(v)) => value = v,
                    _ => {}
                }
            }
            let json_type = type_url == JSON_HANDLER_ERROR || type_url == JSON_REFUSAL;
            out.insert("type_url".into(), type_url.into());
            match serde_json::from_slice::<Value>(value) {
                Ok(v) if json_type => out.insert("value".into(), v),
                _ => out.insert("value_base64".into(), base64(value).into()),
            };
        }
        Some(Value::Object(out))
    })();
    decoded.unwrap_or_else(|| json!({ "undecodable": "not a google.rpc.Status" }))
}

/// A protobuf field's value, of the two wire types a `Status` uses.
enum Wire<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
}

fn varint(bytes: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *bytes.get(*at)?;
        *at += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

/// The fields of a message, in order; `None` for one that does not read
/// (a cut field, a wire type a `Status` has none of).
fn fields(bytes: &[u8]) -> Option<Vec<(u64, Wire<'_>)>> {
    let mut at = 0;
    let mut out = Vec::new();
    while at < bytes.len() {
        let key = varint(bytes, &mut at)?;
        let value = match key & 7 {
            0 => Wire::Varint(varint(bytes, &mut at)?),
            2 => {
                let len = usize::try_from(varint(bytes, &mut at)?).ok()?;
                let v = bytes.get(at..at.checked_add(len)?)?;
                at += len;
                Wire::Bytes(v)
            }
            _ => return None,
        };
        out.push((key >> 3, value));
    }
    Some(out)
}

/// Bytes as a record writes them: base64 with padding, as gRPC writes a
/// `-bin` header's value (and the plan of `docs/conformance.md` named).
pub fn base64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Bytes of base64 text, padded or not; `None` for text that is not.
pub fn from_base64(text: &str) -> Option<Vec<u8>> {
    indifferent().decode(text.trim()).ok()
}

/// Standard base64, reading padding or none (gRPC's binary headers come
/// either way).
fn indifferent() -> base64::engine::GeneralPurpose {
    base64::engine::GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        base64::engine::GeneralPurposeConfig::new()
            .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
    )
}

/// The reply the bytes a server wrote hold: `Ok(None)` until stream 1
/// has ended or been reset, unless `eof` says no more will come — then a
/// connection that ended with no answer on the stream is a transport
/// failure (the server's SETTINGS alone are no reply).
pub fn read_reply(raw: &[u8], eof: bool) -> Result<Option<Value>, String> {
    if raw.is_empty() {
        return Ok(None);
    }
    let r = read_response(raw)?;
    if r.ended || r.reset.is_some() {
        return Ok(Some(reply_value(&r)));
    }
    if !eof {
        return Ok(None);
    }
    if r.headers.is_empty() {
        return Ok(Some(super::eof()));
    }
    Err("the connection ended inside the response".into())
}

/// The grpc-status a reply states, in its trailers or (trailers-only) its
/// headers.
fn grpc_status(reply: &Value) -> Option<u64> {
    ["trailers", "headers"].iter().find_map(|k| {
        reply
            .get(k)?
            .get("grpc-status")?
            .as_str()?
            .parse::<u64>()
            .ok()
    })
}

/// The refusal kind a protobuf `HaleRefusal` names (field 1).
fn hale_refusal_kind(value_base64: &str) -> Option<String> {
    let bytes = from_base64(value_base64)?;
    fields(&bytes)?.into_iter().find_map(|(f, v)| match (f, v) {
        (1, Wire::Bytes(k)) => String::from_utf8(k.to_vec()).ok(),
        _ => None,
    })
}

/// A key `:path` has for the member `Orders::place`: the rpc of the
/// `.proto` (`Orders__place`).
pub fn rpc_path(surface: &str, member: &str) -> String {
    format!("/{surface}/{}", member.replace("::", "__"))
}

/// Header fields of an HTTP request's record that a gRPC call carries:
/// its bearer and its digest, by their lowercase names.
fn carried(http_headers: Option<&Value>) -> Map<String, Value> {
    let mut out = Map::new();
    out.insert("content-type".into(), JSON.into());
    if let Some(h) = http_headers.and_then(Value::as_object) {
        for (name, value) in h {
            let name = name.to_ascii_lowercase();
            if name == "authorization" || name == "hale-surface-digest" {
                out.insert(name, value.clone());
            }
        }
    }
    out
}

impl Form for Grpc {
    fn name(&self) -> &'static str {
        "grpc"
    }

    fn title(&self) -> &'static str {
        "gRPC"
    }

    fn listener(&self) -> TransportKind {
        TransportKind::Grpc
    }

    fn check_request(&self, v: &Value, path: &str) -> Result<(), RecordError> {
        let o = object(v, path)?;
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
        let bodies = ["message", "message_base64", "body_base64"]
            .iter()
            .filter(|k| o.contains_key(**k))
            .count();
        if bodies > 1 {
            return Err(error(
                path,
                "a body is `message`, `message_base64` or `body_base64`, one of them",
            ));
        }
        for k in ["message_base64", "body_base64"] {
            if let Some(t) = o.get(k) {
                let t = string(Some(t), &format!("{path}.{k}"))?;
                if from_base64(t).is_none() {
                    return Err(error(&format!("{path}.{k}"), "base64"));
                }
            }
        }
        Ok(())
    }

    /// § Outcomes' gRPC column: `grpc-status: 0` is the result; any other
    /// status is the handler's error when its detail is the error type, a
    /// refusal of the kind its `HaleRefusal` (or `hale.api.Refusal`) names
    /// (`server` the server error) otherwise.
    fn outcome_of(&self, reply: &Value) -> Option<(String, Option<String>)> {
        let code = grpc_status(reply)?;
        if code == u64::from(status::OK) {
            return Some(("result".into(), None));
        }
        let details = reply.get("details");
        let type_url = details
            .and_then(|d| d.get("type_url"))
            .and_then(Value::as_str);
        match type_url {
            Some(JSON_REFUSAL) => {
                let kind = details?.get("value")?.get("kind")?.as_str();
                Some(refusal_outcome(kind))
            }
            Some(t) if t.ends_with("/HaleRefusal") => {
                let kind = hale_refusal_kind(details?.get("value_base64")?.as_str()?);
                Some(refusal_outcome(kind.as_deref()))
            }
            Some(_) => Some(("handler_error".into(), None)),
            None => Some(refusal_outcome(None)),
        }
    }

    fn member_of(&self, request: &Value, spec: &ExposureSpec) -> Option<String> {
        let path = request.get("path")?.as_str()?;
        match route(path, &spec.surface).ok()? {
            Route::Call(member) => Some(member),
            _ => None,
        }
    }

    /// Describe's answer under `+json` is the document as its message.
    fn document<'a>(&self, reply: &'a Value) -> Option<&'a Value> {
        reply.get("message")
    }

    fn request_bytes(&self, request: &Value, host: Option<&str>) -> Result<Vec<u8>, String> {
        self::request(request, host)
    }

    fn read_reply(&self, raw: &[u8], eof: bool) -> Result<Option<Value>, String> {
        read_reply(raw, eof)
    }

    /// Header names lowercased (a record may write them in any case);
    /// `:authority` is the run's address.
    fn mask_request(&self, request: &Value) -> Value {
        let mut request = super::http::with_headers(request, false);
        if let Some(Value::Object(h)) = request.get_mut("headers") {
            h.remove(":authority");
        }
        request
    }

    /// A description's address masked, as over HTTP.
    fn mask_reply(&self, reply: &Value, _peer: Option<PeerCredentials>) -> Value {
        let mut reply = reply.clone();
        if let Some(m) = reply.get_mut("message") {
            mask::document(m, None);
        }
        reply
    }

    /// Held to the header and trailer names the expected reply states.
    fn held_to(&self, mut got: Value, expected: &Value) -> Value {
        for block in ["headers", "trailers"] {
            let names: Vec<String> = expected
                .get(block)
                .and_then(Value::as_object)
                .map(|o| o.keys().cloned().collect())
                .unwrap_or_default();
            if let Some(Value::Object(h)) = got.get_mut(block) {
                h.retain(|k, _| names.contains(k));
            }
        }
        got
    }

    fn front_maker(
        &self,
        program: &Program,
        exposure: &ModelExposure,
        _spec: &ExposureSpec,
    ) -> Result<FrontMaker, String> {
        let framing = Arc::new(Framing::new(program, exposure).map_err(|e| e.to_string())?);
        Ok(Box::new(move |now, _limits, _peer, c| {
            match GrpcFront::new(now, GrpcLimits::default(), framing.clone(), c) {
                Some(f) => Box::new(f),
                // nghttp2 could not make a session: out of memory, which
                // a replay cannot go on from.
                None => panic!("nghttp2 cannot make a server session"),
            }
        }))
    }

    /// The exposure is the demo's, not the program's: it is described as
    /// the program would be were it a serve site of it, as `hale demo
    /// --grpc` describes it.
    fn describer(
        &self,
        program: &Program,
        exposure: &ModelExposure,
    ) -> Option<Result<Box<dyn Describer + Send>, String>> {
        let mut with = program.clone();
        if program.exposure(exposure.name.as_deref()?).is_none() {
            with.exposures.push(exposure.clone());
        }
        let name = exposure.name.clone()?;
        Some(
            ExposureDescriber::new(&with, &name, None)
                .map(|d| Box::new(d) as Box<dyn Describer + Send>)
                .map_err(|e| e.to_string()),
        )
    }

    fn endpoint(&self, text: &str) -> Option<Endpoint> {
        authority(text.strip_prefix("grpc://")?)
    }

    fn endpoint_form(&self) -> &'static str {
        "grpc://host:port"
    }

    fn speaks_to(&self, endpoint: &Endpoint) -> bool {
        matches!(endpoint, Endpoint::Http(_))
    }

    fn describe_request(&self, bearer: Option<&str>) -> Value {
        let mut headers = Map::new();
        headers.insert("content-type".into(), JSON.into());
        if let Some(t) = bearer {
            headers.insert("authorization".into(), format!("Bearer {t}").into());
        }
        json!({"path": DESCRIBE, "headers": headers, "message": {}})
    }

    /// § Outcomes: the recorded HTTP calls as unary calls under
    /// `application/grpc+json`, the recorded body the one message; the
    /// result's body the response message under `grpc-status: 0`, every
    /// other outcome trailers-only with its status, its message and its
    /// body the value of the details' `Any` (a refusal's the object under
    /// `refusal`). The base64 of the details is the server's bytes of the
    /// value, which a JSON body does not fix (its keys' order, its
    /// spacing): the implied reply states the details decoded instead.
    fn implied_by(&self, from: Exchange<'_>, identity: &str) -> Option<Value> {
        if from.transport != "http" {
            return None;
        }
        let member = super::http::member_of(from.request)?;
        let surface = identity.split('@').next()?;
        let mut request = Map::new();
        request.insert("path".into(), rpc_path(surface, &member).into());
        request.insert(
            "headers".into(),
            Value::Object(carried(from.request.get("headers"))),
        );
        request.insert(
            "message".into(),
            from.request.get("body").cloned().unwrap_or(json!({})),
        );
        let body = from.reply.get("body")?;
        // A trailers-only response's head: the status and its message,
        // percent-encoded, as § gRPC writes them.
        let only = |code: u32, message: &str| {
            json!({":status": "200", "content-type": JSON,
                "grpc-status": code.to_string(), "grpc-message": percent_encode(message)})
        };
        let reply = match from.outcome {
            "result" => json!({"headers": {":status": "200", "content-type": JSON},
                "message": body, "trailers": {"grpc-status": "0"}}),
            "handler_error" => json!({"headers": only(9, "handler_error"), "details": {
                "code": 9, "message": "handler_error",
                "type_url": JSON_HANDLER_ERROR, "value": body}}),
            "refusal" | "server_error" => {
                let refusal = body.get("refusal")?;
                let kind = refusal.get("kind")?.as_str()?;
                let code = match kind {
                    "malformed" => status::INVALID_ARGUMENT,
                    "digest_mismatch" => status::FAILED_PRECONDITION,
                    "unauthenticated" => status::UNAUTHENTICATED,
                    "unauthorized" => status::PERMISSION_DENIED,
                    "full" => status::RESOURCE_EXHAUSTED,
                    "shutting_down" | "unavailable" => status::UNAVAILABLE,
                    _ => status::INTERNAL,
                };
                let message = refusal
                    .get("reason")
                    .and_then(Value::as_str)
                    .unwrap_or("server_error");
                json!({"headers": only(code, message), "details": {
                    "code": code, "message": message,
                    "type_url": JSON_REFUSAL, "value": refusal}})
            }
            _ => return None,
        };
        let mut record = json!({
            "wire": 1, "transport": "grpc", "exposure": identity,
            "outcome": from.outcome, "request": request, "reply": reply,
        });
        if let Some(kind) = from.kind {
            record["kind"] = kind.into();
        }
        Some(record)
    }

    fn implied_note(&self) -> &'static str {
        "http call records are sent as unary calls under application/grpc+json"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_reads_back_what_it_writes_padded_or_not() {
        assert_eq!(base64(b"ab"), "YWI=");
        assert_eq!(from_base64("YWI=").unwrap(), b"ab");
        assert_eq!(from_base64("YWI").unwrap(), b"ab");
        assert!(from_base64("!!").is_none());
    }

    /// The bytes a server session writes for a trailers-only answer to
    /// the call on stream 1, and then `after`.
    fn answered(after: &[u8]) -> Vec<u8> {
        let mut server = Session::server(Limits::default()).unwrap();
        let call = request(&json!({"path": "/S/m", "headers": {}}), None).unwrap();
        server.handle_data(0, &call).unwrap();
        while server.poll_event().is_some() {}
        let head: [(&[u8], &[u8]); 2] = [(b":status", b"200"), (b"grpc-status", b"3")];
        server.respond_headers_only(1, &head).unwrap();
        server.flush().unwrap();
        let mut out = server.pending_output().to_vec();
        out.extend_from_slice(after);
        out
    }

    #[test]
    fn a_reply_once_whole_does_not_change_with_more_bytes() {
        let whole = answered(b"");
        let reply = read_reply(&whole, false).unwrap().unwrap();
        assert_eq!(
            reply,
            json!({"headers": {":status": "200", "grpc-status": "3"}})
        );
        // RST_STREAM on stream 1, then bytes that are no frame at all.
        let rst = [0, 0, 4, 3, 0, 0, 0, 0, 1, 0, 0, 0, 8];
        let more = answered(&[&rst[..], b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"].concat());
        assert_eq!(read_reply(&more, false).unwrap().unwrap(), reply);
        // The server's SETTINGS (nine bytes of frame header, three
        // six-byte entries) and nothing for the call: no reply yet, and at
        // the end of the stream a transport failure.
        let settings = &whole[..27];
        assert_eq!(settings[3], 4, "a SETTINGS frame");
        assert_eq!(read_reply(settings, false), Ok(None));
        assert_eq!(read_reply(settings, true), Ok(Some(super::super::eof())));
    }

    #[test]
    fn details_decode_a_status_with_one_any() {
        let bin = limen_core::wire::grpc::status_details(
            7,
            "no",
            JSON_REFUSAL,
            br#"{"kind":"unauthorized"}"#,
        );
        let b64 = limen_core::wire::grpc::bin_header(&bin);
        assert_eq!(
            details(&b64),
            json!({"code": 7, "message": "no", "type_url": JSON_REFUSAL,
                "value": {"kind": "unauthorized"}})
        );
        assert_eq!(
            Grpc.outcome_of(&json!({"headers": {"grpc-status": "7"}, "details": details(&b64)})),
            Some(("refusal".into(), Some("unauthorized".into())))
        );
        assert_eq!(details("!!")["undecodable"], "not base64");
    }
}
