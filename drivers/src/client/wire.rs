//! The wire the operator's verbs speak: Unix JSON lines and HTTP/1.1, one
//! request each, with the exchange's raw bytes kept so `--json` and `--raw`
//! print what the exposure wrote.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::Duration;

use limen_core::wire::http1::client::{
    write_request, Limits, Response, ResponseError, ResponseReader,
};

/// An endpoint the verbs drive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Endpoint {
    /// `unix:<path>`: a `unix::Rpc` socket.
    Unix(PathBuf),
    /// `http://host:port`: an `http::Rpc` listener.
    Http(String),
}

/// The message naming the two forms, for every refused endpoint.
pub const FORMS: &str = "name unix:<path> or http://host:port";

impl Endpoint {
    /// Reads an endpoint. `bare_path` admits a bare path as `unix:<path>`
    /// (the short forms `hale describe` and `hale call`).
    pub fn parse(text: &str, bare_path: bool) -> Result<Endpoint, String> {
        if let Some(path) = text.strip_prefix("unix:") {
            if path.is_empty() {
                return Err(format!("`{text}` names no socket path: {FORMS}"));
            }
            return Ok(Endpoint::Unix(PathBuf::from(path)));
        }
        if let Some(rest) = text.strip_prefix("http://") {
            let authority = rest.strip_suffix('/').unwrap_or(rest);
            let valid = authority
                .rsplit_once(':')
                .is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok());
            if !valid || authority.contains('/') {
                return Err(format!("`{text}` is not http://host:port: {FORMS}"));
            }
            return Ok(Endpoint::Http(authority.to_owned()));
        }
        if let Some((scheme, _)) = text.split_once("://") {
            return Err(format!(
                "`{scheme}://` endpoints have clients of their own protocol; these verbs drive unix:<path> and http://host:port"
            ));
        }
        if bare_path && !text.is_empty() && !text.starts_with('-') {
            return Ok(Endpoint::Unix(PathBuf::from(text)));
        }
        Err(format!("`{text}` is not an endpoint: {FORMS}"))
    }
}

/// How long the verbs wait for an exposure to answer.
pub const TIMEOUT: Duration = Duration::from_secs(30);

/// One Unix line exchange: writes `line`, reads the reply line.
pub fn unix_exchange(path: &PathBuf, line: &[u8]) -> io::Result<Vec<u8>> {
    let stream = UnixStream::connect(path)?;
    stream.set_read_timeout(Some(TIMEOUT))?;
    let mut w = stream.try_clone()?;
    w.write_all(line)?;
    w.write_all(b"\n")?;
    let mut reader = BufReader::new(stream);
    let mut reply = Vec::new();
    reader.read_until(b'\n', &mut reply)?;
    if reply.last() != Some(&b'\n') {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "the connection ended with no reply",
        ));
    }
    reply.pop();
    Ok(reply)
}

/// An HTTP response: status and body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpReply {
    /// The status code.
    pub status: u16,
    /// The body as sent.
    pub body: Vec<u8>,
}

/// One HTTP/1.1 request with `Connection: close` (`Host` the authority, a
/// `Content-Length` on a `POST`), its response read by
/// [`limen_core::wire::http1::client`].
pub fn http_exchange(
    authority: &str,
    method: &str,
    path: &str,
    headers: &[(&str, String)],
    body: &[u8],
) -> io::Result<HttpReply> {
    let mut list = vec![("Host", authority)];
    list.extend(headers.iter().map(|(name, value)| (*name, value.as_str())));
    let request = write_request(method, path, &list, (method == "POST").then_some(body))
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    let response = exchange(authority, method, &request, TIMEOUT)?;
    Ok(HttpReply {
        status: response.status,
        body: response.body,
    })
}

/// Sends `request` (a `method` request's bytes, [`write_request`]'s) to
/// `authority` and reads its response, each read waiting at most
/// `timeout`. The blocking socket under the CLI's verbs and the live
/// checks.
pub fn exchange(
    authority: &str,
    method: &str,
    request: &[u8],
    timeout: Duration,
) -> io::Result<Response> {
    let mut stream = TcpStream::connect(authority)?;
    stream.set_read_timeout(Some(timeout))?;
    stream.write_all(request)?;
    read_response(&mut stream, method)
}

/// Reads the response to a `method` request from `stream`: until it is
/// whole, or the stream ends (a body without a length runs to the end).
pub fn read_response(stream: &mut impl Read, method: &str) -> io::Result<Response> {
    let bad = |e: ResponseError| io::Error::new(io::ErrorKind::InvalidData, e.to_string());
    let mut reader = ResponseReader::new(method, Limits::default());
    let mut buf = vec![0u8; 16_384];
    loop {
        if let Some(response) = reader.poll_response() {
            return Ok(response);
        }
        match stream.read(&mut buf) {
            Ok(0) => reader.handle_eof().map_err(bad)?,
            Ok(n) => reader.handle_data(&buf[..n]).map_err(bad)?,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// A call as the Unix wire writes it (`{"call", "payload", "id",
/// "digest"}`, § Outcomes), or with `frame` a hub's `call` frame (the same
/// object naming its `"type"` first, § Rpcs on a hub): `payload` is placed
/// as given (JSON text), `digest` only when there is one. `hale call`,
/// `hale mcp --app` and `hale admin` write their calls with it.
pub fn call_line(
    frame: bool,
    member: &str,
    payload: &[u8],
    id: &str,
    digest: Option<&str>,
) -> Vec<u8> {
    use serde_json::Value;
    let head = if frame { "{\"type\":\"call\"," } else { "{" };
    let mut line = format!(
        "{head}\"call\":{},\"payload\":",
        Value::String(member.to_owned())
    )
    .into_bytes();
    line.extend_from_slice(payload);
    line.extend_from_slice(format!(",\"id\":{}", Value::String(id.to_owned())).as_bytes());
    if let Some(d) = digest {
        line.extend_from_slice(format!(",\"digest\":{}", Value::String(d.to_owned())).as_bytes());
    }
    line.push(b'}');
    line
}

/// Which answered outcome of § Outcomes a reply is (the fifth, the
/// transport failure, is a reply that is none of these).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answered {
    /// The member's response.
    Result,
    /// The handler's error.
    HandlerError,
    /// A refusal, of any kind but the server's.
    Refusal,
    /// The server error (`{"kind": "server"}`).
    ServerError,
}

/// An HTTP reply's outcome by § Outcomes' HTTP column: 200, 422, 500 with a
/// refusal object, and the refusals' statuses with one; `None` for any
/// other answer, which is no outcome of the wire. `hale call`, `hale mcp
/// --app` and `hale admin` read their HTTP replies with it.
pub fn http_outcome(status: u16, body: &[u8]) -> Option<Answered> {
    let refusal = raw_member(body, "refusal").is_some();
    match status {
        200 => Some(Answered::Result),
        422 => Some(Answered::HandlerError),
        500 if refusal => Some(Answered::ServerError),
        400 | 401 | 403 | 409 | 429 | 503 if refusal => Some(Answered::Refusal),
        _ => None,
    }
}

/// A Unix reply line's outcome (or a hub's `reply` frame's, which extends
/// it), by its `ok`, `refusal` and `error`; `None` when it is none.
pub fn line_outcome(reply: &serde_json::Value) -> Option<Answered> {
    use serde_json::Value;
    match (reply.get("ok"), reply.get("refusal")) {
        (Some(Value::Bool(true)), _) => Some(Answered::Result),
        (Some(Value::Bool(false)), Some(r)) if r["kind"] == "server" => Some(Answered::ServerError),
        (Some(Value::Bool(false)), Some(_)) => Some(Answered::Refusal),
        (Some(Value::Bool(false)), None) if reply.get("error").is_some() => {
            Some(Answered::HandlerError)
        }
        _ => None,
    }
}

/// The raw text of the value under `key` in a JSON object (the reply
/// line's `value`), as the exposure wrote it.
pub fn raw_member<'a>(object: &'a [u8], key: &str) -> Option<&'a [u8]> {
    use limen_core::json::{Event, Tokenizer};
    let mut t = Tokenizer::new(object);
    if t.next_event().ok()?? != Event::BeginObject {
        return None;
    }
    loop {
        let k = match t.next_event().ok()?? {
            Event::Key(k) => k,
            _ => return None,
        };
        let first = t.next_event().ok()??;
        let start = t.event_offset();
        let end = t.skip_value(&first).ok()?;
        if k == key {
            return Some(&object[start..end]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_are_the_two_forms() {
        assert_eq!(
            Endpoint::parse("unix:/tmp/a.sock", false),
            Ok(Endpoint::Unix("/tmp/a.sock".into()))
        );
        assert_eq!(
            Endpoint::parse("http://127.0.0.1:8080/", false),
            Ok(Endpoint::Http("127.0.0.1:8080".into()))
        );
        assert_eq!(
            Endpoint::parse("/tmp/a.sock", true),
            Ok(Endpoint::Unix("/tmp/a.sock".into()))
        );
        for refused in [
            "/tmp/a.sock",
            "grpc://h:1",
            "mcp://h:1",
            "ws://h:1",
            "https://h:1",
            "http://h",
            "http://h:1/x",
            "h:1",
        ] {
            let e = Endpoint::parse(refused, false).unwrap_err();
            assert!(
                e.contains("unix:<path> and http://host:port") || e.contains(FORMS),
                "{refused}: {e}"
            );
        }
    }

    #[test]
    fn call_lines_name_the_digest_when_given() {
        assert_eq!(
            call_line(false, "A::b", b"{}", "i", Some("fnv1a64:00")),
            br#"{"call":"A::b","payload":{},"id":"i","digest":"fnv1a64:00"}"#
        );
        assert_eq!(
            call_line(true, "A::b", b"1", "i", None),
            br#"{"type":"call","call":"A::b","payload":1,"id":"i"}"#
        );
    }

    #[test]
    fn replies_are_read_as_their_outcome() {
        use serde_json::json;
        assert_eq!(http_outcome(200, b"{}"), Some(Answered::Result));
        assert_eq!(http_outcome(422, b"{}"), Some(Answered::HandlerError));
        let refusal = br#"{"refusal":{"kind":"full","reason":"r"}}"#;
        assert_eq!(http_outcome(429, refusal), Some(Answered::Refusal));
        assert_eq!(
            http_outcome(500, br#"{"refusal":{"kind":"server"}}"#),
            Some(Answered::ServerError)
        );
        assert_eq!(http_outcome(500, b"oops"), None);
        assert_eq!(http_outcome(403, b"<html>"), None);
        assert_eq!(http_outcome(302, refusal), None);
        let line = |v: serde_json::Value| line_outcome(&v);
        assert_eq!(
            line(json!({"ok": true, "value": 1})),
            Some(Answered::Result)
        );
        assert_eq!(
            line(json!({"ok": false, "error": {}})),
            Some(Answered::HandlerError)
        );
        assert_eq!(
            line(json!({"ok": false, "refusal": {"kind": "full"}})),
            Some(Answered::Refusal)
        );
        assert_eq!(
            line(json!({"ok": false, "refusal": {"kind": "server"}})),
            Some(Answered::ServerError)
        );
        assert_eq!(line(json!({"ok": false})), None);
        assert_eq!(line(json!({"value": 1})), None);
    }

    #[test]
    fn raw_members_keep_the_bytes_as_written() {
        let line = br#"{"request_id":1,"id":"x","ok":true,"value":{"b":1, "a":[2]},"caller":{}}"#;
        assert_eq!(raw_member(line, "value"), Some(&br#"{"b":1, "a":[2]}"#[..]));
        assert_eq!(raw_member(line, "nope"), None);
    }

    #[test]
    fn responses_are_cut_at_their_length() {
        let parse = |raw: &[u8]| read_response(&mut &raw[..], "POST");
        let r = parse(b"HTTP/1.1 409 Conflict\r\nContent-Length: 2\r\n\r\n{}").unwrap();
        assert_eq!((r.status, r.body), (409, b"{}".to_vec()));
        assert!(parse(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n{}").is_err());
    }
}
