//! JSON-RPC 2.0 messages, one to a line, as MCP and LSP frame them.
//!
//! [`parse`] reads one line into a [`Message`]: a request, a notification,
//! a response or an error response. Nothing is decoded that the caller did
//! not ask for: the id, `params` and `result` stay raw JSON slices of the
//! line (an id is compared and echoed as its text), so a protocol on top
//! decodes them at the types it knows. The `encode_*` functions write one
//! message without its newline; callers pass `params` and `result` as
//! JSON texts they have already written.
//!
//! Strictness is JSON-RPC 2.0's own: `"jsonrpc": "2.0"` is required, a
//! member given twice is refused, an id is a string, a number or `null`,
//! `params` is an object or an array, a response holds exactly one of
//! `result` and `error`. Members JSON-RPC does not define are ignored, as
//! MCP's `_meta` convention needs.

use std::borrow::Cow;
use std::fmt;

use crate::json::{DuplicateKeys, Event, Tokenizer};

/// A parse error, as JSON-RPC numbers it (-32700).
pub const PARSE_ERROR: i64 = -32700;
/// An invalid request (-32600).
pub const INVALID_REQUEST: i64 = -32600;
/// A method the receiver does not have (-32601).
pub const METHOD_NOT_FOUND: i64 = -32601;
/// Invalid method parameters (-32602).
pub const INVALID_PARAMS: i64 = -32602;
/// An internal error (-32603).
pub const INTERNAL_ERROR: i64 = -32603;

/// One JSON-RPC 2.0 message, borrowing from its line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Message<'a> {
    /// A call that expects a response.
    Request {
        /// The id, as raw JSON text (`1`, `"a"`, `null`).
        id: &'a [u8],
        /// The method.
        method: Cow<'a, str>,
        /// `params` as raw JSON text, if present.
        params: Option<&'a [u8]>,
    },
    /// A call that expects no response.
    Notification {
        /// The method.
        method: Cow<'a, str>,
        /// `params` as raw JSON text, if present.
        params: Option<&'a [u8]>,
    },
    /// A successful response.
    Response {
        /// The id of the request it answers, as raw JSON text.
        id: &'a [u8],
        /// `result` as raw JSON text.
        result: &'a [u8],
    },
    /// An error response.
    Error {
        /// The id of the request it answers, as raw JSON text (`null` when
        /// the request could not be read).
        id: &'a [u8],
        /// The error's code.
        code: i64,
        /// The error's message.
        message: Cow<'a, str>,
        /// The error's `data`, as raw JSON text, if present.
        data: Option<&'a [u8]>,
    },
}

/// Why a line is not a JSON-RPC 2.0 message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// The JSON-RPC error code that answers it: [`PARSE_ERROR`] for a line
    /// that is not JSON, [`INVALID_REQUEST`] for JSON that is not a message.
    pub code: i64,
    /// What was wrong, and where.
    pub reason: String,
    /// The message's id, when one could be read (so an invalid request can
    /// still be answered by id).
    pub id: Option<Vec<u8>>,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.reason)
    }
}

impl std::error::Error for ParseError {}

/// Reads one message from `line` (without its newline).
pub fn parse(line: &[u8]) -> Result<Message<'_>, ParseError> {
    let syntax = |e: &dyn fmt::Display| ParseError {
        code: PARSE_ERROR,
        reason: format!("not JSON: {e}"),
        id: None,
    };
    let mut t = Tokenizer::new(line);
    match t.next_event() {
        Ok(Some(Event::BeginObject)) => {}
        Ok(Some(first)) => {
            // A JSON text that is not an object: still valid JSON (or not).
            t.skip_value(&first).map_err(|e| syntax(&e))?;
            t.finish().map_err(|e| syntax(&e))?;
            return Err(invalid(None, "a JSON-RPC message is a JSON object"));
        }
        Ok(None) => return Err(syntax(&"the line holds no JSON value")),
        Err(e) => return Err(syntax(&e)),
    }
    let mut keys = DuplicateKeys::new();
    let mut version: Option<bool> = None;
    let mut id: Option<&[u8]> = None;
    let mut id_ok = true;
    let mut method: Option<Option<Cow<'_, str>>> = None;
    let mut params: Option<(&[u8], bool)> = None;
    let mut result: Option<&[u8]> = None;
    let mut error: Option<&[u8]> = None;
    let mut duplicate: Option<String> = None;
    loop {
        let key = match t.next_event() {
            Ok(Some(Event::Key(k))) => k,
            Ok(Some(Event::EndObject)) => break,
            Ok(_) => return Err(syntax(&"an object member was expected")),
            Err(e) => return Err(syntax(&e)),
        };
        if !keys.insert(&key) && duplicate.is_none() {
            duplicate = Some(key.to_string());
        }
        let first = match t.next_event() {
            Ok(Some(ev)) => ev,
            Ok(None) => return Err(syntax(&"the object is not closed")),
            Err(e) => return Err(syntax(&e)),
        };
        let start = t.event_offset();
        let kind = Kind::of(&first);
        let end = t.skip_value(&first).map_err(|e| syntax(&e))?;
        let raw = &line[start..end];
        match key.as_ref() {
            "jsonrpc" => version = Some(matches!(&first, Event::String(s) if s == "2.0")),
            "id" => {
                id = Some(raw);
                id_ok = matches!(kind, Kind::String | Kind::Number | Kind::Null);
            }
            "method" => {
                method = Some(match first {
                    Event::String(s) => Some(s),
                    _ => None,
                })
            }
            "params" => params = Some((raw, matches!(kind, Kind::Object | Kind::Array))),
            "result" => result = Some(raw),
            "error" => error = Some(raw),
            _ => {}
        }
    }
    t.finish().map_err(|e| syntax(&e))?;
    let id = if id_ok { id } else { None };
    if let Some(key) = duplicate {
        return Err(invalid(id, &format!("the member `{key}` is given twice")));
    }
    match version {
        Some(true) => {}
        Some(false) => return Err(invalid(id, "`jsonrpc` must be \"2.0\"")),
        None => {
            return Err(invalid(
                id,
                "a JSON-RPC 2.0 message has `\"jsonrpc\": \"2.0\"`",
            ))
        }
    }
    if !id_ok {
        return Err(invalid(None, "an id is a string, a number or null"));
    }
    if let Some(method) = method {
        let Some(method) = method else {
            return Err(invalid(id, "`method` is a string"));
        };
        if result.is_some() || error.is_some() {
            return Err(invalid(id, "a request has no `result` or `error`"));
        }
        let params = match params {
            None => None,
            Some((raw, true)) => Some(raw),
            Some((_, false)) => return Err(invalid(id, "`params` is an object or an array")),
        };
        return Ok(match id {
            Some(id) => Message::Request { id, method, params },
            None => Message::Notification { method, params },
        });
    }
    let Some(id) = id else {
        return Err(invalid(
            None,
            "a message with no `method` is a response, and a response has an `id`",
        ));
    };
    match (result, error) {
        (Some(result), None) => Ok(Message::Response { id, result }),
        (None, Some(error)) => {
            let (code, message, data) =
                parse_error_object(error).map_err(|r| invalid(Some(id), &r))?;
            Ok(Message::Error {
                id,
                code,
                message,
                data,
            })
        }
        _ => Err(invalid(
            Some(id),
            "a response holds exactly one of `result` and `error`",
        )),
    }
}

/// The JSON kind of a value's first event.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Object,
    Array,
    String,
    Number,
    Null,
    Other,
}

impl Kind {
    fn of(first: &Event<'_>) -> Kind {
        match first {
            Event::BeginObject => Kind::Object,
            Event::BeginArray => Kind::Array,
            Event::String(_) => Kind::String,
            Event::Number(_) => Kind::Number,
            Event::Null => Kind::Null,
            _ => Kind::Other,
        }
    }
}

fn invalid(id: Option<&[u8]>, reason: &str) -> ParseError {
    ParseError {
        code: INVALID_REQUEST,
        reason: reason.to_owned(),
        id: id.map(<[u8]>::to_vec),
    }
}

/// `{"code": integer, "message": string, "data"?: any}`.
#[allow(clippy::type_complexity)]
fn parse_error_object(raw: &[u8]) -> Result<(i64, Cow<'_, str>, Option<&[u8]>), String> {
    let shape = "`error` is {\"code\": integer, \"message\": string, \"data\"?: any}";
    let mut t = Tokenizer::new(raw);
    if !matches!(t.next_event(), Ok(Some(Event::BeginObject))) {
        return Err(shape.into());
    }
    let mut code = None;
    let mut message = None;
    let mut data = None;
    loop {
        let key = match t.next_event() {
            Ok(Some(Event::Key(k))) => k,
            Ok(Some(Event::EndObject)) => break,
            _ => return Err(shape.into()),
        };
        let first = t
            .next_event()
            .ok()
            .flatten()
            .ok_or_else(|| shape.to_owned())?;
        let start = t.event_offset();
        match (key.as_ref(), &first) {
            ("code", Event::Number(n)) => {
                code = Some(n.raw().parse::<i64>().map_err(|_| shape.to_owned())?)
            }
            ("message", Event::String(s)) => message = Some(s.clone()),
            ("code" | "message", _) => return Err(shape.into()),
            _ => {}
        }
        let end = t.skip_value(&first).map_err(|_| shape.to_owned())?;
        if key == "data" {
            data = Some(&raw[start..end]);
        }
    }
    match (code, message) {
        (Some(code), Some(message)) => Ok((code, message, data)),
        _ => Err(shape.into()),
    }
}

/// Appends `{"jsonrpc":"2.0","id":ID,"method":METHOD[,"params":PARAMS]}`.
pub fn encode_request(id: &[u8], method: &str, params: Option<&[u8]>, out: &mut Vec<u8>) {
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    out.extend_from_slice(id);
    out.extend_from_slice(b",\"method\":");
    crate::json::write_string(method, out);
    if let Some(params) = params {
        out.extend_from_slice(b",\"params\":");
        out.extend_from_slice(params);
    }
    out.push(b'}');
}

/// Appends `{"jsonrpc":"2.0","method":METHOD[,"params":PARAMS]}`.
pub fn encode_notification(method: &str, params: Option<&[u8]>, out: &mut Vec<u8>) {
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"method\":");
    crate::json::write_string(method, out);
    if let Some(params) = params {
        out.extend_from_slice(b",\"params\":");
        out.extend_from_slice(params);
    }
    out.push(b'}');
}

/// Appends `{"jsonrpc":"2.0","id":ID,"result":RESULT}`.
pub fn encode_response(id: &[u8], result: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    out.extend_from_slice(id);
    out.extend_from_slice(b",\"result\":");
    out.extend_from_slice(result);
    out.push(b'}');
}

/// Appends `{"jsonrpc":"2.0","id":ID,"error":{"code":CODE,"message":MESSAGE}}`.
pub fn encode_error(id: &[u8], code: i64, message: &str, out: &mut Vec<u8>) {
    use std::io::Write as _;
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    out.extend_from_slice(id);
    // Writing to a Vec cannot fail.
    let _ = write!(out, ",\"error\":{{\"code\":{code},\"message\":");
    crate::json::write_string(message, out);
    out.extend_from_slice(b"}}");
}

/// Appends `{"jsonrpc":"2.0","id":ID,"error":{"code":CODE,"message":MESSAGE,"data":DATA}}`,
/// `data` a JSON text already written.
pub fn encode_error_data(id: &[u8], code: i64, message: &str, data: &[u8], out: &mut Vec<u8>) {
    use std::io::Write as _;
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    out.extend_from_slice(id);
    // Writing to a Vec cannot fail.
    let _ = write!(out, ",\"error\":{{\"code\":{code},\"message\":");
    crate::json::write_string(message, out);
    out.extend_from_slice(b",\"data\":");
    out.extend_from_slice(data);
    out.extend_from_slice(b"}}");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(line: &str) -> Message<'_> {
        parse(line.as_bytes()).unwrap_or_else(|e| panic!("{line}: {e}"))
    }

    fn err(line: &str) -> ParseError {
        parse(line.as_bytes()).expect_err(line)
    }

    #[test]
    fn the_four_kinds_of_message() {
        assert_eq!(
            ok(r#"{"jsonrpc":"2.0","id":1,"method":"describe"}"#),
            Message::Request {
                id: b"1",
                method: "describe".into(),
                params: None
            }
        );
        assert_eq!(
            ok(r#"{"method":"call","params":{"a":[1]},"jsonrpc":"2.0"}"#),
            Message::Notification {
                method: "call".into(),
                params: Some(br#"{"a":[1]}"#)
            }
        );
        assert_eq!(
            ok(r#"{"jsonrpc":"2.0","id":"x\u0041","result":{"k": 2}}"#),
            Message::Response {
                id: br#""x\u0041""#,
                result: br#"{"k": 2}"#
            }
        );
        assert_eq!(
            ok(r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"bad","data":[1]}}"#),
            Message::Error {
                id: b"null",
                code: -32700,
                message: "bad".into(),
                data: Some(b"[1]")
            }
        );
    }

    #[test]
    fn encoded_messages_parse_back() {
        let mut out = Vec::new();
        encode_request(b"7", "tools/call", Some(br#"{"name":"x"}"#), &mut out);
        assert_eq!(
            out,
            br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x"}}"#
        );
        assert!(matches!(parse(&out), Ok(Message::Request { .. })));
        out.clear();
        encode_notification("reply", None, &mut out);
        assert_eq!(out, br#"{"jsonrpc":"2.0","method":"reply"}"#);
        out.clear();
        encode_response(b"\"a\"", b"{}", &mut out);
        assert_eq!(
            parse(&out),
            Ok(Message::Response {
                id: b"\"a\"",
                result: b"{}"
            })
        );
        out.clear();
        encode_error(b"null", METHOD_NOT_FOUND, "no \"x\"", &mut out);
        assert_eq!(
            out,
            br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32601,"message":"no \"x\""}}"#
        );
        assert!(matches!(
            parse(&out),
            Ok(Message::Error { code: -32601, .. })
        ));
        out.clear();
        encode_error_data(b"0", -32001, "handler_error", br#"{"code":"x"}"#, &mut out);
        assert_eq!(
            parse(&out),
            Ok(Message::Error {
                id: b"0",
                code: -32001,
                message: "handler_error".into(),
                data: Some(br#"{"code":"x"}"#)
            })
        );
    }

    #[test]
    fn what_is_not_a_message_is_refused_with_its_code() {
        assert_eq!(err("{").code, PARSE_ERROR);
        assert_eq!(err("not json").code, PARSE_ERROR);
        assert_eq!(err("[1]").code, INVALID_REQUEST);
        let e = err(r#"{"id":1,"method":"m"}"#);
        assert_eq!(
            e.reason,
            "a JSON-RPC 2.0 message has `\"jsonrpc\": \"2.0\"`"
        );
        assert_eq!(e.id.as_deref(), Some(&b"1"[..]));
        assert_eq!(
            err(r#"{"jsonrpc":"1.0","method":"m"}"#).reason,
            "`jsonrpc` must be \"2.0\""
        );
        assert_eq!(
            err(r#"{"jsonrpc":"2.0","method":"m","method":"n"}"#).reason,
            "the member `method` is given twice"
        );
        assert_eq!(
            err(r#"{"jsonrpc":"2.0","id":[1],"method":"m"}"#).reason,
            "an id is a string, a number or null"
        );
        assert_eq!(
            err(r#"{"jsonrpc":"2.0","method":"m","params":3}"#).reason,
            "`params` is an object or an array"
        );
        assert_eq!(
            err(r#"{"jsonrpc":"2.0","id":1}"#).reason,
            "a response holds exactly one of `result` and `error`"
        );
        assert_eq!(
            err(r#"{"jsonrpc":"2.0","result":1}"#).reason,
            "a message with no `method` is a response, and a response has an `id`"
        );
        assert_eq!(
            err(r#"{"jsonrpc":"2.0","id":1,"error":{"code":"x","message":"m"}}"#).reason,
            "`error` is {\"code\": integer, \"message\": string, \"data\"?: any}"
        );
        assert_eq!(err(r#"{"jsonrpc":"2.0","method":"m"} x"#).code, PARSE_ERROR);
    }

    #[test]
    fn unknown_members_are_ignored() {
        assert!(matches!(
            ok(r#"{"jsonrpc":"2.0","method":"m","_meta":{"x":1}}"#),
            Message::Notification { .. }
        ));
    }
}
