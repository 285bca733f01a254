//! The Hale client of a surface (§ Generated specs and clients): one module
//! text a program imports beside itself, with a function `<locus>_<fn>` per
//! member answering the enum `<locus>_<fn>Outcome = Result(T) |
//! HandlerError(E) | Refusal(ApiRefusal) | ServerError | Lost(String)`
//! (`HandlerError` only where the row declares an error), a locus
//! `<Topic>Subscription` per `ws://` stream with `start`, `next` and
//! `next_for`, and `api_describe` and `api_lists`. It speaks `unix:PATH`,
//! `http://HOST:PORT` and `ws://HOST:PORT`.
//!
//! limen runs no Hale code, so the client is held to what can be checked
//! here, and is written so that there is something to check:
//!
//! - **The wire is data.** Every word the client writes on a socket is a
//!   constant of [`WIRE`], emitted as a `const` of the module, and every
//!   request is built by a function that is a chain of `let`s
//!   concatenating those constants, the call's arguments and the scalars
//!   the standard library's JSON encoders write ([`STDLIB`]). The checker
//!   keeps a `let`'s initializer as an expression, so [`Reader`] reads a
//!   request-building function back out of the emitted text and computes
//!   the exact bytes it writes; the tests hold those bytes to the witness's
//!   recorded requests, and [`wire_request`] (the same constants, in Rust)
//!   to the same records.
//! - **The outcome decoding is a table.** [`HTTP_OUTCOMES`],
//!   [`LINE_OUTCOMES`] and [`FRAMES`] are the rules (a status, `ok`, a key,
//!   `refusal.kind` → a variant); the client's decoding functions are those
//!   rules rendered one line each ([`rule_line`]), and [`decode_reply`]
//!   applies the same rules to a recorded reply.
//!
//! What the module asks of Hale's standard library is listed in its header
//! ([`STDLIB`]): limen's checker scans function bodies without typing them,
//! so those calls are stated, not checked (docs/decisions.md, "The Hale
//! client").

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::{Map, Value};

use super::{header, ClientError, ClientMember, ClientStream, ClientSurface, Lang};
use crate::hale::docs::book::{Record, Slot};
use crate::hale::syntax::ast::{Expr, FnDecl, Item, TypeBody, TypeExpr};

/// The words the client writes on the wire, by the name of the `const` the
/// module declares for each (§ The HTTP transport, § The Unix transport,
/// § Streams' ws frames). The client's request-building functions name
/// these constants and no other literal but JSON's and HTTP's punctuation.
pub const WIRE: &[(&str, &str)] = &[
    ("HTTP_CALL_METHOD", "POST"),
    ("HTTP_CALL_PATH", "/call/"),
    ("HTTP_DESCRIBE_METHOD", "GET"),
    ("HTTP_DESCRIBE_PATH", "/.description"),
    ("HTTP_VERSION", "HTTP/1.1"),
    ("HTTP_HOST", "Host"),
    ("HTTP_AUTHORIZATION", "Authorization"),
    ("HTTP_BEARER", "Bearer "),
    ("HTTP_CONTENT_TYPE", "Content-Type"),
    ("HTTP_JSON", "application/json"),
    ("HTTP_DIGEST", "Hale-Surface-Digest"),
    ("HTTP_CONTENT_LENGTH", "Content-Length"),
    ("HTTP_CONNECTION", "Connection"),
    ("HTTP_CLOSE", "close"),
    ("LINE_CALL", "call"),
    ("LINE_PAYLOAD", "payload"),
    ("LINE_ID", "id"),
    ("LINE_DIGEST", "digest"),
    ("LINE_DESCRIBE", "describe"),
    ("WS_TYPE", "type"),
    ("WS_CALL", "call"),
    ("WS_SUBSCRIBE", "subscribe"),
    ("WS_TOPIC", "topic"),
    ("ENDPOINT_UNIX", "unix:"),
    ("ENDPOINT_HTTP", "http://"),
    ("ENDPOINT_WS", "ws://"),
];

/// The headers an HTTP call carries that a recorded request does not list:
/// HTTP/1.1's own framing (`Host`, `Content-Length`, `Connection: close`,
/// one request to a connection, § The HTTP transport).
pub const HTTP_FRAMING: &[&str] = &["Host", "Content-Length", "Connection"];

/// The value of the [`WIRE`] constant `name`.
///
/// # Panics
///
/// When `name` is not one of [`WIRE`]'s: a generator bug, caught by every
/// test that generates a client.
pub fn wire(name: &str) -> &'static str {
    WIRE.iter()
        .find(|(n, _)| *n == name)
        .map(|(_, v)| *v)
        .unwrap_or_else(|| panic!("no wire constant `{name}`"))
}

/// The transports a member call is written for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// `unix:PATH`: one JSON line (§ The Unix transport).
    Unix,
    /// `http://HOST:PORT`: `POST /call/<member>` (§ The HTTP transport).
    Http,
    /// `ws://HOST:PORT`: a `call` frame on a hub (§ Streams, Rpcs on a hub).
    Ws,
}

/// The request a client writes for a call of `member`, as the witness's
/// wire records state a request (`wire/http/*.json`'s `method`, `path`,
/// `headers`, `body`; `wire/unix/*.json`'s line; a hub's `call` frame),
/// built from [`WIRE`]: the value the emitted client's request-building
/// functions write ([`Reader::written_call`]), framing headers ([`HTTP_FRAMING`]) left
/// out. `payload` is the request by codec, `id` the client's correlation
/// (the line's and the frame's `id`), `digest` the digest the client names.
pub fn wire_request(
    transport: Transport,
    member: &str,
    bearer: &str,
    payload: &Value,
    id: &Value,
    digest: &str,
) -> Value {
    let line = |extra: Option<(&str, &str)>| {
        let mut m = Map::new();
        if let Some((k, v)) = extra {
            m.insert(k.to_string(), Value::String(v.to_string()));
        }
        m.insert(wire("LINE_CALL").into(), Value::String(member.into()));
        m.insert(wire("LINE_PAYLOAD").into(), payload.clone());
        m.insert(wire("LINE_ID").into(), id.clone());
        m.insert(wire("LINE_DIGEST").into(), Value::String(digest.into()));
        Value::Object(m)
    };
    match transport {
        Transport::Unix => line(None),
        Transport::Ws => line(Some((wire("WS_TYPE"), wire("WS_CALL")))),
        Transport::Http => {
            let mut headers = Map::new();
            headers.insert(
                wire("HTTP_AUTHORIZATION").into(),
                Value::String(format!("{}{bearer}", wire("HTTP_BEARER"))),
            );
            headers.insert(
                wire("HTTP_CONTENT_TYPE").into(),
                Value::String(wire("HTTP_JSON").into()),
            );
            headers.insert(wire("HTTP_DIGEST").into(), Value::String(digest.into()));
            let mut m = Map::new();
            m.insert(
                "method".into(),
                Value::String(wire("HTTP_CALL_METHOD").into()),
            );
            m.insert(
                "path".into(),
                Value::String(format!("{}{member}", wire("HTTP_CALL_PATH"))),
            );
            m.insert("headers".into(), Value::Object(headers));
            m.insert("body".into(), payload.clone());
            Value::Object(m)
        }
    }
}

/// The five outcomes of § Outcomes, as the client's enums name them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The handler returned.
    Result,
    /// The handler failed with its declared error.
    HandlerError,
    /// The request was not accepted, or was accepted and did not run.
    Refusal,
    /// The handler failed with `ClosureViolation`.
    ServerError,
    /// The connection or the protocol broke: no answer the contract names.
    Lost,
}

impl Outcome {
    /// Every outcome, in the order the enums declare them.
    pub const ALL: [Outcome; 5] = [
        Outcome::Result,
        Outcome::HandlerError,
        Outcome::Refusal,
        Outcome::ServerError,
        Outcome::Lost,
    ];

    /// The name a wire record's `outcome` writes (`server_error`), and the
    /// value of the client's `OUTCOME_…` constant.
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Result => "result",
            Outcome::HandlerError => "handler_error",
            Outcome::Refusal => "refusal",
            Outcome::ServerError => "server_error",
            Outcome::Lost => "lost",
        }
    }

    /// The enum variant (`ServerError`).
    pub fn variant(self) -> &'static str {
        match self {
            Outcome::Result => "Result",
            Outcome::HandlerError => "HandlerError",
            Outcome::Refusal => "Refusal",
            Outcome::ServerError => "ServerError",
            Outcome::Lost => "Lost",
        }
    }

    /// The client's constant naming it (`OUTCOME_SERVER_ERROR`).
    pub fn constant(self) -> String {
        format!("OUTCOME_{}", self.name().to_ascii_uppercase())
    }
}

/// One test of a decoding rule: what of a reply decides its outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum When {
    /// The HTTP status is this.
    Status(u16),
    /// The reply's `ok` is `true`.
    OkTrue,
    /// The reply carries this key.
    Has(&'static str),
    /// The reply's `refusal.kind` is this.
    RefusalKind(&'static str),
    /// Any reply the rules before did not decide.
    Otherwise,
}

/// How an HTTP call's answer decodes, by status (§ Outcomes' HTTP column),
/// first match wins; the body then carries the value, the handler's error
/// or `{"refusal": …}`. A status the contract does not name is no answer
/// of the contract: the protocol broke, never a refusal.
pub const HTTP_OUTCOMES: &[(When, Outcome)] = &[
    (When::Status(200), Outcome::Result),
    (When::Status(422), Outcome::HandlerError),
    (When::Status(500), Outcome::ServerError),
    (When::Status(400), Outcome::Refusal),
    (When::Status(409), Outcome::Refusal),
    (When::Status(401), Outcome::Refusal),
    (When::Status(403), Outcome::Refusal),
    (When::Status(429), Outcome::Refusal),
    (When::Status(503), Outcome::Refusal),
    (When::Otherwise, Outcome::Lost),
];

/// How a reply line decodes (§ Outcomes' Unix JSON column; a hub's `reply`
/// frame is the same object, § Streams), first match wins.
pub const LINE_OUTCOMES: &[(When, Outcome)] = &[
    (When::OkTrue, Outcome::Result),
    (When::Has("error"), Outcome::HandlerError),
    (When::RefusalKind("server"), Outcome::ServerError),
    (When::Has("refusal"), Outcome::Refusal),
    (When::Otherwise, Outcome::Lost),
];

/// The hub's frames a subscription reads (§ Streams, the ws frames), by
/// their `type`, and the constant the client names each by. A frame of
/// another type (a `reply` to a call on the same connection) is skipped;
/// a connection that ends with no `closed` frame is lost.
pub const FRAMES: &[(&str, &str)] = &[
    ("subscribed", "FRAME_SUBSCRIBED"),
    ("refusal", "FRAME_REFUSAL"),
    ("event", "FRAME_EVENT"),
    ("unauthorized", "FRAME_UNAUTHORIZED"),
    ("closed", "FRAME_CLOSED"),
];

/// The constant the client's frame reader answers for a frame of no type
/// [`FRAMES`] names.
pub const FRAME_OTHER: (&str, &str) = ("other", "FRAME_OTHER");

/// A reply decoded by the rules: what the client's function answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decoded {
    /// The outcome.
    pub outcome: Outcome,
    /// The value (a result) or the error (a handler error), by codec.
    pub value: Option<Value>,
    /// The refusal's `kind`, `reason`, `requires` and `served`, for a
    /// refusal (and the server error's `kind`).
    pub refusal: Option<Refusal>,
}

/// A refusal object (§ Outcomes), as the client's `ApiRefusal` carries it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Refusal {
    /// The kind (`unauthorized`).
    pub kind: String,
    /// The reason, `""` when none.
    pub reason: String,
    /// The roles the row requires, on `unauthorized`.
    pub requires: Vec<String>,
    /// The digest the exposure serves, on `digest_mismatch`, else `""`.
    pub served: String,
}

impl Refusal {
    fn read(v: &Value) -> Refusal {
        let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        Refusal {
            kind: s("kind"),
            reason: s("reason"),
            requires: v
                .get("requires")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default(),
            served: s("served"),
        }
    }
}

fn holds(when: When, status: Option<u64>, reply: &Value) -> bool {
    match when {
        When::Status(n) => status == Some(u64::from(n)),
        When::OkTrue => reply.get("ok") == Some(&Value::Bool(true)),
        When::Has(k) => reply.get(k).is_some(),
        When::RefusalKind(k) => reply.pointer("/refusal/kind").and_then(Value::as_str) == Some(k),
        When::Otherwise => true,
    }
}

/// Decodes a reply as the client does: over HTTP `reply` is a record's
/// `{"status": N, "body": B}`, over a socket (or a hub's `reply` frame) the
/// line's object. The rules are [`HTTP_OUTCOMES`] and [`LINE_OUTCOMES`].
pub fn decode_reply(transport: Transport, reply: &Value) -> Decoded {
    let (rules, status, holder) = match transport {
        Transport::Http => (
            HTTP_OUTCOMES,
            reply.get("status").and_then(Value::as_u64),
            reply.get("body").unwrap_or(&Value::Null),
        ),
        Transport::Unix | Transport::Ws => (LINE_OUTCOMES, None, reply),
    };
    let outcome = rules
        .iter()
        .find(|(w, _)| holds(*w, status, holder))
        .map_or(Outcome::Lost, |(_, o)| *o);
    let value = match (transport, outcome) {
        (Transport::Http, Outcome::Result | Outcome::HandlerError) => Some(holder.clone()),
        (_, Outcome::Result) => holder.get("value").cloned(),
        (_, Outcome::HandlerError) => holder.get("error").cloned(),
        _ => None,
    };
    let refusal = match outcome {
        Outcome::Refusal | Outcome::ServerError => {
            Some(Refusal::read(holder.get("refusal").unwrap_or(&Value::Null)))
        }
        _ => None,
    };
    Decoded {
        outcome,
        value,
        refusal,
    }
}

/// One decoding rule as the client writes it, one line of its decoding
/// function: `if status == 200 { return OUTCOME_RESULT; }` (the HTTP
/// rules test `status`, the line rules `reply`).
pub fn rule_line(when: When, outcome: Outcome) -> String {
    let test = match when {
        When::Status(n) => format!("status == {n}"),
        When::OkTrue => "reply.get(\"ok\").kind() == \"bool\" && reply.get(\"ok\").bool()".into(),
        When::Has(k) => format!("reply.has({})", quote(k)),
        When::RefusalKind(k) => {
            format!("reply.get(\"refusal\").get(\"kind\").str() == {}", quote(k))
        }
        When::Otherwise => return format!("return {};", outcome.constant()),
    };
    format!("if {test} {{ return {}; }}", outcome.constant())
}

/// What the module asks of Hale's standard library, as its header states
/// it: none of it is declared by the program or by limen.
pub const STDLIB: &[&str] = &[
    "std::io::tcp::connect(address: String) -> std::io::tcp::Stream, address `HOST:PORT` or `unix:PATH` (the connection substrate names a Unix listener so); the stream's ok() -> Bool, error() -> String, write(text: String) -> Bool, read_line() -> String (\"\" at the end), read_to_end() -> String, close()",
    "std::io::ws::connect(url: String, bearer: String) -> std::io::ws::Socket, RFC 6455's upgrade with `Authorization: Bearer`; std::io::ws::none() -> std::io::ws::Socket, a socket never opened; the socket's ok() -> Bool, error() -> String, send(text: String) -> Bool, recv() -> String and recv_for(ms: Int) -> String (one text message, \"\" when none came), ended() -> Bool, close()",
    "std::json::parse(text: String) -> std::json::Value; the value's kind() -> String (null, bool, integer, number, string, array, object, invalid), has(key: String) -> Bool, get(key: String) -> std::json::Value (null when absent), at(i: Int), len() -> Int, str() -> String, int() -> Int, float() -> Float, bool() -> Bool, text() -> String (its compact JSON)",
    "std::json::quote(String) -> String, std::json::int(Int) -> String, std::json::float(Float) -> String, std::json::bool(Bool) -> String: a scalar's JSON text",
    "std::text::starts_with(text: String, prefix: String) -> Bool, std::text::find(text: String, what: String) -> Int (-1 when absent), std::text::slice(text: String, from: Int, to: Int) -> String, std::text::parse_int(text: String) -> Int",
    "std::time::current() and std::time::nanos(t) -> Int; len(String) -> Int (its bytes) and to_string(Int) -> String",
];

/// The client names it declares itself: a record of the program that would
/// be written as one of them is refused (it would collide).
const OWN_TYPES: &[&str] = &[
    "ApiRefusal",
    "ApiReply",
    "ApiLists",
    "ApiDescribeOutcome",
    "ApiListsOutcome",
];

/// The functions the client declares itself: a member whose function would
/// be written as one of them is refused.
const OWN_FNS: &[&str] = &[
    "api_http_request",
    "api_http_describe",
    "api_line_fields",
    "api_line_request",
    "api_ws_call_frame",
    "api_describe_line",
    "api_subscribe_frame",
    "api_http_outcome",
    "api_line_outcome",
    "api_frame_kind",
    "api_lost",
    "api_refusal",
    "api_reply",
    "api_http_reply",
    "api_line_reply",
    "api_call",
    "api_describe_reply",
    "api_describe",
    "api_lists",
];

/// A name the program writes with `::` (an imported `lib::Item`, a member's
/// locus `lib::Orders`) as one Hale identifier: each `::` written `_`.
pub fn ident(name: &str) -> String {
    name.replace("::", "_")
}

/// A JSON (and Hale) string literal of `s`.
fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The names the module declares, each with what it was made from, so two
/// that would be written alike are refused naming both.
#[derive(Default)]
struct Names {
    taken: BTreeMap<String, String>,
}

impl Names {
    fn take(&mut self, name: String, owner: String) -> Result<String, ClientError> {
        if let Some(first) = self.taken.get(&name) {
            return Err(ClientError::Refused {
                owner: first.clone(),
                field: name.clone(),
                why: format!(
                    "{owner} would be written `{name}` as well: a Hale client names each once; rename one"
                ),
            });
        }
        self.taken.insert(name.clone(), owner);
        Ok(name)
    }
}

/// The Hale client of `surface`.
pub fn generate(surface: &ClientSurface) -> Result<String, ClientError> {
    Writer::new(surface)?.write()
}

/// The identifiers of one surface's client, made once and checked for
/// collisions before any text is written.
struct Writer<'s> {
    s: &'s ClientSurface,
    /// A record's program name → its identifier in the client.
    records: BTreeMap<String, String>,
    /// A member's function, in member order.
    functions: Vec<String>,
    /// A ws stream's topic identifier, in [`ClientSurface::ws_streams`] order.
    topics: Vec<String>,
    out: String,
}

impl<'s> Writer<'s> {
    fn new(s: &'s ClientSurface) -> Result<Writer<'s>, ClientError> {
        let mut names = Names::default();
        for own in OWN_TYPES {
            names.take(own.to_string(), format!("the client's own type `{own}`"))?;
        }
        let mut records = BTreeMap::new();
        for name in s.records.keys() {
            let id = names.take(ident(name), format!("type `{name}`"))?;
            records.insert(name.clone(), id);
        }
        let mut functions = Vec::new();
        for m in &s.members {
            let f = ident(&format!("{}_{}", m.locus, m.function));
            let owner = format!("rpc `{}`", m.name);
            names.take(format!("{f}Outcome"), owner.clone())?;
            functions.push(f);
        }
        // The functions: the client's own and the codec's, then the members'.
        let mut fns = Names::default();
        for own in OWN_FNS {
            fns.take(own.to_string(), format!("the client's own fn `{own}`"))?;
        }
        for (name, id) in &records {
            for prefix in ["encode_", "valid_", "decode_"] {
                fns.take(
                    format!("{prefix}{id}"),
                    format!("the codec of type `{name}`"),
                )?;
            }
        }
        for (name, record) in &s.records {
            let mut keys: BTreeMap<&str, &str> = BTreeMap::new();
            for f in &record.fields {
                if let Some(first) = keys.insert(&f.key, &f.name) {
                    return Err(ClientError::Refused {
                        owner: format!("type `{name}`"),
                        field: f.key.clone(),
                        why: format!(
                            "`{first}` and `{}` both cross as the JSON key `{}`, so a value cannot be read back; give one a `json:` key of its own",
                            f.name, f.key
                        ),
                    });
                }
            }
        }
        for (f, m) in functions.iter().zip(&s.members) {
            fns.take(f.clone(), format!("rpc `{}`", m.name))?;
        }
        let mut topics = Vec::new();
        for (_, st) in s.ws_streams() {
            let t = ident(&st.topic);
            let owner = format!("stream `{}`", st.topic);
            for suffix in ["Subscription", "Event", "Start", "Next"] {
                names.take(format!("{t}{suffix}"), owner.clone())?;
            }
            topics.push(t);
        }
        Ok(Writer {
            s,
            records,
            functions,
            topics,
            out: String::new(),
        })
    }

    fn line(&mut self, text: &str) {
        self.out.push_str(text);
        self.out.push('\n');
    }

    fn write(mut self) -> Result<String, ClientError> {
        self.out.push_str(&header(self.s, Lang::Hale));
        self.preamble();
        self.constants();
        self.types()?;
        self.codecs()?;
        self.members()?;
        self.streams()?;
        self.transport();
        self.describe();
        Ok(self.out)
    }

    fn preamble(&mut self) {
        let s = self.s;
        let first = s
            .members
            .first()
            .map(|m| ident(&format!("{}_{}", m.locus, m.function)));
        let text = format!(
            "//
// The Hale client of the surface `{surface}` of `{app}` (§ Generated specs and
// clients). Import it beside the program (`import \"{surface}.client.hl\" as api;`)
// and call a member by its function, the endpoint, the bearer and the request:
// `api::{example}({endpoint}, \"BEARER\", request)`.
//
// Endpoints: `unix:PATH`, a unix::Rpc socket (the caller is the peer's kernel
// credentials, and the bearer is not sent); `http://HOST:PORT`, an http::Rpc
// listener (the bearer rides `Authorization: Bearer`); `ws://HOST:PORT`, a hub:
// a member's `call` frame, and each stream's subscription (the bearer rides the
// upgrade). TLS is not spoken. Every call names the digest (`HALE_DIGEST`), so a
// program that changed under the client refuses it `digest_mismatch` with the
// digest it serves.
//
// A member answers its `<locus>_<fn>Outcome`: `Result` (the handler returned),
// `HandlerError` (its declared error; only for a row that declares one),
// `Refusal` (not accepted, or accepted and did not run: kind, reason, the roles
// it requires, the digest served), `ServerError` (the handler failed with
// `ClosureViolation`), or `Lost`: the connection or the protocol broke before an
// answer, so the call may have run. `Lost` is never a refusal.
//
// What this module asks of Hale's standard library:
",
            surface = s.surface,
            app = s.app,
            example = first.as_deref().unwrap_or("Locus_fn"),
            endpoint = quote(&example_endpoint(s)),
        );
        self.out.push_str(&text);
        for item in STDLIB {
            self.line(&format!("// - {item};"));
        }
        self.line("");
    }

    fn constants(&mut self) {
        self.line("// The contract.");
        self.line(&format!(
            "const HALE_SURFACE: String = {};",
            quote(&self.s.surface)
        ));
        self.line(&format!(
            "const HALE_DIGEST: String = {};",
            quote(&self.s.digest)
        ));
        self.line("");
        self.line("// The wire (§ The HTTP transport, § The Unix transport, § Streams).");
        for (name, value) in WIRE {
            self.line(&format!("const {name}: String = {};", quote(value)));
        }
        self.line("");
        self.line("// The outcomes (§ Outcomes) and the hub's frames, as the decoders name them.");
        for o in Outcome::ALL {
            self.line(&format!(
                "const {}: String = {};",
                o.constant(),
                quote(o.name())
            ));
        }
        for (ty, name) in FRAMES.iter().chain([&FRAME_OTHER]) {
            self.line(&format!("const {name}: String = {};", quote(ty)));
        }
        self.line("");
        self.line("// The members, as the wire names them.");
        let members: Vec<(String, String)> = self
            .functions
            .iter()
            .zip(&self.s.members)
            .map(|(f, m)| (f.clone(), m.name.clone()))
            .collect();
        for (f, name) in members {
            self.line(&format!("const MEMBER_{f}: String = {};", quote(&name)));
        }
        self.line("");
    }

    /// The Hale type a slot is written as in the client: a record by its
    /// identifier, a scalar as the JSON kind it crosses as (a quantity, an
    /// identity or a range as the integer it counts).
    fn hale_type(&self, slot: &Slot) -> String {
        match slot {
            Slot::Record(name) => self
                .records
                .get(name)
                .cloned()
                .unwrap_or_else(|| ident(name)),
            Slot::Scalar(s) => scalar_type(s.json).to_string(),
        }
    }

    fn types(&mut self) -> Result<(), ClientError> {
        self.line("// The types of the rows: every record a member or a stream names.");
        let records: Vec<(String, String, Record)> = self
            .s
            .records
            .iter()
            .map(|(n, r)| (n.clone(), self.records[n].clone(), r.clone()))
            .collect();
        for (name, id, record) in records {
            if id != name {
                self.line(&format!("// `{name}` of the program."));
            }
            self.line(&format!("type {id} {{"));
            for f in &record.fields {
                let ty = self.hale_type(&f.slot);
                let tag = if f.key != f.name {
                    format!(" json:{}", quote(&f.key))
                } else {
                    String::new()
                };
                let mut note = Vec::new();
                if let Slot::Scalar(s) = &f.slot {
                    if let Some(t) = &s.hale_type {
                        note.push(format!("`{t}`, the integer it counts"));
                    }
                    if let Some(u) = &s.unit {
                        note.push(format!("unit {u}"));
                    }
                }
                if !f.required {
                    note.push("has a default in the program; the client always sends it".into());
                }
                let note = if note.is_empty() {
                    String::new()
                } else {
                    format!(" // {}", note.join("; "))
                };
                self.line(&format!("    {}: {ty}{tag};{note}", f.name));
            }
            self.line("}");
        }
        self.line("");
        self.line("// A refusal (§ Outcomes): its kind, its reason, the roles the row requires");
        self.line(
            "// (comma-joined, as std::api::Outcome carries them; on `unauthorized`) and the",
        );
        self.line(
            "// digest the exposure serves (on `digest_mismatch`); \"\" where the reply has none.",
        );
        self.line(
            "type ApiRefusal { kind: String; reason: String; requires: String; served: String; }",
        );
        self.line("");
        self.line(
            "// An answer before it is typed: the outcome, the value's (or the error's) JSON,",
        );
        self.line("// the refusal, and why a lost call was lost.");
        self.line(
            "type ApiReply { outcome: String; value: String; refusal: ApiRefusal; why: String; }",
        );
        self.line("");
        self.line("// What a description lists for its caller: the members it may call and the");
        self.line("// streams it may subscribe to, comma-joined.");
        self.line("type ApiLists { members: String; streams: String; }");
        self.line(
            "type ApiDescribeOutcome = enum { Result(String), Refusal(ApiRefusal), Lost(String) };",
        );
        self.line(
            "type ApiListsOutcome = enum { Result(ApiLists), Refusal(ApiRefusal), Lost(String) };",
        );
        self.line("");
        let members: Vec<(String, ClientMember)> = self
            .functions
            .iter()
            .cloned()
            .zip(self.s.members.iter().cloned())
            .collect();
        for (f, m) in members {
            let mut variants = vec![match &m.response {
                Some(r) => format!("Result({})", self.hale_type(r)),
                None => "Result".to_string(),
            }];
            if let Some(e) = m.handler_error() {
                variants.push(format!("HandlerError({})", self.hale_type(e)));
            }
            variants
                .extend(["Refusal(ApiRefusal)", "ServerError", "Lost(String)"].map(str::to_string));
            self.line(&format!("// What `{}` answers.", m.name));
            self.line(&format!(
                "type {f}Outcome = enum {{ {} }};",
                variants.join(", ")
            ));
        }
        let streams: Vec<(String, ClientStream)> = self
            .topics
            .iter()
            .cloned()
            .zip(self.s.ws_streams().map(|(_, st)| st.clone()))
            .collect();
        for (t, st) in streams {
            self.line("");
            self.line(&format!(
                "// An event of `{}`: its seq, the frames shed since the last one seen (the gap),",
                st.topic
            ));
            self.line("// and its payload.");
            match &st.payload {
                Some(p) => {
                    let ty = self.hale_type(p);
                    self.line(&format!(
                        "type {t}Event {{ seq: Int; gap: Int; payload: {ty}; }}"
                    ));
                }
                None => self.line(&format!("type {t}Event {{ seq: Int; gap: Int; }}")),
            }
            self.line(&format!(
                "type {t}Start = enum {{ Subscribed, Refusal(ApiRefusal), Closed(String), Lost(String) }};"
            ));
            self.line(&format!(
                "type {t}Next = enum {{ Event({t}Event), Unauthorized(String), Closed(String), Refusal(ApiRefusal), Timeout, Lost(String) }};"
            ));
        }
        self.line("");
        Ok(())
    }

    /// `encode_<T>`, `valid_<T>` and `decode_<T>` for every record: the JSON
    /// codec as the client writes it, key by key (a `json:"key"` tag's key).
    fn codecs(&mut self) -> Result<(), ClientError> {
        self.line("// The JSON codec of the types (§ Codecs), key by key.");
        let records: Vec<(String, Record)> = self
            .s
            .records
            .iter()
            .map(|(n, r)| (self.records[n].clone(), r.clone()))
            .collect();
        for (id, record) in records {
            // encode: one `let` per field, then the object; a chain of lets
            // is what `Reader::call` reads back.
            self.line(&format!("fn encode_{id}(value: {id}) -> String {{"));
            let mut parts = Vec::new();
            for (i, f) in record.fields.iter().enumerate() {
                let enc = self.encode_expr(&f.slot, &format!("value.{}", f.name));
                self.line(&format!(
                    "    let field_{i} = std::json::quote({}) + \": \" + {enc};",
                    quote(&f.key)
                ));
                parts.push(format!("field_{i}"));
            }
            self.object_lets(&parts);
            self.line("}");
            self.line(&format!("fn valid_{id}(v: std::json::Value) -> Bool {{"));
            self.line("    if v.kind() != \"object\" { return false; }");
            for f in &record.fields {
                let test = self.valid_expr(&f.slot, &format!("v.get({})", quote(&f.key)));
                self.line(&format!("    if !({test}) {{ return false; }}"));
            }
            self.line("    return true;");
            self.line("}");
            self.line(&format!("fn decode_{id}(v: std::json::Value) -> {id} {{"));
            let fields: Vec<String> = record
                .fields
                .iter()
                .map(|f| {
                    format!(
                        "{}: {}",
                        f.name,
                        self.decode_expr(&f.slot, &format!("v.get({})", quote(&f.key)))
                    )
                })
                .collect();
            self.line(&format!("    return {id} {{ {} }};", fields.join(", ")));
            self.line("}");
        }
        self.line("");
        Ok(())
    }

    /// `let text = "{" + field_0 + ", " + … + "}"; return text;`, in lets
    /// of at most eight fields each, so no initializer nests deeper than a
    /// declaration expression may (`syntax::MAX_NESTING`).
    fn object_lets(&mut self, parts: &[String]) {
        if parts.is_empty() {
            self.line("    let text = \"{}\";");
            self.line("    return text;");
            return;
        }
        let mut chunks = Vec::new();
        for (i, chunk) in parts.chunks(8).enumerate() {
            let name = format!("fields_{i}");
            self.line(&format!("    let {name} = {};", chunk.join(" + \", \" + ")));
            chunks.push(name);
        }
        let mut acc = chunks[0].clone();
        for (i, c) in chunks.iter().enumerate().skip(1) {
            let name = format!("joined_{i}");
            self.line(&format!("    let {name} = {acc} + \", \" + {c};"));
            acc = name;
        }
        self.line(&format!("    let text = \"{{\" + {acc} + \"}}\";"));
        self.line("    return text;");
    }

    fn encode_expr(&self, slot: &Slot, value: &str) -> String {
        match slot {
            Slot::Record(n) => format!("encode_{}({value})", self.records[n]),
            Slot::Scalar(s) => format!("std::json::{}({value})", scalar_encoder(s.json)),
        }
    }

    fn valid_expr(&self, slot: &Slot, v: &str) -> String {
        match slot {
            Slot::Record(n) => format!("valid_{}({v})", self.records[n]),
            Slot::Scalar(s) => match s.json {
                "number" => format!("{v}.kind() == \"number\" || {v}.kind() == \"integer\""),
                "integer" => format!("{v}.kind() == \"integer\""),
                "boolean" => format!("{v}.kind() == \"bool\""),
                _ => format!("{v}.kind() == \"string\""),
            },
        }
    }

    fn decode_expr(&self, slot: &Slot, v: &str) -> String {
        match slot {
            Slot::Record(n) => format!("decode_{}({v})", self.records[n]),
            Slot::Scalar(s) => format!("{v}.{}()", scalar_reader(s.json)),
        }
    }

    fn members(&mut self) -> Result<(), ClientError> {
        self.line("// The members: one function each, the endpoint, the bearer and the request.");
        let members: Vec<(String, ClientMember)> = self
            .functions
            .iter()
            .cloned()
            .zip(self.s.members.iter().cloned())
            .collect();
        for (f, m) in members {
            let o = format!("{f}Outcome");
            let requires = super::requires_phrase(&m.requires, |r| format!("`{r}`"));
            let error = match (&m.error, m.handler_error()) {
                (_, Some(e)) => format!("its handler error is `{}`", self.hale_type(e)),
                (crate::hale::docs::rows::ErrorSlot::ClosureViolation, None) => {
                    "it may violate, which is the server error".into()
                }
                _ => "it declares no error".into(),
            };
            self.line(&format!("// `{}`: {requires}; {error}.", m.name));
            let (param, payload) = match &m.request {
                Some(r) => (
                    format!(", request: {}", self.hale_type(r)),
                    self.encode_expr(r, "request"),
                ),
                None => (String::new(), "\"{}\"".to_string()),
            };
            self.line(&format!(
                "fn {f}(endpoint: String, bearer: String{param}) -> {o} {{"
            ));
            self.line(&format!(
                "    let reply = api_call(endpoint, bearer, MEMBER_{f}, {payload});"
            ));
            self.line("    if reply.outcome == OUTCOME_RESULT {");
            match &m.response {
                Some(r) => {
                    let ty = self.hale_type(r);
                    self.line("        let value = std::json::parse(reply.value);");
                    self.line(&format!(
                        "        if !({}) {{ return {o}::Lost(\"the result is no `{ty}`: \" + reply.value); }}",
                        self.valid_expr(r, "value")
                    ));
                    self.line(&format!(
                        "        return {o}::Result({});",
                        self.decode_expr(r, "value")
                    ));
                }
                None => self.line(&format!("        return {o}::Result;")),
            }
            self.line("    }");
            self.line("    if reply.outcome == OUTCOME_HANDLER_ERROR {");
            match m.handler_error() {
                Some(e) => {
                    let ty = self.hale_type(e);
                    self.line("        let error = std::json::parse(reply.value);");
                    self.line(&format!(
                        "        if !({}) {{ return {o}::Lost(\"the handler error is no `{ty}`: \" + reply.value); }}",
                        self.valid_expr(e, "error")
                    ));
                    self.line(&format!(
                        "        return {o}::HandlerError({});",
                        self.decode_expr(e, "error")
                    ));
                }
                None => self.line(&format!(
                    "        return {o}::Lost(\"a handler error from a member that declares none: \" + reply.value);"
                )),
            }
            self.line("    }");
            self.line(&format!(
                "    if reply.outcome == OUTCOME_REFUSAL {{ return {o}::Refusal(reply.refusal); }}"
            ));
            self.line(&format!(
                "    if reply.outcome == OUTCOME_SERVER_ERROR {{ return {o}::ServerError; }}"
            ));
            self.line(&format!("    return {o}::Lost(reply.why);"));
            self.line("}");
        }
        self.line("");
        Ok(())
    }

    fn streams(&mut self) -> Result<(), ClientError> {
        let streams: Vec<(String, String, String, ClientStream)> = self
            .topics
            .iter()
            .cloned()
            .zip(self.s.ws_streams().map(|(h, st)| {
                let endpoint = h
                    .address
                    .as_deref()
                    .map(|a| format!("{}{a}", wire("ENDPOINT_WS")))
                    .unwrap_or_default();
                (h.identity.clone(), endpoint, st.clone())
            }))
            .map(|(t, (hub, endpoint, st))| (t, hub, endpoint, st))
            .collect();
        if streams.is_empty() {
            self.line("// The program binds no stream to a `ws://` hub: there is nothing to subscribe to.");
            self.line("");
            return Ok(());
        }
        self.line(
            "// The streams: a locus per stream row of a `ws://` hub. `start()` connects and",
        );
        self.line("// subscribes; `next()` waits for the next event, the hub's `unauthorized`");
        self.line(
            "// (expired, revoked) or `closed` frame, or the connection's end (`Lost`: the hub",
        );
        self.line("// ended with no `closed`); `next_for(ms)` waits at most `ms` (`Timeout`).");
        for (t, hub, endpoint, st) in streams {
            let requires = super::requires_phrase(&st.requires, |r| format!("`{r}`"));
            self.line(&format!(
                "// `{}` of {hub}: subject `{}`, {requires}, bound {}, {}, {}.",
                st.topic,
                st.subject,
                st.bound,
                st.on_full,
                if st.replay {
                    "replays on a reconnect"
                } else {
                    "no replay"
                }
            ));
            self.line(&format!("const TOPIC_{t}: String = {};", quote(&st.topic)));
            let event = format!("{t}Event");
            let start = format!("{t}Start");
            let next = format!("{t}Next");
            let text = format!(
                "locus {t}Subscription {{
    params {{
        endpoint: String = {endpoint};
        bearer: String = \"\";
        socket: std::io::ws::Socket = std::io::ws::none();
        seq: Int = 0;
    }}

    fn start() -> {start} {{
        self.socket = std::io::ws::connect(self.endpoint, self.bearer);
        if !self.socket.ok() {{ return {start}::Lost(self.socket.error()); }}
        if !self.socket.send(api_subscribe_frame(TOPIC_{t})) {{ return {start}::Lost(self.socket.error()); }}
        while true {{
            let text = self.socket.recv();
            if len(text) == 0 {{ return {start}::Lost(\"the hub ended the connection before it answered the subscribe\"); }}
            let frame = std::json::parse(text);
            let kind = api_frame_kind(frame);
            if kind == FRAME_CLOSED {{ return {start}::Closed(frame.get(\"reason\").str()); }}
            if frame.get(WS_TOPIC).str() == TOPIC_{t} || frame.get(WS_TOPIC).kind() == \"null\" {{
                if kind == FRAME_SUBSCRIBED {{ return {start}::Subscribed; }}
                if kind == FRAME_REFUSAL {{ return {start}::Refusal(api_refusal(frame.get(\"refusal\"))); }}
            }}
        }}
        return {start}::Lost(\"unreachable\");
    }}

    fn next() -> {next} {{
        return self.next_for(-1);
    }}

    fn next_for(ms: Int) -> {next} {{
        let deadline = std::time::nanos(std::time::current()) + ms * 1000000;
        while true {{
            let mut text = \"\";
            if ms < 0 {{
                text = self.socket.recv();
            }} else {{
                let left = (deadline - std::time::nanos(std::time::current())) / 1000000;
                if left <= 0 {{ return {next}::Timeout; }}
                text = self.socket.recv_for(left);
            }}
            if len(text) == 0 {{
                if self.socket.ended() {{ return {next}::Lost(\"the hub ended the connection with no closed frame\"); }}
                if ms >= 0 {{ return {next}::Timeout; }}
            }} else {{
                let frame = std::json::parse(text);
                let kind = api_frame_kind(frame);
                if kind == FRAME_CLOSED {{ return {next}::Closed(frame.get(\"reason\").str()); }}
                if frame.get(WS_TOPIC).str() == TOPIC_{t} {{
                    if kind == FRAME_EVENT {{
{event_lines}                    }}
                    if kind == FRAME_UNAUTHORIZED {{ return {next}::Unauthorized(frame.get(\"reason\").str()); }}
                    if kind == FRAME_REFUSAL {{ return {next}::Refusal(api_refusal(frame.get(\"refusal\"))); }}
                }}
            }}
        }}
        return {next}::Lost(\"unreachable\");
    }}

    fn stop() {{
        self.socket.close();
    }}
}}
",
                endpoint = quote(&endpoint),
                event_lines = self.event_lines(&st, &event, &next),
            );
            self.out.push_str(&text);
        }
        self.line("");
        Ok(())
    }

    fn event_lines(&self, st: &ClientStream, event: &str, next: &str) -> String {
        let pad = "                        ";
        let mut out = String::new();
        let _ = writeln!(out, "{pad}let seq = frame.get(\"seq\").int();");
        let _ = writeln!(out, "{pad}let gap = seq - self.seq - 1;");
        let _ = writeln!(out, "{pad}self.seq = seq;");
        match &st.payload {
            Some(p) => {
                let ty = self.hale_type(p);
                let _ = writeln!(out, "{pad}let payload = frame.get(\"payload\");");
                let _ = writeln!(
                    out,
                    "{pad}if !({}) {{ return {next}::Lost(\"an event that is no `{ty}`: \" + text); }}",
                    self.valid_expr(p, "payload")
                );
                let _ = writeln!(
                    out,
                    "{pad}return {next}::Event({event} {{ seq: seq, gap: gap, payload: {} }});",
                    self.decode_expr(p, "payload")
                );
            }
            None => {
                let _ = writeln!(
                    out,
                    "{pad}return {next}::Event({event} {{ seq: seq, gap: gap }});"
                );
            }
        }
        out
    }

    /// The transport: one request per connection over `unix:` and
    /// `http://`, a `call` frame over `ws://`, and the decoders rendered
    /// from the rules.
    fn transport(&mut self) {
        let http_rules: String = HTTP_OUTCOMES
            .iter()
            .map(|(w, o)| format!("    {}\n", rule_line(*w, *o)))
            .collect();
        let line_rules: String = LINE_OUTCOMES
            .iter()
            .map(|(w, o)| format!("    {}\n", rule_line(*w, *o)))
            .collect();
        let frame_rules: String = FRAMES
            .iter()
            .map(|(_, c)| format!("    if frame.get(WS_TYPE).str() == {c} {{ return {c}; }}\n"))
            .collect();
        let text = format!(
            "// The transport. Each request-building function is a chain of `let`s over the
// wire's constants and the call's arguments, and returns its last.

// `POST /call/<member>` (§ The HTTP transport): the head, then the payload.
fn api_http_request(host: String, bearer: String, member: String, payload: String) -> String {{
    let request_line = HTTP_CALL_METHOD + \" \" + HTTP_CALL_PATH + member + \" \" + HTTP_VERSION + \"\\r\\n\";
    let host_header = HTTP_HOST + \": \" + host + \"\\r\\n\";
    let auth_header = HTTP_AUTHORIZATION + \": \" + HTTP_BEARER + bearer + \"\\r\\n\";
    let type_header = HTTP_CONTENT_TYPE + \": \" + HTTP_JSON + \"\\r\\n\";
    let digest_header = HTTP_DIGEST + \": \" + HALE_DIGEST + \"\\r\\n\";
    let length_header = HTTP_CONTENT_LENGTH + \": \" + to_string(len(payload)) + \"\\r\\n\";
    let close_header = HTTP_CONNECTION + \": \" + HTTP_CLOSE + \"\\r\\n\";
    let head = request_line + host_header + auth_header + type_header + digest_header + length_header + close_header + \"\\r\\n\";
    let request = head + payload;
    return request;
}}

// `GET /.description` at an HTTP listener or a hub's.
fn api_http_describe(host: String, bearer: String) -> String {{
    let request_line = HTTP_DESCRIBE_METHOD + \" \" + HTTP_DESCRIBE_PATH + \" \" + HTTP_VERSION + \"\\r\\n\";
    let host_header = HTTP_HOST + \": \" + host + \"\\r\\n\";
    let auth_header = HTTP_AUTHORIZATION + \": \" + HTTP_BEARER + bearer + \"\\r\\n\";
    let close_header = HTTP_CONNECTION + \": \" + HTTP_CLOSE + \"\\r\\n\";
    let request = request_line + host_header + auth_header + close_header + \"\\r\\n\";
    return request;
}}

// A call's fields, as a line and a hub's `call` frame carry them.
fn api_line_fields(member: String, payload: String, id: String) -> String {{
    let call_field = std::json::quote(LINE_CALL) + \": \" + std::json::quote(member);
    let payload_field = std::json::quote(LINE_PAYLOAD) + \": \" + payload;
    let id_field = std::json::quote(LINE_ID) + \": \" + id;
    let digest_field = std::json::quote(LINE_DIGEST) + \": \" + std::json::quote(HALE_DIGEST);
    let fields = call_field + \", \" + payload_field + \", \" + id_field + \", \" + digest_field;
    return fields;
}}

// A call over a socket (§ The Unix transport): one line.
fn api_line_request(member: String, payload: String, id: String) -> String {{
    let line = \"{{\" + api_line_fields(member, payload, id) + \"}}\";
    return line;
}}

// A call on a hub's connection (§ Streams, Rpcs on a hub).
fn api_ws_call_frame(member: String, payload: String, id: String) -> String {{
    let type_field = std::json::quote(WS_TYPE) + \": \" + std::json::quote(WS_CALL);
    let frame = \"{{\" + type_field + \", \" + api_line_fields(member, payload, id) + \"}}\";
    return frame;
}}

// A describe over a socket.
fn api_describe_line() -> String {{
    let line = \"{{\" + std::json::quote(LINE_DESCRIBE) + \": true}}\";
    return line;
}}

// A subscribe frame (§ Streams, the ws frames).
fn api_subscribe_frame(topic: String) -> String {{
    let type_field = std::json::quote(WS_TYPE) + \": \" + std::json::quote(WS_SUBSCRIBE);
    let topic_field = std::json::quote(WS_TOPIC) + \": \" + std::json::quote(topic);
    let frame = \"{{\" + type_field + \", \" + topic_field + \"}}\";
    return frame;
}}

// The outcome an HTTP status names (§ Outcomes' HTTP column).
fn api_http_outcome(status: Int) -> String {{
{http_rules}}}

// The outcome a reply line names (§ Outcomes' Unix JSON column; a hub's reply).
fn api_line_outcome(reply: std::json::Value) -> String {{
{line_rules}}}

// What a hub's frame is (§ Streams, the ws frames).
fn api_frame_kind(frame: std::json::Value) -> String {{
{frame_rules}    return FRAME_OTHER;
}}

fn api_lost(why: String) -> ApiReply {{
    return ApiReply {{ outcome: OUTCOME_LOST, value: \"\", refusal: api_refusal(std::json::parse(\"null\")), why: why }};
}}

// A refusal object, its `requires` comma-joined.
fn api_refusal(r: std::json::Value) -> ApiRefusal {{
    let mut requires = \"\";
    let mut i = 0;
    while i < r.get(\"requires\").len() {{
        if i > 0 {{ requires = requires + \",\"; }}
        requires = requires + r.get(\"requires\").at(i).str();
        i = i + 1;
    }}
    return ApiRefusal {{ kind: r.get(\"kind\").str(), reason: r.get(\"reason\").str(), requires: requires, served: r.get(\"served\").str() }};
}}

// An answer typed by its outcome: the value (or the error) as JSON text, the refusal.
fn api_reply(outcome: String, value: String, holder: std::json::Value) -> ApiReply {{
    if outcome == OUTCOME_LOST {{ return api_lost(\"an answer the contract does not name: \" + holder.text()); }}
    return ApiReply {{ outcome: outcome, value: value, refusal: api_refusal(holder.get(\"refusal\")), why: \"\" }};
}}

// An HTTP response read whole (the listener closes the connection after it).
fn api_http_reply(response: String) -> ApiReply {{
    let head_end = std::text::find(response, \"\\r\\n\\r\\n\");
    if head_end < 0 {{ return api_lost(\"the connection ended before a whole HTTP response\"); }}
    if !std::text::starts_with(response, HTTP_VERSION + \" \") {{ return api_lost(\"not an HTTP/1.1 response\"); }}
    let status = std::text::parse_int(std::text::slice(response, 9, 12));
    let body = std::text::slice(response, head_end + 4, len(response));
    let outcome = api_http_outcome(status);
    if outcome == OUTCOME_LOST {{ return api_lost(\"an HTTP status the contract does not name: \" + to_string(status)); }}
    return api_reply(outcome, body, std::json::parse(body));
}}

// A reply line (or a hub's `reply` frame).
fn api_line_reply(text: String) -> ApiReply {{
    if len(text) == 0 {{ return api_lost(\"the connection ended before its answer\"); }}
    let reply = std::json::parse(text);
    if reply.kind() != \"object\" {{ return api_lost(\"an answer that is no JSON object: \" + text); }}
    let outcome = api_line_outcome(reply);
    if outcome == OUTCOME_RESULT {{ return api_reply(outcome, reply.get(\"value\").text(), reply); }}
    if outcome == OUTCOME_HANDLER_ERROR {{ return api_reply(outcome, reply.get(\"error\").text(), reply); }}
    return api_reply(outcome, \"\", reply);
}}

// One call: its endpoint's transport, one request to a connection.
fn api_call(endpoint: String, bearer: String, member: String, payload: String) -> ApiReply {{
    let id = std::json::quote(member);
    if std::text::starts_with(endpoint, ENDPOINT_UNIX) {{
        let stream = std::io::tcp::connect(endpoint);
        if !stream.ok() {{ return api_lost(stream.error()); }}
        if !stream.write(api_line_request(member, payload, id) + \"\\n\") {{ stream.close(); return api_lost(stream.error()); }}
        let line = stream.read_line();
        stream.close();
        return api_line_reply(line);
    }}
    if std::text::starts_with(endpoint, ENDPOINT_HTTP) {{
        let host = std::text::slice(endpoint, len(ENDPOINT_HTTP), len(endpoint));
        let stream = std::io::tcp::connect(host);
        if !stream.ok() {{ return api_lost(stream.error()); }}
        if !stream.write(api_http_request(host, bearer, member, payload)) {{ stream.close(); return api_lost(stream.error()); }}
        let response = stream.read_to_end();
        stream.close();
        return api_http_reply(response);
    }}
    if std::text::starts_with(endpoint, ENDPOINT_WS) {{
        let socket = std::io::ws::connect(endpoint, bearer);
        if !socket.ok() {{ return api_lost(socket.error()); }}
        if !socket.send(api_ws_call_frame(member, payload, id)) {{ socket.close(); return api_lost(socket.error()); }}
        while true {{
            let text = socket.recv();
            if len(text) == 0 {{ return api_lost(\"the hub ended the connection before the reply\"); }}
            let frame = std::json::parse(text);
            if frame.get(WS_TYPE).str() == \"reply\" && frame.get(LINE_ID).text() == id {{
                socket.close();
                return api_line_reply(text);
            }}
        }}
    }}
    return api_lost(\"an endpoint is unix:PATH, http://HOST:PORT or ws://HOST:PORT, not \" + endpoint);
}}

"
        );
        self.out.push_str(&text);
    }

    fn describe(&mut self) {
        let text = "// The description the endpoint serves the caller (§ The description): the
// answer typed, its value the document's JSON text.
fn api_describe_reply(endpoint: String, bearer: String) -> ApiReply {
    if std::text::starts_with(endpoint, ENDPOINT_UNIX) {
        let stream = std::io::tcp::connect(endpoint);
        if !stream.ok() { return api_lost(stream.error()); }
        if !stream.write(api_describe_line() + \"\\n\") { stream.close(); return api_lost(stream.error()); }
        let line = stream.read_line();
        stream.close();
        return api_line_reply(line);
    }
    let mut host = \"\";
    if std::text::starts_with(endpoint, ENDPOINT_HTTP) { host = std::text::slice(endpoint, len(ENDPOINT_HTTP), len(endpoint)); }
    if std::text::starts_with(endpoint, ENDPOINT_WS) { host = std::text::slice(endpoint, len(ENDPOINT_WS), len(endpoint)); }
    if len(host) == 0 { return api_lost(\"an endpoint is unix:PATH, http://HOST:PORT or ws://HOST:PORT, not \" + endpoint); }
    let stream = std::io::tcp::connect(host);
    if !stream.ok() { return api_lost(stream.error()); }
    if !stream.write(api_http_describe(host, bearer)) { stream.close(); return api_lost(stream.error()); }
    let response = stream.read_to_end();
    stream.close();
    return api_http_reply(response);
}

// The description the endpoint serves the caller, as JSON text.
fn api_describe(endpoint: String, bearer: String) -> ApiDescribeOutcome {
    let reply = api_describe_reply(endpoint, bearer);
    if reply.outcome == OUTCOME_RESULT { return ApiDescribeOutcome::Result(reply.value); }
    if reply.outcome == OUTCOME_REFUSAL { return ApiDescribeOutcome::Refusal(reply.refusal); }
    if reply.outcome == OUTCOME_LOST { return ApiDescribeOutcome::Lost(reply.why); }
    return ApiDescribeOutcome::Lost(\"an answer a description does not take: \" + reply.outcome);
}

// The members the caller may call and the streams it may subscribe to, as the
// description the endpoint serves it lists them.
fn api_lists(endpoint: String, bearer: String) -> ApiListsOutcome {
    let reply = api_describe_reply(endpoint, bearer);
    if reply.outcome == OUTCOME_REFUSAL { return ApiListsOutcome::Refusal(reply.refusal); }
    if reply.outcome == OUTCOME_LOST { return ApiListsOutcome::Lost(reply.why); }
    if reply.outcome != OUTCOME_RESULT { return ApiListsOutcome::Lost(\"an answer a description does not take: \" + reply.outcome); }
    let d = std::json::parse(reply.value);
    let mut members = \"\";
    let mut i = 0;
    while i < d.get(\"members\").len() {
        if i > 0 { members = members + \",\"; }
        members = members + d.get(\"members\").at(i).get(\"name\").str();
        i = i + 1;
    }
    let mut streams = \"\";
    let mut j = 0;
    while j < d.get(\"streams\").len() {
        if j > 0 { streams = streams + \",\"; }
        streams = streams + d.get(\"streams\").at(j).get(\"topic\").str();
        j = j + 1;
    }
    return ApiListsOutcome::Result(ApiLists { members: members, streams: streams });
}
";
        self.out.push_str(text);
    }
}

/// An endpoint of the surface for the header's example: its first
/// exposure's listener as the program writes it, or a placeholder.
fn example_endpoint(s: &ClientSurface) -> String {
    use crate::hale::model::TransportKind;
    for e in &s.exposures {
        let Some(a) = e.address.as_deref() else {
            continue;
        };
        match e.transport {
            TransportKind::Unix => return format!("{}{a}", wire("ENDPOINT_UNIX")),
            TransportKind::Http => return format!("{}{a}", wire("ENDPOINT_HTTP")),
            TransportKind::Ws => return format!("{}{a}", wire("ENDPOINT_WS")),
            _ => {}
        }
    }
    format!("{}HOST:PORT", wire("ENDPOINT_HTTP"))
}

/// The Hale type a JSON scalar crosses as.
fn scalar_type(json: &str) -> &'static str {
    match json {
        "integer" => "Int",
        "number" => "Float",
        "boolean" => "Bool",
        _ => "String",
    }
}

/// The standard library's encoder of a JSON scalar (`std::json::int`).
fn scalar_encoder(json: &str) -> &'static str {
    match json {
        "integer" => "int",
        "number" => "float",
        "boolean" => "bool",
        _ => "quote",
    }
}

/// The `std::json::Value` reader of a JSON scalar (`.int()`).
fn scalar_reader(json: &str) -> &'static str {
    match json {
        "integer" => "int",
        "number" => "float",
        "boolean" => "bool",
        _ => "str",
    }
}

/// A Hale client's text read back: its constants, functions and records,
/// so the request-building functions can be evaluated ([`Reader::call`]).
pub struct Reader {
    consts: BTreeMap<String, Expr>,
    fns: BTreeMap<String, FnDecl>,
    /// A record's fields: (name, JSON key, type).
    records: BTreeMap<String, Vec<(String, String, TypeExpr)>>,
}

/// How deep [`Reader::call`] may recurse (a record nested in a record …):
/// past it the text is refused rather than risk the stack.
const MAX_CALL_DEPTH: usize = 64;

impl Reader {
    /// Parses a client's text with the checker's parser.
    pub fn new(client: &str) -> Result<Reader, String> {
        let file = crate::hale::syntax::parse("client.hl", client).map_err(|d| d.to_string())?;
        let mut consts = BTreeMap::new();
        let mut fns = BTreeMap::new();
        let mut records = BTreeMap::new();
        for item in file.items {
            match item {
                Item::Const(c) => {
                    if let Some(v) = c.value {
                        consts.insert(c.name.name, v);
                    }
                }
                Item::Fn(f) => {
                    fns.insert(f.name.name.clone(), f);
                }
                Item::Type(t) => {
                    if let TypeBody::Struct(fields) = t.body {
                        let fields = fields
                            .into_iter()
                            .map(|f| {
                                let key =
                                    f.json_key.map_or_else(|| f.name.name.clone(), |(k, _)| k);
                                (f.name.name, key, f.ty)
                            })
                            .collect();
                        records.insert(t.name.name, fields);
                    }
                }
                _ => {}
            }
        }
        Ok(Reader {
            consts,
            fns,
            records,
        })
    }

    /// The value of the string constant `name`.
    pub fn constant(&self, name: &str) -> Option<String> {
        match self.consts.get(name) {
            Some(Expr::Str(s, _)) => Some(s.clone()),
            _ => None,
        }
    }

    /// Every string constant, by name.
    pub fn constants(&self) -> BTreeMap<String, String> {
        self.consts
            .keys()
            .filter_map(|k| Some((k.clone(), self.constant(k)?)))
            .collect()
    }

    /// The function `name`, as the checker's parser reads it.
    pub fn function(&self, name: &str) -> Option<&FnDecl> {
        self.fns.get(name)
    }

    /// A wire value (a record keyed by its JSON keys) as the Hale value of
    /// type `ty` (a record keyed by its field names), through the client's
    /// own record declarations and their `json:` tags.
    pub fn from_wire(&self, ty: &TypeExpr, v: &Value) -> Result<Value, String> {
        let name = ty.bare_path().map(|p| p.text()).unwrap_or_default();
        match self.records.get(&name) {
            Some(fields) => {
                let obj = v
                    .as_object()
                    .ok_or_else(|| format!("a `{name}` is a JSON object, not {v}"))?;
                let mut out = Map::new();
                for (field, key, fty) in fields {
                    let inner = obj
                        .get(key)
                        .ok_or_else(|| format!("a `{name}` carries `{key}`"))?;
                    out.insert(field.clone(), self.from_wire(fty, inner)?);
                }
                Ok(Value::Object(out))
            }
            None => Ok(v.clone()),
        }
    }

    /// Calls the function `name` with Hale values: binds its parameters,
    /// evaluates its `let`s in order and answers the last one's value,
    /// which a request-building function returns. A function whose `let`
    /// the checker keeps no expression of cannot be read this way.
    pub fn call(&self, name: &str, args: &[Value]) -> Result<Value, String> {
        self.call_at(name, args, 0)
    }

    fn call_at(&self, name: &str, args: &[Value], depth: usize) -> Result<Value, String> {
        if depth > MAX_CALL_DEPTH {
            return Err(format!("`{name}` nests deeper than {MAX_CALL_DEPTH} calls"));
        }
        let f = self
            .fns
            .get(name)
            .ok_or_else(|| format!("the client declares no fn `{name}`"))?;
        if f.params.len() != args.len() {
            return Err(format!(
                "`{name}` takes {} arguments, not {}",
                f.params.len(),
                args.len()
            ));
        }
        let mut env: BTreeMap<String, Value> = f
            .params
            .iter()
            .zip(args)
            .map(|(p, a)| (p.name.name.clone(), a.clone()))
            .collect();
        let mut last = None;
        for l in &f.body.lets {
            let init = l.init.as_ref().ok_or_else(|| {
                format!(
                    "`let {}` in `{name}` is no expression the checker keeps",
                    l.name.name
                )
            })?;
            let v = self.eval(init, &env, depth)?;
            env.insert(l.name.name.clone(), v.clone());
            last = Some(v);
        }
        last.ok_or_else(|| format!("`{name}` has no `let` to answer"))
    }

    /// Evaluates an expression of a request-building function: string
    /// literals, constants, parameters and their fields, `+`, the
    /// standard library's scalar encoders, `len`, `to_string`, and calls of
    /// the client's own functions.
    pub fn eval(
        &self,
        e: &Expr,
        env: &BTreeMap<String, Value>,
        depth: usize,
    ) -> Result<Value, String> {
        match e {
            Expr::Str(s, _) => Ok(Value::String(s.clone())),
            Expr::Number(t, _) => t
                .parse::<i64>()
                .map(Value::from)
                .map_err(|_| format!("`{t}` is no integer")),
            Expr::Path(p) if p.segments.len() == 1 => {
                let n = p.last();
                if let Some(v) = env.get(n) {
                    return Ok(v.clone());
                }
                match self.consts.get(n) {
                    Some(c) => self.eval(c, &BTreeMap::new(), depth + 1),
                    None => Err(format!(
                        "`{n}` is neither a parameter, a `let` nor a constant"
                    )),
                }
            }
            Expr::Field { base, name, .. } => {
                let b = self.eval(base, env, depth)?;
                b.get(&name.name)
                    .cloned()
                    .ok_or_else(|| format!("{b} has no field `{}`", name.name))
            }
            Expr::Binary {
                op: "+", lhs, rhs, ..
            } => {
                let (l, r) = (self.eval(lhs, env, depth)?, self.eval(rhs, env, depth)?);
                match (&l, &r) {
                    (Value::String(a), Value::String(b)) => Ok(Value::String(format!("{a}{b}"))),
                    (Value::Number(a), Value::Number(b)) => match (a.as_i64(), b.as_i64()) {
                        (Some(a), Some(b)) => Ok(Value::from(a.wrapping_add(b))),
                        _ => Err(format!("{l} + {r}")),
                    },
                    _ => Err(format!("`+` of {l} and {r}")),
                }
            }
            Expr::Call { callee, args, .. } => {
                let Expr::Path(p) = callee.as_ref() else {
                    return Err(format!("a call of `{}`", callee.text()));
                };
                let vals = args
                    .iter()
                    .map(|a| self.eval(&a.value, env, depth))
                    .collect::<Result<Vec<_>, _>>()?;
                let one = || {
                    vals.first()
                        .cloned()
                        .ok_or_else(|| format!("`{}` takes one argument", p.text()))
                };
                match p.text().as_str() {
                    "std::json::quote" => match one()? {
                        Value::String(s) => Ok(Value::String(Value::String(s).to_string())),
                        v => Err(format!("std::json::quote of {v}, which is no String")),
                    },
                    "std::json::int" => match one()? {
                        Value::Number(n) if n.is_i64() || n.is_u64() => {
                            Ok(Value::String(n.to_string()))
                        }
                        v => Err(format!("std::json::int of {v}, which is no Int")),
                    },
                    "std::json::float" => match one()? {
                        Value::Number(n) => Ok(Value::String(n.to_string())),
                        v => Err(format!("std::json::float of {v}, which is no Float")),
                    },
                    "std::json::bool" => match one()? {
                        Value::Bool(b) => Ok(Value::String(b.to_string())),
                        v => Err(format!("std::json::bool of {v}, which is no Bool")),
                    },
                    "to_string" => match one()? {
                        Value::Number(n) => Ok(Value::String(n.to_string())),
                        v => Err(format!("to_string of {v}")),
                    },
                    "len" => match one()? {
                        Value::String(s) => Ok(Value::from(s.len())),
                        v => Err(format!("len of {v}")),
                    },
                    name if p.segments.len() == 1 => self.call_at(name, &vals, depth + 1),
                    other => Err(format!("a call of `{other}`, which no request is built of")),
                }
            }
            other => Err(format!("`{}`, which no request is built of", other.text())),
        }
    }

    /// The request the member function for `member` writes over
    /// `transport`, read back from the text: the member's function is
    /// found by its `MEMBER_…` constant, its payload expression (the last
    /// argument of its `api_call`) evaluated over `payload` (the wire
    /// form of its request, or `null` for a row with none), then the
    /// transport's request-building function. Over HTTP the answer is a
    /// record's request form (`method`, `path`, `headers`, `body`), framing
    /// headers included; over a socket the line; over a hub the frame.
    pub fn written_call(
        &self,
        transport: Transport,
        member: &str,
        bearer: &str,
        payload: &Value,
        id: &Value,
    ) -> Result<Value, String> {
        let text = self.written_text(transport, "127.0.0.1:8080", member, bearer, payload, id)?;
        match transport {
            Transport::Http => http_request_value(&text),
            Transport::Unix | Transport::Ws => {
                serde_json::from_str(&text).map_err(|e| format!("{text}: {e}"))
            }
        }
    }

    /// The bytes the member function for `member` writes over `transport`
    /// ([`Reader::written_call`]), to `host` over HTTP: the whole request,
    /// or the line without its newline, or the frame.
    pub fn written_text(
        &self,
        transport: Transport,
        host: &str,
        member: &str,
        bearer: &str,
        payload: &Value,
        id: &Value,
    ) -> Result<String, String> {
        let constant = self
            .constants()
            .into_iter()
            .find(|(k, v)| k.starts_with("MEMBER_") && v == member)
            .map(|(k, _)| k)
            .ok_or_else(|| format!("the client names no member `{member}`"))?;
        let function = &constant["MEMBER_".len()..];
        let f = self
            .fns
            .get(function)
            .ok_or_else(|| format!("the client has no function `{function}`"))?;
        let call = f
            .body
            .lets
            .first()
            .and_then(|l| l.init.as_ref())
            .ok_or_else(|| format!("`{function}` starts with no `let reply = api_call(…)`"))?;
        let Expr::Call { callee, args, .. } = call else {
            return Err(format!("`{function}`'s first let is no call"));
        };
        if callee.text() != "api_call" || args.len() != 4 {
            return Err(format!(
                "`{function}` does not call `api_call(endpoint, bearer, member, payload)`"
            ));
        }
        let mut env = BTreeMap::new();
        if let Some(p) = f.params.get(2) {
            env.insert(p.name.name.clone(), self.from_wire(&p.ty, payload)?);
        }
        let member_text = self.eval(&args[2].value, &env, 0)?;
        let payload_text = self.eval(&args[3].value, &env, 0)?;
        let id_text = Value::String(id.to_string());
        let (f, args) = match transport {
            Transport::Http => (
                "api_http_request",
                vec![
                    Value::String(host.into()),
                    Value::String(bearer.into()),
                    member_text,
                    payload_text,
                ],
            ),
            Transport::Unix => ("api_line_request", vec![member_text, payload_text, id_text]),
            Transport::Ws => (
                "api_ws_call_frame",
                vec![member_text, payload_text, id_text],
            ),
        };
        match self.call(f, &args)? {
            Value::String(s) => Ok(s),
            v => Err(format!("a request that is no text: {v}")),
        }
    }
}

/// Decodes an HTTP response's whole text as the client's `api_http_reply`
/// does: a text with no whole head (the connection ended first) or a
/// status the rules do not name is lost; otherwise [`decode_reply`].
pub fn decode_http_response(text: &str) -> Decoded {
    let lost = Decoded {
        outcome: Outcome::Lost,
        value: None,
        refusal: None,
    };
    let Some((head, body)) = text.split_once("\r\n\r\n") else {
        return lost;
    };
    let status = head
        .strip_prefix("HTTP/1.1 ")
        .and_then(|r| r.get(..3))
        .and_then(|s| s.parse::<u16>().ok());
    let Some(status) = status else {
        return lost;
    };
    let body: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    let mut reply = Map::new();
    reply.insert("status".into(), Value::from(status));
    reply.insert("body".into(), body);
    decode_reply(Transport::Http, &Value::Object(reply))
}

/// Decodes a reply line as the client's `api_line_reply` does: an empty
/// text (the connection ended first) or one that is no JSON object is
/// lost; otherwise [`decode_reply`].
pub fn decode_line(text: &str) -> Decoded {
    match serde_json::from_str::<Value>(text.trim_end()) {
        Ok(v @ Value::Object(_)) => decode_reply(Transport::Unix, &v),
        _ => Decoded {
            outcome: Outcome::Lost,
            value: None,
            refusal: None,
        },
    }
}

/// An HTTP/1.1 request's text as a wire record states a request:
/// `{"method", "path", "headers", "body"}`, the body parsed as JSON (and
/// held to its `Content-Length`).
pub fn http_request_value(text: &str) -> Result<Value, String> {
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| "no blank line ends the head".to_string())?;
    let mut lines = head.split("\r\n");
    let first = lines.next().unwrap_or_default();
    let mut parts = first.split(' ');
    let (method, path, version) = (parts.next(), parts.next(), parts.next());
    let (Some(method), Some(path), Some("HTTP/1.1"), None) = (method, path, version, parts.next())
    else {
        return Err(format!("`{first}` is no HTTP/1.1 request line"));
    };
    let mut headers = Map::new();
    for l in lines {
        let (k, v) = l
            .split_once(": ")
            .ok_or_else(|| format!("`{l}` is no header"))?;
        if headers
            .insert(k.to_string(), Value::String(v.to_string()))
            .is_some()
        {
            return Err(format!("`{k}` twice"));
        }
    }
    let length = headers
        .get("Content-Length")
        .and_then(Value::as_str)
        .and_then(|l| l.parse::<usize>().ok());
    if length != Some(body.len()) {
        return Err(format!(
            "Content-Length {length:?} for a body of {} bytes",
            body.len()
        ));
    }
    let body: Value = serde_json::from_str(body).map_err(|e| format!("{body}: {e}"))?;
    let mut m = Map::new();
    m.insert("method".into(), method.into());
    m.insert("path".into(), path.into());
    m.insert("headers".into(), Value::Object(headers));
    m.insert("body".into(), body);
    Ok(Value::Object(m))
}

#[cfg(test)]
#[path = "hale_lang_tests.rs"]
mod tests;
