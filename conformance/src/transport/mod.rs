//! The transports a record can be of, one module each behind one trait,
//! [`Form`]: how a record's request of the transport is sent as bytes, how
//! the bytes a server wrote are read back as a record's reply, which outcome
//! a reply encodes (§ Outcomes' column of the transport), what differs
//! between runs and is masked, how the replay world serves an exposure of
//! it, and how the live check reaches and describes an endpoint.
//!
//! The shared modules (the record format, scenarios, replay, check, compare
//! and the world) dispatch through [`Form`] and name no transport; a new
//! transport is one file here and one line in [`FORMS`].
//!
//! The modules read downward: this one and its transports read
//! [`crate::jsonpath`] and [`crate::mask`] and nothing above them; a record
//! is seen here only as an [`Exchange`], a view of it.

pub mod grpc;
pub mod http;
pub mod mcp;
pub mod unix;

use std::path::{Path, PathBuf};

use limen_core::hale::model::{Exposure as ModelExposure, Program, TransportKind};
use limen_core::hale::runtime::{Correlation, Describer, ExposureSpec, PeerCredentials};
use limen_core::wire::front::{Front, FrontLimits};
use limen_core::Timestamp;
use serde_json::Value;

use crate::jsonpath::RecordError;
use crate::mask;

/// The most a reply may be: past it the server is not answering a record
/// (the live check's bound, and the reader's limits in [`http`]).
pub const MAX_REPLY: usize = 16 << 20;

/// The outcome of an exchange whose connection ended with nothing of a
/// reply: § Outcomes' fifth row, "the connection or the protocol broke" —
/// HTTP's and MCP's "the connection ends without a response", the Unix
/// wire's EOF.
pub const TRANSPORT_FAILURE: &str = "transport_failure";

/// A transport failure's reply in a record, whatever the transport: the
/// connection ended, and nothing of a reply was read before it did.
pub fn eof() -> Value {
    serde_json::json!({"eof": true})
}

/// Whether `reply` is a transport failure's ([`eof`]).
pub fn is_eof(reply: &Value) -> bool {
    *reply == eof()
}

/// Every transport limen has machines for, in the order an endpoint's text
/// is tried against them.
pub static FORMS: &[&dyn Form] = &[&unix::Unix, &http::Http, &mcp::Mcp, &grpc::Grpc];

/// The transport named `name`, when limen has machines for it.
pub fn by_name(name: &str) -> Option<&'static dyn Form> {
    FORMS.iter().copied().find(|f| f.name() == name)
}

/// The transport a program's listener of kind `kind` speaks, when limen
/// has machines for it.
pub fn by_listener(kind: &TransportKind) -> Option<&'static dyn Form> {
    FORMS.iter().copied().find(|f| f.listener() == *kind)
}

/// The names of [`FORMS`], as a command line lists them:
/// `unix|http|mcp|grpc`.
pub fn names() -> String {
    FORMS.iter().map(|f| f.name()).collect::<Vec<_>>().join("|")
}

/// A transport a record can be of, by its name in the record (the folder it
/// sits in). Those limen has machines for have a [`Form`]; the others
/// (`ws`, `udp`, `tool`) are read, their envelope the same, and
/// reported as having no machine yet.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Transport(String);

impl Transport {
    /// The transport named `name` in a record.
    pub fn parse(name: &str) -> Transport {
        Transport(name.to_owned())
    }

    /// Its name in a record.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Its machines, when limen has them.
    pub fn form(&self) -> Option<&'static dyn Form> {
        by_name(&self.0)
    }

    /// Its machines, or why a record of it cannot run.
    pub fn machine(&self) -> Result<&'static dyn Form, String> {
        self.form()
            .ok_or_else(|| format!("limen has no `{}` machine to replay through yet", self.0))
    }
}

impl From<&dyn Form> for Transport {
    fn from(form: &dyn Form) -> Transport {
        Transport::parse(form.name())
    }
}

/// A recorded exchange as a transport reads it: a view of a record
/// ([`crate::record::Record::exchange`]).
#[derive(Clone, Copy, Debug)]
pub struct Exchange<'a> {
    /// `<transport>/<name>`.
    pub name: &'a str,
    /// The transport's name.
    pub transport: &'a str,
    /// The exposure's identity.
    pub exposure: &'a str,
    /// The outcome it names.
    pub outcome: &'a str,
    /// A refusal's kind.
    pub kind: Option<&'a str>,
    /// The request, in the transport's form.
    pub request: &'a Value,
    /// The reply, in the transport's form.
    pub reply: &'a Value,
}

impl Exchange<'_> {
    /// Its file stem: `result`, `tools_list.alice`.
    pub fn stem(&self) -> &str {
        self.name.rsplit_once('/').map_or(self.name, |(_, s)| s)
    }
}

/// What `compare` knows of the reference, for a transport's own rules of
/// holding a record to it ([`Form::held_to_reference`]).
pub trait Reference {
    /// The reference's folder (the projections `<Surface>.<form>.json` are
    /// there).
    fn dir(&self) -> &Path;
    /// The description document `<exposure>.<caller>` (`public.alice`).
    fn document(&self, name: &str) -> Option<&Value>;
    /// The exposures whose caller's description stands for the exposure
    /// `name`: itself, and those serving the same surface under the same
    /// sources (the demo's `mcp` serves Public under public's).
    fn same_sources(&self, name: &str) -> Vec<String>;
}

/// Builds one connection's front: at `now`, under `limits`, from `peer`
/// (its kernel credentials, where the transport carries them), addressed
/// as `correlation`.
pub type FrontMaker =
    Box<dyn Fn(Timestamp, &FrontLimits, PeerCredentials, Correlation) -> Box<dyn Front> + Send>;

/// An endpoint a live check reaches: `unix:<path>` or a TCP listener
/// (`http://host:port`, `mcp://host:port`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Endpoint {
    /// A Unix socket.
    Unix(PathBuf),
    /// A TCP listener speaking HTTP, by its authority (`127.0.0.1:8080`).
    Http(String),
}

impl Endpoint {
    /// Reads an endpoint as one of [`FORMS`] writes it.
    pub fn parse(text: &str) -> Result<Endpoint, String> {
        if let Some(e) = FORMS.iter().find_map(|f| f.endpoint(text)) {
            return Ok(e);
        }
        let forms: Vec<&str> = FORMS.iter().map(|f| f.endpoint_form()).collect();
        let listed = match forms.split_last() {
            Some((last, [])) => (*last).to_owned(),
            Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
            None => String::new(),
        };
        Err(format!("`{text}` is not an endpoint: name {listed}"))
    }

    /// The `Host` a request to it names, over TCP.
    pub fn host(&self) -> Option<&str> {
        match self {
            Endpoint::Http(a) => Some(a),
            Endpoint::Unix(_) => None,
        }
    }
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Endpoint::Unix(p) => write!(f, "unix:{}", p.display()),
            Endpoint::Http(a) => write!(f, "http://{a}"),
        }
    }
}

/// `host:port` after a URL scheme, with an optional trailing `/`.
pub(crate) fn authority(rest: &str) -> Option<Endpoint> {
    let authority = rest.strip_suffix('/').unwrap_or(rest);
    let valid = authority
        .rsplit_once(':')
        .is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok());
    (valid && !authority.contains('/')).then(|| Endpoint::Http(authority.to_owned()))
}

/// One transport: its record form, its bytes, its masking, how the world
/// serves it and how a check reaches it. See the module documentation.
pub trait Form: Sync + std::fmt::Debug {
    /// Its name in a record, a corpus folder and on the command line
    /// (`unix`).
    fn name(&self) -> &'static str;

    /// Its name in prose (`Unix`).
    fn title(&self) -> &'static str;

    /// The listener kind of a program's exposures it serves.
    fn listener(&self) -> TransportKind;

    /// Whether a connection carries its peer's kernel credentials: a record
    /// states its peer, and a runner's connection is made as that peer.
    fn carries_peer(&self) -> bool {
        false
    }

    /// Checks a request in its form, at `path` (already an object).
    fn check_request(&self, request: &Value, path: &str) -> Result<(), RecordError>;

    /// The outcome (and a refusal's kind) a reply encodes, by § Outcomes'
    /// column of the transport; `None` for a reply that encodes none. A
    /// transport failure's is [`Form::outcome`]'s.
    fn outcome_of(&self, reply: &Value) -> Option<(String, Option<String>)>;

    /// The outcome a reply encodes, a transport failure's ([`eof`])
    /// included.
    fn outcome(&self, reply: &Value) -> Option<(String, Option<String>)> {
        if is_eof(reply) {
            return Some((TRANSPORT_FAILURE.to_owned(), None));
        }
        self.outcome_of(reply)
    }

    /// The member a call names, on the exposure `spec` serves.
    fn member_of(&self, request: &Value, spec: &ExposureSpec) -> Option<String>;

    /// Where a describe's reply carries the description document (a Unix
    /// reply's `value`, an HTTP reply's `body`); `None` where a describe is
    /// no exchange of the transport.
    fn document<'a>(&self, _reply: &'a Value) -> Option<&'a Value> {
        None
    }

    /// The bytes a request is sent as; `host` is the `Host` a TCP
    /// transport names when the record names none.
    fn request_bytes(&self, request: &Value, host: Option<&str>) -> Result<Vec<u8>, String>;

    /// The reply the bytes a server wrote hold, as a record's reply;
    /// `Ok(None)` while none is whole, unless `eof` says no more will come.
    /// A connection that ended with nothing written is [`Form::reply`]'s.
    fn read_reply(&self, raw: &[u8], eof: bool) -> Result<Option<Value>, String>;

    /// [`Form::read_reply`], and a connection that ended with nothing
    /// written read as a transport failure's reply ([`eof`]).
    fn reply(&self, raw: &[u8], ended: bool) -> Result<Option<Value>, String> {
        if ended && raw.is_empty() {
            return Ok(Some(eof()));
        }
        self.read_reply(raw, ended)
    }

    /// A request, masked for comparison.
    fn mask_request(&self, request: &Value) -> Value {
        request.clone()
    }

    /// A reply, masked for comparison; `peer` is the peer it answered.
    fn mask_reply(&self, reply: &Value, _peer: Option<PeerCredentials>) -> Value {
        reply.clone()
    }

    /// A masked reply `got` held to what the masked `expected` names (over
    /// HTTP, its headers).
    fn held_to(&self, got: Value, _expected: &Value) -> Value {
        got
    }

    /// Builds the fronts of the exposure `spec` serves (`exposure` of
    /// `program`, where a transport's framing is made from the model).
    fn front_maker(
        &self,
        program: &Program,
        exposure: &ModelExposure,
        spec: &ExposureSpec,
    ) -> Result<FrontMaker, String>;

    /// The describer an exposure of the transport answers a describe with,
    /// where the transport has its own (MCP's is its tools); `None`: the
    /// runner's, or the model's.
    fn describer(
        &self,
        _program: &Program,
        _exposure: &ModelExposure,
    ) -> Option<Result<Box<dyn Describer + Send>, String>> {
        None
    }

    /// Reads `text` as an endpoint of the transport (`http://host:port`).
    fn endpoint(&self, text: &str) -> Option<Endpoint>;

    /// How its endpoints are written, for a message (`http://host:port`).
    fn endpoint_form(&self) -> &'static str;

    /// Whether it speaks to `endpoint`.
    fn speaks_to(&self, endpoint: &Endpoint) -> bool;

    /// The request a check describes an endpoint with, under `bearer`.
    fn describe_request(&self, bearer: Option<&str>) -> Value;

    /// The exposure identity the describe's `reply` names (one of
    /// `identities`, the records' own, where the reply names less), or why
    /// none.
    fn described(&self, reply: &Value, _identities: &[&str]) -> Result<String, String> {
        described_by_document(self, reply)
    }

    /// What a check says of an endpoint that described itself as `identity`.
    fn described_note(&self, endpoint: &Endpoint, identity: &str) -> String {
        format!("describe  {endpoint}: serves {identity}")
    }

    /// The record of this transport that a record of another transport
    /// implies, as a record's value, an exchange of the exposure
    /// `identity` (§ Outcomes: MCP takes the recorded HTTP calls as
    /// `tools/call`); `None` for most.
    fn implied_by(&self, _from: Exchange<'_>, _identity: &str) -> Option<Value> {
        None
    }

    /// What a check says of the records it sends as [`Form::implied_by`]
    /// makes them, after their count (`http call records are sent as
    /// tools/call`).
    fn implied_note(&self) -> &'static str {
        "records of another transport are sent as they imply"
    }

    /// Holds a record the reference has no record of, and that no reference
    /// record implies, to what else the reference says of it, where the
    /// transport has such a rule: `Some(None)` when it holds, `Some(Some(why))`
    /// when it does not, `None` when there is no rule (the record is new).
    fn held_to_reference(
        &self,
        _record: Exchange<'_>,
        _reference: &dyn Reference,
    ) -> Option<Option<String>> {
        None
    }
}

/// The outcome of a refusal object's `kind` (`server` is the server error).
pub(crate) fn refusal_outcome(kind: Option<&str>) -> (String, Option<String>) {
    match kind {
        Some("server") => ("server_error".to_owned(), None),
        Some(k) => ("refusal".to_owned(), Some(k.to_owned())),
        None => ("refusal".to_owned(), None),
    }
}

/// [`Form::described`] of a transport whose describe answers the document:
/// the identity it names.
pub fn described_by_document<F: Form + ?Sized>(form: &F, reply: &Value) -> Result<String, String> {
    form.document(reply)
        .and_then(|d| d.get("exposure"))
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| {
            let (outcome, kind) = form
                .outcome_of(reply)
                .unwrap_or(("no outcome".into(), None));
            match kind {
                Some(k) => format!("the describe was refused {k}"),
                None if outcome == "result" => "its description names no exposure".into(),
                None => format!("the describe answered {outcome}"),
            }
        })
}

/// The outcome a reply of `transport` encodes; `None` for a transport
/// limen has no machines for, or a reply that encodes none.
pub fn outcome_of(transport: &Transport, reply: &Value) -> Option<(String, Option<String>)> {
    transport.form()?.outcome(reply)
}

/// A request of `transport`, masked for comparison.
pub fn mask_request(transport: &Transport, request: &Value) -> Value {
    match transport.form() {
        Some(f) => f.mask_request(request),
        None => request.clone(),
    }
}

/// A reply of `transport`, masked for comparison.
pub fn mask_reply(transport: &Transport, reply: &Value, peer: Option<PeerCredentials>) -> Value {
    match transport.form() {
        Some(f) => f.mask_reply(reply, peer),
        None => reply.clone(),
    }
}

/// Holds the reply `got` (answering `got_peer`) to the recorded `expected`
/// (answering `expected_peer`), a transport failure's included: the
/// connection ending with no reply where one was recorded, a reply where
/// the connection was to end with none, or the first difference of
/// [`compare_reply`].
pub fn hold_reply(
    form: &dyn Form,
    expected: &Value,
    expected_peer: Option<PeerCredentials>,
    got: &Value,
    got_peer: Option<PeerCredentials>,
) -> Result<(), String> {
    match (is_eof(expected), is_eof(got)) {
        (true, true) => Ok(()),
        (false, true) => Err("the connection ended with no reply (a transport failure)".into()),
        (true, false) => Err(format!(
            "a reply, where the connection was to end with none (a transport failure): {}",
            mask::show(got)
        )),
        (false, false) => match compare_reply(form, expected, expected_peer, got, got_peer) {
            None => Ok(()),
            Some(d) => Err(format!("reply {d}")),
        },
    }
}

/// Compares a reply `got` (answering `got_peer`) with the recorded
/// `expected` (answering `expected_peer`): `None` when they are equal as
/// values, masked; else the first difference.
pub fn compare_reply(
    form: &dyn Form,
    expected: &Value,
    expected_peer: Option<PeerCredentials>,
    got: &Value,
    got_peer: Option<PeerCredentials>,
) -> Option<String> {
    let want = form.mask_reply(expected, expected_peer);
    let have = form.held_to(form.mask_reply(got, got_peer), &want);
    mask::first_difference(&want, &have)
}
