//! `hale demo --record DIR`: every exchange the demo answers, written in the
//! conformance record format (`docs/conformance.md`) as
//! `DIR/wire/<transport>/<name>.json`, so a transport's corpus is recorded
//! from a run, reviewed, and then replayed by `limen-conformance replay`.
//!
//! A record is named by what it holds, as the reference records are:
//! `result`, `handler_error`, `server_error`, `refusal_<kind>`; a describe
//! is `describe.<exposure>.<caller>` (`describe.public.alice`,
//! `describe.admin.uid-1000`), as the reference names a description
//! document for its exposure and caller, or `describe_refusal_<kind>`. An
//! MCP exchange (`wire/mcp`) takes the outcome its answer encodes and is
//! named as a call by it, or by its method (`initialize`,
//! `tools_list.<caller>`) with `.refusal_<kind>` when refused. A name already
//! taken in the folder gets the next free `-2`, `-3`, … suffix, so nothing
//! written earlier is overwritten. The HTTP framing headers
//! (`Content-Length`, `Connection`, `Transfer-Encoding`) are left out: the
//! body determines them, and a replay writes them again. Where the demo's
//! role source differs from the program's literal (its operator is the
//! current user), the record says so in `scenario.roles`, so it replays
//! under the grants it was recorded under. The program served is written
//! beside the records as `DIR/program.hl` (unless one is there), so the
//! folder is a corpus `limen-conformance` opens as it is.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use limen_core::hale::runtime::{Outcome, PeerCredentials};
use limen_core::wire::http1::client::{read_response, Limits};
use limen_core::wire::line::LineRequest;
use limen_core::wire::mcp;
use serde_json::{Map, Value};

use crate::serve::{Exchange, RecordedRequest, Recorder};

/// Writes each exchange as a record file. See the module documentation.
#[derive(Debug)]
pub struct RecordWriter {
    dir: PathBuf,
    /// `scenario.roles` per exposure identity, for the exposures whose
    /// role source the demo changed.
    roles: BTreeMap<String, Value>,
    warned: bool,
}

impl RecordWriter {
    /// A writer into `dir`; `roles` maps an exposure identity to the
    /// `{"<role source param>": {"<role>": "<principal>"}}` grants it was
    /// served under where they differ from the program's.
    pub fn new(dir: &Path, roles: BTreeMap<String, Value>) -> RecordWriter {
        RecordWriter {
            dir: dir.to_owned(),
            roles,
            warned: false,
        }
    }

    /// Writes the program's declarations as `DIR/program.hl`, unless a
    /// program is there already.
    pub fn write_program(&self, source: &str) -> std::io::Result<()> {
        std::fs::create_dir_all(&self.dir)?;
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(self.dir.join("program.hl"))
        {
            Ok(mut f) => std::io::Write::write_all(&mut f, source.as_bytes()),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
            Err(e) => Err(e),
        }
    }

    fn write(&mut self, transport: &str, name: &str, record: &Value) -> std::io::Result<()> {
        let dir = self.dir.join("wire").join(transport);
        std::fs::create_dir_all(&dir)?;
        let mut text = serde_json::to_string_pretty(record).map_err(std::io::Error::other)?;
        text.push('\n');
        for n in 1.. {
            let file = if n == 1 {
                dir.join(format!("{name}.json"))
            } else {
                dir.join(format!("{name}-{n}.json"))
            };
            // create_new: never overwrite, even a file another run wrote.
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&file)
            {
                Ok(mut f) => return std::io::Write::write_all(&mut f, text.as_bytes()),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
        unreachable!("1.. is unbounded")
    }
}

impl Recorder for RecordWriter {
    fn exchange(&mut self, exchange: &Exchange<'_>) {
        let Some((transport, name, record)) = to_record(exchange, &self.roles) else {
            return;
        };
        if let Err(e) = self.write(transport, &name, &record) {
            if !self.warned {
                self.warned = true;
                eprintln!(
                    "hale demo: cannot write records under {}: {e}",
                    self.dir.display()
                );
            }
        }
    }
}

/// The record of one exchange: its transport folder, its name and the
/// record. `None` for what the format cannot hold (a Unix object that was
/// no request: the line machine keeps its reason, not its text).
pub fn to_record(
    exchange: &Exchange<'_>,
    roles: &BTreeMap<String, Value>,
) -> Option<(&'static str, String, Value)> {
    let identity = exchange.exposure.identity();
    let (mut outcome, mut kind) = outcome_name(exchange.outcome);
    let (transport, describe, request, reply) = match exchange.request {
        RecordedRequest::Line(line) => {
            let (describe, request) = line_request(line)?;
            let reply = serde_json::from_slice(exchange.reply).ok()?;
            ("unix", describe, request, reply)
        }
        RecordedRequest::Http(http) | RecordedRequest::Mcp(http) => {
            let describe = http.method == "GET";
            let mut request = Map::new();
            request.insert("method".into(), http.method.clone().into());
            request.insert("path".into(), http.target.clone().into());
            request.insert("headers".into(), headers(&http.headers));
            body_into(&mut request, &http.body);
            let reply = http_reply(&http.method, exchange.reply)?;
            let transport = match exchange.request {
                RecordedRequest::Mcp(_) => {
                    // Over MCP the record's outcome is what the answer
                    // says: the exposure describes an unknown method, and
                    // the transport answers it -32601, malformed.
                    (outcome, kind) = mcp_outcome(&reply)?;
                    "mcp"
                }
                _ => "http",
            };
            (transport, describe, Value::Object(request), reply)
        }
    };
    let mut record = Map::new();
    record.insert("wire".into(), 1.into());
    record.insert("transport".into(), transport.into());
    record.insert("exposure".into(), identity.clone().into());
    record.insert("outcome".into(), outcome.into());
    if let Some(kind) = kind {
        record.insert("kind".into(), kind.into());
    }
    if transport == "unix" {
        record.insert("peer".into(), peer(exchange.peer));
    }
    record.insert("request".into(), request);
    record.insert("reply".into(), reply);
    if let Some(grants) = roles.get(&identity) {
        record.insert("scenario".into(), serde_json::json!({ "roles": grants }));
    }
    let name = match exchange.request {
        RecordedRequest::Mcp(http) => mcp_name(http, exchange.caller, outcome, kind),
        _ => exchange_name(exchange, &record, transport, describe, kind),
    };
    Some((transport, name, Value::Object(record)))
}

/// The name of a Unix or HTTP record: its outcome, or for a describe
/// `describe.<exposure>.<caller>`.
fn exchange_name(
    exchange: &Exchange<'_>,
    record: &Map<String, Value>,
    transport: &str,
    describe: bool,
    kind: Option<&str>,
) -> String {
    let outcome = outcome_name(exchange.outcome).0;
    match (describe, kind) {
        (false, None) => outcome.to_owned(),
        (false, Some(kind)) => format!("refusal_{kind}"),
        (true, None) => {
            let document = match transport {
                "unix" => record.get("reply").and_then(|r| r.get("value")),
                _ => record.get("reply").and_then(|r| r.get("body")),
            };
            let caller = document
                .and_then(|d| d.pointer("/caller/principal/name"))
                .and_then(Value::as_str)
                .unwrap_or("nobody");
            format!(
                "describe.{}.{}",
                file_word(&exchange.exposure.name),
                file_word(caller)
            )
        }
        (true, Some(kind)) => format!("describe_refusal_{kind}"),
    }
}

/// The name of an MCP record: a `tools/call` by its outcome, as over HTTP;
/// any other message by its method (`/` as `_`: `initialize`,
/// `tools_list.<caller>`, `notifications_initialized`), or by what it is
/// when it names none (`get`, `batch`, `not_json`, `message`), and
/// `.refusal_<kind>` after it when it was refused.
fn mcp_name(
    http: &limen_core::wire::http1::HttpRequest,
    caller: &limen_core::hale::runtime::Principal,
    outcome: &str,
    kind: Option<&str>,
) -> String {
    let message: Option<Value> = serde_json::from_slice(&http.body).ok();
    let method = message
        .as_ref()
        .and_then(|m| m.get("method"))
        .and_then(Value::as_str);
    if method == Some("tools/call") {
        return match kind {
            Some(kind) => format!("refusal_{kind}"),
            None => outcome.to_owned(),
        };
    }
    let base = match (method, &message) {
        _ if http.method != "POST" => file_word(&http.method.to_ascii_lowercase()),
        (Some("tools/list"), _) => format!("tools_list.{}", file_word(&caller.name)),
        (Some(m), _) => file_word(&m.replace('/', "_")),
        (None, Some(Value::Array(_))) => "batch".to_owned(),
        (None, Some(_)) => "message".to_owned(),
        (None, None) => "not_json".to_owned(),
    };
    match kind {
        Some(kind) => format!("{base}.refusal_{kind}"),
        None => base,
    }
}

/// A name as a word of a file name: `uid:1000` → `uid-1000`.
fn file_word(name: &str) -> String {
    let word: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    if word.is_empty() {
        "nobody".to_owned()
    } else {
        word
    }
}

/// The outcome and kind an MCP reply encodes (§ Outcomes' MCP column).
fn mcp_outcome(reply: &Value) -> Option<(&'static str, Option<&'static str>)> {
    let status = u16::try_from(reply.get("status")?.as_u64()?).ok()?;
    Some(match mcp::answered(status, reply.get("body"))? {
        mcp::Answered::Result => ("result", None),
        mcp::Answered::HandlerError => ("handler_error", None),
        mcp::Answered::ServerError => ("server_error", None),
        mcp::Answered::Refusal(k) => ("refusal", Some(k.as_str())),
    })
}

/// The record's `outcome` and `kind`.
fn outcome_name(outcome: &Outcome) -> (&'static str, Option<&'static str>) {
    match outcome {
        Outcome::Refusal(r) => ("refusal", Some(r.kind.as_str())),
        other => (other.name(), None),
    }
}

fn peer(p: PeerCredentials) -> Value {
    serde_json::json!({ "uid": p.uid, "gid": p.gid, "pid": p.pid })
}

/// JSON text as a value; text that is not JSON stays a string.
fn json_or_text(raw: &[u8]) -> Result<Value, String> {
    serde_json::from_slice(raw).map_err(|_| String::from_utf8_lossy(raw).into_owned())
}

/// The request object a Unix line carried, rebuilt in the order the wire
/// writes it (`call`, `payload`, `id`, `digest`), and whether it is a
/// describe.
fn line_request(line: &LineRequest) -> Option<(bool, Value)> {
    let mut request = Map::new();
    let describe = match line {
        LineRequest::Call {
            member,
            payload,
            id,
            digest,
        } => {
            request.insert("call".into(), member.clone().into());
            request.insert("payload".into(), json_or_text(payload).ok()?);
            if let Some(id) = id {
                request.insert("id".into(), json_or_text(id.as_bytes()).ok()?);
            }
            if let Some(digest) = digest {
                request.insert("digest".into(), digest.clone().into());
            }
            false
        }
        LineRequest::Describe { id } => {
            request.insert("describe".into(), true.into());
            if let Some(id) = id {
                request.insert("id".into(), json_or_text(id.as_bytes()).ok()?);
            }
            true
        }
        LineRequest::Malformed { .. } => return None,
    };
    Some((describe, Value::Object(request)))
}

/// Framing headers the body and the transport determine.
const FRAMING: [&str; 3] = ["content-length", "connection", "transfer-encoding"];

fn headers(list: &[(String, Vec<u8>)]) -> Value {
    let mut out = Map::new();
    for (name, value) in list {
        if FRAMING.iter().any(|f| name.eq_ignore_ascii_case(f)) {
            continue;
        }
        let value = String::from_utf8_lossy(value).into_owned();
        // A header sent twice is one field of comma-joined values (RFC 9110
        // § 5.3).
        match out.get_mut(name) {
            Some(Value::String(prior)) => {
                prior.push_str(", ");
                prior.push_str(&value);
            }
            _ => {
                out.insert(name.clone(), value.into());
            }
        }
    }
    Value::Object(out)
}

/// `body` when the body is JSON, `body_text` when it is text that is not,
/// nothing when it is empty.
fn body_into(object: &mut Map<String, Value>, body: &[u8]) {
    if body.is_empty() {
        return;
    }
    match json_or_text(body) {
        Ok(v) => object.insert("body".into(), v),
        Err(text) => object.insert("body_text".into(), text.into()),
    };
}

/// The reply object of the response to a `method` request: its status, the
/// headers of the contract (not the framing ones) and its body.
fn http_reply(method: &str, raw: &[u8]) -> Option<Value> {
    let response = read_response(method, raw, true, Limits::default()).ok()??;
    let mut reply = Map::new();
    reply.insert("status".into(), response.status.into());
    reply.insert("headers".into(), headers(&response.headers));
    body_into(&mut reply, &response.body);
    Some(Value::Object(reply))
}
