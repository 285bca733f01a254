//! `hale mcp --app ENDPOINT [--bearer T]`: an MCP server on stdio (one
//! JSON-RPC message per line) bridging a host to a served exposure
//! (§ The MCP transport, What hale mcp is; § The clients).
//!
//! Over `unix:PATH` and `http://host:port` it speaks the exposure's own
//! wire and reads only its description: `initialize` reads the description
//! and answers `serverInfo.name` `hale-app:<surface>@<digest>`;
//! `tools/list` reads it again and lists its members as tools
//! ([`tools_from_description`]); `tools/call` calls the member the tool
//! name spells, naming the digest last read (the client's
//! `_meta["hale/digest"]` when it gives one), and answers the outcome as
//! the MCP transport does ([`encode_call_answer`]), the wire's bodies as
//! the data. The caller is the endpoint's: the peer's credentials over the
//! socket, the bearer (`--bearer T`, else `HALE_API_BEARER`) over HTTP.
//! Over `mcp://host:port` (an `mcp::Rpc` listener) each message is
//! forwarded as `POST /mcp` and its answer written back as it came, since
//! that listener's `tools/list` is its own discovery.
//!
//! Over `ws://host:port` (a hub's listener carrying a surface, § Rpcs on a
//! hub) each exchange is a WebSocket connection of its own, authenticated
//! at the upgrade by the bearer: the description is read with a `call`
//! frame asking `describe` (the hub's `GET /.description` lists its
//! streams only, § Open points, so the members are the surface
//! exposure's), and a `tools/call` is a `call` frame whose `reply` frame
//! is read as the Unix reply it extends. A hub that carries no surface
//! refuses the frame malformed, and the bridge answers that refusal.
//!
//! An answer the endpoint could not give (no listener, a connection lost, a
//! reply that is no outcome of the wire) is the JSON-RPC error -32000
//! `transport_failure` with the reason, so the host is never left waiting.
//! The bridge exits 0 when its standard input ends, 5 on usage.

use std::io::{self, BufRead, Write};

use limen_core::hale::docs::rows::tool_name;
use limen_core::hale::docs::tools_from_description;
use limen_core::hale::runtime::RefusalKind;
use limen_core::json::jsonrpc;
use limen_core::wire::mcp::{
    classify, encode_call_answer, encode_malformed, initialize_result, CallAnswer, Incoming,
};
use serde_json::Value;

use super::hub_conn;
use super::wire::{self, Answered, Endpoint};
use super::{bearer_header, bearer_of, fetch, Described};

/// The code of an answer the endpoint could not give.
pub const TRANSPORT_FAILURE: i64 = -32000;

/// The longest message line read; a longer one is refused -32600 and
/// skipped whole.
pub const MAX_LINE: usize = 1_048_576;

/// Where the bridge leads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// A `unix::Rpc` socket or an `http::Rpc` listener, spoken in its wire.
    Exposure(Endpoint),
    /// An `mcp::Rpc` listener: messages are forwarded.
    Mcp(String),
    /// A hub's listener (`ws://host:port`) carrying a surface: `call`
    /// frames.
    Hub(String),
}

/// The forms `--app` takes, for every refused endpoint.
pub const FORMS: &str = "name unix:<path>, http://host:port, mcp://host:port or ws://host:port";

/// How long the bridge waits on a hub's answer before it is a transport
/// failure (a WebSocket has no end of response to wait for).
const HUB_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

impl Target {
    /// Reads `--app`'s endpoint.
    pub fn parse(text: &str) -> Result<Target, String> {
        if let Some(rest) = text.strip_prefix("mcp://") {
            let authority = rest.strip_suffix('/').unwrap_or(rest);
            let valid = authority
                .rsplit_once(':')
                .is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok());
            if !valid || authority.contains('/') {
                return Err(format!("`{text}` is not mcp://host:port: {FORMS}"));
            }
            return Ok(Target::Mcp(authority.to_owned()));
        }
        if text.starts_with("ws://") {
            return super::watch::ws_authority(text)
                .map(Target::Hub)
                .map_err(|_| format!("`{text}` is not ws://host:port: {FORMS}"));
        }
        Endpoint::parse(text, false)
            .map(Target::Exposure)
            .map_err(|_| format!("`{text}` is not an endpoint hale mcp --app drives: {FORMS}"))
    }
}

/// The member a tool name spells: its `__`-separated segments, each `_-`
/// read back as `_`, when that is the name the member's tool is written
/// with (§ The MCP transport's rule is a bijection on identifiers).
pub fn member_of(tool: &str) -> Option<String> {
    if tool.contains(':') || tool.split("__").any(str::is_empty) {
        return None;
    }
    let member = tool
        .split("__")
        .map(|seg| seg.replace("_-", "_"))
        .collect::<Vec<_>>()
        .join("::");
    (member.contains("::") && tool_name(&member) == tool).then_some(member)
}

/// The bridge: its target, its caller, and the description last read.
#[derive(Debug)]
pub struct Bridge {
    target: Target,
    bearer: Option<String>,
    /// The digest of the description last read, for calls.
    digest: Option<String>,
    /// The id the Unix wire's requests carry.
    line_id: String,
}

/// An answer for the host: the JSON-RPC message's text, or none (a
/// notification).
type Line = Option<Vec<u8>>;

fn transport_failure(id: &[u8], reason: &str) -> Vec<u8> {
    let mut out = Vec::new();
    let data = serde_json::json!({ "reason": reason }).to_string();
    jsonrpc::encode_error_data(
        id,
        TRANSPORT_FAILURE,
        "transport_failure",
        data.as_bytes(),
        &mut out,
    );
    out
}

/// A refusal as a wire wrote it (`{"refusal": {…}}` over HTTP, the reply
/// line over the socket), answered as the MCP transport answers it.
fn refused(id: &[u8], wire_outcome: &[u8]) -> Vec<u8> {
    let Some(object) = wire::raw_member(wire_outcome, "refusal") else {
        return transport_failure(id, "the refusal is no outcome of the wire");
    };
    let kind = serde_json::from_slice::<Value>(object)
        .ok()
        .and_then(|v| v["kind"].as_str().and_then(RefusalKind::parse));
    let mut out = Vec::new();
    match kind {
        Some(kind) => encode_call_answer(id, CallAnswer::Refusal { kind, object }, &mut out),
        None => return transport_failure(id, "the refusal is no outcome of the wire"),
    }
    out
}

impl Bridge {
    /// A bridge to `target` as the caller `bearer` names (HTTP and MCP).
    pub fn new(target: Target, bearer: Option<String>) -> Bridge {
        Bridge {
            target,
            bearer,
            digest: None,
            line_id: format!("hale-mcp-{}", std::process::id()),
        }
    }

    /// Answers one message line.
    pub fn handle(&mut self, line: &[u8]) -> Line {
        if let Target::Mcp(authority) = &self.target {
            return self.forward(authority.clone(), line);
        }
        let endpoint = self.target.clone();
        let mut out = Vec::new();
        match classify(line) {
            Incoming::Accepted => return None,
            Incoming::Invalid { id, code, reason } => encode_malformed(&id, code, &reason, &mut out),
            Incoming::Unknown { id, method } => encode_malformed(
                id,
                jsonrpc::METHOD_NOT_FOUND,
                &format!("no method `{method}`: this server answers initialize, ping, tools/list and tools/call"),
                &mut out,
            ),
            Incoming::Ping { id } => jsonrpc::encode_response(id, b"{}", &mut out),
            Incoming::Initialize { id, version } => match self.describe(&endpoint) {
                Ok(Ok(doc)) => {
                    let name = format!(
                        "hale-app:{}@{}",
                        doc["surface"].as_str().unwrap_or_default(),
                        doc["digest"].as_str().unwrap_or_default()
                    );
                    let result = initialize_result(&version, &name, crate::hale_cli::cli::VERSION);
                    jsonrpc::encode_response(id, &result, &mut out);
                }
                Ok(Err(wire_outcome)) => return Some(refused(id, &wire_outcome)),
                Err(reason) => return Some(transport_failure(id, &reason)),
            },
            Incoming::ToolsList { id } => match self.describe(&endpoint) {
                Ok(Ok(doc)) => {
                    let result = serde_json::json!({ "tools": tools_from_description(&doc) });
                    jsonrpc::encode_response(id, result.to_string().as_bytes(), &mut out);
                }
                Ok(Err(wire_outcome)) => return Some(refused(id, &wire_outcome)),
                Err(reason) => return Some(transport_failure(id, &reason)),
            },
            Incoming::ToolsCall {
                id,
                name,
                arguments,
                digest,
            } => {
                let Some(member) = member_of(&name) else {
                    encode_call_answer(
                        id,
                        CallAnswer::Refusal {
                            kind: RefusalKind::Malformed,
                            object: serde_json::json!({
                                "kind": "malformed",
                                "reason": format!("unknown_member: {name}"),
                            })
                            .to_string()
                            .as_bytes(),
                        },
                        &mut out,
                    );
                    return Some(out);
                };
                let digest = match digest {
                    Some(d) => Some(d.into_owned()),
                    None => {
                        if self.digest.is_none() {
                            // A refused description leaves the call to the
                            // server's own answer, as `hale call --json`.
                            if let Err(reason) = self.describe(&endpoint) {
                                return Some(transport_failure(id, &reason));
                            }
                        }
                        self.digest.clone()
                    }
                };
                return Some(self.call(&endpoint, id, &member, arguments, digest.as_deref()));
            }
        }
        Some(out)
    }

    /// Reads the description: the document, or the wire outcome of its
    /// refusal; `Err` when nothing answered.
    fn describe(&mut self, target: &Target) -> Result<Result<Value, Vec<u8>>, String> {
        let described = match target {
            Target::Exposure(endpoint) => fetch(endpoint, self.bearer.as_deref(), &self.line_id)?,
            Target::Hub(authority) => {
                let frame =
                    serde_json::json!({"type": "call", "describe": true, "id": self.line_id});
                let reply = self.hub_exchange(authority, &frame.to_string())?;
                let v: Value = serde_json::from_slice(&reply)
                    .map_err(|_| "the hub's answer is not a frame".to_owned())?;
                match v.get("ok") {
                    Some(Value::Bool(true)) => Described::Document(
                        wire::raw_member(&reply, "value")
                            .ok_or("the hub answered no description")?
                            .to_vec(),
                    ),
                    _ if v.get("refusal").is_some() => Described::Refused(reply),
                    _ => return Err("the hub's answer is no outcome of the wire".into()),
                }
            }
            Target::Mcp(_) => return Err("an mcp:// listener is forwarded to".into()),
        };
        match described {
            Described::Document(raw) => {
                let doc: Value = serde_json::from_slice(&raw)
                    .map_err(|_| "the description is not JSON".to_owned())?;
                self.digest = doc["digest"].as_str().map(str::to_owned);
                Ok(Ok(doc))
            }
            Described::Refused(wire_outcome) => Ok(Err(wire_outcome)),
        }
    }

    /// One frame on a connection of its own, answered by the hub's `reply`
    /// to the bridge's id or a `refusal` ([`hub_conn::exchange`]).
    fn hub_exchange(&self, authority: &str, frame: &str) -> Result<Vec<u8>, String> {
        hub_conn::exchange(
            authority,
            self.bearer.as_deref(),
            frame,
            &self.line_id,
            HUB_TIMEOUT,
        )
    }

    fn call(
        &self,
        target: &Target,
        id: &[u8],
        member: &str,
        arguments: &[u8],
        digest: Option<&str>,
    ) -> Vec<u8> {
        let mut out = Vec::new();
        let endpoint = match target {
            Target::Exposure(endpoint) => endpoint,
            Target::Hub(authority) => {
                let frame = self.call_line(member, arguments, digest, true);
                let reply = match self.hub_exchange(authority, &String::from_utf8_lossy(&frame)) {
                    Ok(r) => r,
                    Err(e) => return transport_failure(id, &e),
                };
                return self.answer_reply(id, &reply);
            }
            Target::Mcp(_) => return transport_failure(id, "an mcp:// listener is forwarded to"),
        };
        match endpoint {
            Endpoint::Unix(path) => {
                let line = self.call_line(member, arguments, digest, false);
                let reply = match wire::unix_exchange(path, &line) {
                    Ok(r) => r,
                    Err(e) => {
                        return transport_failure(
                            id,
                            &format!("{} did not answer: {e}", path.display()),
                        )
                    }
                };
                return self.answer_reply(id, &reply);
            }
            Endpoint::Http(authority) => {
                let mut headers = bearer_header(self.bearer.as_deref());
                headers.push(("Content-Type", "application/json".to_owned()));
                if let Some(d) = digest {
                    headers.push(("Hale-Surface-Digest", d.to_owned()));
                }
                let path = format!("/call/{member}");
                let reply = match wire::http_exchange(authority, "POST", &path, &headers, arguments)
                {
                    Ok(r) => r,
                    Err(e) => {
                        return transport_failure(
                            id,
                            &format!("http://{authority} did not answer: {e}"),
                        )
                    }
                };
                match wire::http_outcome(reply.status, &reply.body) {
                    Some(Answered::Result) => {
                        encode_call_answer(id, CallAnswer::Result(&reply.body), &mut out)
                    }
                    Some(Answered::HandlerError) => {
                        encode_call_answer(id, CallAnswer::HandlerError(&reply.body), &mut out)
                    }
                    Some(Answered::ServerError) => {
                        encode_call_answer(id, CallAnswer::ServerError, &mut out)
                    }
                    Some(Answered::Refusal) => return refused(id, &reply.body),
                    None => {
                        return transport_failure(
                            id,
                            &format!(
                                "http://{authority} answered {}, no outcome of the wire",
                                reply.status
                            ),
                        )
                    }
                }
            }
        }
        out
    }

    /// The Unix wire's call line (a hub's `call` frame with `frame`), naming
    /// the bridge's id and the digest.
    fn call_line(
        &self,
        member: &str,
        arguments: &[u8],
        digest: Option<&str>,
        frame: bool,
    ) -> Vec<u8> {
        wire::call_line(frame, member, arguments, &self.line_id, digest)
    }

    /// A Unix reply line (or a hub's `reply` frame, which extends it)
    /// answered as the MCP transport answers its outcome.
    fn answer_reply(&self, id: &[u8], reply: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        let Ok(v) = serde_json::from_slice::<Value>(reply) else {
            return transport_failure(id, "the reply is no outcome of the wire");
        };
        // A hub that carries no surface refuses the frame itself.
        if v["type"] == "refusal" {
            return refused(id, reply);
        }
        if v.get("id") != Some(&Value::String(self.line_id.clone())) {
            return transport_failure(id, "the reply answers another request");
        }
        let answer = match wire::line_outcome(&v) {
            Some(Answered::Result) => wire::raw_member(reply, "value").map(CallAnswer::Result),
            Some(Answered::ServerError) => Some(CallAnswer::ServerError),
            Some(Answered::Refusal) => return refused(id, reply),
            Some(Answered::HandlerError) => {
                wire::raw_member(reply, "error").map(CallAnswer::HandlerError)
            }
            None => None,
        };
        match answer {
            Some(a) => encode_call_answer(id, a, &mut out),
            None => return transport_failure(id, "the reply is no outcome of the wire"),
        }
        out
    }

    /// Forwards one message to an `mcp::Rpc` listener.
    fn forward(&self, authority: String, line: &[u8]) -> Line {
        let headers = bearer_header(self.bearer.as_deref());
        let mut headers = headers;
        headers.push(("Content-Type", "application/json".to_owned()));
        headers.push(("Accept", "application/json, text/event-stream".to_owned()));
        match wire::http_exchange(&authority, "POST", "/mcp", &headers, line) {
            Ok(reply) if reply.body.iter().all(u8::is_ascii_whitespace) => None,
            Ok(reply) => Some(reply.body),
            Err(e) => {
                // A notification is owed no answer, even of a failure.
                let id: Vec<u8> = match classify(line) {
                    Incoming::Accepted => return None,
                    Incoming::Initialize { id, .. }
                    | Incoming::Ping { id }
                    | Incoming::ToolsList { id }
                    | Incoming::ToolsCall { id, .. }
                    | Incoming::Unknown { id, .. } => id.to_vec(),
                    Incoming::Invalid { id, .. } => id.into_owned(),
                };
                Some(transport_failure(
                    &id,
                    &format!("mcp://{authority} did not answer: {e}"),
                ))
            }
        }
    }
}

/// `hale mcp --app ENDPOINT [--bearer T]`: serves stdin until it ends.
pub fn main(app: &str, bearer: Option<String>) -> i32 {
    let target = match Target::parse(app) {
        Ok(t) => t,
        Err(e) => return crate::hale_cli::cli::usage(&["mcp"], &format!("--app: {e}")),
    };
    let mut bridge = Bridge::new(target, bearer_of(bearer));
    serve_stdio(|line| bridge.handle(line))
}

/// Serves MCP's stdio transport until stdin ends: each line handed to
/// `handle`, whose answer (if any) is written as one line; a line over
/// [`MAX_LINE`] answered invalid request; blank lines passed over. Ends
/// with 0 at the end of input or when stdout closes.
pub(crate) fn serve_stdio(mut handle: impl FnMut(&[u8]) -> Option<Vec<u8>>) -> i32 {
    let stdin = io::stdin();
    let mut input = stdin.lock();
    let stdout = io::stdout();
    let mut line = Vec::new();
    loop {
        line.clear();
        match read_line(&mut input, &mut line) {
            Ok(None) | Err(_) => return 0,
            Ok(Some(true)) => {}
            Ok(Some(false)) => {
                let mut out = Vec::new();
                encode_malformed(
                    b"null",
                    jsonrpc::INVALID_REQUEST,
                    "the message is over 1048576 bytes",
                    &mut out,
                );
                if write_line(&stdout, &out).is_err() {
                    return 0;
                }
                continue;
            }
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if let Some(answer) = handle(&line) {
            if write_line(&stdout, &answer).is_err() {
                return 0;
            }
        }
    }
}

/// Reads one line without its newline into `line`: `None` at the end of
/// input, `Some(false)` for a line over [`MAX_LINE`] (read to its end and
/// dropped).
pub(crate) fn read_line(input: &mut impl BufRead, line: &mut Vec<u8>) -> io::Result<Option<bool>> {
    let mut over = false;
    loop {
        let buf = input.fill_buf()?;
        if buf.is_empty() {
            return Ok(if line.is_empty() && !over {
                None
            } else {
                Some(!over)
            });
        }
        let (chunk, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(n) => (&buf[..n], n + 1),
            None => (buf, buf.len()),
        };
        let ends = done > chunk.len();
        if !over && line.len() + chunk.len() <= MAX_LINE {
            line.extend_from_slice(chunk);
        } else {
            over = true;
            line.clear();
        }
        input.consume(done);
        if ends {
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            return Ok(Some(!over));
        }
    }
}

/// Writes one answer line and flushes it.
pub(crate) fn write_line(stdout: &io::Stdout, answer: &[u8]) -> io::Result<()> {
    let mut out = stdout.lock();
    out.write_all(answer)?;
    out.write_all(b"\n")?;
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_name_spells_its_member_back() {
        for member in [
            "Orders::place",
            "B::_odd__name",
            "lib::Orders::cancel",
            "A_::b_",
        ] {
            assert_eq!(
                member_of(&tool_name(member)).as_deref(),
                Some(member),
                "{member}"
            );
        }
        for tool in [
            "Orders::place",
            "Orders__pl_-ace",
            "place",
            "",
            "Orders____x",
        ] {
            assert_eq!(member_of(tool), None, "{tool}");
        }
    }

    #[test]
    fn endpoints_are_four_forms() {
        assert_eq!(
            Target::parse("mcp://127.0.0.1:8090"),
            Ok(Target::Mcp("127.0.0.1:8090".into()))
        );
        assert!(matches!(
            Target::parse("unix:/tmp/x"),
            Ok(Target::Exposure(_))
        ));
        assert!(matches!(
            Target::parse("http://h:1"),
            Ok(Target::Exposure(_))
        ));
        assert_eq!(
            Target::parse("ws://127.0.0.1:9000/"),
            Ok(Target::Hub("127.0.0.1:9000".into()))
        );
        for bad in ["grpc://h:1", "mcp://h", "/tmp/x", "ws://h", "ws://h:1/x"] {
            assert!(Target::parse(bad).unwrap_err().contains(FORMS), "{bad}");
        }
    }

    #[test]
    fn lines_over_the_limit_are_dropped_whole() {
        let mut input = Vec::new();
        input.extend_from_slice(b"{\"a\":1}\r\n");
        input.extend(std::iter::repeat_n(b'x', MAX_LINE + 10));
        input.extend_from_slice(b"\nlast");
        let mut r = io::BufReader::with_capacity(4096, input.as_slice());
        let mut line = Vec::new();
        assert_eq!(read_line(&mut r, &mut line).unwrap(), Some(true));
        assert_eq!(line, b"{\"a\":1}");
        line.clear();
        assert_eq!(read_line(&mut r, &mut line).unwrap(), Some(false));
        line.clear();
        assert_eq!(read_line(&mut r, &mut line).unwrap(), Some(true));
        assert_eq!(line, b"last");
        line.clear();
        assert_eq!(read_line(&mut r, &mut line).unwrap(), None);
    }
}
