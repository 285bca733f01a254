//! A replay server for the generated clients: it answers one witness wire
//! record (`../shared/hale-witness/wire/{http,unix}/*.json`) and holds the
//! request a client wrote to the record's request, as JSON values.
//!
//! The recorded wire is the contract (#29 § Tests): a client drives
//! [`Replay::serve`] with the record's member, bearer, payload and id, decodes
//! the reply the replay writes (the record's, [`Mode::Answer`]) or sees the
//! connection end with none ([`Mode::Lost`], the fifth outcome), and
//! [`Replay::finish`] names every way its request differed from the record's.
//!
//! std and serde_json only, a thread per replay, one request each: HTTP/1.1
//! as § The HTTP transport frames it (one request to a connection) and the
//! Unix socket's lines as § The Unix transport does.

use std::fmt;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use serde_json::{Map, Value};

/// How long [`Replay::finish`] waits for the request.
const FINISH_WAIT: Duration = Duration::from_secs(20);
/// How long the server waits on a read from a connection it accepted; under
/// [`FINISH_WAIT`] so a client that stalls mid-request is named as such.
const READ_WAIT: Duration = Duration::from_secs(15);
/// A request head longer than this is a difference, not a hang (the HTTP
/// transport's own limit).
const MAX_HEAD: usize = 65536;
/// The longest body or Unix line read (the HTTP transport's body limit).
const MAX_BODY: usize = 1 << 20;

/// The headers an HTTP client may add beyond the record's: the transport's
/// own (host, framing, connection) and what Node's `fetch` (undici) and
/// Python's `http.client` send by themselves, names in lowercase. Anything
/// else a client sends is a difference.
pub const TRANSPORT_HEADERS: &[&str] = &[
    "host",
    "content-length",
    "connection",
    "user-agent",
    "accept",
    "accept-encoding",
    "accept-language",
    "sec-fetch-mode",
];

/// The transport of a wire record, the folder it sits in under `wire/`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// HTTP/1.1, `POST /call/<member>` (§ The HTTP transport).
    Http,
    /// A Unix domain socket, one JSON object per line (§ The Unix transport).
    Unix,
}

impl Transport {
    /// The folder under `wire/` and the record's `transport` field.
    pub fn name(self) -> &'static str {
        match self {
            Transport::Http => "http",
            Transport::Unix => "unix",
        }
    }
}

impl fmt::Display for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One witness wire record, with what a client driver needs read out of it.
#[derive(Clone, Debug)]
pub struct WireRecord {
    /// The file's stem: `result`, `handler_error`, `refusal_full`, …
    pub name: String,
    /// The transport it was recorded over.
    pub transport: Transport,
    /// `result`, `handler_error`, `refusal` or `server_error`.
    pub outcome: String,
    /// The refusal's kind (`full`, `digest_mismatch`, …) for a refusal.
    pub kind: Option<String>,
    /// The member called, `Orders::place`: the HTTP path's `/call/<member>`
    /// or the Unix request's `call`.
    pub member: String,
    /// The bearer token of `Authorization: Bearer <token>` (HTTP); `None`
    /// over the Unix socket, whose principal is the peer's credentials.
    pub bearer: Option<String>,
    /// The request's payload: the HTTP body or the Unix `payload`.
    pub payload: Value,
    /// The Unix request's `id` when it is a string; `None` over HTTP.
    pub id: Option<String>,
    /// The digest the request carries (`Hale-Surface-Digest` or the Unix
    /// `digest`), or the served one ([`served`](Self::served)) when it
    /// carries none (the Unix `refusal_unauthenticated` record).
    pub digest: String,
    /// The digest of the exposure the record was made against, from its
    /// `exposure` (`Public@fnv1a64:…/public`): what a client generated from
    /// the witness program names, and what a `digest_mismatch` reply serves.
    pub served: String,
    /// The whole record.
    pub value: Value,
}

impl WireRecord {
    /// Reads a record from its JSON text; `name` is the file's stem.
    pub fn parse(name: &str, text: &str) -> Result<WireRecord, String> {
        let value: Value =
            serde_json::from_str(text).map_err(|e| format!("record {name}: not JSON: {e}"))?;
        let field = |ptr: &str| -> Result<&Value, String> {
            value
                .pointer(ptr)
                .ok_or_else(|| format!("record {name}: no {ptr}"))
        };
        let text_at = |ptr: &str| -> Result<String, String> {
            field(ptr)?
                .as_str()
                .map(str::to_owned)
                .ok_or_else(|| format!("record {name}: {ptr} is not a string"))
        };
        let transport = match text_at("/transport")?.as_str() {
            "http" => Transport::Http,
            "unix" => Transport::Unix,
            other => return Err(format!("record {name}: transport {other:?}")),
        };
        let exposure = text_at("/exposure")?;
        // `Surface@digest/exposure`.
        let served = exposure
            .split_once('@')
            .and_then(|(_, rest)| rest.split_once('/'))
            .map(|(digest, _)| digest.to_owned())
            .ok_or_else(|| {
                format!("record {name}: exposure {exposure:?} is not Surface@digest/name")
            })?;
        let kind = value.get("kind").and_then(Value::as_str).map(str::to_owned);
        let (member, bearer, payload, id, digest) = match transport {
            Transport::Http => {
                let path = text_at("/request/path")?;
                let member = path
                    .strip_prefix("/call/")
                    .ok_or_else(|| format!("record {name}: path {path:?} is not /call/<member>"))?
                    .to_owned();
                let headers = field("/request/headers")?;
                let header = |wanted: &str| {
                    headers.as_object().and_then(|h| {
                        h.iter()
                            .find(|(k, _)| k.eq_ignore_ascii_case(wanted))
                            .and_then(|(_, v)| v.as_str())
                    })
                };
                let bearer = header("authorization")
                    .and_then(|v| v.strip_prefix("Bearer "))
                    .map(str::to_owned);
                let digest = header("hale-surface-digest").map(str::to_owned);
                (
                    member,
                    bearer,
                    field("/request/body")?.clone(),
                    None,
                    digest,
                )
            }
            Transport::Unix => (
                text_at("/request/call")?,
                None,
                field("/request/payload")?.clone(),
                value
                    .pointer("/request/id")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                value
                    .pointer("/request/digest")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
            ),
        };
        Ok(WireRecord {
            name: name.to_owned(),
            transport,
            outcome: text_at("/outcome")?,
            kind,
            member,
            bearer,
            payload,
            id,
            digest: digest.unwrap_or_else(|| served.clone()),
            served,
            value,
        })
    }

    /// The record's request, as recorded.
    pub fn request(&self) -> &Value {
        &self.value["request"]
    }

    /// The record's reply, as recorded.
    pub fn reply(&self) -> &Value {
        &self.value["reply"]
    }
}

/// The witness's wire records of `transport`, sorted by name, or `None`
/// after a skip message when `../shared/hale-witness` is absent (a panic
/// under `LIMEN_REQUIRE_PEERS=1`, as CI runs). A record that does not read
/// panics naming it: the fixtures are the contract.
pub fn witness_records(transport: Transport) -> Option<Vec<WireRecord>> {
    let dir = crate::witness()?.join("wire").join(transport.name());
    let mut records: Vec<WireRecord> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "json"))
        .map(|path| {
            let stem = path
                .file_stem()
                .and_then(|s| s.to_str())
                .expect("a UTF-8 name");
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            WireRecord::parse(stem, &text).unwrap_or_else(|e| panic!("{e}"))
        })
        .collect();
    records.sort_by(|a, b| a.name.cmp(&b.name));
    Some(records)
}

/// What the replay does once it has read the request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Write the record's reply: over HTTP its status, its headers,
    /// `Content-Length` and `Connection: close` and its body as compact JSON;
    /// over the Unix socket the reply as one line. Then close.
    Answer,
    /// Close the connection with no reply: a connection that never answered,
    /// the fifth outcome (a transport failure, never a refusal).
    Lost,
}

/// What the server thread saw: the request it read, in the record's shape,
/// or why it read none.
type Seen = Result<Value, String>;

/// A replay of one wire record, serving on a thread of its own until it has
/// read one request (and answered it, under [`Mode::Answer`]).
///
/// The request is compared with the record's as JSON values. Over HTTP:
/// the method, the path (the `%3A%3A` the transport accepts for `::` read
/// as `::`), each header the record names (names case-insensitively, values
/// exactly) and the body as JSON; a header the client adds beyond the
/// record's is a difference unless it is one of [`TRANSPORT_HEADERS`]. Over
/// the Unix socket: the request line as a JSON value. The record's `peer`
/// (the kernel's credentials of the recorded client) is not compared: a
/// client cannot choose its uid, gid or pid.
pub struct Replay {
    endpoint: String,
    seen: mpsc::Receiver<Seen>,
    expected: Value,
    transport: Transport,
    ignored: Vec<String>,
    /// The temporary folder of a Unix socket, removed on drop.
    folder: Option<PathBuf>,
}

impl Replay {
    /// Serves `record` on 127.0.0.1 on a port of the system's choosing
    /// (HTTP) or on a socket in a fresh temporary folder (Unix).
    pub fn serve(record: &WireRecord, mode: Mode) -> io::Result<Replay> {
        let (tx, seen) = mpsc::channel();
        let reply = record.reply().clone();
        let (endpoint, folder) = match record.transport {
            Transport::Http => {
                let listener = TcpListener::bind("127.0.0.1:0")?;
                let endpoint = format!("http://{}", listener.local_addr()?);
                thread::Builder::new()
                    .name(format!("replay-{}", record.name))
                    .spawn(move || {
                        // A send fails only when the Replay was dropped unfinished.
                        let _ = tx.send(serve_http(listener, &reply, mode));
                    })?;
                (endpoint, None)
            }
            Transport::Unix => {
                let folder = fresh_folder()?;
                let path = folder.join("replay.sock");
                let listener = UnixListener::bind(&path)?;
                thread::Builder::new()
                    .name(format!("replay-{}", record.name))
                    .spawn(move || {
                        let _ = tx.send(serve_unix(listener, &reply, mode));
                    })?;
                (format!("unix:{}", path.display()), Some(folder))
            }
        };
        Ok(Replay {
            endpoint,
            seen,
            expected: record.request().clone(),
            transport: record.transport,
            ignored: Vec::new(),
            folder,
        })
    }

    /// Leaves `pointers` (JSON pointers into the record's request, such as
    /// `/headers/Hale-Surface-Digest`, `/body/qty` or `/digest`) out of the
    /// comparison, on both sides: the `malformed` and `digest_mismatch`
    /// records carry requests a typed client does not write by itself.
    /// Header names under `/headers/` match case-insensitively.
    pub fn ignoring(mut self, pointers: &[&str]) -> Replay {
        self.ignored
            .extend(pointers.iter().map(|p| (*p).to_owned()));
        self
    }

    /// Where a client reaches it: `http://127.0.0.1:PORT` or `unix:/path`.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// Waits (at most 20 s) for the request and holds it to the record's:
    /// `Err` names every difference, one a line, as `path: recorded R, sent
    /// S`, or says that no request came or how it was cut off.
    pub fn finish(self) -> Result<(), String> {
        let sent = match self.seen.recv_timeout(FINISH_WAIT) {
            Ok(seen) => seen?,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                return Err(format!(
                    "no request came to {} within {} s",
                    self.endpoint,
                    FINISH_WAIT.as_secs()
                ))
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err("the replay's thread ended without a word".to_owned())
            }
        };
        let mut expected = self.expected.clone();
        let mut sent = sent;
        for pointer in &self.ignored {
            remove_pointer(&mut expected, pointer);
            remove_pointer(&mut sent, pointer);
        }
        let mut differences = Vec::new();
        diff("", &expected, &sent, &mut differences);
        if differences.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "the {} request differs from the record's:\n{}",
                self.transport,
                differences.join("\n")
            ))
        }
    }
}

impl Drop for Replay {
    fn drop(&mut self) {
        if let Some(folder) = &self.folder {
            let _ = std::fs::remove_dir_all(folder);
        }
    }
}

/// An empty folder of its own under the system's temporary folder: the
/// pid keeps test runs apart, the counter the replays of one run.
fn fresh_folder() -> io::Result<PathBuf> {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "limen-replay-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// Accepts one connection, reads one HTTP/1.1 request and (under
/// [`Mode::Answer`]) writes the recorded reply.
fn serve_http(listener: TcpListener, reply: &Value, mode: Mode) -> Seen {
    let (mut stream, _) = listener.accept().map_err(|e| format!("accept: {e}"))?;
    drop(listener);
    stream
        .set_read_timeout(Some(READ_WAIT))
        .map_err(|e| format!("set_read_timeout: {e}"))?;
    let sent = read_http_request(&mut stream)?;
    match mode {
        Mode::Answer => {
            stream
                .write_all(&http_reply(reply))
                .map_err(|e| format!("writing the reply: {e}"))?;
            let _ = stream.shutdown(Shutdown::Write);
        }
        Mode::Lost => {
            let _ = stream.shutdown(Shutdown::Both);
        }
    }
    Ok(sent)
}

/// Reads a request head and its `Content-Length` body into the record's
/// request shape: `{method, path, headers, body}`. Header names keep the
/// client's spelling here; [`diff`] matches them to the record's.
fn read_http_request(stream: &mut TcpStream) -> Seen {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        if buf.len() > MAX_HEAD {
            return Err(format!("the request head runs past {MAX_HEAD} bytes"));
        }
        let n = stream
            .read(&mut chunk)
            .map_err(|e| format!("the request was cut off in its head: {e}"))?;
        if n == 0 {
            return Err(format!(
                "the connection ended before the request head did ({} bytes read)",
                buf.len()
            ));
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head =
        std::str::from_utf8(&buf[..head_end]).map_err(|_| "the request head is not UTF-8")?;
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or_default();
    let mut parts = request_line.split(' ');
    let (method, target, version) = match (parts.next(), parts.next(), parts.next(), parts.next()) {
        (Some(m), Some(t), Some(v), None) => (m, t, v),
        _ => {
            return Err(format!(
                "the request line {request_line:?} is not METHOD TARGET VERSION"
            ))
        }
    };
    let mut headers = Map::new();
    let mut content_length = None;
    for line in lines {
        let (name, value) = line
            .split_once(':')
            .ok_or_else(|| format!("the header line {line:?} has no colon"))?;
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            content_length = Some(
                value
                    .parse::<usize>()
                    .map_err(|_| format!("Content-Length {value:?} is not a length"))?,
            );
        }
        // A name sent twice is one header whose values are joined, as
        // HTTP reads a repeated field.
        match headers.get_mut(name) {
            Some(Value::String(prior)) => {
                prior.push_str(", ");
                prior.push_str(value);
            }
            _ => {
                headers.insert(name.to_owned(), Value::String(value.to_owned()));
            }
        }
    }
    let mut body = buf[head_end + 4..].to_vec();
    let length = content_length.unwrap_or(0);
    if length > MAX_BODY {
        return Err(format!("Content-Length {length} is over {MAX_BODY}"));
    }
    while body.len() < length {
        let n = stream
            .read(&mut chunk)
            .map_err(|e| format!("the request was cut off in its body: {e}"))?;
        if n == 0 {
            return Err(format!(
                "the connection ended {} bytes into a body of {length}",
                body.len()
            ));
        }
        body.extend_from_slice(&chunk[..n]);
    }
    // A body that is not JSON is held as its text, which no record's body
    // equals, so the difference names what was sent.
    let body = serde_json::from_slice(&body)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&body).into_owned()));
    let mut request = Map::new();
    request.insert("method".into(), method.into());
    // The transport reads `%3A%3A` as `::` (§ The HTTP transport).
    request.insert(
        "path".into(),
        target.replace("%3A", ":").replace("%3a", ":").into(),
    );
    if version != "HTTP/1.1" {
        request.insert("version".into(), version.into());
    }
    request.insert("headers".into(), Value::Object(headers));
    request.insert("body".into(), body);
    Ok(Value::Object(request))
}

/// The recorded HTTP reply as bytes: the status line, the record's headers,
/// `Content-Length`, `Connection: close` (one request to a connection, as
/// the transport serves) and the body as compact JSON.
fn http_reply(reply: &Value) -> Vec<u8> {
    let status = reply["status"].as_u64().unwrap_or(500);
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        409 => "Conflict",
        422 => "Unprocessable Content",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Status",
    };
    let body = serde_json::to_vec(&reply["body"]).expect("a Value serializes");
    let mut out = format!("HTTP/1.1 {status} {reason}\r\n");
    if let Some(headers) = reply["headers"].as_object() {
        for (name, value) in headers {
            let value = value
                .as_str()
                .map_or_else(|| value.to_string(), str::to_owned);
            out.push_str(&format!("{name}: {value}\r\n"));
        }
    }
    out.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    ));
    let mut bytes = out.into_bytes();
    bytes.extend_from_slice(&body);
    bytes
}

/// Accepts one connection, reads one line and (under [`Mode::Answer`])
/// writes the recorded reply as one line.
fn serve_unix(listener: UnixListener, reply: &Value, mode: Mode) -> Seen {
    let (stream, _) = listener.accept().map_err(|e| format!("accept: {e}"))?;
    drop(listener);
    stream
        .set_read_timeout(Some(READ_WAIT))
        .map_err(|e| format!("set_read_timeout: {e}"))?;
    let mut line = Vec::new();
    BufReader::new((&stream).take(MAX_BODY as u64))
        .read_until(b'\n', &mut line)
        .map_err(|e| format!("the request line was cut off: {e}"))?;
    if line.last() != Some(&b'\n') {
        return Err(format!(
            "the connection ended before the request line did ({} bytes read)",
            line.len()
        ));
    }
    let sent = serde_json::from_slice(&line)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&line).into_owned()));
    let mut writer: &UnixStream = &stream;
    match mode {
        Mode::Answer => {
            let mut out = serde_json::to_vec(reply).expect("a Value serializes");
            out.push(b'\n');
            writer
                .write_all(&out)
                .map_err(|e| format!("writing the reply: {e}"))?;
            let _ = stream.shutdown(Shutdown::Write);
        }
        Mode::Lost => {
            let _ = stream.shutdown(Shutdown::Both);
        }
    }
    Ok(sent)
}

/// Removes what `pointer` names from `value`, if it is there; under
/// `/headers/` the last name matches case-insensitively.
fn remove_pointer(value: &mut Value, pointer: &str) {
    let Some((parent, last)) = pointer.rsplit_once('/') else {
        return;
    };
    let last = last.replace("~1", "/").replace("~0", "~");
    match value.pointer_mut(parent) {
        Some(Value::Object(map)) => {
            let key = if parent == "/headers" {
                map.keys().find(|k| k.eq_ignore_ascii_case(&last)).cloned()
            } else {
                Some(last)
            };
            if let Some(key) = key {
                map.shift_remove(&key);
            }
        }
        Some(Value::Array(items)) => {
            if let Ok(i) = last.parse::<usize>() {
                if i < items.len() {
                    items.remove(i);
                }
            }
        }
        _ => {}
    }
}

/// A JSON pointer's token for `key`.
fn token(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// Appends to `out` every place `sent` differs from `recorded`, by JSON
/// pointer. Numbers are equal when they are the same number (`10` and
/// `10.0`); at `/headers` names match case-insensitively and an extra one
/// is allowed when it is a [`TRANSPORT_HEADERS`] one.
fn diff(path: &str, recorded: &Value, sent: &Value, out: &mut Vec<String>) {
    match (recorded, sent) {
        (Value::Object(r), Value::Object(s)) => {
            let headers = path == "/headers";
            let find = |key: &str| -> Option<(&String, &Value)> {
                if headers {
                    s.iter().find(|(k, _)| k.eq_ignore_ascii_case(key))
                } else {
                    s.get_key_value(key)
                }
            };
            for (key, r_value) in r {
                let here = format!("{path}/{}", token(key));
                match find(key) {
                    Some((_, s_value)) => diff(&here, r_value, s_value, out),
                    None => out.push(format!("{here}: recorded {r_value}, sent nothing")),
                }
            }
            for (key, s_value) in s {
                let known = if headers {
                    r.keys().any(|k| k.eq_ignore_ascii_case(key))
                        || TRANSPORT_HEADERS.contains(&key.to_ascii_lowercase().as_str())
                } else {
                    r.contains_key(key)
                };
                if !known {
                    let here = format!("{path}/{}", token(key));
                    out.push(format!("{here}: recorded nothing, sent {s_value}"));
                }
            }
        }
        (Value::Array(r), Value::Array(s)) => {
            for (i, (r_item, s_item)) in r.iter().zip(s).enumerate() {
                diff(&format!("{path}/{i}"), r_item, s_item, out);
            }
            if r.len() != s.len() {
                out.push(format!(
                    "{path}: recorded {} items, sent {}",
                    r.len(),
                    s.len()
                ));
            }
        }
        (Value::Number(r), Value::Number(s)) => {
            let same = match (r.as_i64(), s.as_i64(), r.as_u64(), s.as_u64()) {
                (Some(a), Some(b), _, _) => a == b,
                (_, _, Some(a), Some(b)) => a == b,
                _ => r.as_f64() == s.as_f64(),
            };
            if !same {
                out.push(format!("{}: recorded {recorded}, sent {sent}", show(path)));
            }
        }
        _ => {
            if recorded != sent {
                out.push(format!("{}: recorded {recorded}, sent {sent}", show(path)));
            }
        }
    }
}

/// The root's pointer, `""`, spelled so a reader sees it.
fn show(path: &str) -> &str {
    if path.is_empty() {
        "(the request)"
    } else {
        path
    }
}

#[cfg(test)]
mod tests;
