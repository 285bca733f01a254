//! A record's request as the bytes a client sends, and the bytes a server
//! answers as a record's reply: the one place replay and check agree on
//! what a record means on the wire.

use serde_json::{Map, Value};

use crate::record::Transport;

/// The Unix line of a record's request: its object as compact JSON, in the
/// order written, and a newline.
pub fn unix_line(request: &Value) -> Vec<u8> {
    let mut line = request.to_string().into_bytes();
    line.push(b'\n');
    line
}

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
/// `Connection: close` (one request to a connection).
pub fn http_request(request: &Value, host: Option<&str>) -> Result<Vec<u8>, String> {
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
    let mut out = format!("{method} {path} HTTP/1.1\r\n");
    let names_host = headers.keys().any(|k| k.eq_ignore_ascii_case("host"));
    if let (Some(host), false) = (host, names_host) {
        out.push_str(&format!("Host: {host}\r\n"));
    }
    for (name, value) in headers {
        if FRAMING.iter().any(|f| name.eq_ignore_ascii_case(f)) {
            continue;
        }
        let value = value.as_str().unwrap_or_default();
        if name.contains(['\r', '\n', ':']) || value.contains(['\r', '\n']) {
            return Err(format!(
                "$.headers.{name}: not a header a request can carry"
            ));
        }
        out.push_str(&format!("{name}: {value}\r\n"));
    }
    let body = body_bytes(o);
    if !body.is_empty() || method == "POST" {
        out.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    out.push_str("Connection: close\r\n\r\n");
    let mut bytes = out.into_bytes();
    bytes.extend_from_slice(&body);
    Ok(bytes)
}

/// A whole HTTP response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpResponse {
    /// The status.
    pub status: u16,
    /// The headers, in order.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

/// Reads an HTTP response from `raw`: `Ok(None)` while it is not whole
/// (its head, or the `Content-Length` bytes of its body), unless `eof`
/// says no more will come, when the body is what there is.
pub fn parse_http_response(raw: &[u8], eof: bool) -> Result<Option<HttpResponse>, String> {
    let mut list = [httparse::EMPTY_HEADER; 32];
    let mut response = httparse::Response::new(&mut list);
    let n = match response.parse(raw) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) if eof => {
            return Err("the connection ended inside the response's head".into())
        }
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(format!("not an HTTP response: {e}")),
    };
    let status = response.code.ok_or("no status")?;
    let headers: Vec<(String, String)> = response
        .headers
        .iter()
        .map(|h| {
            (
                h.name.to_owned(),
                String::from_utf8_lossy(h.value).into_owned(),
            )
        })
        .collect();
    let length = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .map(|(_, v)| {
            v.trim()
                .parse::<usize>()
                .map_err(|_| "the Content-Length is not a number".to_owned())
        })
        .transpose()?;
    let rest = &raw[n..];
    let body = match length {
        Some(len) if rest.len() >= len => rest[..len].to_vec(),
        Some(_) if eof => return Err("the connection ended inside the body".into()),
        Some(_) => return Ok(None),
        None if eof => rest.to_vec(),
        None => return Ok(None),
    };
    Ok(Some(HttpResponse {
        status,
        headers,
        body,
    }))
}

/// Framing headers a reply's record leaves out.
const REPLY_FRAMING: [&str; 2] = ["content-length", "connection"];

/// An HTTP response as a record's reply: `status`, the headers but the
/// framing ones, and `body` (or `body_text` when the body is not JSON).
pub fn http_reply_value(response: &HttpResponse) -> Value {
    let mut reply = Map::new();
    reply.insert("status".into(), response.status.into());
    let mut headers = Map::new();
    for (k, v) in &response.headers {
        if REPLY_FRAMING.iter().any(|f| k.eq_ignore_ascii_case(f)) {
            continue;
        }
        headers.insert(k.clone(), v.clone().into());
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

/// The first line of `raw` (without its newline), once it is whole.
pub fn first_line(raw: &[u8]) -> Option<&[u8]> {
    let end = raw.iter().position(|&b| b == b'\n')?;
    Some(&raw[..end])
}

/// A Unix reply line as a record's reply.
pub fn unix_reply_value(line: &[u8]) -> Result<Value, String> {
    serde_json::from_slice(line).map_err(|_| {
        format!(
            "the reply line is not JSON: {}",
            String::from_utf8_lossy(line)
        )
    })
}

/// The outcome (and a refusal's kind) a reply encodes, by § Outcomes'
/// columns; `None` for a transport this runner has no column for, or a
/// reply that encodes none.
pub fn outcome_of(transport: &Transport, reply: &Value) -> Option<(String, Option<String>)> {
    let refusal_kind = |r: Option<&Value>| {
        r.and_then(|r| r.get("kind"))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let named = |kind: Option<String>| match kind.as_deref() {
        Some("server") => ("server_error".to_owned(), None),
        Some(k) => ("refusal".to_owned(), Some(k.to_owned())),
        None => ("refusal".to_owned(), None),
    };
    match transport {
        Transport::Unix => match reply.get("ok")? {
            Value::Bool(true) => Some(("result".into(), None)),
            Value::Bool(false) if reply.get("error").is_some() => {
                Some(("handler_error".into(), None))
            }
            Value::Bool(false) => Some(named(refusal_kind(reply.get("refusal")))),
            _ => None,
        },
        Transport::Http => {
            let status = reply.get("status")?.as_u64()?;
            let refusal = reply.get("body").and_then(|b| b.get("refusal"));
            match status {
                200 => Some(("result".into(), None)),
                422 => Some(("handler_error".into(), None)),
                _ => Some(named(refusal_kind(refusal))),
            }
        }
        Transport::Mcp => crate::mcp::outcome_of(reply),
        Transport::Other(_) => None,
    }
}

/// The member a call names: a Unix request's `call`, an HTTP request's
/// `/call/<member>` (with `%3A%3A` read as `::`). An MCP request names a
/// tool, which only the exposure's rows turn into a member
/// ([`crate::mcp::member_of`]).
pub fn member_of(transport: &Transport, request: &Value) -> Option<String> {
    match transport {
        Transport::Unix => request.get("call")?.as_str().map(str::to_owned),
        Transport::Http => {
            let path = request.get("path")?.as_str()?;
            let path = path.split_once('?').map_or(path, |(p, _)| p);
            limen_core::wire::hale_http::percent_decode(path.strip_prefix("/call/")?)
        }
        Transport::Mcp | Transport::Other(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_http_request_is_built_from_its_record() {
        let r = json!({"method": "POST", "path": "/call/Orders::place",
            "headers": {"Authorization": "Bearer t-alice", "Content-Length": "99"},
            "body": {"qty": 10}});
        let bytes = http_request(&r, Some("h:1")).unwrap();
        assert_eq!(
            String::from_utf8(bytes).unwrap(),
            "POST /call/Orders::place HTTP/1.1\r\nHost: h:1\r\nAuthorization: Bearer t-alice\r\nContent-Length: 10\r\nConnection: close\r\n\r\n{\"qty\":10}"
        );
        let bad = json!({"method": "POST", "path": "/", "headers": {"X": "a\r\nB: c"}});
        assert!(http_request(&bad, None).is_err());
    }

    #[test]
    fn a_response_is_whole_at_its_length() {
        let raw = b"HTTP/1.1 409 Conflict\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";
        assert_eq!(parse_http_response(&raw[..raw.len() - 1], false), Ok(None));
        let r = parse_http_response(raw, false).unwrap().unwrap();
        assert_eq!(
            http_reply_value(&r),
            json!({"status": 409, "headers": {"Content-Type": "application/json"}, "body": {}})
        );
        assert!(parse_http_response(&raw[..raw.len() - 1], true).is_err());
    }

    #[test]
    fn outcomes_follow_the_columns() {
        let u = Transport::Unix;
        assert_eq!(
            outcome_of(&u, &json!({"ok": true})),
            Some(("result".into(), None))
        );
        assert_eq!(
            outcome_of(&u, &json!({"ok": false, "refusal": {"kind": "server"}})),
            Some(("server_error".into(), None))
        );
        assert_eq!(
            outcome_of(
                &Transport::Http,
                &json!({"status": 429, "body": {"refusal": {"kind": "full"}}})
            ),
            Some(("refusal".into(), Some("full".into())))
        );
        assert_eq!(
            member_of(
                &Transport::Http,
                &json!({"path": "/call/Orders%3A%3Aplace"})
            )
            .as_deref(),
            Some("Orders::place")
        );
    }
}
