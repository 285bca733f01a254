//! `mcp::Rpc` (§ The MCP transport): one JSON-RPC message in `POST /mcp`,
//! on § The HTTP transport's connections. A record takes the HTTP form
//! ([`super::http`]): `body` the JSON-RPC message, the reply's `body` the
//! JSON-RPC answer (`202` and no body for a notification).
//!
//! The spec takes the MCP exchanges of a call from the HTTP ones: "the same
//! recorded calls as tools/call messages in POST /mcp … wire/http/*.json
//! supply the payloads, so the data of each error is the recorded body"
//! (§ Outcomes). [`from_http`] is that rule, written once: the MCP record an
//! HTTP call record implies. `compare` holds the project's `wire/mcp`
//! records to it (the reference has no MCP records of its own), and `check
//! --transport mcp` runs it over a corpus that has no `wire/mcp` (the
//! reference's), so nothing is recorded twice to be certified. A
//! `tools_list.<caller>` record is held to the reference's projection
//! (`<Surface>.mcp.json`) and the caller's description
//! ([`Mcp::held_to_reference`]).

use std::sync::Arc;

use limen_core::hale::docs::McpDescriber;
use limen_core::hale::model::{Exposure as ModelExposure, Program, TransportKind};
use limen_core::hale::runtime::{Describer, ExposureSpec, PeerCredentials, RefusalKind};
use limen_core::wire::mcp;
use limen_core::wire::mcp::McpFront;
use serde_json::{json, Map, Value};

use super::{authority, http, Endpoint, Exchange, Form, FrontMaker, Reference};
use crate::jsonpath::RecordError;
use crate::mask;

/// The MCP transport. See the module documentation.
#[derive(Clone, Copy, Debug)]
pub struct Mcp;

/// The JSON-RPC id the translated requests carry.
pub const CALL_ID: i64 = 1;

/// The outcome (and a refusal's kind) an MCP reply encodes, by § The MCP
/// transport: a JSON-RPC result (or a notification's `202` with no body)
/// is `result`; an error is `handler_error` at -32001, `server_error` at
/// -32603, and otherwise a refusal whose kind is the error's `message`
/// (`malformed` for -32700, -32600, -32601 and -32602).
pub fn outcome_of(reply: &Value) -> Option<(String, Option<String>)> {
    let status = u16::try_from(reply.get("status")?.as_u64()?).ok()?;
    Some(match mcp::answered(status, reply.get("body"))? {
        mcp::Answered::Result => ("result".into(), None),
        mcp::Answered::HandlerError => ("handler_error".into(), None),
        mcp::Answered::ServerError => ("server_error".into(), None),
        mcp::Answered::Refusal(k) => ("refusal".into(), Some(k.as_str().to_owned())),
    })
}

/// The tool a `tools/call` request names (`params.name`).
pub fn tool_of(request: &Value) -> Option<&str> {
    let body = request.get("body")?;
    if body.get("method")?.as_str()? != "tools/call" {
        return None;
    }
    body.pointer("/params/name")?.as_str()
}

/// The member a `tools/call` request calls on the exposure `spec` serves.
pub fn member_of(request: &Value, spec: &ExposureSpec) -> Option<String> {
    tool_of(request).map(|t| mcp::Framing::new(spec).member_of(t))
}

/// The MCP record an HTTP call record implies (§ Outcomes: the recorded
/// call as `tools/call`, the data of each error the recorded body), as a
/// record's value, an exchange of the exposure `identity`. `None` for a
/// record that is no `POST /call/<member>` (a describe has no MCP
/// counterpart: over MCP, `tools/list` is the discovery), or whose reply
/// is not JSON.
///
/// The request keeps the record's headers (the bearer, the digest in
/// `Hale-Surface-Digest`) and carries `{"jsonrpc": "2.0", "id": 1,
/// "method": "tools/call", "params": {"name": <the member as a tool>,
/// "arguments": <the body>}}`. The reply is HTTP 200 (401 for
/// unauthenticated) with the record's `Content-Type`, and a result
/// `{"content": [{"type": "text", "text": <the body as text>}],
/// "structuredContent": <the body, when an object>, "isError": false}` or
/// an error `{"code", "message": <the kind>, "data": <the refusal object, or
/// the handler's error>}`.
pub fn from_http(record: Exchange<'_>, identity: &str) -> Option<Value> {
    if record.transport != http::Http.name() {
        return None;
    }
    let method = record.request.get("method")?.as_str()?;
    let member = http::member_of(record.request)?;
    if method != "POST" {
        return None;
    }
    let arguments = record.request.get("body")?.clone();
    let mut request = Map::new();
    request.insert("method".into(), "POST".into());
    request.insert("path".into(), mcp::PATH.into());
    if let Some(h) = record.request.get("headers") {
        request.insert("headers".into(), h.clone());
    }
    request.insert(
        "body".into(),
        json!({"jsonrpc": "2.0", "id": CALL_ID, "method": "tools/call",
               "params": {"name": limen_core::hale::docs::rows::tool_name(&member),
                          "arguments": arguments}}),
    );
    let body = record.reply.get("body")?;
    let refusal = body.get("refusal");
    let answer = match (record.outcome, record.kind) {
        ("result", _) => {
            let mut result = Map::new();
            result.insert(
                "content".into(),
                json!([{"type": "text", "text": body.to_string()}]),
            );
            if body.is_object() {
                result.insert("structuredContent".into(), body.clone());
            }
            result.insert("isError".into(), false.into());
            json!({"jsonrpc": "2.0", "id": CALL_ID, "result": result})
        }
        ("handler_error", _) => error(mcp::HANDLER_ERROR, "handler_error", body.clone()),
        ("server_error", _) => error(
            mcp::SERVER_ERROR,
            "server_error",
            refusal
                .cloned()
                .unwrap_or_else(|| json!({"kind": "server"})),
        ),
        ("refusal", Some(kind)) => {
            let code = mcp::refusal_code(RefusalKind::parse(kind)?);
            error(code, kind, refusal?.clone())
        }
        _ => return None,
    };
    let status = if record.kind == Some("unauthenticated") {
        401
    } else {
        200
    };
    let mut headers = Map::new();
    if let Some(Value::Object(h)) = record.reply.get("headers") {
        for (k, v) in h {
            if k.eq_ignore_ascii_case("content-type") {
                headers.insert(k.clone(), v.clone());
            }
        }
    }
    let mut value = Map::new();
    value.insert("wire".into(), 1.into());
    value.insert("transport".into(), Mcp.name().into());
    value.insert("exposure".into(), identity.into());
    value.insert("outcome".into(), record.outcome.into());
    if let Some(k) = record.kind {
        value.insert("kind".into(), k.into());
    }
    value.insert("request".into(), Value::Object(request));
    value.insert(
        "reply".into(),
        json!({"status": status, "headers": headers, "body": answer}),
    );
    Some(Value::Object(value))
}

fn error(code: i64, message: &str, data: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": CALL_ID, "error": {"code": code, "message": message, "data": data}})
}

/// The identity an MCP exposure of the same surface as `identity` has
/// under the name `name`.
pub fn renamed(identity: &str, name: &str) -> String {
    let name_len = identity.rsplit_once('/').map_or(identity, |(_, n)| n).len();
    let base = identity.len().saturating_sub(name_len);
    format!("{}{name}", &identity[..base])
}

/// The `initialize` request a check describes an MCP endpoint with.
pub fn initialize(bearer: Option<&str>) -> Value {
    let mut headers = Map::new();
    if let Some(t) = bearer {
        headers.insert("Authorization".into(), format!("Bearer {t}").into());
    }
    headers.insert("Content-Type".into(), "application/json".into());
    json!({"method": "POST", "path": mcp::PATH, "headers": headers,
           "body": {"jsonrpc": "2.0", "id": "limen-conformance", "method": "initialize",
                    "params": {"protocolVersion": mcp::PROTOCOL_VERSION, "capabilities": {},
                               "clientInfo": {"name": "limen-conformance", "version": env!("CARGO_PKG_VERSION")}}}})
}

/// The `<Surface>@<digest>` an `initialize` answer's `serverInfo` names
/// (§ The MCP transport: serverInfo is the surface's name and digest).
pub fn served_surface(reply: &Value) -> Option<String> {
    let info = reply.pointer("/body/result/serverInfo")?;
    Some(format!(
        "{}@{}",
        info.get("name")?.as_str()?,
        info.get("version")?.as_str()?
    ))
}

/// An MCP reply's result text blocks that hold JSON, read as the values
/// they hold (the text is "the response, as text", and its spelling —
/// spacing, key order — is no part of the contract).
pub fn mask_text_blocks(reply: &mut Value) {
    let Some(blocks) = reply
        .pointer_mut("/body/result/content")
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    for block in blocks {
        if block.get("type").and_then(Value::as_str) != Some("text") {
            continue;
        }
        let parsed = block
            .get("text")
            .and_then(Value::as_str)
            .and_then(|t| serde_json::from_str::<Value>(t).ok());
        if let Some(v) = parsed {
            block["text"] = json!({ "<json text>": v });
        }
    }
}

/// The `<Surface>@<digest>` of an exposure identity.
fn surface_of(identity: &str) -> &str {
    identity.split_once('/').map_or(identity, |(s, _)| s)
}

/// Holds a `tools_list.<caller>` record's tools to the reference: the
/// names are the members of the caller's description of the exposure (or
/// of one serving the surface under the same sources), as tools, and each
/// tool is the projection's tool of its name.
fn compare_tools(r: Exchange<'_>, caller: &str, reference: &dyn Reference) -> Option<String> {
    let surface_digest = surface_of(r.exposure);
    let Some((surface, _)) = surface_digest.split_once('@') else {
        return Some("the record's exposure names no surface".into());
    };
    let projection_file = reference.dir().join(format!("{surface}.mcp.json"));
    let projection: Value = match std::fs::read_to_string(&projection_file)
        .map_err(|e| e.to_string())
        .and_then(|t| serde_json::from_str(&t).map_err(|e| e.to_string()))
    {
        Ok(v) => v,
        Err(e) => return Some(format!("{}: {e}", projection_file.display())),
    };
    let name = r.exposure.rsplit_once('/').map_or(r.exposure, |(_, n)| n);
    let description = reference.same_sources(name).into_iter().find_map(|n| {
        let doc = format!("{n}.{caller}");
        let d = reference.document(&doc)?;
        let of = d.get("exposure").and_then(Value::as_str)?;
        (surface_of(of) == surface_digest).then_some((doc, d))
    });
    let Some((doc_name, description)) = description else {
        return Some(format!(
            "the reference describes {} under its sources to no caller `{caller}`",
            r.exposure
        ));
    };
    let Some(listed) = r
        .reply
        .pointer("/body/result/tools")
        .and_then(Value::as_array)
    else {
        return Some("reply $.body.result.tools: expected the tools listed".into());
    };
    let names: Vec<&str> = listed
        .iter()
        .filter_map(|t| t.get("name").and_then(Value::as_str))
        .collect();
    let mut members: Vec<String> = description
        .get("members")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|m| m.get("name").and_then(Value::as_str))
        .map(limen_core::hale::docs::rows::tool_name)
        .collect();
    members.sort();
    let mut sorted = names.clone();
    sorted.sort();
    if sorted != members {
        return Some(format!(
            "the tools listed are {sorted:?}, and {doc_name}.description.json's members are {members:?}"
        ));
    }
    for tool in listed {
        let name = tool.get("name").and_then(Value::as_str).unwrap_or_default();
        let want = projection
            .get("tools")
            .and_then(Value::as_array)
            .and_then(|ts| ts.iter().find(|t| t.get("name") == tool.get("name")));
        let Some(want) = want else {
            return Some(format!("{surface}.mcp.json has no tool `{name}`"));
        };
        if let Some(d) = mask::first_difference(want, tool) {
            return Some(format!("tool `{name}` {d} ({surface}.mcp.json)"));
        }
    }
    None
}

impl Form for Mcp {
    fn name(&self) -> &'static str {
        "mcp"
    }

    fn title(&self) -> &'static str {
        "MCP"
    }

    fn listener(&self) -> TransportKind {
        TransportKind::Mcp
    }

    fn check_request(&self, request: &Value, path: &str) -> Result<(), RecordError> {
        http::check_request(request, path)
    }

    fn outcome_of(&self, reply: &Value) -> Option<(String, Option<String>)> {
        outcome_of(reply)
    }

    /// A tool names a member only through the exposure's rows.
    fn member_of(&self, request: &Value, spec: &ExposureSpec) -> Option<String> {
        member_of(request, spec)
    }

    fn request_bytes(&self, request: &Value, host: Option<&str>) -> Result<Vec<u8>, String> {
        http::request(request, host)
    }

    fn read_reply(&self, raw: &[u8], eof: bool) -> Result<Option<Value>, String> {
        http::read_reply(raw, eof)
    }

    fn mask_request(&self, request: &Value) -> Value {
        http::with_headers(request, true)
    }

    /// HTTP's header names, and a result's text blocks read as the JSON
    /// they hold.
    fn mask_reply(&self, reply: &Value, _peer: Option<PeerCredentials>) -> Value {
        let mut reply = http::with_headers(reply, false);
        mask_text_blocks(&mut reply);
        reply
    }

    fn held_to(&self, got: Value, expected: &Value) -> Value {
        http::restrict_headers(got, expected)
    }

    fn front_maker(
        &self,
        _program: &Program,
        _exposure: &ModelExposure,
        spec: &ExposureSpec,
    ) -> Result<FrontMaker, String> {
        let framing = Arc::new(mcp::Framing::new(spec));
        Ok(Box::new(move |now, limits, _peer, c| {
            Box::new(McpFront::new(now, limits.http, framing.clone(), c))
        }))
    }

    /// Over MCP a describe is `tools/list`: the caller's tools.
    fn describer(
        &self,
        program: &Program,
        exposure: &ModelExposure,
    ) -> Option<Result<Box<dyn Describer + Send>, String>> {
        Some(
            McpDescriber::new(program, exposure)
                .map(|d| Box::new(d) as Box<dyn Describer + Send>)
                .map_err(|e| e.to_string()),
        )
    }

    /// `mcp://host:port`, as `hale demo` prints it: an MCP listener is an
    /// HTTP one.
    fn endpoint(&self, text: &str) -> Option<Endpoint> {
        authority(text.strip_prefix("mcp://")?)
    }

    fn endpoint_form(&self) -> &'static str {
        "mcp://host:port"
    }

    fn speaks_to(&self, endpoint: &Endpoint) -> bool {
        matches!(endpoint, Endpoint::Http(_))
    }

    /// An MCP endpoint serves no description: its `initialize` names the
    /// surface and digest.
    fn describe_request(&self, bearer: Option<&str>) -> Value {
        initialize(bearer)
    }

    /// The one exposure of `identities` of the surface and digest the
    /// `initialize` answer names.
    fn described(&self, reply: &Value, identities: &[&str]) -> Result<String, String> {
        let Some(surface) = served_surface(reply) else {
            return Err(match outcome_of(reply) {
                Some((_, Some(k))) => format!("the initialize was refused {k}"),
                _ => "its initialize names no surface".into(),
            });
        };
        let prefix = format!("{surface}/");
        let mut names: Vec<&str> = identities
            .iter()
            .filter_map(|id| id.strip_prefix(&prefix))
            .collect();
        names.sort();
        names.dedup();
        match names.as_slice() {
            [one] => Ok(format!("{prefix}{one}")),
            [] => Err(format!("it serves {surface}, which no mcp record is of")),
            several => Err(format!(
                "it serves {surface}, which the mcp records of {} serve",
                several.join(", ")
            )),
        }
    }

    fn described_note(&self, endpoint: &Endpoint, identity: &str) -> String {
        let (surface, name) = identity.rsplit_once('/').unwrap_or((identity, ""));
        format!("describe  {endpoint}: its initialize names {surface}; checking the mcp records of `{name}`")
    }

    fn implied_by(&self, from: Exchange<'_>, identity: &str) -> Option<Value> {
        from_http(from, identity)
    }

    fn implied_note(&self) -> &'static str {
        "http call records are sent as tools/call"
    }

    /// A `tools_list.<caller>` result is held to the projection and the
    /// caller's description.
    fn held_to_reference(
        &self,
        record: Exchange<'_>,
        reference: &dyn Reference,
    ) -> Option<Option<String>> {
        if record.outcome != "result" {
            return None;
        }
        let caller = record.stem().strip_prefix("tools_list.")?;
        Some(compare_tools(record, caller, reference))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn http(outcome: &str, kind: Option<&str>, status: u16, body: Value) -> Value {
        let mut v = json!({"wire": 1, "transport": "http",
            "exposure": "Public@fnv1a64:a8930d6e7998e986/public", "outcome": outcome,
            "request": {"method": "POST", "path": "/call/Orders::place",
                        "headers": {"Authorization": "Bearer t-alice", "Hale-Surface-Digest": "fnv1a64:a8930d6e7998e986"},
                        "body": {"symbol": "ACME", "qty": 10, "limit": 12500}},
            "reply": {"status": status, "headers": {"Content-Type": "application/json"}, "body": body}});
        if let Some(k) = kind {
            v["kind"] = k.into();
        }
        v
    }

    fn exchange(v: &Value) -> Exchange<'_> {
        Exchange {
            name: "http/x",
            transport: v["transport"].as_str().unwrap(),
            exposure: v["exposure"].as_str().unwrap(),
            outcome: v["outcome"].as_str().unwrap(),
            kind: v.get("kind").and_then(Value::as_str),
            request: &v["request"],
            reply: &v["reply"],
        }
    }

    #[test]
    fn a_result_is_its_body_as_text_and_structured_content() {
        let h = http(
            "result",
            None,
            200,
            json!({"order": 41, "notional": 125000}),
        );
        let r = from_http(exchange(&h), "Public@fnv1a64:a8930d6e7998e986/mcp").unwrap();
        assert_eq!(r["transport"], "mcp");
        assert_eq!(r["request"]["path"], "/mcp");
        assert_eq!(r["request"]["body"]["params"]["name"], "Orders__place");
        assert_eq!(r["request"]["body"]["params"]["arguments"]["qty"], 10);
        assert_eq!(r["reply"]["status"], 200);
        let result = &r["reply"]["body"]["result"];
        assert_eq!(result["structuredContent"]["order"], 41);
        assert_eq!(
            result["content"][0]["text"],
            "{\"order\":41,\"notional\":125000}"
        );
        assert_eq!(result["isError"], false);
        assert_eq!(outcome_of(&r["reply"]), Some(("result".into(), None)));
    }

    #[test]
    fn each_error_carries_the_recorded_body_under_its_code() {
        let cases = [
            (
                http("handler_error", None, 422, json!({"code": "unknown_order"})),
                -32001,
                "handler_error",
                json!({"code": "unknown_order"}),
                200,
            ),
            (
                http(
                    "server_error",
                    None,
                    500,
                    json!({"refusal": {"kind": "server"}}),
                ),
                -32603,
                "server_error",
                json!({"kind": "server"}),
                200,
            ),
            (
                http(
                    "refusal",
                    Some("full"),
                    429,
                    json!({"refusal": {"kind": "full", "reason": "r"}}),
                ),
                -32006,
                "full",
                json!({"kind": "full", "reason": "r"}),
                200,
            ),
            (
                http(
                    "refusal",
                    Some("malformed"),
                    400,
                    json!({"refusal": {"kind": "malformed", "reason": "m"}}),
                ),
                -32602,
                "malformed",
                json!({"kind": "malformed", "reason": "m"}),
                200,
            ),
            (
                http(
                    "refusal",
                    Some("unauthenticated"),
                    401,
                    json!({"refusal": {"kind": "unauthenticated", "reason": "u"}}),
                ),
                -32004,
                "unauthenticated",
                json!({"kind": "unauthenticated", "reason": "u"}),
                401,
            ),
        ];
        for (record, code, message, data, status) in cases {
            let r = from_http(exchange(&record), "P@d/mcp").unwrap();
            let e = &r["reply"]["body"]["error"];
            assert_eq!(e["code"], code, "{message}");
            assert_eq!(e["message"], message);
            assert_eq!(e["data"], data);
            assert_eq!(r["reply"]["status"], status);
            assert_eq!(r["outcome"], record["outcome"]);
            assert_eq!(r.get("kind"), record.get("kind"));
            let (outcome, kind) = outcome_of(&r["reply"]).unwrap();
            assert_eq!(outcome, record["outcome"].as_str().unwrap());
            assert_eq!(kind.as_deref(), record.get("kind").and_then(Value::as_str));
        }
    }

    #[test]
    fn a_describe_has_no_mcp_counterpart() {
        let mut h = http("result", None, 200, json!({}));
        h["request"] = json!({"method": "GET", "path": "/.description"});
        assert!(from_http(exchange(&h), "P@d/mcp").is_none());
    }

    #[test]
    fn outcomes_follow_the_mcp_column() {
        let at = |code: i64, message: &str| {
            outcome_of(
                &json!({"status": 200, "body": {"error": {"code": code, "message": message}}}),
            )
        };
        assert_eq!(
            at(-32601, "malformed"),
            Some(("refusal".into(), Some("malformed".into())))
        );
        assert_eq!(
            at(-32001, "handler_error"),
            Some(("handler_error".into(), None))
        );
        assert_eq!(
            outcome_of(&json!({"status": 202})),
            Some(("result".into(), None))
        );
        assert_eq!(outcome_of(&json!({"status": 200})), None);
        assert_eq!(
            renamed("Public@fnv1a64:1/public", "mcp"),
            "Public@fnv1a64:1/mcp"
        );
    }

    #[test]
    fn a_text_block_of_json_is_compared_as_its_value() {
        let mut a = json!({"body": {"result": {"content": [{"type": "text", "text": "{\"a\":1,\"b\":2}"}]}}});
        let mut b = json!({"body": {"result": {"content": [{"type": "text", "text": "{\"b\": 2, \"a\": 1}"}]}}});
        mask_text_blocks(&mut a);
        mask_text_blocks(&mut b);
        assert_eq!(a, b);
    }
}
