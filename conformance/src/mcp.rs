//! MCP records (`mcp::Rpc`, § The MCP transport): the HTTP form, its
//! `body` one JSON-RPC message to `POST /mcp` and the reply's `body` the
//! JSON-RPC answer.
//!
//! The spec takes the MCP exchanges of a call from the HTTP ones: "the same
//! recorded calls as tools/call messages in POST /mcp … wire/http/*.json
//! supply the payloads, so the data of each error is the recorded body"
//! (§ Outcomes). [`from_http`] is that rule, written once: the MCP record an
//! HTTP call record implies. `compare` holds the project's `wire/mcp`
//! records to it (the reference has no MCP records of its own), and `check
//! --transport mcp` runs it over a corpus that has no `wire/mcp` (the
//! reference's), so nothing is recorded twice to be certified.

use limen_core::hale::runtime::{ExposureSpec, RefusalKind};
use limen_core::wire::mcp;
use serde_json::{json, Map, Value};

use crate::record::{exposure_name, Record, Transport};
use crate::wire;

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
/// call as `tools/call`, the data of each error the recorded body), as an
/// exchange of the exposure `identity`. `None` for a record that is no
/// `POST /call/<member>` (a describe has no MCP counterpart: over MCP,
/// `tools/list` is the discovery), or whose reply is not JSON.
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
pub fn from_http(record: &Record, identity: &str) -> Option<Record> {
    if record.transport != Transport::Http {
        return None;
    }
    let method = record.request.get("method")?.as_str()?;
    let member = wire::member_of(&Transport::Http, &record.request)?;
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
    let answer = match (record.outcome.as_str(), record.kind.as_deref()) {
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
    let status = if record.kind.as_deref() == Some("unauthenticated") {
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
    value.insert("transport".into(), "mcp".into());
    value.insert("exposure".into(), identity.into());
    value.insert("outcome".into(), record.outcome.clone().into());
    if let Some(k) = &record.kind {
        value.insert("kind".into(), k.clone().into());
    }
    value.insert("request".into(), Value::Object(request));
    value.insert(
        "reply".into(),
        json!({"status": status, "headers": headers, "body": answer}),
    );
    Record::from_value(&format!("mcp/{}", record.stem()), Value::Object(value)).ok()
}

fn error(code: i64, message: &str, data: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": CALL_ID, "error": {"code": code, "message": message, "data": data}})
}

/// The identity an MCP exposure of the same surface as `identity` has
/// under the name `name`.
pub fn renamed(identity: &str, name: &str) -> String {
    let base = identity.len().saturating_sub(exposure_name(identity).len());
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

/// An MCP reply as it is compared: a result's text blocks that hold JSON
/// read as the values they hold (the text is "the response, as text", and
/// its spelling — spacing, key order — is no part of the contract).
pub fn mask_reply(reply: &mut Value) {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn http(outcome: &str, kind: Option<&str>, status: u16, body: Value) -> Record {
        let mut v = json!({"wire": 1, "transport": "http",
            "exposure": "Public@fnv1a64:a8930d6e7998e986/public", "outcome": outcome,
            "request": {"method": "POST", "path": "/call/Orders::place",
                        "headers": {"Authorization": "Bearer t-alice", "Hale-Surface-Digest": "fnv1a64:a8930d6e7998e986"},
                        "body": {"symbol": "ACME", "qty": 10, "limit": 12500}},
            "reply": {"status": status, "headers": {"Content-Type": "application/json"}, "body": body}});
        if let Some(k) = kind {
            v["kind"] = k.into();
        }
        Record::from_value("http/x", v).unwrap()
    }

    #[test]
    fn a_result_is_its_body_as_text_and_structured_content() {
        let r = from_http(
            &http(
                "result",
                None,
                200,
                json!({"order": 41, "notional": 125000}),
            ),
            "Public@fnv1a64:a8930d6e7998e986/mcp",
        )
        .unwrap();
        assert_eq!(r.name, "mcp/x");
        assert_eq!(r.request["path"], "/mcp");
        assert_eq!(r.request["body"]["params"]["name"], "Orders__place");
        assert_eq!(r.request["body"]["params"]["arguments"]["qty"], 10);
        assert_eq!(r.reply["status"], 200);
        let result = &r.reply["body"]["result"];
        assert_eq!(result["structuredContent"]["order"], 41);
        assert_eq!(
            result["content"][0]["text"],
            "{\"order\":41,\"notional\":125000}"
        );
        assert_eq!(result["isError"], false);
        assert_eq!(outcome_of(&r.reply), Some(("result".into(), None)));
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
            let r = from_http(&record, "P@d/mcp").unwrap();
            let e = &r.reply["body"]["error"];
            assert_eq!(e["code"], code, "{message}");
            assert_eq!(e["message"], message);
            assert_eq!(e["data"], data);
            assert_eq!(r.reply["status"], status);
            assert_eq!(r.outcome, record.outcome);
            assert_eq!(r.kind, record.kind);
        }
    }

    #[test]
    fn a_describe_has_no_mcp_counterpart() {
        let mut r = http("result", None, 200, json!({}));
        r.request = json!({"method": "GET", "path": "/.description"});
        assert!(from_http(&r, "P@d/mcp").is_none());
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
        mask_reply(&mut a);
        mask_reply(&mut b);
        assert_eq!(a, b);
    }
}
