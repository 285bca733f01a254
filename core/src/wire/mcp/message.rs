//! MCP's messages as a server reads and answers them, whatever carries
//! them: [`classify`] reads one JSON-RPC message into what it asks, and the
//! encoders write the answers of § The MCP transport. The HTTP transport
//! ([`super::Framing`]) and the stdio bridge (`hale mcp --app`) share them.

use std::borrow::Cow;

use crate::hale::runtime::{Refusal, RefusalKind};
use crate::json::jsonrpc::{self, Message};
use crate::json::{write_string, Event, Tokenizer};

/// The protocol version answered when the client names none.
pub const PROTOCOL_VERSION: &str = "2025-06-18";
/// The `_meta` key a `tools/call` may carry the digest under.
pub const DIGEST_META: &str = "hale/digest";
/// A handler error's code.
pub const HANDLER_ERROR: i64 = -32001;
/// The server error's code.
pub const SERVER_ERROR: i64 = jsonrpc::INTERNAL_ERROR;

/// The JSON-RPC error code of a refusal kind (§ The MCP transport).
pub fn refusal_code(kind: RefusalKind) -> i64 {
    match kind {
        RefusalKind::Malformed => jsonrpc::INVALID_PARAMS,
        RefusalKind::DigestMismatch => -32003,
        RefusalKind::Unauthenticated => -32004,
        RefusalKind::Unauthorized => -32005,
        RefusalKind::Full => -32006,
        RefusalKind::ShuttingDown => -32007,
        RefusalKind::Unavailable => -32008,
    }
}

/// The outcome an MCP answer encodes, as a client reads it back
/// (§ Outcomes' MCP column).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answered {
    /// A JSON-RPC result, or a notification's `202` with no body.
    Result,
    /// -32001, `handler_error`.
    HandlerError,
    /// -32603, `server_error`.
    ServerError,
    /// Any other error: a refusal, of the kind its `message` names
    /// (`malformed` for -32700, -32600, -32601 and -32602).
    Refusal(RefusalKind),
}

/// Reads the outcome an HTTP answer of `status` with the JSON `body`
/// (`None` when it has none) encodes; `None` when it encodes none (an
/// error whose message is no refusal kind, a body that is no JSON-RPC
/// response).
pub fn answered(status: u16, body: Option<&serde_json::Value>) -> Option<Answered> {
    let Some(body) = body else {
        return (status == 202).then_some(Answered::Result);
    };
    if body.get("result").is_some() {
        return Some(Answered::Result);
    }
    let error = body.get("error")?;
    match error.get("code")?.as_i64()? {
        HANDLER_ERROR => Some(Answered::HandlerError),
        SERVER_ERROR => Some(Answered::ServerError),
        _ => RefusalKind::parse(error.get("message")?.as_str()?).map(Answered::Refusal),
    }
}

/// What one JSON-RPC message asks of an MCP server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Incoming<'a> {
    /// `initialize`, with the client's `protocolVersion` (or
    /// [`PROTOCOL_VERSION`] when it names none).
    Initialize {
        /// The id, as raw JSON text.
        id: &'a [u8],
        /// The version answered.
        version: Cow<'a, str>,
    },
    /// `ping`.
    Ping {
        /// The id.
        id: &'a [u8],
    },
    /// `tools/list`.
    ToolsList {
        /// The id.
        id: &'a [u8],
    },
    /// `tools/call`.
    ToolsCall {
        /// The id.
        id: &'a [u8],
        /// `params.name`.
        name: Cow<'a, str>,
        /// `params.arguments` as raw JSON text (`{}` when absent).
        arguments: &'a [u8],
        /// `params._meta["hale/digest"]`, when given.
        digest: Option<Cow<'a, str>>,
    },
    /// A notification, or a response to a request the server never sent:
    /// accepted with no answer.
    Accepted,
    /// A method this server does not have.
    Unknown {
        /// The id.
        id: &'a [u8],
        /// The method.
        method: Cow<'a, str>,
    },
    /// Not a request this server can take: answered with `code`.
    Invalid {
        /// The id when one could be read, else `null`.
        id: Cow<'a, [u8]>,
        /// -32700, -32600 or -32602.
        code: i64,
        /// What was wrong.
        reason: String,
    },
}

/// Reads one JSON-RPC message (a body, a line) into what it asks.
pub fn classify(body: &[u8]) -> Incoming<'_> {
    let message = match jsonrpc::parse(body) {
        Ok(m) => m,
        Err(e) => {
            let batch = e.code == jsonrpc::INVALID_REQUEST
                && body.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[');
            return Incoming::Invalid {
                id: e.id.map_or(Cow::Borrowed(&b"null"[..]), Cow::Owned),
                code: e.code,
                reason: if batch {
                    "a batch is not taken: send one JSON-RPC message per request".into()
                } else {
                    e.reason
                },
            };
        }
    };
    let (id, method, params) = match message {
        Message::Request { id, method, params } => (id, method, params),
        Message::Notification { .. } | Message::Response { .. } | Message::Error { .. } => {
            return Incoming::Accepted
        }
    };
    let bad_params = |reason: String| Incoming::Invalid {
        id: Cow::Borrowed(id),
        code: jsonrpc::INVALID_PARAMS,
        reason,
    };
    match method.as_ref() {
        "initialize" => {
            let mut version = None;
            if let Some(params) = params {
                let walked = object_members(params, &["protocolVersion"], |key, value, _| {
                    if let ("protocolVersion", Event::String(v)) = (key, value) {
                        version = Some(v.clone());
                    }
                    Ok(())
                });
                if let Err(reason) = walked {
                    return bad_params(format!("initialize: {reason}"));
                }
            }
            Incoming::Initialize {
                id,
                version: version.unwrap_or(Cow::Borrowed(PROTOCOL_VERSION)),
            }
        }
        "ping" => Incoming::Ping { id },
        "tools/list" => Incoming::ToolsList { id },
        "tools/call" => match call_params(params) {
            Ok((name, arguments, digest)) => Incoming::ToolsCall {
                id,
                name,
                arguments,
                digest,
            },
            Err(reason) => bad_params(format!("tools/call: {reason}")),
        },
        _ => Incoming::Unknown { id, method },
    }
}

#[allow(clippy::type_complexity)]
fn call_params(
    params: Option<&[u8]>,
) -> Result<(Cow<'_, str>, &[u8], Option<Cow<'_, str>>), String> {
    let params = params.ok_or("params names the tool: {\"name\": …, \"arguments\": {…}}")?;
    let mut name = None;
    let mut arguments: Option<&[u8]> = None;
    let mut digest = None;
    object_members(
        params,
        &["name", "arguments", "_meta"],
        |key, value, raw| {
            match key {
                "name" => match value {
                    Event::String(s) => name = Some(s.clone()),
                    _ => return Err("params.name is the tool's name, a string".into()),
                },
                "arguments" => arguments = Some(raw),
                "_meta" => {
                    if !matches!(value, Event::BeginObject) {
                        return Err("params._meta is an object".into());
                    }
                    object_members(raw, &[DIGEST_META], |key, value, _| {
                        if key == DIGEST_META {
                            match value {
                                Event::String(s) => digest = Some(s.clone()),
                                _ => {
                                    return Err(format!(
                                        "params._meta[\"{DIGEST_META}\"] is a string"
                                    ))
                                }
                            }
                        }
                        Ok(())
                    })?;
                }
                _ => {}
            }
            Ok(())
        },
    )?;
    let name = name.ok_or("params.name names the tool")?;
    Ok((name, arguments.unwrap_or(b"{}"), digest))
}

/// Calls `each(key, first event, raw value)` for every member of the JSON
/// object `raw`, refusing a key of `read` given twice (a repeated key
/// nothing reads changes nothing, and tracking only these costs no
/// allocation). The events borrow `raw`.
fn object_members<'a>(
    raw: &'a [u8],
    read: &[&str],
    mut each: impl FnMut(&str, &Event<'a>, &'a [u8]) -> Result<(), String>,
) -> Result<(), String> {
    let mut t = Tokenizer::new(raw);
    if !matches!(t.next_event(), Ok(Some(Event::BeginObject))) {
        return Err("params is an object".into());
    }
    let mut seen = 0u32;
    loop {
        let key = match t.next_event() {
            Ok(Some(Event::Key(k))) => k,
            Ok(Some(Event::EndObject)) => return Ok(()),
            _ => return Err("params is not a well-formed object".into()),
        };
        if let Some(i) = read.iter().position(|r| *r == key) {
            if seen & (1 << i) != 0 {
                return Err(format!("the member `{key}` is given twice"));
            }
            seen |= 1 << i;
        }
        let first = match t.next_event() {
            Ok(Some(e)) => e,
            _ => return Err("params is not a well-formed object".into()),
        };
        let start = t.event_offset();
        let end = t
            .skip_value(&first)
            .map_err(|_| "params is not a well-formed object".to_string())?;
        each(&key, &first, &raw[start..end])?;
    }
}

/// The `initialize` result: the version, the capability `tools` and the
/// server's name and version.
pub fn initialize_result(version: &str, name: &str, server_version: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(128);
    out.extend_from_slice(b"{\"protocolVersion\":");
    write_string(version, &mut out);
    out.extend_from_slice(b",\"capabilities\":{\"tools\":{}},\"serverInfo\":{\"name\":");
    write_string(name, &mut out);
    out.extend_from_slice(b",\"version\":");
    write_string(server_version, &mut out);
    out.extend_from_slice(b"}}");
    out
}

/// A `tools/call`'s answer, its bodies as the wire carried them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallAnswer<'a> {
    /// The response by codec.
    Result(&'a [u8]),
    /// The handler's `E` by codec.
    HandlerError(&'a [u8]),
    /// A refusal: its kind and its refusal object
    /// (`{"kind", "reason", ["served" | "requires"]}`) as JSON text.
    Refusal {
        /// The kind.
        kind: RefusalKind,
        /// The refusal object.
        object: &'a [u8],
    },
    /// The server error.
    ServerError,
}

/// The server error's data.
pub const SERVER_ERROR_DATA: &[u8] = br#"{"kind":"server"}"#;

/// Appends the JSON-RPC message answering request `id` (raw JSON text) with
/// `answer`: a result `{"content": [{"type": "text", "text": …}],
/// "structuredContent": … (when an object), "isError": false}`, or the
/// error object of § The MCP transport, its data the body as recorded.
pub fn encode_call_answer(id: &[u8], answer: CallAnswer<'_>, out: &mut Vec<u8>) {
    match answer {
        CallAnswer::Result(value) => {
            // jsonrpc::encode_response's envelope, written in place.
            out.reserve(2 * value.len() + id.len() + 112);
            out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
            out.extend_from_slice(id);
            out.extend_from_slice(b",\"result\":{\"content\":[{\"type\":\"text\",\"text\":");
            write_string(&String::from_utf8_lossy(value), out);
            out.extend_from_slice(b"}]");
            if value.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{') {
                out.extend_from_slice(b",\"structuredContent\":");
                out.extend_from_slice(value);
            }
            out.extend_from_slice(b",\"isError\":false}}");
        }
        CallAnswer::HandlerError(e) => {
            jsonrpc::encode_error_data(id, HANDLER_ERROR, "handler_error", e, out)
        }
        CallAnswer::Refusal { kind, object } => {
            jsonrpc::encode_error_data(id, refusal_code(kind), kind.as_str(), object, out)
        }
        CallAnswer::ServerError => {
            jsonrpc::encode_error_data(id, SERVER_ERROR, "server_error", SERVER_ERROR_DATA, out)
        }
    }
}

/// Appends the error answering `id` with a malformed refusal under `code`
/// (-32700, -32600, -32601, -32602): message `malformed`, data the refusal
/// object.
pub fn encode_malformed(id: &[u8], code: i64, reason: &str, out: &mut Vec<u8>) {
    let object = Refusal::new(RefusalKind::Malformed, reason)
        .to_json()
        .to_string();
    jsonrpc::encode_error_data(id, code, "malformed", object.as_bytes(), out);
}
